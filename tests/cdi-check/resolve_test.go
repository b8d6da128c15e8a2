package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	oci "github.com/opencontainers/runtime-spec/specs-go"
)

const (
	letterUID = "a1b2c3d4-5e6f-4a7b-8c9d-0e1f2a3b4c5d"
	digitUID  = "1f00aa00-5e1f-4c2a-9d3b-00000000000a"
)

func decodeOCI(t *testing.T, data string) oci.Spec {
	t.Helper()
	var spec oci.Spec
	if err := json.Unmarshal([]byte(data), &spec); err != nil {
		t.Fatalf("resolve printed no OCI spec: %v\n%s", err, data)
	}
	return spec
}

func deviceByPath(spec oci.Spec, path string) *oci.LinuxDevice {
	if spec.Linux == nil {
		return nil
	}
	for i := range spec.Linux.Devices {
		if spec.Linux.Devices[i].Path == path {
			return &spec.Linux.Devices[i]
		}
	}
	return nil
}

func TestResolveInjectsEnvDevicesAndMounts(t *testing.T) {
	got := runCLI(t, "resolve", "--spec-dir", "testdata/valid",
		"numa.dra.dev/claim="+letterUID+"-gpu-0000-18-00-0",
		"numa.dra.dev/claim="+letterUID+"-cpu-numa-0-5a4e0000-0000-4000-8000-100000000002",
		"numa.dra.dev/claim="+digitUID+"-accelerator-0000-c1-00-0",
		"numa.dra.dev/metadata="+digitUID+"_gpu")
	if got.code != exitOK {
		t.Fatalf("resolve failed: %v", got)
	}
	spec := decodeOCI(t, got.stdout)

	if spec.Process == nil {
		t.Fatal("no process in the OCI spec")
	}
	for _, want := range []string{
		"NUMADRA_GPU_0000_18_00_0_PCI_BUS_ID=0000:18:00.0",
		"NUMADRA_GPU_0000_18_00_0_NVIDIA_MINOR=0",
		"NUMADRA_CPU_NUMA_0_5A4E0000_0000_4000_8000_100000000002_CPUS=0-3",
		"NUMADRA_CPU_NUMA_0_5A4E0000_0000_4000_8000_100000000002_MEMORY=4294967296",
		"NUMADRA_ACCELERATOR_0000_C1_00_0_VFIO_GROUP=42",
	} {
		if !slices.Contains(spec.Process.Env, want) {
			t.Errorf("process.env lacks %q: %q", want, spec.Process.Env)
		}
	}
	// Only the requested devices: the NIC of the same spec is not injected.
	for _, env := range spec.Process.Env {
		if strings.HasPrefix(env, "NUMADRA_NIC_") {
			t.Errorf("process.env has %q of a device not asked for", env)
		}
	}

	for _, want := range []oci.LinuxDevice{
		{Path: "/dev/nvidia0", Type: "c", Major: 195, Minor: 0},
		{Path: "/dev/nvidiactl", Type: "c", Major: 195, Minor: 255},
		{Path: "/dev/nvidia-uvm", Type: "c", Major: 508, Minor: 0},
		{Path: "/dev/vfio/42", Type: "c", Major: 243, Minor: 0},
		{Path: "/dev/vfio/vfio", Type: "c", Major: 10, Minor: 196},
	} {
		dev := deviceByPath(spec, want.Path)
		if dev == nil {
			t.Errorf("linux.devices lacks %s", want.Path)
			continue
		}
		if dev.Type != want.Type || dev.Major != want.Major || dev.Minor != want.Minor {
			t.Errorf("linux.devices %s: got %s %d:%d, want %s %d:%d", want.Path, dev.Type,
				dev.Major, dev.Minor, want.Type, want.Major, want.Minor)
		}
		// The cgroup rule that lets the container open it.
		allowed := false
		if spec.Linux.Resources != nil {
			for _, rule := range spec.Linux.Resources.Devices {
				if rule.Allow && rule.Type == "c" && rule.Major != nil && *rule.Major == want.Major &&
					rule.Minor != nil && *rule.Minor == want.Minor && rule.Access == "rwm" {
					allowed = true
				}
			}
		}
		if !allowed {
			t.Errorf("no rwm cgroup rule for %s (%d:%d)", want.Path, want.Major, want.Minor)
		}
	}
	if n := len(spec.Linux.Devices); n != 5 {
		t.Errorf("want 5 device nodes, got %d: %+v", n, spec.Linux.Devices)
	}

	if len(spec.Mounts) != 1 {
		t.Fatalf("want the metadata mount only, got %+v", spec.Mounts)
	}
	m := spec.Mounts[0]
	if m.Source != "/var/lib/numadra/metadata/default_training/gpu/metadata.json" ||
		m.Destination != "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/training/gpu/numa.dra.dev-metadata.json" ||
		!slices.Equal(m.Options, []string{"ro", "bind"}) {
		t.Errorf("metadata mount: got %+v", m)
	}
}

func TestResolveWritesTheOutputFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "oci.json")
	got := runCLI(t, "resolve", "--spec-dir", "testdata/valid", "--output", out,
		"numa.dra.dev/claim="+digitUID+"-cpu-numa-2")
	if got.code != exitOK || got.stdout != "" {
		t.Fatalf("want exit 0 and nothing on stdout, got %v", got)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	spec := decodeOCI(t, string(data))
	if !slices.Equal(spec.Process.Env, []string{"NUMADRA_CPU_NUMA_2_CPUS=32-47", "NUMADRA_CPU_NUMA_2_NUMA_NODE=2"}) {
		t.Errorf("process.env: %q", spec.Process.Env)
	}
}

func TestResolveNamesWhatItCannotResolve(t *testing.T) {
	got := runCLI(t, "resolve", "--spec-dir", "testdata/valid",
		"numa.dra.dev/claim="+digitUID+"-cpu-numa-2", "numa.dra.dev/claim=no-such-device")
	if got.code != exitFailed ||
		!strings.Contains(got.stderr, "FAIL numa.dra.dev/claim=no-such-device: unresolvable CDI device") ||
		!strings.Contains(got.stderr, "numa.dra.dev/claim="+digitUID+"-cpu-numa-2") || got.stdout != "" {
		t.Errorf("want exit 1 naming the device and listing the known ones, got %v", got)
	}

	got = runCLI(t, "resolve", "--spec-dir", "testdata/valid", "cpu-numa-2")
	if got.code != exitFailed || !strings.Contains(got.stderr,
		"FAIL cpu-numa-2: not a fully-qualified CDI device name (vendor/class=name)") {
		t.Errorf("want exit 1 for an unqualified name, got %v", got)
	}
}

// A runtime logs a spec its cache refused and goes on without its devices; the test fails.
func TestResolveFailsOnAnySpecTheCacheRefused(t *testing.T) {
	dir := t.TempDir()
	for _, src := range []string{
		"testdata/valid/numa.dra.dev-claim_" + digitUID + ".json",
		"testdata/invalid/duplicate-device.json",
	} {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := runCLI(t, "resolve", "--spec-dir", dir, "numa.dra.dev/claim="+digitUID+"-cpu-numa-2")
	want := filepath.Join(dir, "duplicate-device.json") + ": the CDI cache refused it:"
	if got.code != exitFailed || !strings.Contains(got.stderr, want) ||
		!strings.Contains(got.stderr, `multiple device "cpu-numa-0"`) {
		t.Errorf("want exit 1 with %q, got %v", want, got)
	}
}

// Two specs defining the same device in one folder: the cache drops the device from both
// and records a conflict; that must fail too.
func TestResolveFailsOnConflictingDevices(t *testing.T) {
	dir := t.TempDir()
	src := "testdata/valid/numa.dra.dev-claim_" + digitUID + ".json"
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a.json", "b.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := runCLI(t, "resolve", "--spec-dir", dir, "numa.dra.dev/claim="+digitUID+"-cpu-numa-2")
	if got.code != exitFailed || !strings.Contains(got.stderr, "conflicting device") {
		t.Errorf("want exit 1 with the conflict, got %v", got)
	}
}

// How the library treats device nodes when it injects them (container-edits_unix.go,
// fillMissingInfo): it lstat()s hostPath (path when hostPath is empty) and
//   - a node with type and a non-zero major ("minimally specified", as every spec of ours) is
//     taken as written; a failed lstat is ignored and only the file mode is copied from a
//     real device node;
//   - a node without them must be a real device node: a symlink (as in the tests' mocked /dev
//     trees) is "not a device node", because lstat does not follow it.
func TestResolveDeviceNodesAndMockedDevTrees(t *testing.T) {
	root := t.TempDir()
	devRoot := filepath.Join(root, "dev")
	if err := os.MkdirAll(filepath.Join(devRoot, "dri"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(devRoot, "dri", "card0")
	if err := os.Symlink("/dev/null", link); err != nil {
		t.Fatal(err)
	}
	if info, err := os.Stat("/dev/null"); err != nil || info.Mode()&os.ModeCharDevice == 0 {
		t.Skipf("/dev/null is not a character device here (%v)", err)
	}

	writeSpec := func(t *testing.T, node string) string {
		dir := t.TempDir()
		spec := `{"cdiVersion": "0.5.0", "kind": "numa.dra.dev/claim", "devices": [
			{"name": "gpu-0000-00-02-0", "containerEdits": {"deviceNodes": [` + node + `]}}]}`
		if err := os.WriteFile(filepath.Join(dir, "spec.json"), []byte(spec), 0o644); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	const id = "numa.dra.dev/claim=gpu-0000-00-02-0"

	t.Run("symlink hostPath with type and major: taken as written", func(t *testing.T) {
		dir := writeSpec(t, `{"path": "/dev/dri/card0", "hostPath": "`+link+`", "type": "c", "major": 226, "minor": 0}`)
		got := runCLI(t, "resolve", "--spec-dir", dir, id)
		if got.code != exitOK {
			t.Fatalf("resolve failed: %v", got)
		}
		dev := deviceByPath(decodeOCI(t, got.stdout), "/dev/dri/card0")
		if dev == nil || dev.Type != "c" || dev.Major != 226 || dev.Minor != 0 || dev.FileMode != nil {
			t.Errorf("want c 226:0 without a file mode, got %+v", dev)
		}
	})
	t.Run("path only, missing on this host, with type and major: taken as written", func(t *testing.T) {
		dir := writeSpec(t, `{"path": "/dev/numadra-test-no-such-node", "type": "c", "major": 511, "minor": 7}`)
		got := runCLI(t, "resolve", "--spec-dir", dir, id)
		dev := deviceByPath(decodeOCI(t, got.stdout), "/dev/numadra-test-no-such-node")
		if got.code != exitOK || dev == nil || dev.Major != 511 || dev.Minor != 7 {
			t.Errorf("want c 511:7, got %+v (%v)", dev, got)
		}
	})
	t.Run("real device node without type and major: filled in from the host", func(t *testing.T) {
		dir := writeSpec(t, `{"path": "/dev/dri/card0", "hostPath": "/dev/null"}`)
		got := runCLI(t, "resolve", "--spec-dir", dir, id)
		dev := deviceByPath(decodeOCI(t, got.stdout), "/dev/dri/card0")
		if got.code != exitOK || dev == nil || dev.Type != "c" || dev.Major != 1 || dev.Minor != 3 || dev.FileMode == nil {
			t.Errorf("want c 1:3 with a file mode from /dev/null, got %+v (%v)", dev, got)
		}
	})
	t.Run("symlink hostPath without type and major: refused", func(t *testing.T) {
		dir := writeSpec(t, `{"path": "/dev/dri/card0", "hostPath": "`+link+`"}`)
		got := runCLI(t, "resolve", "--spec-dir", dir, id)
		if got.code != exitFailed || !strings.Contains(got.stderr, "not a device node") {
			t.Errorf("want exit 1 with \"not a device node\", got %v", got)
		}
	})
}
