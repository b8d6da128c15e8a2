package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cluster"
)

// Pods sharing claims through the real scheduler (issue 23 §3): a seeded generator makes Pods
// that use claims of their own and claims they share, some shared claims already allocated on a
// node by an earlier Pod, on three nodes whose GPUs differ in model, one of them with an invalid
// pool besides its good one (a device listed in two slices of the pool). The Pods go to the
// scheduler one at a time, each ranking the nodes by name (preferNodesByName), so that the node
// it chooses among those that fit is the one dra-allocate chooses. After each decision,
// dra-allocate on the cluster as the scheduler saw it (the earlier Pods bound to their nodes with
// their claims' allocations, the unschedulable ones still pending) must decide the same: the
// same node and devices, or unschedulable; and at the end, given every Pod and claim as they were
// created, it must place every Pod as the scheduler did.
// NUMADRA_E2E_SHARED_SEED (the first seed, 1), NUMADRA_E2E_SHARED_SEEDS (how many, 3) and
// NUMADRA_E2E_SHARED_PODS (pods per seed, 16) vary the sample.

const sharedDriver = "share.example.com"

// sharedNodeModels are the models of each node's four GPUs: a selector on a model leaves two of
// the three nodes.
var sharedNodeModels = [][]string{{"a", "a", "b", "b"}, {"b", "b", "c", "c"}, {"c", "c", "a", "a"}}

// sharedSlices are a node's devices: four GPUs (NUMA 0, 0, 1, 1) and two NICs (NUMA 0, 1) in one
// pool, and, when broken, a second pool made invalid by a GPU listed in both its slices.
func sharedSlices(node string, models []string, broken bool) []resourceapi.ResourceSlice {
	device := func(name, kind, model string, numa int64) resourceapi.Device {
		attributes := map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			"kind": {StringValue: ptr.To(kind)},
			"numa": {IntValue: ptr.To(numa)},
		}
		if model != "" {
			attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To(model)}
		}
		return resourceapi.Device{Name: name, Attributes: attributes}
	}
	var devices []resourceapi.Device
	for i, model := range models {
		devices = append(devices, device(fmt.Sprintf("gpu-%d", i), "gpu", model, int64(i/2)))
	}
	devices = append(devices, device("nic-0", "nic", "", 0), device("nic-1", "nic", "", 1))
	slice := func(name, pool string, count int64, devices []resourceapi.Device) resourceapi.ResourceSlice {
		return resourceapi.ResourceSlice{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceSliceSpec{
				Driver: sharedDriver, NodeName: ptr.To(node),
				Pool:    resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: count},
				Devices: devices,
			},
		}
	}
	slices := []resourceapi.ResourceSlice{slice(node+"-devices", node, 1, devices)}
	if broken {
		twice := []resourceapi.Device{device("gpu-twice", "gpu", models[0], 0)}
		slices = append(slices, slice(node+"-broken-0", node+"-broken", 2, twice), slice(node+"-broken-1", node+"-broken", 2, twice))
	}
	return slices
}

func sharedClasses() []*resourceapi.DeviceClass {
	var classes []*resourceapi.DeviceClass
	for _, kind := range []string{"gpu", "nic"} {
		classes = append(classes, &resourceapi.DeviceClass{
			ObjectMeta: metav1.ObjectMeta{Name: "share-" + kind},
			Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.driver == %q && device.attributes[%q].kind == %q`, sharedDriver, sharedDriver, kind),
			}}}},
		})
	}
	return classes
}

type sharingGenerator struct{ rng *rand.Rand }

func (g *sharingGenerator) chance(percent int) bool { return g.rng.IntN(100) < percent }

// claim is one to three GPU or NIC requests, a GPU model or NUMA node sometimes selected, the
// requests sometimes on one NUMA node; now and then more GPUs than a node has.
func (g *sharingGenerator) claim(namespace, name string) *resourceapi.ResourceClaim {
	var requests []resourceapi.DeviceRequest
	for i := 0; i < 1+g.rng.IntN(2); i++ {
		exact := &resourceapi.ExactDeviceRequest{DeviceClassName: "share-gpu", Count: 1}
		if g.chance(30) {
			exact.DeviceClassName = "share-nic"
		} else {
			if g.chance(30) {
				exact.Count = 2
			}
			if g.chance(40) {
				exact.Selectors = []resourceapi.DeviceSelector{{CEL: &resourceapi.CELDeviceSelector{
					Expression: fmt.Sprintf(`device.attributes[%q].model == %q`, sharedDriver, []string{"a", "b", "c"}[g.rng.IntN(3)]),
				}}}
			}
		}
		if g.chance(10) {
			exact.Selectors = append(exact.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{
				Expression: fmt.Sprintf(`device.attributes[%q].numa == %d`, sharedDriver, g.rng.IntN(2)),
			}})
		}
		requests = append(requests, resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i), Exactly: exact})
	}
	if g.chance(7) {
		requests[0].Exactly.DeviceClassName, requests[0].Exactly.Count, requests[0].Exactly.Selectors = "share-gpu", 5, nil
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
	if len(requests) > 1 && g.chance(50) {
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{
			MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(sharedDriver + "/numa")),
		}}
	}
	return claim
}

// pod uses some of the shared claims and claims of its own (at least one claim in all).
func (g *sharingGenerator) pod(namespace, name string, shared []string) (*v1.Pod, []*resourceapi.ResourceClaim) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "registry.invalid/app:e2e"}}},
	}
	use := func(podClaim, claim string) {
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, v1.PodResourceClaim{Name: podClaim, ResourceClaimName: ptr.To(claim)})
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: podClaim})
	}
	for _, i := range g.rng.Perm(len(shared))[:g.rng.IntN(3)] {
		use("shared-"+fmt.Sprint(i), shared[i])
	}
	var own []*resourceapi.ResourceClaim
	for i := 0; i < g.rng.IntN(3) || len(pod.Spec.ResourceClaims) == 0; i++ {
		claim := g.claim(namespace, fmt.Sprintf("%s-own-%d", name, i))
		own = append(own, claim)
		use(fmt.Sprintf("own-%d", i), claim.Name)
	}
	return pod, own
}

func TestGeneratedPodsSharingClaimsAreScheduledAsDraAllocatePredicts(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	first := envCount(t, "NUMADRA_E2E_SHARED_SEED", 1)
	seeds := envCount(t, "NUMADRA_E2E_SHARED_SEEDS", 3)
	pods := envCount(t, "NUMADRA_E2E_SHARED_PODS", 16)
	for _, class := range sharedClasses() {
		if _, err := c.Admin.ResourceV1().DeviceClasses().Create(context.Background(), class, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = c.Admin.ResourceV1().DeviceClasses().Delete(context.Background(), class.Name, metav1.DeleteOptions{})
		})
	}
	var total sharingCoverage
	for seed := first; seed < first+seeds; seed++ {
		t.Run(fmt.Sprintf("seed-%d", seed), func(t *testing.T) {
			total.add(generateSharingRun(t, c, uint64(seed), pods))
		})
	}
	// The sample must reach what it is there to judge: a test that cannot fail is no test.
	if !t.Failed() && (total.sharedElsewhere == 0 || total.retried == 0 || total.passedOver == 0) {
		t.Errorf("seeds %d..%d cover too little to judge: %d pods bound where an earlier pod's shared claim was (not the first node), %d bound with a shared claim a failed pod left unallocated, %d bound past the node with the invalid pool; choose other seeds or more pods",
			first, first+seeds-1, total.sharedElsewhere, total.retried, total.passedOver)
	}
}

// sharingCoverage counts the decisions that could show the differences the generator is for.
type sharingCoverage struct {
	// sharedElsewhere: pods bound to the node an earlier pod's shared claim is on, not the
	// first node by name (where a claim of their own would go if the shared one were ignored).
	sharedElsewhere int
	// retried: pods bound with a shared claim an unschedulable pod used before them.
	retried int
	// passedOver: pods bound to a node after the one with the invalid pool, which failed them.
	passedOver int
}

func (c *sharingCoverage) add(o sharingCoverage) {
	c.sharedElsewhere += o.sharedElsewhere
	c.retried += o.retried
	c.passedOver += o.passedOver
}

// generateSharingRun makes three nodes, four shared claims and the pods of one seed, each
// decided by the scheduler and compared with dra-allocate, then replays them all.
func generateSharingRun(t *testing.T, c *cluster.Cluster, seed uint64, pods int) sharingCoverage {
	ctx := context.Background()
	g := &sharingGenerator{rng: rand.New(rand.NewPCG(seed, 0x73686172))}
	var nodes []string
	for _, suffix := range []string{"a", "b", "c"} {
		nodes = append(nodes, fmt.Sprintf("shared-%d-%s", seed, suffix))
	}
	broken := g.rng.IntN(2) // an invalid pool on one of the two nodes the pods prefer
	for i, name := range nodes {
		createReadyNode(t, c, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		for _, slice := range sharedSlices(name, sharedNodeModels[i], i == broken) {
			if _, err := c.Admin.ResourceV1().ResourceSlices().Create(ctx, &slice, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = c.Admin.ResourceV1().ResourceSlices().Delete(context.Background(), slice.Name, metav1.DeleteOptions{})
			})
		}
	}
	keepNodesReady(t, c, nodes)
	namespace := fmt.Sprintf("shared-claims-%d", seed)
	createNamespace(t, c, namespace)
	t.Cleanup(func() { deleteScaleNamespace(c, namespace) })

	run := &sharingRun{c: c, namespace: namespace, nodes: nodes, broken: nodes[broken],
		dir: filepath.Join(c.Dir, "shared", fmt.Sprint(seed)), failedClaims: map[string]bool{}}
	var shared []string
	for i := 0; i < 4; i++ {
		claim := g.claim(namespace, fmt.Sprintf("shared-%d", i))
		run.createClaim(t, claim)
		shared = append(shared, claim.Name)
	}
	for i := 0; i < pods; i++ {
		pod, own := g.pod(namespace, fmt.Sprintf("pod-%02d", i), shared)
		run.decide(t, pod, own)
	}
	run.replay(t)
	t.Logf("%d generated pods (seed %d, invalid pool on %s) sharing %d claims on %d nodes: %d bound (%d where an earlier pod's shared claim was, %d with a shared claim an unschedulable pod left, %d past the invalid pool's node), %d unschedulable; dra-allocate decided each the same, and the same replaying them all",
		pods, seed, run.broken, len(shared), len(nodes), run.bound, run.coverage.sharedElsewhere, run.coverage.retried, run.coverage.passedOver, pods-run.bound)
	return run.coverage
}

// sharingRun is the cluster of the generated pods, in the order they were made.
type sharingRun struct {
	c         *cluster.Cluster
	namespace string
	nodes     []string
	dir       string
	// created are the claims and pods as the API server stored them on creation, in that order:
	// the replay's input.
	createdClaims []*resourceapi.ResourceClaim
	createdPods   []*v1.Pod
	// broken is the node with the invalid pool.
	broken string
	// failed are the pods the scheduler found unschedulable (they stay, pending), failedClaims
	// the claims they use.
	failed       []string
	failedClaims map[string]bool
	bound        int
	coverage     sharingCoverage
}

func (r *sharingRun) createClaim(t *testing.T, claim *resourceapi.ResourceClaim) {
	t.Helper()
	stored, err := r.c.Admin.ResourceV1().ResourceClaims(r.namespace).Create(context.Background(), claim, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("generated claim %s refused by the API server: %v\n%s", claim.Name, err, describeClaim(claim))
	}
	stored.ManagedFields = nil
	r.createdClaims = append(r.createdClaims, stored)
}

// usedClaims are the names of the claims the pods use: dra-allocate is given only those (and
// allocated ones), as a claim no pod uses is not the scheduler's to allocate.
func usedClaims(pods []*v1.Pod) map[string]bool {
	used := map[string]bool{}
	for _, pod := range pods {
		for _, podClaim := range pod.Spec.ResourceClaims {
			used[*podClaim.ResourceClaimName] = true
		}
	}
	return used
}

// snapshot is the namespace's claims and pods as the API server holds them.
func (r *sharingRun) snapshot(t *testing.T) (map[string]*resourceapi.ResourceClaim, []*v1.Pod) {
	t.Helper()
	ctx := context.Background()
	claims := map[string]*resourceapi.ResourceClaim{}
	list, err := r.c.Admin.ResourceV1().ResourceClaims(r.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		list.Items[i].ManagedFields = nil
		claims[list.Items[i].Name] = &list.Items[i]
	}
	var pods []*v1.Pod
	for _, created := range r.createdPods {
		pod, err := r.c.Admin.CoreV1().Pods(r.namespace).Get(ctx, created.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pod.ManagedFields = nil
		pods = append(pods, pod)
	}
	return claims, pods
}

// decide creates the pod's own claims and the pod, waits for the scheduler, and compares with
// dra-allocate on the cluster as the scheduler saw it.
func (r *sharingRun) decide(t *testing.T, pod *v1.Pod, own []*resourceapi.ResourceClaim) {
	t.Helper()
	ctx := context.Background()
	for _, claim := range own {
		r.createClaim(t, claim)
	}
	// What the scheduler sees when the pod comes: the claims, the earlier pods.
	claimsBefore, podsBefore := r.snapshot(t)
	preferNodesByName(pod, r.nodes)
	created, err := r.c.Admin.CoreV1().Pods(r.namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.ManagedFields = nil
	r.createdPods = append(r.createdPods, created)
	why := awaitPlacement(t, r.c, r.namespace, pod.Name, len(r.nodes))
	sharedBefore := ""
	for _, podClaim := range pod.Spec.ResourceClaims {
		if claim := claimsBefore[*podClaim.ResourceClaimName]; claim != nil && claim.Status.Allocation != nil {
			sharedBefore = allocatedNode(claim.Status.Allocation)
		}
	}

	// dra-allocate on that cluster: the claims some pod uses or that are allocated (a claim no
	// pod uses is not the scheduler's to allocate), the earlier pods, then this one.
	inUse := usedClaims(append(podsBefore, created))
	var objects []any
	objects = append(objects, r.clusterObjects(t)...)
	for _, claim := range r.createdClaims {
		if current := claimsBefore[claim.Name]; current != nil && (inUse[claim.Name] || current.Status.Allocation != nil) {
			objects = append(objects, current)
		}
	}
	for _, p := range podsBefore {
		objects = append(objects, p)
	}
	objects = append(objects, created.DeepCopy())
	dir := filepath.Join(r.dir, pod.Name)
	predicted := predictObjects(t, dir, objects)

	claimsAfter, podsAfter := r.snapshot(t)
	stored := podsAfter[len(podsAfter)-1]
	lookup := func(claims map[string]*resourceapi.ResourceClaim) func(string) *resourceapi.AllocationResult {
		return func(name string) *resourceapi.AllocationResult {
			if claim := claims[name]; claim != nil {
				return claim.Status.Allocation
			}
			return nil
		}
	}
	scheduler := placementOf(stored, stored.Spec.NodeName, lookup(claimsAfter))
	prediction := predictedPlacement(t, predicted, r.namespace, pod.Name)
	if difference := placementDifference(scheduler, prediction); difference != "" {
		t.Fatalf("pod %s (shared claim allocated before on %q; dump in %s):\n%s\n%s\nthe scheduler said: %s\ndra-allocate said:\n%s",
			pod.Name, sharedBefore, dir, describePod(pod, claimsBefore), difference, why, predicted.stderr)
	}
	// The pods the scheduler could not place stay pending (nothing frees room), and
	// dra-allocate, trying them again first, does not place them either.
	for _, name := range r.failed {
		for _, p := range podsAfter {
			if p.Name == name && p.Spec.NodeName != "" {
				t.Fatalf("pod %s, unschedulable before, was bound to %s later: nothing should have made room", name, p.Spec.NodeName)
			}
		}
		if node := predictedPlacement(t, predicted, r.namespace, name).node; node != "" {
			t.Fatalf("dra-allocate places pod %s on %s when pod %s comes; the scheduler found it unschedulable (dump in %s)\n%s", name, node, pod.Name, dir, predicted.stderr)
		}
	}
	if stored.Spec.NodeName == "" {
		r.failed = append(r.failed, pod.Name)
		for _, podClaim := range pod.Spec.ResourceClaims {
			r.failedClaims[*podClaim.ResourceClaimName] = true
		}
		return
	}
	r.bound++
	if sharedBefore != "" && sharedBefore != r.nodes[0] {
		r.coverage.sharedElsewhere++
	}
	if stored.Spec.NodeName > r.broken {
		r.coverage.passedOver++
	}
	for _, podClaim := range pod.Spec.ResourceClaims {
		name := *podClaim.ResourceClaimName
		if claim := claimsBefore[name]; r.failedClaims[name] && claim != nil && claim.Status.Allocation == nil {
			r.coverage.retried++
			break
		}
	}
}

// clusterObjects are the nodes, their slices and every DeviceClass, as the API server holds them.
func (r *sharingRun) clusterObjects(t *testing.T) []any {
	t.Helper()
	ctx := context.Background()
	var objects []any
	for _, name := range r.nodes {
		node, err := r.c.Admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.ManagedFields = nil
		objects = append(objects, node)
	}
	slices, err := r.c.Admin.ResourceV1().ResourceSlices().List(ctx, metav1.ListOptions{FieldSelector: "spec.driver=" + sharedDriver})
	if err != nil {
		t.Fatal(err)
	}
	for i := range slices.Items {
		slices.Items[i].ManagedFields = nil
		objects = append(objects, &slices.Items[i])
	}
	classes, err := r.c.Admin.ResourceV1().DeviceClasses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range classes.Items {
		classes.Items[i].ManagedFields = nil
		objects = append(objects, &classes.Items[i])
	}
	return objects
}

// replay gives dra-allocate every pod and claim as they were created, nothing placed: it must
// place every pod as the scheduler did, one after the other.
func (r *sharingRun) replay(t *testing.T) {
	t.Helper()
	claims, pods := r.snapshot(t)
	var objects []any
	objects = append(objects, r.clusterObjects(t)...)
	inUse := usedClaims(r.createdPods)
	for _, claim := range r.createdClaims {
		if inUse[claim.Name] {
			objects = append(objects, claim)
		}
	}
	for _, pod := range r.createdPods {
		objects = append(objects, pod)
	}
	dir := filepath.Join(r.dir, "replay")
	predicted := predictObjects(t, dir, objects)
	for _, pod := range pods {
		scheduler := placementOf(pod, pod.Spec.NodeName, func(name string) *resourceapi.AllocationResult {
			if claim := claims[name]; claim != nil {
				return claim.Status.Allocation
			}
			return nil
		})
		prediction := predictedPlacement(t, predicted, r.namespace, pod.Name)
		if difference := placementDifference(scheduler, prediction); difference != "" {
			t.Errorf("replaying every pod (dump in %s): pod %s:\n%s", dir, pod.Name, difference)
		}
	}
}

// predictObjects runs dra-allocate, choosing nodes, on the objects written into dir.
func predictObjects(t *testing.T, dir string, objects []any) draAllocateOutput {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeObjects(t, filepath.Join(dir, "objects.json"), objects)
	return runDraAllocate(t, dir, "--explain")
}

// describePod names the pod's claims with what they ask for and, for a shared claim, where it is.
func describePod(pod *v1.Pod, claims map[string]*resourceapi.ResourceClaim) string {
	var lines []string
	names := []string{}
	for _, podClaim := range pod.Spec.ResourceClaims {
		names = append(names, *podClaim.ResourceClaimName)
	}
	sort.Strings(names)
	for _, name := range names {
		claim := claims[name]
		if claim == nil {
			continue
		}
		where := "not allocated"
		if claim.Status.Allocation != nil {
			where = "allocated on " + allocatedNode(claim.Status.Allocation)
		}
		lines = append(lines, fmt.Sprintf("claim %s (%s):\n  %s", name, where, strings.ReplaceAll(describeClaim(claim), "\n", "\n  ")))
	}
	return strings.Join(lines, "\n")
}
