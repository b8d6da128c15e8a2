package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cdispec"
)

// A real container runtime on the CDI ids the daemon returned (issue 16 §3): rootful podman with
// runc starts a busybox container with --device <id> for each, in a private mount namespace where
// the node's CDI folder is podman's only CDI folder (as tests/conformance/container_runtime.cpp
// does for the fake API server's claims). The container reports its environment and the device
// nodes and mount points the spec names; the test compares them with the spec.

const hostScript = `set -e
cdi="$1"; empty="$2"; shift 2
mkdir -p /etc/cdi /run/cdi
mount --bind "$cdi" /etc/cdi
mount --bind "$empty" /run/cdi
exec podman "$@"
`

// containerRuntimeMissing says why podman cannot run containers here, or "".
func containerRuntimeMissing() string {
	if os.Geteuid() != 0 {
		return "not root (rootful podman is used)"
	}
	for _, program := range []string{"/usr/bin/podman", "/usr/sbin/runc", "/usr/bin/unshare", "/bin/busybox"} {
		if _, err := os.Stat(program); err != nil {
			return program + " is missing (Debian: apt-get install podman runc busybox-static)"
		}
	}
	return ""
}

// editsOf gathers the edits of the CDI ids from the specs in dir (spec-wide edits included).
func editsOf(t testing.TB, dir string, ids []string) cdispec.Edits {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var all cdispec.Edits
	found := map[string]bool{}
	for _, file := range files {
		spec, err := cdispec.Read(file)
		if err != nil {
			t.Fatal(err)
		}
		used := false
		for _, device := range spec.Devices {
			id := spec.Kind + "=" + device.Name
			for _, wanted := range ids {
				if wanted == id {
					found[id], used = true, true
					all.Add(device.ContainerEdits)
				}
			}
		}
		if used {
			all.Add(spec.ContainerEdits)
		}
	}
	for _, id := range ids {
		if !found[id] {
			t.Fatalf("CDI id %s: no spec in %s has it", id, dir)
		}
	}
	return all
}

// containerReport runs the container and returns what its script printed.
func containerReport(t testing.TB, cdiDir string, ids []string, script string) string {
	t.Helper()
	out, errOut, err := podmanRun(t, cdiDir, ids, script)
	if err != nil {
		t.Fatalf("podman run with CDI devices %v: %v\nstdout: %s\nstderr: %s", ids, err, out, errOut)
	}
	return out
}

// podmanRun starts a busybox container with the CDI ids (cdiDir as podman's only CDI folder)
// running script; returns its output, podman's stderr and how podman ended.
func podmanRun(t testing.TB, cdiDir string, ids []string, script string) (string, string, error) {
	t.Helper()
	scratch := t.TempDir()
	rootfs := filepath.Join(scratch, "rootfs")
	if err := os.MkdirAll(filepath.Join(rootfs, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	busybox, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "bin", "busybox"), busybox, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{"sh", "env", "stat", "echo", "test", "["} {
		if err := os.Symlink("busybox", filepath.Join(rootfs, "bin", command)); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(scratch, "empty-cdi")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	hostScriptPath := filepath.Join(scratch, "host.sh")
	if err := os.WriteFile(hostScriptPath, []byte(hostScript), 0o644); err != nil {
		t.Fatal(err)
	}
	absolute, err := filepath.Abs(cdiDir)
	if err != nil {
		t.Fatal(err)
	}
	// Limits lowered, never raised: podman's defaults are above what a CI sandbox may set.
	args := []string{"--mount", "--propagation", "private", "/bin/sh", hostScriptPath, absolute, empty,
		"--runtime", "runc", "run", "--rm", "--network", "none",
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096"}
	for _, id := range ids {
		args = append(args, "--device", id)
	}
	args = append(args, "--rootfs", rootfs, "/bin/sh", "-c", script)
	cmd := exec.Command("/usr/bin/unshare", args...)
	cmd.Dir = scratch
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("podman run with %v did not end within 2 minutes", ids)
	}
	return out.String(), errOut.String(), err
}

// runWithDevices starts a container with the CDI ids and checks that it sees every environment
// variable, device node (the host's major/minor) and mount point the specs in cdiDir give them.
func runWithDevices(t testing.TB, cdiDir string, ids []string) {
	t.Helper()
	edits := editsOf(t, cdiDir, ids)
	script := "env; echo @@devices; "
	for _, node := range edits.DeviceNodes {
		script += fmt.Sprintf("stat -L -c '%%n|%%F|%%t|%%T' '%s' || echo '%s|missing|0|0'; ", node.Path, node.Path)
	}
	script += "echo @@mounts; "
	for _, mount := range edits.Mounts {
		script += fmt.Sprintf("if [ -e '%s' ]; then echo '%s'; fi; ", mount.ContainerPath, mount.ContainerPath)
	}
	report := containerReport(t, cdiDir, ids, script+"echo @@end")
	env, devices, mounts := map[string]bool{}, map[string]string{}, map[string]bool{}
	section := "env"
	for _, line := range strings.Split(report, "\n") {
		switch {
		case line == "@@devices" || line == "@@mounts" || line == "@@end":
			section = line
		case section == "env":
			env[line] = true
		case section == "@@devices":
			path, rest, _ := strings.Cut(line, "|")
			devices[path] = rest
		case section == "@@mounts":
			mounts[line] = true
		}
	}
	if section != "@@end" {
		t.Fatalf("the container's report ended early:\n%s", report)
	}
	for _, variable := range edits.Env {
		if !env[variable] {
			t.Errorf("the container lacks %s", variable)
		}
	}
	for _, node := range edits.DeviceNodes {
		// The spec names the node's numbers (the daemon read them under its --dev-root), or the
		// runtime takes them from the host's node.
		major, minor := node.Major, node.Minor
		if major == nil || minor == nil {
			host := node.HostPath
			if host == "" {
				host = node.Path
			}
			var stat syscall.Stat_t
			if err := syscall.Stat(host, &stat); err != nil {
				t.Fatalf("device node %s: %v", host, err)
			}
			major, minor = ptr.To(unixMajor(stat.Rdev)), ptr.To(unixMinor(stat.Rdev))
		}
		want := fmt.Sprintf("character special file|%x|%x", *major, *minor)
		if devices[node.Path] != want {
			t.Errorf("device node %s in the container: %q, want %q", node.Path, devices[node.Path], want)
		}
	}
	for _, mount := range edits.Mounts {
		if !mounts[mount.ContainerPath] {
			t.Errorf("the container lacks the mount %s", mount.ContainerPath)
		}
	}
}

func unixMajor(dev uint64) uint64 { return (dev>>8)&0xfff | (dev>>32)&^0xfff }
func unixMinor(dev uint64) uint64 { return dev&0xff | (dev>>12)&^0xff }
