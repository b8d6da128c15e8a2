package e2e

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"numadra.dev/tests/e2e/cluster"
)

// Issue 17 §1, against the real scheduler: the CPUs a claim gets from a CPU device count against
// the node's allocatable cpu when the device maps them (DRANodeAllocatableResources), so ordinary
// pods get only what is left; without the mapping the node double-books them.

const claimedCPUs = 8

// cpuClaimObjects is a claim for claimedCPUs of one NUMA node's CPUs and a pod using it on node.
func cpuClaimObjects(namespace, name, node string) (*resourceapi.ResourceClaim, *v1.Pod) {
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "cpus",
			Exactly: &resourceapi.ExactDeviceRequest{
				DeviceClassName: "cpu." + driverName,
				Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
					"cpu": *resource.NewQuantity(claimedCPUs, resource.DecimalSI),
				}},
			},
		}}}},
	}
	return claim, podOn(namespace, name, node)
}

// podOn is a pod using the claim of its own name, bound by its node selector to node.
func podOn(namespace, name, node string) *v1.Pod {
	pod := scalePod(namespace, name)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return pod
}

// createClaimAndPod creates the claim, then the pod using it.
func createClaimAndPod(t *testing.T, c *cluster.Cluster, claim *resourceapi.ResourceClaim, pod *v1.Pod) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Admin.ResourceV1().ResourceClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Admin.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func cpuClaimPod(t *testing.T, c *cluster.Cluster, namespace, name, node string) {
	t.Helper()
	claim, pod := cpuClaimObjects(namespace, name, node)
	createClaimAndPod(t, c, claim, pod)
}

// unscheduled is the pod as its author wrote it: no node, no status.
func unscheduled(pod *v1.Pod) *v1.Pod {
	copied := pod.DeepCopy()
	copied.Spec.NodeName, copied.Status, copied.ManagedFields = "", v1.PodStatus{}, nil
	return copied
}

// predictPods runs dra-allocate on the node's Node, slices and classes with these claims and
// pods, as the scheduler sees them.
func predictPods(t *testing.T, c *cluster.Cluster, node string, claims, pods []any) draAllocateOutput {
	t.Helper()
	dir := t.TempDir()
	dumpCluster(t, c, dir, []string{node})
	writeList(t, filepath.Join(dir, "4-claims.json"), "ResourceClaim", "resource.k8s.io/v1", claims)
	writeList(t, filepath.Join(dir, "5-pods.json"), "Pod", "v1", pods)
	return runDraAllocate(t, dir, "--node", node, "--explain")
}

// storedObjects is every claim and pod of the namespace as the API server holds them.
func storedObjects(t *testing.T, c *cluster.Cluster, namespace string) (claims, pods []any) {
	t.Helper()
	for _, claim := range claimsOf(t, c, []string{namespace}) {
		claim.ManagedFields = nil
		claims = append(claims, claim.DeepCopy())
	}
	list, err := c.Admin.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		list.Items[i].ManagedFields = nil
		pods = append(pods, &list.Items[i])
	}
	return claims, pods
}

// cpuPod creates an ordinary pod requesting cpus CPUs on node.
func cpuPod(t *testing.T, c *cluster.Cluster, namespace, name, node string, cpus int64) {
	t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []v1.Container{{Name: "app", Image: "registry.invalid/app:e2e",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU: *resource.NewQuantity(cpus, resource.DecimalSI),
				}}}},
		},
	}
	if _, err := c.Admin.CoreV1().Pods(namespace).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// placement waits until the pod is bound (true) or the scheduler says the node lacks CPUs (false).
func placement(t *testing.T, c *cluster.Cluster, namespace, name string) (bool, *v1.Pod) {
	t.Helper()
	pod, _ := schedulerVerdict(t, c, namespace, name, func(message string) bool {
		return strings.Contains(message, "Insufficient cpu")
	})
	return pod.Spec.NodeName != "", pod
}

func TestCPUsAClaimGetsAreTakenFromTheNodesAllocatable(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	const machine = "epyc-2s-nps4"
	cpus, _ := machineResources(t, machine)
	for _, run := range []struct {
		name   string
		flags  []string
		mapped bool
	}{
		{"mapped", nil, true},
		{"unmapped", []string{"--node-allocatable-resources=false"}, false},
	} {
		t.Run(run.name, func(t *testing.T) {
			node := "alloc-" + run.name
			publishedNode(t, c, node, machine, run.flags...)
			keepNodeReady(t, c, node)
			namespace := node
			createNamespace(t, c, namespace)
			t.Cleanup(func() { deleteScaleNamespace(c, namespace) })

			cpuClaimPod(t, c, namespace, "claimed", node)
			bound, pod := placement(t, c, namespace, "claimed")
			if !bound {
				t.Fatalf("the pod with the claim for %d CPUs was refused", claimedCPUs)
			}
			statuses := pod.Status.NodeAllocatableResourceClaimStatuses
			// dra-allocate, given the claim and the pod as they were before the scheduler
			// placed them, writes the same statuses into the pod.
			claim, err := c.Admin.ResourceV1().ResourceClaims(namespace).Get(context.Background(), "claimed", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			predicted := predictPods(t, c, node, []any{unallocated(claim)}, []any{unscheduled(pod)})
			if got := predicted.pods[namespace+"/claimed"]; got == nil ||
				!apiequality.Semantic.DeepEqual(got.Status.NodeAllocatableResourceClaimStatuses, statuses) {
				t.Errorf("dra-allocate's pod %+v, the scheduler's nodeAllocatableResourceClaimStatuses %+v\n%s", got, statuses, predicted.stderr)
			}
			if run.mapped {
				// The scheduler read the mapping: the pod's status carries the claim's cpu.
				if len(statuses) != 1 || len(statuses[0].Mapping) == 0 || statuses[0].Mapping[0].Name != v1.ResourceCPU ||
					statuses[0].Mapping[0].Quantity.Value() != claimedCPUs {
					t.Errorf("nodeAllocatableResourceClaimStatuses %+v, want the claim's cpu %d", statuses, claimedCPUs)
				}
			} else if len(statuses) != 0 {
				t.Errorf("nodeAllocatableResourceClaimStatuses %+v without a mapping", statuses)
			}

			left := cpus
			if run.mapped {
				left -= claimedCPUs
			}
			cpuPod(t, c, namespace, "one-too-many", node, left+1)
			if bound, _ := placement(t, c, namespace, "one-too-many"); bound {
				t.Errorf("a pod requesting %d CPUs was bound; %d of %d are left", left+1, left, cpus)
			}
			cpuPod(t, c, namespace, "the-rest", node, left)
			if bound, _ := placement(t, c, namespace, "the-rest"); !bound {
				t.Errorf("a pod requesting the %d CPUs left was refused", left)
			}
			t.Logf("%d CPUs, %d to a claim: ordinary pods got %d (mapped: %v)", cpus, claimedCPUs, left, run.mapped)

			// One more claim for 8 CPUs: dra-allocate, given the cluster as the scheduler sees
			// it, predicts the scheduler's answer (refused, the CPUs are taken, when mapped).
			claims, pods := storedObjects(t, c, namespace)
			again, againPod := cpuClaimObjects(namespace, "claimed-again", node)
			predicted = predictPods(t, c, node, append(claims, again), append(pods, againPod))
			predictedBound := predicted.allocations[namespace+"/claimed-again"] != nil
			if run.mapped && (predictedBound || !strings.Contains(predicted.stderr, "Insufficient cpu")) {
				t.Errorf("dra-allocate placed the second claim's pod on a full node: %s", predicted.stderr)
			}
			cpuClaimPod(t, c, namespace, "claimed-again", node)
			if bound, _ := placement(t, c, namespace, "claimed-again"); bound != predictedBound {
				t.Errorf("the scheduler bound the second claim's pod: %v, dra-allocate predicted %v\n%s", bound, predictedBound, predicted.stderr)
			}
		})
	}
}

// A node whose kubelet runs without the gate does not declare the feature, and the real API
// server's NodeDeclaredFeatures admission forbids mappings for it: the daemon (auto) publishes
// without them instead of retrying a refused write forever.
func TestAKubeletWithoutTheFeatureGetsSlicesWithoutMappings(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const machine = "gpu4-nic"
	node := "undeclared-" + machine
	createNode(t, c, node, machine)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
		_, err = c.Admin.CoreV1().Nodes().UpdateStatus(context.Background(), current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, c, node, machine, "--health=false")
	waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, machine, "--node-allocatable-resources=false"))

	// Required instead of auto: a clear stop naming the feature, and no slice left behind.
	if err := d.stop(t); err != nil {
		t.Fatal(err)
	}
	expectRefusalNaming(t, startDaemon(t, c, node, machine, "--node-allocatable-resources", "--health=false"), "DRANodeAllocatableResources")
	if left := nodeSlices(t, c, node); len(left) != 0 {
		t.Errorf("%d slices left after the refusal", len(left))
	}
}

// A node that declares nothing (a kubelet without NodeDeclaredFeatures) gives the daemon no hint:
// a dry-run create asks the real API server, whose admission refuses the mappings, so the first
// write is already without them (issue 27: no refused write at start-up).
func TestANodeThatDeclaresNothingIsDecidedBeforeTheFirstWrite(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	installedDriver(t, c)
	const machine = "gpu4-nic"
	node := "silent-" + machine
	createNode(t, c, node, machine)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := c.Admin.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		current.Status.DeclaredFeatures = nil
		_, err = c.Admin.CoreV1().Nodes().UpdateStatus(context.Background(), current, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	dryBefore, writesBefore := refusedSliceCreates(t, c)
	d := startDaemon(t, c, node, machine, "--health=false")
	waitForSlices(t, c, d, node, expectedSlicesOn(t, c, node, machine, "--node-allocatable-resources=false"))
	dryAfter, writesAfter := refusedSliceCreates(t, c)
	if dryAfter-dryBefore != 1 || writesAfter != writesBefore {
		t.Errorf("refused slice creates: %v dry runs and %v writes, want 1 dry run and no write\n%s",
			dryAfter-dryBefore, writesAfter-writesBefore, d.output())
	}
}

// refusedSliceCreates reads the API server's own count of slice creates it refused with 403
// (apiserver_request_total), dry runs and real writes apart.
func refusedSliceCreates(t *testing.T, c *cluster.Cluster) (dryRuns, writes float64) {
	t.Helper()
	body, err := c.Admin.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `code="403"`) ||
			!strings.Contains(line, `resource="resourceslices"`) || !strings.Contains(line, `verb="POST"`) {
			continue
		}
		fields := strings.Fields(line)
		value, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			t.Fatalf("apiserver_request_total line %q: %v", line, err)
		}
		if strings.Contains(line, `dry_run="All"`) {
			dryRuns += value
		} else {
			writes += value
		}
	}
	return dryRuns, writes
}
