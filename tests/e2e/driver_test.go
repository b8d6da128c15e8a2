package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cluster"
	"numadra.dev/tests/e2e/devtree"
)

const (
	driverName      = "numa.dra.dev"
	driverNamespace = "numa-dra-driver"
	driverAccount   = "numa-dra-driver"
)

func buildDir(t testing.TB) string  { return requireEnv(t, "NUMADRA_BUILD_DIR") }
func sourceDir(t testing.TB) string { return requireEnv(t, "NUMADRA_SOURCE_DIR") }

// machines lists the mocked machines of the build (testdata/generate_sysfs.py).
func machines(t testing.TB) []string {
	entries, err := os.ReadDir(filepath.Join(buildDir(t), "testdata", "sysfs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, entry := range entries {
		if _, err := os.Stat(filepath.Join(buildDir(t), "testdata", "sysfs", entry.Name(), "sys")); err == nil {
			names = append(names, entry.Name())
		}
	}
	if len(names) == 0 {
		t.Fatal("no mocked machines in the build's testdata/sysfs")
	}
	return names
}

// machineRoot is the mocked machine's tree; "host" is this machine's own / (/sys and /proc), for
// the benchmarks that compare drivers on it.
func machineRoot(t testing.TB, machine string) string {
	if machine == "host" {
		return "/"
	}
	return filepath.Join(buildDir(t), "testdata", "sysfs", machine)
}

// kubectl runs the cluster's kubectl as the administrator.
func kubectl(t testing.TB, c *cluster.Cluster, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(requireEnv(t, "NUMADRA_E2E_BIN"), "kubectl"),
		append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// installedDriver applies deploy/manifests/ once per cluster, as the README tells users to.
func installedDriver(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	if _, err := c.Admin.CoreV1().ServiceAccounts(driverNamespace).Get(context.Background(), driverAccount, metav1.GetOptions{}); err == nil {
		return
	}
	out, err := kubectl(t, c, "apply", "-f", filepath.Join(sourceDir(t), "deploy", "manifests"))
	if err != nil {
		t.Fatalf("kubectl apply -f deploy/manifests: %v\n%s", err, out)
	}
	waitForSlicePolicy(t, c)
}

// waitForSlicePolicy waits until the API server enforces the driver's admission policy (it loads
// a new policy and binding asynchronously, within about a second): a dry-run create with a
// driver token bound to no node must be refused.
func waitForSlicePolicy(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	ctx := context.Background()
	token, err := c.Admin.CoreV1().ServiceAccounts(driverNamespace).CreateToken(ctx, driverAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probe := clientWithToken(t, c, "policy-probe", token.Status.Token)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := probe.ResourceV1().ResourceSlices().Create(ctx, sliceFor("policy-probe", "none", driverName),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil && strings.Contains(err.Error(), "must run in a pod bound to a node") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver's admission policy is not enforced 30 s after kubectl apply (last answer: %v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// node is a Node object for a mocked machine, Ready, with the machine's CPUs and memory.
// declaredFeatures are what a 1.37 kubelet with the cluster's gates declares (NodeDeclaredFeatures).
func declaredFeatures(c *cluster.Cluster) []string {
	features := []string{"DRAOptionalNodeOperations"}
	if gateOn(c, "DRANodeAllocatableResources") {
		features = append(features, "DRANodeAllocatableResources")
	}
	sort.Strings(features) // the API server wants the list sorted
	return features
}

func createNode(t testing.TB, c *cluster.Cluster, name, machine string) *v1.Node {
	t.Helper()
	ctx := context.Background()
	node, err := c.Admin.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "numadra.dev/machine": machine}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	cpus, memory := machineResources(t, machine)
	capacity := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(cpus, resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(memory, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(110, resource.DecimalSI),
	}
	// The controller manager writes to a new Node too (taints, CIDRs): retry on conflicts.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status = v1.NodeStatus{
			Capacity: capacity, Allocatable: capacity,
			Conditions: []v1.NodeCondition{{
				Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
			}},
			DeclaredFeatures: declaredFeatures(c),
		}
		node, err = c.Admin.CoreV1().Nodes().UpdateStatus(ctx, current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("node %s status: %v", name, err)
	}
	t.Cleanup(func() {
		_ = c.Admin.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return node
}

// machineResources counts the mocked machine's online CPUs and sums its NUMA nodes' memory.
func machineResources(t testing.TB, machine string) (cpus, memory int64) {
	sys := filepath.Join(machineRoot(t, machine), "sys")
	online, err := os.ReadFile(filepath.Join(sys, "devices", "system", "cpu", "online"))
	if err == nil {
		for _, part := range strings.Split(strings.TrimSpace(string(online)), ",") {
			var first, last int64
			if n, _ := fmt.Sscanf(part, "%d-%d", &first, &last); n == 2 {
				cpus += last - first + 1
			} else if n == 1 {
				cpus++
			}
		}
	}
	meminfos, _ := filepath.Glob(filepath.Join(sys, "devices", "system", "node", "node*", "meminfo"))
	for _, path := range meminfos {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			fields := strings.Fields(line)
			if len(fields) >= 4 && fields[2] == "MemTotal:" {
				var kib int64
				fmt.Sscan(fields[3], &kib)
				memory += kib * 1024
			}
		}
	}
	if cpus == 0 {
		cpus = 1
	}
	if memory == 0 {
		memory = 1 << 30
	}
	return cpus, memory
}

// driverToken is a service-account token of the driver bound to a driver Pod on the node, as
// the kubelet would mount it: it carries the node's name (ServiceAccountTokenPodNodeInfo).
func driverToken(t testing.TB, c *cluster.Cluster, node string) string {
	t.Helper()
	return podBoundToken(t, c, driverNamespace, driverAccount, node)
}

// podBoundToken is a token of the service account bound to a Pod of it created on the node.
func podBoundToken(t testing.TB, c *cluster.Cluster, namespace, account, node string) string {
	t.Helper()
	ctx := context.Background()
	pod, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: account + "-" + node, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeName:           node,
			ServiceAccountName: account,
			Containers:         []v1.Container{{Name: "driver", Image: "registry.invalid/" + account + ":e2e"}},
			Tolerations:        []v1.Toleration{{Operator: v1.TolerationOpExists}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("%s pod on %s: %v", account, node, err)
	}
	t.Cleanup(func() {
		_ = c.Admin.CoreV1().Pods(namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	token, err := c.Admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, account, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: ptr.To(int64(3600)),
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for the %s pod on %s: %v", account, node, err)
	}
	return token.Status.Token
}

// daemon is a running numa-dra-plugin (or a peer driver, in the peers benchmark).
type daemon struct {
	cmd     *exec.Cmd
	log     string
	done    chan error
	started time.Time // just before the fork
}

// startDaemon runs numa-dra-plugin for the mocked machine as the node's driver pod would.
func startDaemon(t testing.TB, c *cluster.Cluster, node, machine string, args ...string) *daemon {
	t.Helper()
	return startDaemonAt(t, c, node, machineRoot(t, machine), args...)
}

// startDaemonAt runs numa-dra-plugin on the machine tree at root (sys/, proc/).
func startDaemonAt(t testing.TB, c *cluster.Cluster, node, root string, args ...string) *daemon {
	t.Helper()
	dir := filepath.Join(c.Dir, "nodes", node)
	kubeconfig := filepath.Join(dir, "driver.kubeconfig")
	sockets := kubeletDir(c, node)
	for _, sub := range []string{filepath.Join(sockets, "registry"), filepath.Join(sockets, "plugins"),
		filepath.Join(dir, "cdi"), filepath.Join(dir, "metadata"), filepath.Join(dir, "state"), filepath.Join(dir, "dev")} {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := devtree.Mock(filepath.Join(root, "sys"), filepath.Join(dir, "dev")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(kubeconfig); err != nil {
		if err := c.TokenKubeconfig(kubeconfig, driverToken(t, c, node)); err != nil {
			t.Fatal(err)
		}
	}
	all := append([]string{
		"--kubeconfig", kubeconfig, "--node-name", node, "--driver-name", driverName,
		"--sysfs-root", filepath.Join(root, "sys"), "--proc-root", filepath.Join(root, "proc"),
		"--dev-root", filepath.Join(dir, "dev"),
		"--kubelet-registry-dir", filepath.Join(sockets, "registry"), "--kubelet-plugins-dir", filepath.Join(sockets, "plugins"),
		"--cdi-dir", filepath.Join(dir, "cdi"), "--metadata-dir", filepath.Join(dir, "metadata"),
		"--state-dir", filepath.Join(dir, "state"), "--log-format", "text",
		// Never the host's runtime: this tier's daemons must not pin the machine's containers.
		"--nri-socket", filepath.Join(dir, "nri.sock"),
		// Several nodes' daemons run at once on this machine: each its own port.
		"--metrics-addr", "127.0.0.1:0",
	}, args...)
	return startProcess(t, dir, filepath.Join(buildDir(t), "bin", "numa-dra-plugin"), all...)
}

// startProcess runs a driver's program with its output in a new log file in dir; the test's
// cleanup stops it.
func startProcess(t testing.TB, dir, program string, args ...string) *daemon {
	t.Helper()
	logPath := filepath.Join(dir, fmt.Sprintf("%s-%d.log", filepath.Base(program), time.Now().UnixNano()))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(program, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	d := &daemon{cmd: cmd, log: logPath, done: make(chan error, 1), started: started}
	go func() { d.done <- cmd.Wait() }()
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends SIGTERM and waits for the exit (a kill after 20 s fails the test).
func (d *daemon) stop(t testing.TB) error {
	if d.cmd.ProcessState != nil {
		return nil
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Errorf("numa-dra-plugin did not stop within 20 s of SIGTERM; log: %s", d.log)
		return <-d.done
	}
}

// wait returns the daemon's exit, or an error when it is still running after the timeout.
func (d *daemon) wait(timeout time.Duration) (error, bool) {
	select {
	case err := <-d.done:
		d.done <- err
		return err, true
	case <-time.After(timeout):
		return nil, false
	}
}

func (d *daemon) output() string {
	data, _ := os.ReadFile(d.log)
	return string(data)
}

// expectedSlices is what numa-probe says the node gets, read strictly: a field our types do
// not know fails here, so no field can be dropped unnoticed on the way.
// createNamespace creates the namespace and waits for its default service account, without
// which the API server refuses pods (the controller manager creates it a moment later).
func createNamespace(t testing.TB, c *cluster.Cluster, name string) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForDefaultServiceAccount(t, c, name)
}

func waitForDefaultServiceAccount(t testing.TB, c *cluster.Cluster, namespace string) {
	t.Helper()
	eventually(t, 30*time.Second, "namespace "+namespace+" has its default service account", func() bool {
		_, err := c.Admin.CoreV1().ServiceAccounts(namespace).Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil
	})
}

// gateOn says whether the control plane runs with the feature gate on.
func gateOn(c *cluster.Cluster, gate string) bool {
	return strings.Contains(","+c.Profile.FeatureGates+",", ","+gate+"=true,")
}

// expectedSlicesOn is what a daemon started with daemonArgs publishes on the cluster: numa-probe's
// slices for the same publishing flags, with the CPU devices' node-allocatable mappings where the
// cluster keeps them (the daemon's default, --node-allocatable-resources=auto).
func expectedSlicesOn(t testing.TB, c *cluster.Cluster, node, machine string, daemonArgs ...string) []resourceapi.ResourceSlice {
	t.Helper()
	mapped := gateOn(c, "DRANodeAllocatableResources")
	var probeArgs []string
	for _, arg := range daemonArgs {
		switch arg {
		case "--node-allocatable-resources=false":
			mapped = false
		case "--numa-list", "--shared-consumable-capacity", "--legacy-numa-attributes":
			probeArgs = append(probeArgs, arg) // what is published; the rest is the daemon's
		default:
			if strings.HasPrefix(arg, "--vf-layout=") {
				probeArgs = append(probeArgs, arg)
			}
		}
	}
	if mapped {
		probeArgs = append(probeArgs, "--node-allocatable-resources")
	}
	return expectedSlices(t, node, machine, probeArgs...)
}

func expectedSlices(t testing.TB, node, machine string, args ...string) []resourceapi.ResourceSlice {
	t.Helper()
	root := machineRoot(t, machine)
	cmd := exec.Command(filepath.Join(buildDir(t), "bin", "numa-probe"), append([]string{
		"--sysfs-root", filepath.Join(root, "sys"), "--node-name", node, "--driver-name", driverName, "--output", "json",
	}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("numa-probe %s: %v", machine, err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("numa-probe %s: %v", machine, err)
	}
	var slices []resourceapi.ResourceSlice
	for _, item := range list.Items {
		var slice resourceapi.ResourceSlice
		decoder := json.NewDecoder(bytes.NewReader(item))
		decoder.DisallowUnknownFields()
		if err := decoder.Decode(&slice); err != nil {
			t.Fatalf("numa-probe %s: a slice the v1 API types do not read: %v", machine, err)
		}
		slices = append(slices, slice)
	}
	return slices
}

// nodeSlices lists the driver's slices of the node, ordered by name.
func nodeSlices(t testing.TB, c *cluster.Cluster, node string) []resourceapi.ResourceSlice {
	t.Helper()
	list, err := c.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{
		FieldSelector: "spec.nodeName=" + node + ",spec.driver=" + driverName,
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	return list.Items
}

// specDifference says how the published specs differ from the expected ones ("" when equal),
// matched by the pool and the first device, whatever the slices are named.
func specDifference(published, expected []resourceapi.ResourceSlice) string {
	if len(published) != len(expected) {
		return fmt.Sprintf("%d slices published, %d expected", len(published), len(expected))
	}
	key := func(s resourceapi.ResourceSlice) string {
		first := ""
		if len(s.Spec.Devices) > 0 {
			first = s.Spec.Devices[0].Name
		}
		return s.Spec.Pool.Name + "/" + first + "/" + fmt.Sprint(len(s.Spec.SharedCounters))
	}
	byKey := map[string]resourceapi.ResourceSliceSpec{}
	for _, s := range expected {
		byKey[key(s)] = s.Spec
	}
	for _, s := range published {
		want, ok := byKey[key(s)]
		if !ok {
			return "unexpected slice " + s.Name + " (" + key(s) + ")"
		}
		// The pool's generation counts the daemon's updates; the rest must be what was sent.
		got := s.Spec
		got.Pool.Generation = want.Pool.Generation
		if !apiequality.Semantic.DeepEqual(got, want) {
			gotJSON, _ := json.MarshalIndent(got, "", " ")
			wantJSON, _ := json.MarshalIndent(want, "", " ")
			return fmt.Sprintf("slice %s differs:\npublished: %s\nexpected:  %s", s.Name, gotJSON, wantJSON)
		}
	}
	return ""
}

// waitForSlices polls until the node's slices are the expected ones.
func waitForSlices(t testing.TB, c *cluster.Cluster, d *daemon, node string, expected []resourceapi.ResourceSlice) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	difference := ""
	for time.Now().Before(deadline) {
		if difference = specDifference(nodeSlices(t, c, node), expected); difference == "" {
			return
		}
		if err, exited := d.wait(0); exited {
			t.Fatalf("numa-dra-plugin exited (%v) before publishing:\n%s", err, d.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("node %s: the slices in the API server are not numa-probe's after 30 s: %s\ndaemon log:\n%s", node, difference, d.output())
}

// Every mocked machine's slices, in the scalar and the list numaNode profiles, are accepted by
// the real API server with every DRA gate on and read back equal; SIGTERM deletes them.
func TestEveryMachinesSlicesAreAcceptedAndReadBackEqual(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	for _, machine := range machines(t) {
		t.Run(machine, func(t *testing.T) {
			node := "node-" + machine
			createNode(t, c, node, machine)
			for _, publishing := range [][]string{nil, {"--numa-list"}, {"--numa-list", "--legacy-numa-attributes"}} {
				// Health off: its taints are the health test's subject, not this one's.
				d := startDaemon(t, c, node, machine, append([]string{"--health=false"}, publishing...)...)
				waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, machine, publishing...))
				if err := d.stop(t); err != nil {
					t.Errorf("numa-dra-plugin %v: exit after SIGTERM: %v\n%s", publishing, err, d.output())
				}
				if left := nodeSlices(t, c, node); len(left) != 0 {
					t.Errorf("numa-dra-plugin %v: %d slices left after SIGTERM", publishing, len(left))
				}
			}
		})
	}
}

// expectRefusalNaming waits for the daemon to stop with a failure whose log names the gate.
func expectRefusalNaming(t *testing.T, d *daemon, gate string) {
	t.Helper()
	err, exited := d.wait(30 * time.Second)
	if !exited || err == nil {
		t.Fatalf("without %s: still running or exit 0 (%v)\n%s", gate, err, d.output())
	}
	if !strings.Contains(d.output(), gate) {
		t.Errorf("refused without naming %s:\n%s", gate, d.output())
	}
}

// Without DRAListTypeAttributes (1.37's defaults) --numa-list stops with a clear error and
// --numa-list=auto publishes scalars.
func TestWithoutListAttributesNumaListStopsAndAutoFallsBack(t *testing.T) {
	c := clusterFor(t, cluster.Defaults())
	installedDriver(t, c)
	const machine = "gpu4-nic"
	node := "node-" + machine
	createNode(t, c, node, machine)

	expectRefusalNaming(t, startDaemon(t, c, node, machine, "--numa-list", "--health=false"), "DRAListTypeAttributes")

	d := startDaemon(t, c, node, machine, "--numa-list=auto", "--health=false")
	waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, machine))
}

// Request-driven counters (KEP-5941, DRASharedConsumableCapacity) are not in Kubernetes 1.37.2:
// the API server drops the fields, and the daemon stops with an error naming the gate instead
// of publishing slices without their budgets.
func TestSharedConsumableCapacityIsRefusedCleanlyBy137(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const machine, node = "sriov-nic", "kep5941-sriov"
	createNode(t, c, node, machine)
	expectRefusalNaming(t, startDaemon(t, c, node, machine, "--shared-consumable-capacity", "--health=false"), "DRASharedConsumableCapacity")
	if left := nodeSlices(t, c, node); len(left) != 0 {
		t.Errorf("%d slices left behind by the refused daemon", len(left))
	}
}

func TestSlicesAreOwnedByTheirNode(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const machine = "sriov-nic"
	node := "owner-" + machine
	created := createNode(t, c, node, machine)
	d := startDaemon(t, c, node, machine, "--health=false")
	waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, machine))
	for _, slice := range nodeSlices(t, c, node) {
		owners := slice.OwnerReferences
		if len(owners) != 1 || owners[0].Kind != "Node" || owners[0].Name != node || owners[0].UID != created.UID {
			t.Errorf("slice %s owners %+v, want the Node %s (uid %s)", slice.Name, owners, node, created.UID)
		}
	}
}
