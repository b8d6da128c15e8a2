package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"numadra.dev/tests/e2e/cluster"
)

// Generated claims through the real scheduler (issue 16 §3): a seeded generator writes claims
// from the attributes and capacities a published node really has (selectors on them, counts,
// All, firstAvailable, capacity requests, matchAttribute on numaNode or pcieRoot). One pod at a
// time goes to the node; after each decision the cluster as the scheduler saw it (the earlier
// claims with their allocations) goes to dra-allocate, which must decide the same: allocated with
// the same devices and capacity, or not allocated. Unschedulable pods are removed again.
// NUMADRA_E2E_GENERATED_SEED and NUMADRA_E2E_GENERATED_CLAIMS (claims per machine) vary the
// sample; a failure names its claim and keeps the dump dra-allocate read.

// classDevices are the devices of a node by the class that selects them (the DeviceClasses of
// deploy/manifests select on the type attribute and the SR-IOV role).
func classDevices(slices []resourceapi.ResourceSlice) map[string][]resourceapi.Device {
	byClass := map[string][]resourceapi.Device{}
	for _, slice := range slices {
		for _, device := range slice.Spec.Devices {
			kind := ptr.Deref(device.Attributes[resourceapi.QualifiedName("type")].StringValue, "")
			role := ptr.Deref(device.Attributes[resourceapi.QualifiedName("sriovRole")].StringValue, "")
			switch {
			case kind == "nic" && role == "vf":
				kind = "vf"
			case kind == "":
				continue
			}
			byClass[kind+"."+driverName] = append(byClass[kind+"."+driverName], device)
		}
	}
	return byClass
}

type claimGenerator struct {
	rng     *rand.Rand
	classes map[string][]resourceapi.Device
	names   []string // class names, sorted
}

func newClaimGenerator(seed uint64, slices []resourceapi.ResourceSlice) *claimGenerator {
	g := &claimGenerator{rng: rand.New(rand.NewPCG(seed, 0x6e756d61)), classes: classDevices(slices)}
	for name := range g.classes {
		g.names = append(g.names, name)
	}
	sort.Strings(g.names)
	return g
}

func (g *claimGenerator) chance(percent int) bool { return g.rng.IntN(100) < percent }

// selector compares one attribute of the class's devices with the value of one of them.
func (g *claimGenerator) selector(class string) string {
	devices := g.classes[class]
	device := devices[g.rng.IntN(len(devices))]
	names := make([]string, 0, len(device.Attributes))
	for name := range device.Attributes {
		names = append(names, string(name))
	}
	sort.Strings(names)
	name := names[g.rng.IntN(len(names))]
	value := device.Attributes[resourceapi.QualifiedName(name)]
	domain, id := driverName, name
	if before, after, found := strings.Cut(name, "/"); found {
		domain, id = before, after
	}
	ref := fmt.Sprintf("device.attributes[%q].%s", domain, id)
	switch {
	case value.IntValue != nil:
		ops := []string{"==", "!=", "<=", ">="}
		return fmt.Sprintf("%s %s %d", ref, ops[g.rng.IntN(len(ops))], *value.IntValue)
	case value.BoolValue != nil:
		return fmt.Sprintf("%s == %v", ref, *value.BoolValue)
	case value.StringValue != nil:
		return fmt.Sprintf("%s %s %q", ref, []string{"==", "!="}[g.rng.IntN(2)], *value.StringValue)
	case value.VersionValue != nil:
		return fmt.Sprintf("%s.isGreaterThan(semver(%q))", ref, *value.VersionValue)
	default: // a list: whether the device has the attribute
		return fmt.Sprintf("has(%s)", ref)
	}
}

func (g *claimGenerator) exact(class string) *resourceapi.ExactDeviceRequest {
	exact := &resourceapi.ExactDeviceRequest{DeviceClassName: class}
	for i := []int{0, 0, 1, 1, 2}[g.rng.IntN(5)]; i > 0; i-- {
		exact.Selectors = append(exact.Selectors, resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: g.selector(class)}})
	}
	if device := g.classes[class][0]; len(device.Capacity) > 0 && g.chance(50) {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{}}
		names := make([]string, 0, len(device.Capacity))
		for name := range device.Capacity {
			names = append(names, string(name))
		}
		sort.Strings(names) // the generator stays deterministic
		for _, name := range names {
			capacity := device.Capacity[resourceapi.QualifiedName(name)]
			if g.chance(60) {
				// Up to half the capacity of a device, in round steps of a tenth of it.
				tenth := capacity.Value.Value() / 10
				if tenth == 0 {
					tenth = 1
				}
				exact.Capacity.Requests[resourceapi.QualifiedName(name)] = *resource.NewQuantity(tenth*int64(1+g.rng.IntN(5)), capacity.Value.Format)
			}
		}
	}
	switch {
	case g.chance(10) && len(exact.Selectors) > 0:
		exact.AllocationMode = resourceapi.DeviceAllocationModeAll
	case g.chance(20):
		exact.Count = int64(2 + g.rng.IntN(2))
	}
	return exact
}

func (g *claimGenerator) class() string { return g.names[g.rng.IntN(len(g.names))] }

func (g *claimGenerator) claim(namespace, name string) *resourceapi.ResourceClaim {
	var requests []resourceapi.DeviceRequest
	for i := 0; i < 1+g.rng.IntN(3); i++ {
		request := resourceapi.DeviceRequest{Name: fmt.Sprintf("r%d", i)}
		if g.chance(20) {
			for j := 0; j < 2; j++ {
				exact := g.exact(g.class())
				if exact.AllocationMode == resourceapi.DeviceAllocationModeAll {
					exact.AllocationMode = ""
				}
				request.FirstAvailable = append(request.FirstAvailable, resourceapi.DeviceSubRequest{
					Name: fmt.Sprintf("s%d", j), DeviceClassName: exact.DeviceClassName, Selectors: exact.Selectors,
					Count: exact.Count, Capacity: exact.Capacity,
				})
			}
		} else {
			request.Exactly = g.exact(g.class())
		}
		requests = append(requests, request)
	}
	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: requests}},
	}
	if len(requests) > 1 && g.chance(60) {
		attribute := []string{"resource.kubernetes.io/numaNode", "resource.kubernetes.io/pcieRoot"}[g.rng.IntN(2)]
		constraint := resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName(attribute))}
		if g.chance(50) {
			constraint.Requests = []string{requests[0].Name, requests[1].Name}
		}
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{constraint}
	}
	return claim
}

// The scheduler's decisions on a pod.
const (
	decidedBound = "bound"
	// The allocator found no devices for the claims.
	decidedUnallocatable = "unallocatable"
	// Allocating failed with an error (a selector failing at run time on a device, an All request
	// with a device its constraint refuses): upstream fails the whole claim, and retries the pod.
	decidedError = "error"
)

// filterError is the scheduler's prefix of an allocation error in the PodScheduled condition.
const filterError = `running "DynamicResources" filter plugin: `

// schedulerVerdict waits until the pod is bound (its node set, "" message) or its
// PodScheduled condition says something decide accepts as final (decide returns true), and
// returns the pod and that message.
func schedulerVerdict(t testing.TB, c *cluster.Cluster, namespace, name string, decide func(message string) bool) (*v1.Pod, string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := "no PodScheduled condition"
	for time.Now().Before(deadline) {
		pod, err := c.Admin.CoreV1().Pods(namespace).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if pod.Spec.NodeName != "" {
			return pod, ""
		}
		for _, condition := range pod.Status.Conditions {
			if condition.Type == v1.PodScheduled && condition.Status == v1.ConditionFalse {
				if decide(condition.Message) {
					return pod, condition.Message
				}
				last = condition.Message
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s: the scheduler decided nothing within 30 s: %s", namespace, name, last)
	return nil, ""
}

// decision waits until the scheduler bound the pod, said that its claims cannot be allocated, or
// that evaluating them failed.
func decision(t testing.TB, c *cluster.Cluster, namespace, name string) (outcome, why string) {
	t.Helper()
	pod, message := schedulerVerdict(t, c, namespace, name, func(message string) bool {
		return strings.Contains(message, "cannot allocate all claims") || strings.Contains(message, filterError)
	})
	switch {
	case pod.Spec.NodeName != "":
		return decidedBound, ""
	case strings.Contains(message, filterError):
		_, why, _ := strings.Cut(message, filterError)
		return decidedError, why
	default:
		return decidedUnallocatable, message
	}
}

func TestGeneratedClaimsAreAllocatedAsDraAllocatePredicts(t *testing.T) {
	c := clusterFor(t, cluster.AllDRA())
	seed := uint64(envCount(t, "NUMADRA_E2E_GENERATED_SEED", 1))
	cases := envCount(t, "NUMADRA_E2E_GENERATED_CLAIMS", 40)
	const claimsPerNode = 10
	for _, machine := range []string{"epyc-2s-nps4", "xeon6-snc3-2s", "sriov-nic"} {
		t.Run(machine, func(t *testing.T) {
			namespace := "gen-" + machine
			createNamespace(t, c, namespace)
			t.Cleanup(func() { deleteScaleNamespace(c, namespace) })
			var generator *claimGenerator
			node := ""
			outcomes := map[string]int{}
			for i := 0; i < cases; i++ {
				// A fresh node every claimsPerNode claims: the claims before stay allocated
				// on it, and a full node would leave nothing to decide.
				if i%claimsPerNode == 0 {
					node = fmt.Sprintf("gen-%s-%d", machine, i/claimsPerNode)
					_, slices := publishedNode(t, c, node, machine)
					keepNodeReady(t, c, node)
					if generator == nil { // the machine's nodes differ only in their names
						generator = newClaimGenerator(seed, slices)
					}
				}
				outcomes[generatedCase(t, c, generator, node, namespace, fmt.Sprintf("case-%02d", i))]++
			}
			t.Logf("%d generated claims (seed %d) on %d nodes: %d bound, %d unallocatable, %d failed with an error; dra-allocate decided each the same",
				cases, seed, (cases+claimsPerNode-1)/claimsPerNode, outcomes[decidedBound], outcomes[decidedUnallocatable], outcomes[decidedError])
		})
	}
}

// generatedCase creates one generated claim and its pod, waits for the scheduler, and compares
// its decision with dra-allocate's on the cluster as the scheduler saw it.
func generatedCase(t *testing.T, c *cluster.Cluster, g *claimGenerator, node, namespace, name string) string {
	t.Helper()
	ctx := context.Background()
	claim := g.claim(namespace, name)
	if _, err := c.Admin.ResourceV1().ResourceClaims(namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		t.Fatalf("generated claim %s refused by the API server: %v\n%s", name, err, describeClaim(claim))
	}
	pod := scalePod(namespace, name)
	pod.Spec.ResourceClaims[0].ResourceClaimName = ptr.To(name)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	if _, err := c.Admin.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	outcome, why := decision(t, c, namespace, name)
	claims, err := c.Admin.ResourceV1().ResourceClaims(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var items []any
	var scheduled *resourceapi.AllocationResult
	for i := range claims.Items {
		item := claims.Items[i].DeepCopy()
		item.ManagedFields = nil
		if item.Name == name { // the earlier claims keep their allocations
			scheduled = item.Status.Allocation
			item = unallocated(item)
		}
		items = append(items, item)
	}
	dir := fmt.Sprintf("%s/generated/%s/%s", c.Dir, node, name)
	dumpCluster(t, c, dir, nodesWithClaims(t, c, namespace, node))
	writeList(t, dir+"/4-claims.json", "ResourceClaim", "resource.k8s.io/v1", items)
	predicted, _, said := draAllocate(t, dir, "--node", node)
	if outcome == decidedError && !strings.Contains(said, why) {
		t.Fatalf("generated claim %s: the scheduler failed it with %q, dra-allocate said %q (dump in %s)\n%s", name, why, said, dir, describeClaim(claim))
	}
	if difference := allocationDifference(node, scheduled, predicted[namespace+"/"+name]); difference != "" {
		t.Fatalf("generated claim %s (dump in %s; scheduler: %s):\n%s\n%s", name, dir, why, describeClaim(claim), difference)
	}
	if outcome != decidedBound {
		// Off the node again, so a later claim cannot free room for it.
		_ = c.Admin.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
		_ = c.Admin.ResourceV1().ResourceClaims(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	return outcome
}

// nodesWithClaims names the node and every node holding an allocation of the namespace's claims,
// so that dra-allocate knows the pools of every allocation it is given.
func nodesWithClaims(t testing.TB, c *cluster.Cluster, namespace, node string) []string {
	t.Helper()
	pods, err := c.Admin.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{node}
	seen := map[string]bool{node: true}
	for _, pod := range pods.Items {
		if name := pod.Spec.NodeName; name != "" && !seen[name] {
			seen[name] = true
			nodes = append(nodes, name)
		}
	}
	return nodes
}

func describeClaim(claim *resourceapi.ResourceClaim) string {
	var lines []string
	for _, request := range claim.Spec.Devices.Requests {
		describe := func(class string, selectors []resourceapi.DeviceSelector, mode resourceapi.DeviceAllocationMode, count int64, capacity *resourceapi.CapacityRequirements) string {
			line := fmt.Sprintf("%s mode=%s count=%d", class, mode, count)
			for _, selector := range selectors {
				line += " [" + selector.CEL.Expression + "]"
			}
			if capacity != nil {
				line += fmt.Sprintf(" capacity=%v", capacity.Requests)
			}
			return line
		}
		if request.Exactly != nil {
			e := request.Exactly
			lines = append(lines, request.Name+": "+describe(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, e.Capacity))
		}
		for _, sub := range request.FirstAvailable {
			lines = append(lines, request.Name+"/"+sub.Name+": "+describe(sub.DeviceClassName, sub.Selectors, sub.AllocationMode, sub.Count, sub.Capacity))
		}
	}
	for _, constraint := range claim.Spec.Devices.Constraints {
		lines = append(lines, fmt.Sprintf("matchAttribute %s over %v", ptr.Deref(constraint.MatchAttribute, ""), constraint.Requests))
	}
	return strings.Join(lines, "\n")
}
