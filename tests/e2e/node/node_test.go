package node

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"numadra.dev/tests/e2e/cluster"
	"numadra.dev/tests/e2e/devtree"
)

const (
	driverName      = "numa.dra.dev"
	driverNamespace = "numa-dra-driver"
	driverRelease   = "numa-dra-driver"
	// The folders the chart's defaults name (values.yaml: paths); inside the tier's mount
	// namespace /var/run/cdi and /var/lib/kubelet are its own (scripts/node-e2e.sh).
	cdiDir      = "/var/run/cdi"
	metadataDir = "/var/lib/kubelet/plugins/numa.dra.dev/dra-device-metadata"
	// containerd's sockets, in the tier's own /run.
	containerdSocket = "/run/containerd/containerd.sock"
)

// node is the running node: the control plane, containerd, the kubelet and the driver the chart
// installed.
type node struct {
	name       string // the Node's name and the kubelet's host name (/etc/hosts: 127.0.0.1)
	ip         string // the node's InternalIP: an address of lo that is not a loopback one
	machine    string // the mocked machine (testdata/generate_sysfs.py) the driver reads
	machineDir string // its copy: sys/, proc/, dev/
	dir        string // logs/, configuration, containerd's root
	cluster    *cluster.Cluster
	containerd *cluster.Process
	kubelet    *cluster.Process
	// kubeletArgs start the kubelet, again after a restart.
	kubeletArgs []string
	images      map[string]imageInfo
	versions    string
	timings     []string // "what: duration" of each bring-up step
}

type imageInfo struct {
	Name    string `json:"name"`
	Archive string `json:"archive"`
}

// step runs one bring-up step and records how long it took.
func (n *node) step(what string, run func() error) error {
	started := time.Now()
	err := run()
	n.timings = append(n.timings, fmt.Sprintf("%s %s", what, time.Since(started).Round(time.Millisecond)))
	fmt.Fprintf(os.Stderr, "node: %s: %s\n", what, time.Since(started).Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func startNode(ctx context.Context) (*node, error) {
	n := &node{name: requireEnv("NUMADRA_NODE_NAME"), ip: requireEnv("NUMADRA_NODE_IP"), machine: requireEnv("NUMADRA_NODE_MACHINE"), dir: work()}
	n.machineDir = filepath.Join(n.dir, "machine")
	steps := []struct {
		what string
		run  func() error
	}{
		{"control plane", func() error { return n.startControlPlane(ctx) }},
		{"mocked machine " + n.machine, n.prepareMachine},
		{"containerd", n.startContainerd},
		{"images imported", n.importImages},
		{"kubelet, node Ready", func() error { return n.startKubelet(ctx) }},
		{"versions", func() error { return n.describeVersions(ctx) }},
		{"helm install, driver pod Ready", func() error { return n.installDriver(ctx) }},
	}
	for _, s := range steps {
		if err := n.step(s.what, s.run); err != nil {
			return n, err
		}
	}
	return n, nil
}

// stop ends the kubelet, containerd and the control plane; the containers go with the tier's
// PID namespace (scripts/node-e2e.sh).
func (n *node) stop() {
	timed := func(what string, stop func()) {
		started := time.Now()
		stop()
		fmt.Fprintf(os.Stderr, "node: %s stopped in %s\n", what, time.Since(started).Round(time.Millisecond))
	}
	if n.kubelet != nil {
		timed("kubelet", n.kubelet.Stop)
	}
	if n.containerd != nil {
		// The containers first: a driver still watching would hold the API server's shutdown.
		timed("containers", n.killContainers)
		timed("containerd", n.containerd.Stop)
	}
	if n.cluster != nil {
		timed("control plane", n.cluster.Stop)
	}
}

func (n *node) startControlPlane(ctx context.Context) error {
	profile := cluster.AllDRA()
	profile.Name = "node"
	profile.Kubelets = true
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Binaries(requireEnv("NUMADRA_E2E_BIN")), filepath.Join(n.dir, "cluster"), profile)
	n.cluster = c
	return err
}

// prepareMachine copies the mocked machine (so a test may break a device on disk) and readies it.
func (n *node) prepareMachine() error {
	source := filepath.Join(requireEnv("NUMADRA_BUILD_DIR"), "testdata", "sysfs", n.machine)
	if out, err := exec.Command("cp", "-a", source, n.machineDir).CombinedOutput(); err != nil {
		return fmt.Errorf("copying %s: %v: %s", source, err, out)
	}
	return readyMachine(n.machineDir)
}

// mirrorMachine generates the mocked machine whose CPUs and NUMA nodes are this machine's own
// (testdata/generate_sysfs.py --host-mirror /sys: a GPU and a NIC on each node), readied like
// the tier's machine, and returns its folder: cpusets the runtime applies from its slices are
// real.
func (n *node) mirrorMachine() (string, error) {
	out := filepath.Join(n.dir, "mirror")
	generator := filepath.Join(sourceDir(), "testdata", "generate_sysfs.py")
	if text, err := exec.Command("/usr/bin/python3", generator, "--host-mirror", "/sys", "--out", out).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s --host-mirror /sys: %v: %s", generator, err, text)
	}
	dir := filepath.Join(out, "host-mirror")
	return dir, readyMachine(dir)
}

// readyMachine gives a mocked machine a /dev of real character devices for the device nodes it
// names and the host's boot id.
func readyMachine(dir string) error {
	if err := devtree.Mock(filepath.Join(dir, "sys"), filepath.Join(dir, "dev")); err != nil {
		return err
	}
	bootID, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return err
	}
	random := filepath.Join(dir, "proc", "sys", "kernel", "random")
	if err := os.MkdirAll(random, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(random, "boot_id"), bootID, 0o644)
}

// containerdConfig is containerd's whole configuration: nothing read from the machine's /etc.
// restrict_oom_score_adj: the tier has no CAP_SYS_RESOURCE, and runc fails every sandbox when it
// cannot lower a process's oom_score_adj. CDI reads the folder the chart writes; NRI is on (a test turns it off); runc
// is the tier's build (linux.netDevices, which CDI 1.1 netDevices become).
const containerdConfig = `version = 4
root = '%[1]s/containerd/root'
state = '/run/containerd'
imports = []

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = '%[2]s'

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    cdi_spec_dirs = ['%[3]s']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = 'runc'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = 'io.containerd.runc.v2'
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = '%[5]s'
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/usr/lib/cni']
      conf_dir = '%[1]s/cni'

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'

  [plugins.'io.containerd.nri.v1.nri']
    disable = %[6]t
    socket_path = '/var/run/nri/nri.sock'
    plugin_path = '%[1]s/nri/plugins'
    plugin_config_path = '%[1]s/nri/conf.d'

  [plugins.'io.containerd.server.v1.grpc']
    address = '%[4]s'

  [plugins.'io.containerd.server.v1.ttrpc']
    address = '%[4]s.ttrpc'
`

// podNetwork gives a pod that is not hostNetwork a network namespace of its own with an eth0
// (containerd wants one with an address): a bridge in the tier's network namespace without an
// address of its own, so no route leads to it from the tier's namespace and none leads out of a
// pod's (no gateway, no masquerading); the addresses are TEST-NET-2's upper half, which exists
// nowhere but here. Node-level pods (the driver, the workloads) use hostNetwork.
const podNetwork = `{"cniVersion": "1.0.0", "name": "numadra-pods", "plugins": [{
  "type": "bridge", "bridge": "numadra0", "isGateway": false, "ipMasq": false,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "198.51.100.128/25"}]], "dataDir": "%s"}}]}`

func (n *node) containerdBin(name string) string {
	return filepath.Join(requireEnv("NUMADRA_NODE_CONTAINERD_BIN"), name)
}

func (n *node) startContainerd() error {
	data, err := os.ReadFile(filepath.Join(requireEnv("NUMADRA_NODE_IMAGES"), "images.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &n.images); err != nil {
		return fmt.Errorf("images.json: %w", err)
	}
	for _, folder := range []string{"containerd/root", "cni", "nri/plugins", "nri/conf.d", cdiDir} {
		if !filepath.IsAbs(folder) {
			folder = filepath.Join(n.dir, folder)
		}
		if err := os.MkdirAll(folder, 0o755); err != nil {
			return err
		}
	}
	network := fmt.Sprintf(podNetwork, filepath.Join(n.dir, "cni-ipam"))
	if err := os.WriteFile(filepath.Join(n.dir, "cni", "10-pods.conflist"), []byte(network), 0o644); err != nil {
		return err
	}
	if err := n.writeContainerdConfig(true); err != nil {
		return err
	}
	return n.runContainerd()
}

// writeContainerdConfig writes containerd's configuration, with its NRI on or off.
func (n *node) writeContainerdConfig(nri bool) error {
	text := fmt.Sprintf(containerdConfig, n.dir, n.images["pause"].Name, cdiDir, containerdSocket,
		requireEnv("NUMADRA_NODE_RUNC"), !nri)
	return os.WriteFile(filepath.Join(n.dir, "containerd.toml"), []byte(text), 0o644)
}

// restartContainerd stops containerd and starts it again with its NRI on or off (its containers
// keep running: their shims outlive it).
func (n *node) restartContainerd(nri bool) error {
	n.containerd.Stop()
	if err := n.writeContainerdConfig(nri); err != nil {
		return err
	}
	return n.runContainerd()
}

// runContainerd starts containerd (again) and waits until it answers.
func (n *node) runContainerd() error {
	// The shim is found on PATH, next to containerd.
	env := append(os.Environ(), "PATH="+requireEnv("NUMADRA_NODE_CONTAINERD_BIN")+":/usr/sbin:/usr/bin:/sbin:/bin")
	var err error
	n.containerd, err = cluster.StartProgram(n.dir, "containerd", n.containerdBin("containerd"), env,
		"--config", filepath.Join(n.dir, "containerd.toml"))
	if err != nil {
		return err
	}
	return waitForProcess(n.containerd, 60*time.Second, func() error {
		_, err := n.ctr("version")
		return err
	})
}

// killContainers kills every container's task (SIGKILL, every process) through containerd.
func (n *node) killContainers() {
	out, err := n.ctr("tasks", "ls", "-q")
	if err != nil {
		fmt.Fprintf(os.Stderr, "node: listing the containers: %v\n", err)
		return
	}
	for _, id := range strings.Fields(out) {
		if _, err := n.ctr("tasks", "kill", "--all", "--signal", "SIGKILL", id); err != nil {
			fmt.Fprintf(os.Stderr, "node: %v\n", err)
		}
	}
}

// ctr runs containerd's ctr in the CRI's namespace and returns its standard output (its
// standard error, warnings included, only in an error).
func (n *node) ctr(args ...string) (string, error) {
	cmd := exec.Command(n.containerdBin("ctr"), append([]string{"--address", containerdSocket, "--namespace", "k8s.io"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %v: %s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return string(out), nil
}

func (n *node) importImages() error {
	for _, what := range []string{"pause", "shell", "driver"} {
		image, ok := n.images[what]
		if !ok {
			return fmt.Errorf("images.json has no %s image", what)
		}
		if _, err := n.ctr("images", "import", image.Archive); err != nil {
			return err
		}
	}
	out, err := n.ctr("images", "ls", "-q")
	if err != nil {
		return err
	}
	for what, image := range n.images {
		if !strings.Contains(out, image.Name) {
			return fmt.Errorf("the %s image %s is not in containerd after the import: %s", what, image.Name, out)
		}
	}
	return nil
}

// kubeletConfig: cgroupfs on this kernel's cgroup v1 hybrid layout (no systemd; v1 is refused
// unless failCgroupV1 is false), pods under the cgroup root scripts/node-e2e.sh made, the
// API server authenticated by the cluster's CA, images never garbage-collected (none could be
// pulled again), no eviction by the machine's disk or memory use, which the tier does not own.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: %[1]s
containerRuntimeEndpoint: unix://%[2]s
address: %[7]s
healthzBindAddress: 127.0.0.1
readOnlyPort: 0
tlsCertFile: %[3]s
tlsPrivateKeyFile: %[4]s
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[5]s}
authorization:
  mode: AlwaysAllow
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "0%%"
  nodefs.available: "0%%"
  imagefs.available: "0%%"
  nodefs.inodesFree: "0%%"
volumePluginDir: %[6]s/volume-plugins
staticPodPath: ""
maxPods: 30
syncFrequency: 5s
nodeStatusUpdateFrequency: 5s
`

func (n *node) startKubelet(ctx context.Context) error {
	kubeconfig := filepath.Join(n.dir, "kubelet.kubeconfig")
	if err := n.cluster.NodeKubeconfig(kubeconfig, n.name); err != nil {
		return err
	}
	cert, key, err := n.cluster.KubeletServing(n.name, net.ParseIP(n.ip))
	if err != nil {
		return err
	}
	config := filepath.Join(n.dir, "kubelet.yaml")
	text := fmt.Sprintf(kubeletConfig, requireEnv("NUMADRA_NODE_CGROUP_ROOT"), containerdSocket, cert, key,
		n.cluster.CAFile(), n.dir, n.ip)
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		return err
	}
	n.kubeletArgs = []string{"--config", config, "--kubeconfig", kubeconfig, "--hostname-override", n.name,
		"--node-ip", n.ip, "--v", "3"}
	return n.runKubelet(ctx)
}

// runKubelet starts the kubelet (again) and waits until the node is Ready.
func (n *node) runKubelet(ctx context.Context) error {
	var err error
	n.kubelet, err = cluster.StartProgram(n.dir, "kubelet", kubeBin("kubelet"), nil, n.kubeletArgs...)
	if err != nil {
		return err
	}
	// Ready as this kubelet says: after a restart the Node still shows the last one's status.
	started := metav1.Now().Rfc3339Copy()
	return waitForProcess(n.kubelet, 120*time.Second, func() error {
		node, err := n.cluster.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, condition := range node.Status.Conditions {
			if condition.Type == v1.NodeReady && condition.Status == v1.ConditionTrue &&
				!condition.LastHeartbeatTime.Before(&started) {
				return nil
			}
		}
		return fmt.Errorf("node %s is not Ready since %s: %v", n.name, started, node.Status.Conditions)
	})
}

// describeVersions is what the node runs, as its status and runc say.
func (n *node) describeVersions(ctx context.Context) error {
	node, err := n.cluster.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	runc, err := exec.Command(requireEnv("NUMADRA_NODE_RUNC"), "--version").Output() // containerd's BinaryName
	if err != nil {
		return fmt.Errorf("runc --version: %w", err)
	}
	n.versions = fmt.Sprintf("kubelet %s, %s, %s, kernel %s", node.Status.NodeInfo.KubeletVersion,
		node.Status.NodeInfo.ContainerRuntimeVersion, strings.SplitN(string(runc), "\n", 2)[0], node.Status.NodeInfo.KernelVersion)
	return nil
}

// waitForProcess polls ready until it succeeds, the process exits, or the timeout passes.
func waitForProcess(p *cluster.Process, timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if p.Exited() {
			return fmt.Errorf("exited while starting: %s", p.Tail())
		}
		if last = ready(); last == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %v; log %s", timeout, last, p.Log())
}

// checkNoRouteOffTheMachine: the network namespace has the loopback interface only, no default
// route (IPv4 or IPv6, through any interface), and no route through another interface.
func checkNoRouteOffTheMachine() error {
	interfaces, err := netInterfaces()
	if err != nil {
		return err
	}
	if len(interfaces) != 1 || interfaces[0] != "lo" {
		return fmt.Errorf("the network namespace has the interfaces %v; only lo is allowed", interfaces)
	}
	routes, err := forbiddenRoutes()
	if err != nil {
		return err
	}
	if len(routes) > 0 {
		return fmt.Errorf("forbidden routes: %v", routes)
	}
	return nil
}

// netInterfaces are the interfaces of this process's network namespace (/proc/self/net/dev:
// /sys/class/net would show the namespace that mounted /sys).
func netInterfaces() ([]string, error) {
	data, err := os.ReadFile("/proc/self/net/dev")
	if err != nil {
		return nil, err
	}
	var names []string
	for _, line := range strings.Split(string(data), "\n") {
		if name, _, ok := strings.Cut(line, ":"); ok && !strings.Contains(name, "|") {
			names = append(names, strings.TrimSpace(name))
		}
	}
	return names, nil
}

// forbiddenRoutes lists every default route and every route through an interface other than lo,
// IPv4 (/proc/self/net/route) and IPv6 (/proc/self/net/ipv6_route).
func forbiddenRoutes() ([]string, error) {
	var found []string
	v4, err := os.ReadFile("/proc/self/net/route")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(v4), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 8 || fields[0] == "Iface" {
			continue
		}
		if fields[1] == "00000000" && fields[7] == "00000000" {
			found = append(found, "ipv4 default via "+fields[0])
		} else if fields[0] != "lo" {
			found = append(found, "ipv4 "+fields[0]+" destination "+fields[1]+" mask "+fields[7])
		}
	}
	v6, err := os.ReadFile("/proc/self/net/ipv6_route")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	const anywhere = "00000000000000000000000000000000"
	for _, line := range strings.Split(string(v6), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 10 {
			continue
		}
		// The kernel's own ::/0 entry (metric ffffffff, a reject route on lo) is in every
		// namespace; it sends nothing anywhere.
		if fields[0] == anywhere && fields[1] == "00" && fields[5] != "ffffffff" {
			found = append(found, "ipv6 default via "+fields[9])
		} else if fields[9] != "lo" {
			found = append(found, "ipv6 "+fields[9]+" destination "+fields[0]+"/"+fields[1])
		}
	}
	return found, nil
}

// kubectl runs the cluster's kubectl as the administrator.
func (n *node) kubectl(args ...string) (string, error) {
	cmd := exec.Command(kubeBin("kubectl"), append([]string{"--kubeconfig", n.cluster.AdminKubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
