package main

import (
	"bytes"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"path/filepath"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
)

func encoded(t *testing.T, in *inputs) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "input.json")
	if err := writeInputsFile(path, in); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTheSameSeedGivesTheSameInput(t *testing.T) {
	if !bytes.Equal(encoded(t, generate(42)), encoded(t, generate(42))) {
		t.Fatal("seed 42 gave two different inputs")
	}
	if bytes.Equal(encoded(t, generate(42)), encoded(t, generate(43))) {
		t.Fatal("seeds 42 and 43 gave the same input")
	}
}

func TestAGeneratedInputReadsBackAsWritten(t *testing.T) {
	in := generate(7)
	path := filepath.Join(t.TempDir(), "input.json")
	if err := writeInputsFile(path, in); err != nil {
		t.Fatal(err)
	}
	back, err := oracle.LoadInputs([]string{path})
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Slices) != len(in.Slices) || len(back.Claims) != len(in.Claims) ||
		len(back.Classes) != len(in.Classes) || len(back.Nodes) != len(in.Nodes) {
		t.Fatalf("read back %d/%d/%d/%d objects, wrote %d/%d/%d/%d", len(back.Slices), len(back.Claims),
			len(back.Classes), len(back.Nodes), len(in.Slices), len(in.Claims), len(in.Classes), len(in.Nodes))
	}
}

// The generator is only as good as what it covers: every feature the issue lists must show
// up in a few hundred seeds.
func TestTheGeneratorCoversEveryFeature(t *testing.T) {
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 300; seed++ {
		made := generateNamed(seed)
		in := made.in
		seen["family "+made.family] = true
		if made.broken != "" {
			seen["invalid on purpose"] = true
		}
		noteShape(seen, in)
		if len(in.Nodes[0].Status.DeclaredFeatures) > 0 {
			seen["node declaring optional operations"] = true
		} else {
			seen["node not declaring optional operations"] = true
		}
		for _, slice := range in.Slices {
			if len(slice.Spec.SharedCounters) > 0 {
				seen["shared counters"] = true
			}
			if slice.Spec.PerDeviceNodeSelection != nil {
				seen["per-device node selection"] = true
			}
			if len(slice.Spec.SkipNodeOperations) > 0 {
				seen["skipNodeOperations"] = true
			}
			for _, device := range slice.Spec.Devices {
				noteDevice(seen, device)
			}
		}
		for _, class := range in.Classes {
			if len(class.Spec.Config) > 0 {
				seen["class config"] = true
			}
			if len(class.Spec.Selectors) > 1 {
				seen["class selector"] = true
			}
		}
		for _, claim := range in.Claims {
			noteClaim(seen, claim)
		}
	}
	for _, feature := range []string{
		"int attribute", "string attribute", "bool attribute", "version attribute", "int list attribute",
		"string list attribute", "capacity request policy", "allowMultipleAllocations", "consumesCounters",
		"shared counters", "taints", "binding conditions", "per-device node selection", "class config",
		"class selector", "ExactCount", "All", "request selector", "firstAvailable", "capacity request",
		"adminAccess", "tolerations", "matchAttribute", "distinctAttribute", "list matchAttribute",
		"claim config", "allocated claim", "allocated shared claim", "derived attribute",
		"fractional capacity", "compatibility groups", "skipNodeOperations", "node declaring optional operations",
		"node not declaring optional operations",
		"several nodes", "pod with several claims", "claim shared by pods", "template",
		"pod using a claim allocated on a node", "device in two slices of a pool", "tainted device without the derived attribute's input",
		"slice for a node selector", "slice for all nodes", "VF", "partition", "invalid on purpose",
	} {
		if !seen[feature] {
			t.Errorf("300 seeds never generated %s", feature)
		}
	}
	for _, f := range families {
		if !seen["family "+f.name] {
			t.Errorf("300 seeds never drew family %s", f.name)
		}
	}
}

// noteShape notes what the new families are about: several nodes, pods and their claims,
// invalid pools, tainted devices under derived attributes, rack-wide pools, partitions and VFs.
func noteShape(seen map[string]bool, in *inputs) {
	seen["several nodes"] = seen["several nodes"] || len(in.Nodes) > 1
	usedBy := map[string]int{}
	allocated := map[string]bool{}
	for _, claim := range in.Claims {
		allocated[claim.Name] = claim.Status.Allocation != nil
	}
	for _, pod := range in.Pods {
		seen["pod with several claims"] = seen["pod with several claims"] || len(pod.Spec.ResourceClaims) > 1
		for _, claim := range pod.Spec.ResourceClaims {
			if claim.ResourceClaimTemplateName != nil {
				seen["template"] = true
				continue
			}
			usedBy[*claim.ResourceClaimName]++
			if allocated[*claim.ResourceClaimName] {
				seen["pod using a claim allocated on a node"] = true
			}
		}
	}
	for _, count := range usedBy {
		seen["claim shared by pods"] = seen["claim shared by pods"] || count > 1
	}
	devicesInPool := map[string]string{} // device -> the slice it is in
	for _, slice := range in.Slices {
		seen["slice for a node selector"] = seen["slice for a node selector"] || slice.Spec.NodeSelector != nil
		seen["slice for all nodes"] = seen["slice for all nodes"] || slice.Spec.AllNodes != nil
		for _, device := range slice.Spec.Devices {
			key := slice.Spec.Driver + "/" + slice.Spec.Pool.Name + "/" + device.Name
			if other, ok := devicesInPool[key]; ok && other != slice.Name {
				seen["device in two slices of a pool"] = true // valid slices, an invalid pool
			}
			devicesInPool[key] = slice.Name
			if _, has := device.Attributes["example.com/socket"]; !has && len(device.Taints) > 0 {
				seen["tainted device without the derived attribute's input"] = true
			}
			if kind := device.Attributes["kind"].StringValue; kind != nil && *kind == "vf" {
				seen["VF"] = true
			}
			if profile := device.Attributes["profile"].StringValue; profile != nil && *profile != "whole" {
				seen["partition"] = true
			}
		}
	}
}

func noteDevice(seen map[string]bool, device resourceapi.Device) {
	for _, attribute := range device.Attributes {
		switch {
		case attribute.IntValue != nil:
			seen["int attribute"] = true
		case attribute.StringValue != nil:
			seen["string attribute"] = true
		case attribute.BoolValue != nil:
			seen["bool attribute"] = true
		case attribute.VersionValue != nil:
			seen["version attribute"] = true
		case attribute.IntValues != nil:
			seen["int list attribute"] = true
		case attribute.StringValues != nil:
			seen["string list attribute"] = true
		}
	}
	for name, capacity := range device.Capacity {
		if capacity.RequestPolicy != nil {
			seen["capacity request policy"] = true
		}
		if name == "share" {
			seen["fractional capacity"] = true
		}
	}
	seen["allowMultipleAllocations"] = seen["allowMultipleAllocations"] || device.AllowMultipleAllocations != nil
	seen["consumesCounters"] = seen["consumesCounters"] || len(device.ConsumesCounters) > 0
	for _, consumption := range device.ConsumesCounters {
		seen["compatibility groups"] = seen["compatibility groups"] || len(consumption.CompatibilityGroups) > 0
	}
	seen["taints"] = seen["taints"] || len(device.Taints) > 0
	seen["binding conditions"] = seen["binding conditions"] || len(device.BindingConditions) > 0
}

func noteClaim(seen map[string]bool, claim *resourceapi.ResourceClaim) {
	if claim.Status.Allocation != nil {
		seen["allocated claim"] = true
		for _, result := range claim.Status.Allocation.Devices.Results {
			if result.ShareID != nil {
				seen["allocated shared claim"] = true
			}
		}
		return
	}
	if len(claim.Spec.Devices.Config) > 0 {
		seen["claim config"] = true
	}
	for _, constraint := range claim.Spec.Devices.Constraints {
		if constraint.MatchAttribute != nil {
			seen["matchAttribute"] = true
			if *constraint.MatchAttribute == sharedNumas {
				seen["list matchAttribute"] = true
			}
		}
		if constraint.DistinctAttribute != nil {
			seen["distinctAttribute"] = true
		}
	}
	for _, request := range claim.Spec.Devices.Requests {
		if len(request.FirstAvailable) > 0 {
			seen["firstAvailable"] = true
			continue
		}
		exact := request.Exactly
		seen[string(exact.AllocationMode)] = true
		seen["request selector"] = seen["request selector"] || len(exact.Selectors) > 0
		seen["capacity request"] = seen["capacity request"] || exact.Capacity != nil
		seen["adminAccess"] = seen["adminAccess"] || exact.AdminAccess != nil
		seen["tolerations"] = seen["tolerations"] || len(exact.Tolerations) > 0
		seen["derived attribute"] = seen["derived attribute"] || len(exact.DerivedAttributes) > 0
	}
}

func TestFailuresAreReadFromDraAllocatesLines(t *testing.T) {
	failures := failureLines("claim default/a: not allocated on node node-1\n" +
		"pod default/p: not allocated: claim default/b, request r: cannot add device d\n" +
		"  node node-1:\n" +
		"dra-allocate: something else\n")
	if len(failures) != 2 || failures["claim default/a"] != "not allocated on node node-1" ||
		failures["pod default/p"] != "not allocated: claim default/b, request r: cannot add device d" {
		t.Fatalf("failures: %v", failures)
	}
}

func TestClaimsGetTheApiServersDefaults(t *testing.T) {
	claim := &resourceapi.ResourceClaim{}
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{
		{Name: "a", Exactly: &resourceapi.ExactDeviceRequest{Tolerations: []resourceapi.DeviceToleration{{Key: "k"}}}},
		{Name: "b", FirstAvailable: []resourceapi.DeviceSubRequest{{Name: "s", AllocationMode: resourceapi.DeviceAllocationModeAll}}},
	}
	oracle.ApplyClaimDefaults(claim)
	exact := claim.Spec.Devices.Requests[0].Exactly
	if exact.AllocationMode != resourceapi.DeviceAllocationModeExactCount || exact.Count != 1 ||
		exact.Tolerations[0].Operator != resourceapi.DeviceTolerationOpEqual {
		t.Errorf("exactly: %+v", exact)
	}
	if sub := claim.Spec.Devices.Requests[1].FirstAvailable[0]; sub.Count != 0 {
		t.Errorf("an All subrequest got count %d", sub.Count)
	}
}

func TestRemovingARequestRemovesWhatNamesIt(t *testing.T) {
	claim := &resourceapi.ResourceClaim{}
	name := resourceapi.FullyQualifiedName("example.com/numa")
	claim.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "a"}, {Name: "b"}}
	claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{
		{Requests: []string{"a"}, MatchAttribute: &name},
		{Requests: []string{"a", "b"}, MatchAttribute: &name},
		{MatchAttribute: &name},
	}
	claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{Requests: []string{"a"}}}
	removeRequest(claim, 0)
	if len(claim.Spec.Devices.Requests) != 1 || len(claim.Spec.Devices.Constraints) != 2 ||
		len(claim.Spec.Devices.Config) != 0 || claim.Spec.Devices.Constraints[0].Requests[0] != "b" {
		t.Fatalf("after removing request a: %+v", claim.Spec.Devices)
	}
}

// Upstream's validation accepts every generated input except those made invalid on purpose,
// and refuses each of those: otherwise the seeds would judge fewer allocations than they seem to,
// or the invalid ones would not test validation.
func TestGeneratedInputsAreInvalidExactlyWhenBrokenOnPurpose(t *testing.T) {
	broken := map[string]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		made := generateNamed(seed)
		refused, err := validateInputs(made.in)
		if err != nil {
			t.Fatal(err)
		}
		if made.broken != "" {
			broken[made.broken]++
		}
		switch {
		case made.broken == "" && len(refused) > 0:
			t.Errorf("seed %d (%s) is refused: %v", seed, made.family, refused)
		case made.broken != "" && len(refused) == 0:
			t.Errorf("seed %d (%s) was broken (%s) but upstream's validation accepts it", seed, made.family, made.broken)
		}
	}
	if len(broken) < len(breakages)/2 {
		t.Errorf("400 seeds broke inputs in only %d ways: %v", len(broken), broken)
	}
}

// Minimising keeps the kind of difference it started with.
func TestASignatureKeepsTheKindOfDifferenceAndDropsNames(t *testing.T) {
	a := signature("pod default/pod-1: upstream places it on 2 of 3 nodes\n    dra-allocate: refused: x\n    upstream on node-a: fits")
	b := signature("claim default/c: upstream places it on 1 of 2 nodes\n    dra-allocate: refused: y\n    upstream on node-b: fits: []")
	c := signature("claim default/c: upstream places it on no node\n    dra-allocate: refused: y")
	if a != b || a == c {
		t.Fatalf("signatures: %q %q %q", a, b, c)
	}
	v1 := signature("upstream's validation refuses the input, dra-allocate does not (exit 0):\n    ResourceSlice s-1: spec.devices[0].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true")
	v2 := signature("upstream's validation refuses the input, dra-allocate does not (exit 1):\n    ResourceSlice t: spec.devices[3].capacity[memory].requestPolicy: Forbidden: allowMultipleAllocations must be true")
	v3 := signature("upstream's validation refuses the input, dra-allocate does not (exit 0):\n    ResourceSlice s: spec.sharedCounters[0].counters: Required value")
	if v1 != v2 || v1 == v3 {
		t.Fatalf("validation signatures: %q %q %q", v1, v2, v3)
	}
}

func TestASignatureTellsWhatUpstreamAndDraAllocateSaid(t *testing.T) {
	derived := signature("claim default/c: upstream places it on no node\n    dra-allocate: refused: derived attribute x: no such key\n    upstream on node-a: does not fit")
	noNode := signature("claim default/c: upstream places it on no node\n    dra-allocate: refused: no node is known\n    upstream: unschedulable before any node is tried: request r: device class x does not exist")
	if derived == noNode {
		t.Fatalf("two kinds of difference have one signature: %q", derived)
	}
}

// The committed list reads (its format is checked here, not only when the judge runs).
func TestTheCommittedScenarioExpectationsRead(t *testing.T) {
	expected, err := readExpectations("scenario-expectations.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(expected) == 0 {
		t.Fatal("scenario-expectations.txt lists nothing")
	}
}
