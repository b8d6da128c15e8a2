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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"numadra.dev/tests/e2e/cluster"
)

// The real kube-scheduler against dra-allocate at scale (issue 16 §4): nodes published with the
// slices the daemon publishes for a mocked machine, one claim per pod (the GPU+NIC+CPU NUMA claim
// of deploy/examples), the pods created one after the other. The scheduler decides pods one at a
// time, in the order they were queued unless a first attempt failed and was retried later; the
// order its claims' allocations were stored in (their resourceVersions) is the order
// dra-allocate is given them in, and its answers must be the scheduler's, claim by claim. The
// CI test waits for each pod before creating the next, which pins that order down; the
// benchmark creates them all at once.

// scaleMachine has 8 GPUs, each on its own NUMA node with an RDMA NIC and CPUs: 8 claims a node.
const scaleMachine = "big-2s-8n"

type scaleRun struct {
	nodes, pods int
	// scheduler: the first pod created until the last pod bound.
	scheduler time.Duration
	// placed: dra-allocate, a whole process, given each pod's node as the scheduler chose it.
	placed time.Duration
	// choosing: dra-allocate choosing the nodes itself (first node that fits, by name).
	choosing          time.Duration
	choosingAllocated int
}

func (r scaleRun) podsPerSecond(d time.Duration) float64 { return float64(r.pods) / d.Seconds() }

// gpuNicCPUClaim is the claim spec of deploy/examples/gpu-nic-cpu-numa.
func gpuNicCPUClaim(t testing.TB) resourceapi.ResourceClaimSpec {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(sourceDir(t), "deploy", "examples", "gpu-nic-cpu-numa", "claim-template.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var template resourceapi.ResourceClaimTemplate
	if err := yaml.UnmarshalStrict(data, &template); err != nil {
		t.Fatalf("gpu-nic-cpu-numa/claim-template.yaml: %v", err)
	}
	return template.Spec.Spec
}

// publishNodes creates the Nodes and stores for each the slices numa-probe prints for it (what the
// daemon publishes: TestEveryMachinesSlicesAreAcceptedAndReadBackEqual), owned by their Node.
func publishNodes(t testing.TB, c *cluster.Cluster, prefix string, count int, machine string, daemonArgs ...string) []string {
	t.Helper()
	ctx := context.Background()
	names := make([]string, count)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%03d", prefix, i)
		node := createNode(t, c, names[i], machine)
		for _, slice := range expectedSlicesOn(t, c, names[i], machine, daemonArgs...) {
			slice.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}}
			if _, err := c.Admin.ResourceV1().ResourceSlices().Create(ctx, &slice, metav1.CreateOptions{}); err != nil {
				t.Fatalf("slice %s: %v", slice.Name, err)
			}
		}
	}
	keepNodesReady(t, c, names)
	return names
}

// boundTimes watches the namespace's pods and records when each got its node.
type boundTimes struct {
	mu    sync.Mutex
	bound map[string]time.Time
	stop  func()
}

func watchBinding(t testing.TB, c *cluster.Cluster, namespace string) *boundTimes {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.Admin.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{TimeoutSeconds: ptr.To(int64(3600))})
	if err != nil {
		t.Fatal(err)
	}
	times := &boundTimes{bound: map[string]time.Time{}}
	done := make(chan struct{})
	times.stop = func() { cancel(); w.Stop(); <-done }
	go func() {
		defer close(done)
		for event := range w.ResultChan() {
			pod, ok := event.Object.(*v1.Pod)
			if !ok || event.Type == watch.Deleted || pod.Spec.NodeName == "" {
				continue
			}
			now := time.Now()
			times.mu.Lock()
			if _, seen := times.bound[pod.Name]; !seen {
				times.bound[pod.Name] = now
			}
			times.mu.Unlock()
		}
	}()
	return times
}

func (b *boundTimes) count() (int, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var last time.Time
	for _, at := range b.bound {
		if at.After(last) {
			last = at
		}
	}
	return len(b.bound), last
}

func scalePodName(i int) string { return fmt.Sprintf("pod-%04d", i) }

// runAtScale schedules pods on nodes published for the machine, then gives dra-allocate the same
// cluster twice: with the scheduler's nodes (its answers must be identical) and choosing nodes.
func runAtScale(t testing.TB, c *cluster.Cluster, prefix string, nodes, pods int, oneByOne bool, daemonArgs ...string) scaleRun {
	t.Helper()
	ctx := context.Background()
	installedDriver(t, c)
	names := publishNodes(t, c, prefix, nodes, scaleMachine, daemonArgs...)
	createNamespace(t, c, prefix)
	t.Cleanup(func() { deleteScaleNamespace(c, prefix) })
	spec := gpuNicCPUClaim(t)
	for i := 0; i < pods; i++ {
		claim := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: scalePodName(i), Namespace: prefix}, Spec: spec}
		if _, err := c.Admin.ResourceV1().ResourceClaims(prefix).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bound := watchBinding(t, c, prefix)
	defer bound.stop()
	started := time.Now()
	for i := 0; i < pods; i++ {
		if _, err := c.Admin.CoreV1().Pods(prefix).Create(ctx, scalePod(prefix, scalePodName(i)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for oneByOne {
			if n, _ := bound.count(); n > i {
				break
			}
			if time.Since(started) > time.Duration(i+1)*30*time.Second {
				t.Fatalf("pod %s not bound: %s", scalePodName(i), firstUnschedulable(t, c, prefix))
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// The scheduler's pace depends on the cluster's size: fail only when it stops making progress.
	progressed, lastCount := time.Now(), 0
	for {
		n, last := bound.count()
		if n == pods {
			run := scaleRun{nodes: nodes, pods: pods, scheduler: last.Sub(started)}
			compareAtScale(t, c, prefix, names, &run)
			retireNodes(t, c, names)
			return run
		}
		if n != lastCount {
			progressed, lastCount = time.Now(), n
		}
		if time.Since(progressed) > 2*time.Minute {
			t.Fatalf("%d of %d pods bound, none in the last 2 minutes (%s since the first was created): %s",
				n, pods, time.Since(started).Round(time.Second), firstUnschedulable(t, c, prefix))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// retireNodes deletes the nodes and their slices, so that a later run in the same cluster (the
// benchmark's next layout) schedules onto its own nodes only.
func retireNodes(t testing.TB, c *cluster.Cluster, names []string) {
	t.Helper()
	ctx := context.Background()
	for _, name := range names {
		selector := metav1.ListOptions{FieldSelector: "spec.nodeName=" + name + ",spec.driver=" + driverName}
		if err := c.Admin.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{}, selector); err != nil {
			t.Fatalf("deleting the slices of %s: %v", name, err)
		}
		if err := c.Admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatalf("deleting node %s: %v", name, err)
		}
	}
}

func scalePod(namespace, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "devices", ResourceClaimName: ptr.To(name)}},
			Containers: []v1.Container{{Name: "app", Image: "registry.invalid/app:e2e",
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "devices"}}}}},
		},
	}
}

func firstUnschedulable(t testing.TB, c *cluster.Cluster, namespace string) string {
	list, err := c.Admin.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	for _, pod := range list.Items {
		for _, condition := range pod.Status.Conditions {
			if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse {
				return fmt.Sprintf("pod %s: %s", pod.Name, condition.Message)
			}
		}
	}
	return "no pod says why"
}

// deleteScaleNamespace removes the pods at once (no kubelet confirms their end), then the rest.
func deleteScaleNamespace(c *cluster.Cluster, namespace string) {
	ctx := context.Background()
	_ = c.Admin.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
	_ = c.Admin.CoreV1().Namespaces().Delete(ctx, namespace, metav1.DeleteOptions{})
}

// compareAtScale dumps what the scheduler saw, runs dra-allocate on it with and without the
// scheduler's nodes, and fails on any claim whose allocation differs from the scheduler's.
func compareAtScale(t testing.TB, c *cluster.Cluster, namespace string, nodes []string, run *scaleRun) {
	t.Helper()
	ctx := context.Background()
	podList, err := c.Admin.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	claimList, err := c.Admin.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int64{} // claim name -> resourceVersion of its allocation
	for _, claim := range claimList.Items {
		stored[claim.Name], _ = strconv.ParseInt(claim.ResourceVersion, 10, 64)
	}
	// Each pod's claim has the pod's name; in the order the scheduler stored the allocations.
	sort.Slice(podList.Items, func(i, j int) bool { return stored[podList.Items[i].Name] < stored[podList.Items[j].Name] })
	scheduled := map[string]*resourceapi.AllocationResult{}
	var claimItems []any
	for i := range claimList.Items {
		claim := &claimList.Items[i]
		scheduled[claim.Name] = claim.Status.Allocation
		claimItems = append(claimItems, unallocated(claim))
	}
	dir := filepath.Join(c.Dir, "scale", namespace)
	dumpCluster(t, c, dir, nodes)
	writeList(t, filepath.Join(dir, "4-claims.json"), "ResourceClaim", "resource.k8s.io/v1", claimItems)

	var placedPods, choosingPods []any
	nodeOf := map[string]string{}
	for i := range podList.Items {
		pod := podList.Items[i].DeepCopy()
		pod.ManagedFields, pod.Status = nil, v1.PodStatus{}
		nodeOf[pod.Name] = pod.Spec.NodeName
		placedPods = append(placedPods, pod)
		free := pod.DeepCopy()
		free.Spec.NodeName = ""
		choosingPods = append(choosingPods, free)
	}
	writeList(t, filepath.Join(dir, "5-pods.json"), "Pod", "v1", placedPods)
	predicted, elapsed, _ := draAllocate(t, dir)
	run.placed = elapsed
	for _, pod := range podList.Items {
		if difference := allocationDifference(nodeOf[pod.Name], scheduled[pod.Name], predicted[namespace+"/"+pod.Name]); difference != "" {
			t.Fatalf("claim %s/%s on node %s (dump in %s):\n%s", namespace, pod.Name, nodeOf[pod.Name], dir, difference)
		}
	}
	writeList(t, filepath.Join(dir, "5-pods.json"), "Pod", "v1", choosingPods)
	chosen, elapsed, _ := draAllocate(t, dir)
	run.choosing = elapsed
	for _, allocation := range chosen {
		if allocation != nil {
			run.choosingAllocated++
		}
	}
}

// dumpCluster writes the nodes, their slices and the DeviceClasses as dra-allocate reads them.
func dumpCluster(t testing.TB, c *cluster.Cluster, dir string, nodes []string) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	var nodeItems, sliceItems, classItems []any
	for _, name := range nodes {
		ours[name] = true
		node, err := c.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.ManagedFields = nil
		nodeItems = append(nodeItems, node)
	}
	slices, err := c.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range slices.Items {
		if slice := &slices.Items[i]; slice.Spec.NodeName != nil && ours[*slice.Spec.NodeName] {
			slice.ManagedFields = nil
			sliceItems = append(sliceItems, slice)
		}
	}
	classes, err := c.Admin.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range classes.Items {
		classItems = append(classItems, &classes.Items[i])
	}
	writeList(t, filepath.Join(dir, "1-nodes.json"), "Node", "v1", nodeItems)
	writeList(t, filepath.Join(dir, "2-slices.json"), "ResourceSlice", "resource.k8s.io/v1", sliceItems)
	writeList(t, filepath.Join(dir, "3-classes.json"), "DeviceClass", "resource.k8s.io/v1", classItems)
}

// draAllocate runs dra-allocate on the folder and returns each claim's allocation by
// namespace/name, the process's wall time (reading and parsing the files included) and what it
// said on stderr.
func draAllocate(t testing.TB, dir string, args ...string) (map[string]*resourceapi.AllocationResult, time.Duration, string) {
	t.Helper()
	out := runDraAllocate(t, dir, args...)
	return out.allocations, out.elapsed, out.stderr
}

// draAllocateOutput is what dra-allocate printed: the claims' allocations and the pods, by
// namespace/name.
type draAllocateOutput struct {
	allocations map[string]*resourceapi.AllocationResult
	pods        map[string]*v1.Pod
	elapsed     time.Duration
	stderr      string
}

func runDraAllocate(t testing.TB, dir string, args ...string) draAllocateOutput {
	t.Helper()
	cmd := exec.Command(filepath.Join(buildDir(t), "bin", "dra-allocate"), append(append([]string{"--output", "json"}, args...), dir)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	started := time.Now()
	err := cmd.Run()
	elapsed := time.Since(started)
	if exit, ok := err.(*exec.ExitError); err != nil && (!ok || exit.ExitCode() != 1) {
		t.Fatalf("dra-allocate %s: %v\n%s", dir, err, stderr.String())
	}
	var out struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("dra-allocate's output: %v", err)
	}
	result := draAllocateOutput{map[string]*resourceapi.AllocationResult{}, map[string]*v1.Pod{}, elapsed, stderr.String()}
	for _, raw := range out.Items {
		var meta metav1.TypeMeta
		_ = json.Unmarshal(raw, &meta)
		switch meta.Kind {
		case "ResourceClaim":
			var claim resourceapi.ResourceClaim
			if err := json.Unmarshal(raw, &claim); err != nil {
				t.Fatalf("dra-allocate's claim: %v", err)
			}
			result.allocations[claim.Namespace+"/"+claim.Name] = claim.Status.Allocation
		case "Pod":
			var pod v1.Pod
			if err := json.Unmarshal(raw, &pod); err != nil {
				t.Fatalf("dra-allocate's pod: %v", err)
			}
			result.pods[pod.Namespace+"/"+pod.Name] = &pod
		}
	}
	return result
}

func TestTheSchedulerAtScaleAllocatesWhatDraAllocatePredicts(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	run := runAtScale(t, c, "scale-ci", 4, 24, true)
	t.Logf("%d pods on %d nodes, one at a time: the scheduler bound all; dra-allocate given its nodes gave identical answers, choosing nodes allocated %d",
		run.pods, run.nodes, run.choosingAllocated)
	if run.choosingAllocated != run.pods {
		t.Errorf("dra-allocate choosing nodes allocated %d of %d claims; the scheduler found room for all", run.choosingAllocated, run.pods)
	}
}

func envCount(t testing.TB, name string, fallback int) int {
	value := os.Getenv(name)
	if value == "" {
		return fallback
	}
	n, err := strconv.Atoi(value)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive number", name, value)
	}
	return n
}

// benchLayouts is NUMADRA_E2E_BENCH_LAYOUTS: the --vf-layout values to compare, in order.
func benchLayouts(b *testing.B) []string {
	value := os.Getenv("NUMADRA_E2E_BENCH_LAYOUTS")
	if value == "" {
		value = "individual,pooled"
	}
	layouts := strings.Split(value, ",")
	for _, layout := range layouts {
		if layout != "individual" && layout != "pooled" {
			b.Fatalf("NUMADRA_E2E_BENCH_LAYOUTS=%q: %q is not individual or pooled", value, layout)
		}
	}
	return layouts
}

// BenchmarkSchedulerAgainstDraAllocate: scripts/e2e.sh --bench SchedulerAgainstDraAllocate
// (NUMADRA_E2E_BENCH_NODES, NUMADRA_E2E_BENCH_PODS; default 125 nodes, 1,000 pods), once per
// VF layout of NUMADRA_E2E_BENCH_LAYOUTS (default individual,pooled), in one run on one cluster.
func BenchmarkSchedulerAgainstDraAllocate(b *testing.B) {
	nodes := envCount(b, "NUMADRA_E2E_BENCH_NODES", 125)
	pods := envCount(b, "NUMADRA_E2E_BENCH_PODS", 1000)
	layouts := benchLayouts(b)
	c := clusterFor(b, cluster.AllDRA())
	for i := 0; i < b.N; i++ {
		for _, layout := range layouts {
			prefix := fmt.Sprintf("scale-bench-%d-%s", i, layout)
			run := runAtScale(b, c, prefix, nodes, pods, false, "--vf-layout="+layout)
			b.ReportMetric(run.podsPerSecond(run.scheduler), layout+"-scheduler-pods/s")
			b.ReportMetric(run.podsPerSecond(run.placed), layout+"-dra-allocate-placed-pods/s")
			b.ReportMetric(run.podsPerSecond(run.choosing), layout+"-dra-allocate-choosing-pods/s")
			b.ReportMetric(run.scheduler.Seconds()/run.placed.Seconds(), layout+"-ratio-placed")
			b.ReportMetric(run.scheduler.Seconds()/run.choosing.Seconds(), layout+"-ratio-choosing")
			b.ReportMetric(float64(run.choosingAllocated), layout+"-choosing-allocated")
			// The nodes of this layout stay (their slices would be republished by nobody): the
			// next layout's nodes have names of their own, and the scheduler skips full nodes.
		}
	}
}
