package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The judge's rules, each shown with a stand-in for dra-allocate (a script printing a fixed
// answer) against upstream's real validation and allocator: a wrong answer must be reported,
// the right one must not.

// cluster of nodes, each with one pool (named as the node) of GPUs gpu-0...
func gpuCluster(nodes map[string]int) *inputs {
	g := newGenerator(1)
	g.class(gpuDriver)
	g.in.Classes[0].Spec.Selectors = g.in.Classes[0].Spec.Selectors[:1]
	g.in.Classes[0].Spec.Config = nil
	for _, node := range []string{"node-a", "node-b", "node-c"} {
		count, ok := nodes[node]
		if !ok {
			continue
		}
		g.in.Nodes = append(g.in.Nodes, bareNode(node))
		slice := nodeSlice(gpuDriver, node, 0, 1, node)
		for d := 0; d < count; d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", d)})
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	return &g.in
}

func bareNode(name string) *v1.Node {
	return &v1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// on is the allocation upstream gives a one-request claim on node's gpu-N.
func on(node string, devices ...string) *resourceapi.AllocationResult {
	allocation := &resourceapi.AllocationResult{NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
	for _, device := range devices {
		allocation.Devices.Results = append(allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: "req-0", Driver: gpuDriver, Pool: node, Device: device})
	}
	return allocation
}

// fakeAnswer is what the stand-in prints: the input's claims with these allocations, the
// stderr lines, the exit status.
type fakeAnswer struct {
	allocations map[string]*resourceapi.AllocationResult // by claim name
	stderr      string
	exit        int
}

// judge writes the input and a stand-in dra-allocate giving the answer, and compares.
func judge(t *testing.T, in *inputs, answer fakeAnswer) string {
	t.Helper()
	dir := t.TempDir()
	input := filepath.Join(dir, "input.json")
	if err := writeInputsFile(input, in); err != nil {
		t.Fatal(err)
	}
	var items []any
	for _, claim := range in.Claims {
		printed := claim.DeepCopy()
		if allocation, ok := answer.allocations[claim.Name]; ok {
			printed.Status.Allocation = allocation
		}
		items = append(items, printed)
	}
	for _, pod := range in.Pods {
		items = append(items, pod)
	}
	output, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		t.Fatal(err)
	}
	outputFile := filepath.Join(dir, "output.json")
	stderrFile := filepath.Join(dir, "stderr.txt")
	if err := os.WriteFile(outputFile, output, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(stderrFile, []byte(answer.stderr), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "dra-allocate")
	body := fmt.Sprintf("#!/bin/sh\ncat '%s'\ncat '%s' >&2\nexit %d\n", outputFile, stderrFile, answer.exit)
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	diff, _, err := compare(script, []string{input}, "", in, false)
	if err != nil {
		t.Fatal(err)
	}
	return diff
}

func expectSame(t *testing.T, diff string) {
	t.Helper()
	if diff != "" {
		t.Fatalf("reported a difference:\n%s", diff)
	}
}

func expectDifference(t *testing.T, diff, says string) {
	t.Helper()
	if diff == "" {
		t.Fatal("no difference reported")
	}
	if !strings.Contains(diff, says) {
		t.Fatalf("the difference does not say %q:\n%s", says, diff)
	}
}

// node-a's only GPU is in use: a pod's claim fits on node-b only.
func podOnNodeB() *inputs {
	in := gpuCluster(map[string]int{"node-a": 1, "node-b": 1})
	used := simpleClaim("in-use", gpuDriver, 1)
	used.Status.Allocation = on("node-a", "gpu-0")
	in.AddClaim(used)
	in.AddClaim(simpleClaim("gpu", gpuDriver, 1))
	in.AddPod(newGenerator(1).pod("p", podClaim{claim: "gpu"}))
	return in
}

func TestAPodPlacedWhereUpstreamPlacesItIsTheSame(t *testing.T) {
	expectSame(t, judge(t, podOnNodeB(), fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{
		"in-use": on("node-a", "gpu-0"), "gpu": on("node-b", "gpu-0")}}))
}

func TestAPodOnANodeNoneOfUpstreamsNodesIsADifference(t *testing.T) {
	diff := judge(t, podOnNodeB(), fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{
		"in-use": on("node-a", "gpu-0"), "gpu": on("node-a", "gpu-0")}})
	expectDifference(t, diff, "upstream's on none of the nodes that fit")
	expectDifference(t, diff, "upstream on node-a: does not fit")
}

func TestAPodUpstreamPlacesLeftUnplacedIsADifference(t *testing.T) {
	diff := judge(t, podOnNodeB(), fakeAnswer{
		allocations: map[string]*resourceapi.AllocationResult{"in-use": on("node-a", "gpu-0")},
		stderr:      "pod default/p: not allocated on any of 2 nodes\n", exit: 1})
	expectDifference(t, diff, "upstream places it on 1 of 2 nodes")
}

// A pod with a claim allocated on node-b and one of its own: both nodes have a free GPU, but
// only node-b holds the allocated claim.
func podWithClaimOnNodeB() *inputs {
	in := gpuCluster(map[string]int{"node-a": 1, "node-b": 2})
	shared := simpleClaim("shared", gpuDriver, 1)
	shared.Status.Allocation = on("node-b", "gpu-1")
	in.AddClaim(shared)
	in.AddClaim(simpleClaim("own", gpuDriver, 1))
	in.AddPod(newGenerator(1).pod("p", podClaim{claim: "shared"}, podClaim{claim: "own"}))
	return in
}

func TestAPodsNewClaimGoesWhereItsAllocatedClaimIs(t *testing.T) {
	in := podWithClaimOnNodeB()
	expectSame(t, judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{
		"shared": on("node-b", "gpu-1"), "own": on("node-b", "gpu-0")}}))
	diff := judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{
		"shared": on("node-b", "gpu-1"), "own": on("node-a", "gpu-0")}})
	expectDifference(t, diff, "upstream on node-a: an allocated claim is not available here")
}

// A pod whose claims fit on no node must be left unplaced, not refused.
func TestAPodUpstreamCannotPlaceMustBeUnplacedNotRefused(t *testing.T) {
	in := gpuCluster(map[string]int{"node-a": 1, "node-b": 1})
	in.AddClaim(simpleClaim("two", gpuDriver, 2))
	in.AddPod(newGenerator(1).pod("p", podClaim{claim: "two"}))
	expectSame(t, judge(t, in, fakeAnswer{stderr: "pod default/p: not allocated on any of 2 nodes\n", exit: 1}))
	expectDifference(t, judge(t, in, fakeAnswer{stderr: "pod default/p: not allocated: some error\n", exit: 1}),
		"upstream places it on no node")
	expectDifference(t, judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{
		"two": on("node-a", "gpu-0", "gpu-0")}}), "upstream places it on no node")
}

// A pool of node-a lists gpu-0 twice: node-a fails, node-b does not.
func TestAnInvalidPoolFailsItsNodeOnly(t *testing.T) {
	in := gpuCluster(map[string]int{"node-b": 1})
	in.Nodes = append(in.Nodes, bareNode("node-a"))
	for s := 0; s < 2; s++ {
		slice := nodeSlice(gpuDriver, "node-a", s, 2, "node-a")
		slice.Spec.Devices = []resourceapi.Device{{Name: "gpu-0"}}
		in.Slices = append(in.Slices, slice)
	}
	in.AddClaim(simpleClaim("gpu", gpuDriver, 1))
	in.AddPod(newGenerator(1).pod("p", podClaim{claim: "gpu"}))
	expectSame(t, judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{"gpu": on("node-b", "gpu-0")}}))
	diff := judge(t, in, fakeAnswer{stderr: "pod default/p: not allocated: invalid resource pools were encountered\n", exit: 1})
	expectDifference(t, diff, "upstream on node-a: fails this node: invalid resource pools were encountered")
}

// Pod p1 cannot be placed; p2 uses the same claim and fits: upstream allocates it for p2.
func TestASharedClaimOfAFailedPodIsTriedAgainForTheNext(t *testing.T) {
	in := gpuCluster(map[string]int{"node-a": 1})
	in.AddClaim(simpleClaim("shared", gpuDriver, 1))
	in.AddClaim(simpleClaim("too-many", gpuDriver, 4))
	g := newGenerator(1)
	in.AddPod(g.pod("p1", podClaim{claim: "shared"}, podClaim{claim: "too-many"}))
	in.AddPod(g.pod("p2", podClaim{claim: "shared"}))
	expectSame(t, judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{"shared": on("node-a", "gpu-0")},
		stderr: "pod default/p1: not allocated on node node-a\n", exit: 1}))
	diff := judge(t, in, fakeAnswer{stderr: "pod default/p1: not allocated on node node-a\n", exit: 1})
	expectDifference(t, diff, "pod default/p2: upstream places it on 1 of 1 nodes")
}

// An error on any node fails the pod's scheduling attempt, whichever node dra-allocate took.
func TestAnErrorOnAnyNodeRefusesThePod(t *testing.T) {
	in := gpuCluster(map[string]int{"node-a": 1, "node-b": 1})
	in.Slices[1].Spec.Devices[0].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"example.com/socket": {IntValue: ptr.To(int64(0))}}
	in.Slices[0].Spec.Devices[0].Attributes = map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
		"example.com/other": {IntValue: ptr.To(int64(0))}}
	claim := simpleClaim("gpu", gpuDriver, 1, `device.attributes["example.com"].socket == 0`)
	in.AddClaim(claim)
	in.AddPod(newGenerator(1).pod("p", podClaim{claim: "gpu"}))
	expectSame(t, judge(t, in, fakeAnswer{stderr: "pod default/p: not allocated: claim default/gpu: selector #0: no such key\n", exit: 1}))
	diff := judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{"gpu": on("node-b", "gpu-0")}})
	expectDifference(t, diff, "upstream refuses it with an error")
}

// An input upstream's validation refuses must be refused as invalid, and only such an input.
func TestInvalidInputsMustBeRefusedAndOnlyThey(t *testing.T) {
	in := podOnNodeB()
	in.Slices[0].Spec.Devices[0].Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"memory": {
		Value: resource.MustParse("8Gi"), RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1Gi"))}}}
	expectSame(t, judge(t, in, fakeAnswer{stderr: "dra-allocate: invalid\n", exit: 2}))
	diff := judge(t, in, fakeAnswer{allocations: map[string]*resourceapi.AllocationResult{"gpu": on("node-b", "gpu-0")}})
	expectDifference(t, diff, "allowMultipleAllocations must be true")
	expectDifference(t, judge(t, podOnNodeB(), fakeAnswer{stderr: "dra-allocate: invalid\n", exit: 2}),
		"upstream's validation accepts every object")
}

func TestACounterSetWithoutCountersIsInvalid(t *testing.T) {
	in := podOnNodeB()
	slice := nodeSlice(gpuDriver, "node-a", 1, 2, "node-a")
	in.Slices[0].Spec.Pool.ResourceSliceCount = 2
	slice.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "empty"}}
	in.Slices = append(in.Slices, slice)
	refused, err := validateInputs(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 1 || !strings.Contains(refused[0].String(), "counters: Required value") {
		t.Fatalf("refused: %v", refused)
	}
}

// A template becomes the pod's claim, named as dra-allocate names it.
func TestATemplatesClaimIsJudged(t *testing.T) {
	in := gpuCluster(map[string]int{"node-a": 1})
	in.AddTemplate(template("one-gpu", simpleClaim("x", gpuDriver, 1)))
	in.AddPod(newGenerator(1).pod("p", podClaim{template: "one-gpu"}))
	list, err := units(in)
	if err != nil || len(list) != 1 || list[0].claims[0].Name != "p-c0" {
		t.Fatalf("units: %v %v", list, err)
	}
	answer := newCluster(in).ask(ctx, list[0], candidateNodes(in, "", list[0]))
	if fits := answer.fitting(); len(fits) != 1 || fits[0].allocations[0].Devices.Results[0].Device != "gpu-0" {
		t.Fatalf("upstream: %s", answer.describe())
	}
}
