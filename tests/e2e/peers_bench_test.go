package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"numadra.dev/tests/e2e/cluster"
)

// Side by side with the peers (issue 27 §1; scripts/bench-peers.sh builds the peers from
// tests/bench/peers/ and runs BenchmarkPeersSideBySide). Every driver runs on the same machine
// against the same kube-apiserver, with a service-account token bound to a Pod on its node and
// the same RBAC, registered by a fake kubelet (GetInfo + NotifyRegistrationStatus) that then
// speaks DRA v1 over the socket the driver named. Starts alternate between the drivers
// (A/B/A/B...), so a slow minute of the machine hits all of them.
//
//	NUMADRA_PEERS_BIN       folder holding the peers' programs (bench-peers.sh sets it)
//	NUMADRA_PEERS_MACHINES  our daemon's machines: "host" (this machine's /sys) and mocked ones
//	                        (default host,big-2s-8n)
//	NUMADRA_PEERS_STARTS    starts per driver (default 7)
//	NUMADRA_PEERS_IDLE      seconds of idle CPU measured (default 60)
//	NUMADRA_PEERS_PREPARES  claims prepared and unprepared per pattern (default 40)

// contender is one driver as the benchmark runs it.
type contender struct {
	label  string // the table's column
	driver string // DRA driver name
	node   string
	slices int // slices a start publishes
	// start forks the driver; health says whether device health checking is on (for a driver
	// that has none, the same run serves both rows).
	start  func(b *testing.B, health bool) *daemon
	health bool // has device health checking to switch
}

// footprint is what /proc says of a running driver.
type footprint struct {
	rssKiB, hwmKiB int64
	threads, fds   int
}

func processFootprint(b *testing.B, pid int) footprint {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatalf("/proc/%d/status: %v", pid, err)
	}
	var f footprint
	for _, line := range strings.Split(string(status), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		value, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmRSS:":
			f.rssKiB = value
		case "VmHWM:":
			f.hwmKiB = value
		case "Threads:":
			f.threads = int(value)
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatalf("/proc/%d/fd: %v", pid, err)
	}
	f.fds = len(fds)
	return f
}

// cpuTime is the user + system time the process has used (clock ticks of 10 ms, Linux's
// USER_HZ of 100 on every architecture Kubernetes runs on).
func cpuTime(b *testing.B, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("/proc/%d/stat: %v", pid, err)
	}
	// The command name may hold spaces and parentheses: the fields start after the last ')'.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		b.Fatalf("/proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	user, _ := strconv.ParseInt(fields[11], 10, 64)
	system, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(user+system) * 10 * time.Millisecond
}

// registerAsKubelet does what the kubelet's plugin watcher does with a new registration socket
// in the folder: GetInfo, then NotifyRegistrationStatus. Returns the DRA service's socket.
func registerAsKubelet(b *testing.B, registry string, d *daemon) string {
	b.Helper()
	var socket string
	eventually(b, 30*time.Second, "a registration socket in "+registry, func() bool {
		entries, _ := os.ReadDir(registry)
		for _, entry := range entries {
			if entry.Type()&os.ModeSocket != 0 {
				socket = filepath.Join(registry, entry.Name())
				return true
			}
		}
		return false
	})
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	registration := registerapi.NewRegistrationClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := registration.GetInfo(ctx, &registerapi.InfoRequest{})
	if err != nil {
		b.Fatalf("GetInfo on %s: %v\n%s", socket, err, d.output())
	}
	if _, err := registration.NotifyRegistrationStatus(ctx, &registerapi.RegistrationStatus{PluginRegistered: true}); err != nil {
		b.Fatalf("NotifyRegistrationStatus on %s: %v", socket, err)
	}
	return info.Endpoint
}

// deleteDriverSlices removes the node's slices of the driver, so the next start is a first one.
func deleteDriverSlices(b *testing.B, c *cluster.Cluster, node, driver string) {
	b.Helper()
	selector := sliceSelector(node, driver)
	if err := c.Admin.ResourceV1().ResourceSlices().DeleteCollection(context.Background(),
		metav1.DeleteOptions{}, metav1.ListOptions{FieldSelector: selector}); err != nil {
		b.Fatalf("deleting the %s slices of %s: %v", driver, node, err)
	}
	eventually(b, 30*time.Second, "the "+driver+" slices of "+node+" are gone", func() bool {
		list, err := c.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(list.Items) == 0
	})
}

// startToPublished starts the driver and returns the time from its fork until a watch has seen
// all its slices; the driver is left running.
func startToPublished(b *testing.B, c *cluster.Cluster, who contender, health bool) (*daemon, time.Duration) {
	b.Helper()
	deleteDriverSlices(b, c, who.node, who.driver)
	return startedUntilPublished(b, c, sliceSelector(who.node, who.driver), who.slices, func() *daemon {
		return who.start(b, health)
	})
}

// stopDriver sends SIGTERM and waits for the exit.
func stopDriver(b *testing.B, who contender, d *daemon) {
	b.Helper()
	if err := d.stop(b); err != nil {
		b.Fatalf("%s did not stop cleanly: %v\n%s", who.label, err, d.output())
	}
}

// benchClaims creates n claims in the namespace, each allocated to the device on the node.
func benchClaims(b *testing.B, c *cluster.Cluster, namespace, prefix, driver, node string, device deviceRef, n int) []*drapb.Claim {
	b.Helper()
	ctx := context.Background()
	var claims []*drapb.Claim
	for i := 0; i < n; i++ {
		claim, err := c.Admin.ResourceV1().ResourceClaims(namespace).Create(ctx, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "device", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "peers-bench"},
			}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
		claim.Status.Allocation = &resourceapi.AllocationResult{
			Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{{
				Request: "device", Driver: driver, Pool: device.pool, Device: device.name,
			}}},
			NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchFields: []v1.NodeSelectorRequirement{{
				Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node},
			}}}}},
		}
		if claim, err = c.Admin.ResourceV1().ResourceClaims(namespace).UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			b.Fatal(err)
		}
		claims = append(claims, &drapb.Claim{Namespace: namespace, Name: claim.Name, Uid: string(claim.UID)})
	}
	return claims
}

type deviceRef struct{ pool, name string }

// firstPlainDevice is the first device of the node's slices of the driver that one claim can
// take whole (no allowMultipleAllocations: those need a share and consumed capacity).
func firstPlainDevice(b *testing.B, c *cluster.Cluster, node, driver string) deviceRef {
	b.Helper()
	list, err := c.Admin.ResourceV1().ResourceSlices().List(context.Background(), metav1.ListOptions{
		FieldSelector: sliceSelector(node, driver),
	})
	if err != nil {
		b.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	for _, slice := range list.Items {
		for _, device := range slice.Spec.Devices {
			if device.AllowMultipleAllocations == nil || !*device.AllowMultipleAllocations {
				return deviceRef{slice.Spec.Pool.Name, device.Name}
			}
		}
	}
	b.Fatalf("no device of %s on %s can be allocated whole", driver, node)
	return deviceRef{}
}

// latencies are the durations of one kind of call.
type latencies []time.Duration

func (l latencies) quantile(q float64) time.Duration {
	sorted := append(latencies(nil), l...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

// prepareRound prepares and unprepares each claim once, as the kubelet does for a pod, with
// `spacing` between calls (0: back to back), and returns each call's duration.
func prepareRound(b *testing.B, who contender, plugin drapb.DRAPluginClient, claims []*drapb.Claim, spacing time.Duration) (prepare, unprepare latencies) {
	b.Helper()
	for _, claim := range claims {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		began := time.Now()
		prepared, err := plugin.NodePrepareResources(ctx, &drapb.NodePrepareResourcesRequest{Claims: []*drapb.Claim{claim}})
		prepare = append(prepare, time.Since(began))
		if err != nil || prepared.Claims[claim.Uid] == nil || prepared.Claims[claim.Uid].Error != "" || len(prepared.Claims[claim.Uid].Devices) == 0 {
			cancel()
			b.Fatalf("%s: NodePrepareResources of %s: %v %v", who.label, claim.Name, err, prepared)
		}
		time.Sleep(spacing)
		began = time.Now()
		unprepared, err := plugin.NodeUnprepareResources(ctx, &drapb.NodeUnprepareResourcesRequest{Claims: []*drapb.Claim{claim}})
		unprepare = append(unprepare, time.Since(began))
		cancel()
		if err != nil || unprepared.Claims[claim.Uid] == nil || unprepared.Claims[claim.Uid].Error != "" {
			b.Fatalf("%s: NodeUnprepareResources of %s: %v %v", who.label, claim.Name, err, unprepared)
		}
		time.Sleep(spacing)
	}
	return prepare, unprepare
}

// peersResult is one contender's row of numbers.
type peersResult struct {
	start                          time.Duration
	steady, afterIdle              footprint
	idleHealthOn, idleHealthOff    float64 // % of one CPU
	prepareSpaced, unprepareSpaced latencies
	prepareBurst, unprepareBurst   latencies
	syncsPerClaim                  float64 // fsync-like calls per prepare + unprepare
}

// peerRBAC gives a peer's service account what its own chart grants: slices, claims, nodes.
func peerRBAC(b *testing.B, c *cluster.Cluster, namespace, account string) {
	b.Helper()
	ctx := context.Background()
	createNamespace(b, c, namespace)
	if _, err := c.Admin.CoreV1().ServiceAccounts(namespace).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceslices"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}},
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims", "deviceclasses"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{"resource.k8s.io"}, Resources: []string{"resourceclaims/status"}, Verbs: []string{"update", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes", "pods"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	if _, err := c.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: account},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: account},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: account, Namespace: namespace}},
	}
	if _, err := c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.Admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), account, metav1.DeleteOptions{})
		_ = c.Admin.RbacV1().ClusterRoles().Delete(context.Background(), account, metav1.DeleteOptions{})
	})
}

// ourContender runs numa-dra-plugin on the machine ("host": this machine's /sys and /proc).
func ourContender(b *testing.B, c *cluster.Cluster, machine string) contender {
	node := "peers-" + machine
	createNode(b, c, node, machine)
	return contender{
		label: "ours (" + machine + ")", driver: driverName, node: node, health: true,
		slices: len(expectedSlicesOn(b, c, node, machine)),
		start: func(b *testing.B, health bool) *daemon {
			return startDaemon(b, c, node, machine, fmt.Sprintf("--health=%t", health))
		},
	}
}

// exampleContender runs dra-example-driver's kubelet plugin with its defaults (8 GPUs in one
// slice, no device health checking).
func exampleContender(b *testing.B, c *cluster.Cluster, bin string) contender {
	const namespace, account, driver = "dra-example-driver", "dra-example-driver", "gpu.example.com"
	node := "peers-example"
	createNode(b, c, node, "host")
	peerRBAC(b, c, namespace, account)
	dir := filepath.Join(c.Dir, "nodes", node)
	sockets := kubeletDir(c, node)
	for _, sub := range []string{filepath.Join(sockets, "registry"), filepath.Join(sockets, "plugins"), filepath.Join(dir, "cdi")} {
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	kubeconfig := filepath.Join(dir, "driver.kubeconfig")
	if err := c.TokenKubeconfig(kubeconfig, podBoundToken(b, c, namespace, account, node)); err != nil {
		b.Fatal(err)
	}
	return contender{
		label: "dra-example-driver", driver: driver, node: node, slices: 1,
		start: func(b *testing.B, _ bool) *daemon {
			return startProcess(b, dir, filepath.Join(bin, "dra-example-kubeletplugin"),
				"--node-name", node, "--kubeconfig", kubeconfig, "--cdi-root", filepath.Join(dir, "cdi"),
				"--kubelet-registrar-directory-path", filepath.Join(sockets, "registry"),
				"--kubelet-plugins-directory-path", filepath.Join(sockets, "plugins"))
		},
	}
}

// idleCPU is the share of one CPU the driver used over the window, registered and idle.
func idleCPU(b *testing.B, d *daemon, window time.Duration) float64 {
	b.Helper()
	pid := d.cmd.Process.Pid
	before := cpuTime(b, pid)
	time.Sleep(window)
	return 100 * float64(cpuTime(b, pid)-before) / float64(window)
}

// measureRunning registers the started driver, lets it settle, reads its footprint, its idle
// CPU and, with claims, its prepare and unprepare latencies.
func measureRunning(b *testing.B, c *cluster.Cluster, who contender, d *daemon, idle time.Duration, claims []*drapb.Claim, result *peersResult, health bool) {
	b.Helper()
	endpoint := registerAsKubelet(b, filepath.Join(kubeletDir(c, who.node), "registry"), d)
	time.Sleep(10 * time.Second) // start-up work done, first health rounds over
	pid := d.cmd.Process.Pid
	if health {
		result.steady = processFootprint(b, pid)
		result.idleHealthOn = idleCPU(b, d, idle)
		result.afterIdle = processFootprint(b, pid)
		if !who.health {
			result.idleHealthOff = result.idleHealthOn
		}
	} else {
		result.idleHealthOff = idleCPU(b, d, idle)
	}
	if len(claims) == 0 {
		return
	}
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	plugin := drapb.NewDRAPluginClient(conn)
	measured := claims[:len(claims)-tracedClaims]
	half := len(measured) / 2
	result.prepareSpaced, result.unprepareSpaced = prepareRound(b, who, plugin, measured[:half], 300*time.Millisecond)
	result.prepareBurst, result.unprepareBurst = prepareRound(b, who, plugin, measured[half:], 0)
	result.syncsPerClaim = tracedRound(b, c, who, d, plugin, claims[len(measured):])
}

// tracedClaims are prepared and unprepared under strace, after the timed rounds (strace slows
// every system call): how many fsyncs a claim costs.
const tracedClaims = 4

// tracedRound counts the fsync-like calls of the driver's prepare and unprepare of each claim,
// with `strace -f -c` attached; -1 without strace. NUMADRA_PEERS_TRACE_DIR keeps a timed trace of
// every system call there too (<driver's node>.strace), to see where a prepare's time goes.
func tracedRound(b *testing.B, c *cluster.Cluster, who contender, d *daemon, plugin drapb.DRAPluginClient, claims []*drapb.Claim) float64 {
	b.Helper()
	strace, err := exec.LookPath("strace")
	if err != nil {
		b.Logf("no strace: fsyncs per claim not counted (%v)", err)
		return -1
	}
	summary := filepath.Join(c.Dir, who.node+"-syncs.txt")
	args := []string{"-f", "-p", strconv.Itoa(d.cmd.Process.Pid), "-o", summary}
	if dir := os.Getenv("NUMADRA_PEERS_TRACE_DIR"); dir != "" {
		summary = filepath.Join(dir, who.node+".strace")
		args = append(args[:len(args)-1], summary, "-tt", "-T")
	} else {
		args = append(args, "-c", "-e", "trace=fsync,fdatasync,sync_file_range,syncfs,sync")
	}
	tracer := exec.Command(strace, args...)
	if err := tracer.Start(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(time.Second) // strace attaches to every thread
	prepareRound(b, who, plugin, claims, 0)
	_ = tracer.Process.Signal(syscall.SIGINT)
	_ = tracer.Wait()
	data, err := os.ReadFile(summary)
	if err != nil {
		b.Fatal(err)
	}
	syncs := 0
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		for _, call := range []string{"fsync", "fdatasync", "sync_file_range", "syncfs", "sync"} {
			switch {
			case len(fields) >= 5 && fields[len(fields)-1] == call: // -c's table: calls in the 4th column
				n, _ := strconv.Atoi(fields[3])
				syncs += n
			case len(fields) >= 3 && strings.HasPrefix(fields[2], call+"("): // a timed trace's line
				syncs++
			}
		}
	}
	return float64(syncs) / float64(len(claims))
}

// BenchmarkPeersSideBySide: scripts/bench-peers.sh (docs/PERFORMANCE.md, "Side by side with the
// peers").
func BenchmarkPeersSideBySide(b *testing.B) {
	bin := requireEnv(b, "NUMADRA_PEERS_BIN")
	starts := envCount(b, "NUMADRA_PEERS_STARTS", 7)
	idle := time.Duration(envCount(b, "NUMADRA_PEERS_IDLE", 60)) * time.Second
	prepares := envCount(b, "NUMADRA_PEERS_PREPARES", 40)
	machinesWanted := strings.Split(os.Getenv("NUMADRA_PEERS_MACHINES"), ",")
	if os.Getenv("NUMADRA_PEERS_MACHINES") == "" {
		machinesWanted = []string{"host", "big-2s-8n"}
	}
	c := clusterFor(b, cluster.AllDRA())
	installedDriver(b, c)
	const namespace = "peers-bench"
	createNamespace(b, c, namespace)
	var contenders []contender
	for _, machine := range machinesWanted {
		contenders = append(contenders, ourContender(b, c, machine))
	}
	contenders = append(contenders, exampleContender(b, c, bin))
	results := make([]peersResult, len(contenders))
	for i := 0; i < b.N; i++ {
		var startTimes = make([][]time.Duration, len(contenders))
		for round := 0; round < starts; round++ {
			for n, who := range contenders {
				d, took := startToPublished(b, c, who, true)
				startTimes[n] = append(startTimes[n], took)
				stopDriver(b, who, d)
			}
		}
		for n, who := range contenders {
			results[n].start = median(startTimes[n])
			d, _ := startToPublished(b, c, who, true)
			device := firstPlainDevice(b, c, who.node, who.driver) // ours deletes its slices when stopped
			claims := benchClaims(b, c, namespace, fmt.Sprintf("c%d-%d", i, n), who.driver, who.node, device, prepares*2+tracedClaims)
			measureRunning(b, c, who, d, idle, claims, &results[n], true)
			stopDriver(b, who, d)
			if who.health {
				d, _ = startToPublished(b, c, who, false)
				measureRunning(b, c, who, d, idle, nil, &results[n], false)
				stopDriver(b, who, d)
			}
		}
	}
	reportPeers(b, contenders, results)
}

// reportPeers prints the table of docs/PERFORMANCE.md and each number as a benchmark metric.
func reportPeers(b *testing.B, contenders []contender, results []peersResult) {
	var table strings.Builder
	row := func(name string, cell func(r peersResult) string) {
		table.WriteString("| " + name)
		for _, r := range results {
			table.WriteString(" | " + cell(r))
		}
		table.WriteString(" |\n")
	}
	table.WriteString("| |")
	for _, who := range contenders {
		table.WriteString(" " + who.label + " |")
	}
	table.WriteString("\n|" + strings.Repeat(" --- |", len(contenders)+1) + "\n")
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f ms", milliseconds(d)) }
	mib := func(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }
	row("start → slices published (median)", func(r peersResult) string { return ms(r.start) })
	row("RSS steady / after idle (VmHWM)", func(r peersResult) string {
		return mib(r.steady.rssKiB) + " / " + mib(r.afterIdle.rssKiB) + " (" + mib(r.afterIdle.hwmKiB) + ")"
	})
	row("threads", func(r peersResult) string { return strconv.Itoa(r.afterIdle.threads) })
	row("open fds", func(r peersResult) string { return strconv.Itoa(r.afterIdle.fds) })
	row("idle CPU, health on / off", func(r peersResult) string {
		return fmt.Sprintf("%.3f %% / %.3f %%", r.idleHealthOn, r.idleHealthOff)
	})
	quantiles := func(l latencies) string { return ms(l.quantile(0.5)) + " / " + ms(l.quantile(0.99)) }
	row("Prepare p50 / p99, 300 ms apart", func(r peersResult) string { return quantiles(r.prepareSpaced) })
	row("Unprepare p50 / p99, 300 ms apart", func(r peersResult) string { return quantiles(r.unprepareSpaced) })
	row("Prepare p50 / p99, back to back", func(r peersResult) string { return quantiles(r.prepareBurst) })
	row("Unprepare p50 / p99, back to back", func(r peersResult) string { return quantiles(r.unprepareBurst) })
	row("fsyncs per prepare + unprepare", func(r peersResult) string { return fmt.Sprintf("%.1f", r.syncsPerClaim) })
	fmt.Fprintf(os.Stderr, "\nSide by side (%s):\n%s\n", time.Now().UTC().Format(time.RFC3339), table.String())
	for n, who := range contenders {
		r := results[n]
		key := strings.NewReplacer(" ", "-", "(", "", ")", "").Replace(who.label)
		b.ReportMetric(milliseconds(r.start), key+"-start-ms")
		b.ReportMetric(float64(r.afterIdle.rssKiB)/1024, key+"-rss-MiB")
		b.ReportMetric(float64(r.afterIdle.threads), key+"-threads")
		b.ReportMetric(r.idleHealthOn, key+"-idle-cpu-%")
		b.ReportMetric(milliseconds(r.prepareSpaced.quantile(0.5)), key+"-prepare-p50-ms")
		b.ReportMetric(milliseconds(r.unprepareSpaced.quantile(0.5)), key+"-unprepare-p50-ms")
	}
}
