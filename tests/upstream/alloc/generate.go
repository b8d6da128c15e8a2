package main

import (
	"fmt"
	"math/rand/v2"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A seeded generator of valid clusters and claims: one node, two drivers, pools of one or
// more slices, and claims that use every allocator feature dra-allocate claims to share
// with upstream. The same seed always gives the same input.

const (
	nodeName      = "node-1"
	sharedNuma    = "example.com/numa"  // an int every device has, across drivers
	sharedNumas   = "example.com/numas" // an int list some devices have
	taintKey      = "example.com/unhealthy"
	bindingReady  = "example.com/ready"
	bindingFailed = "example.com/failed"
	derivedNuma   = "derived.example.com/numa" // a derived attribute (KEP-6080) some requests compute
)

var drivers = []string{"gpu.example.com", "nic.example.com"}

type generator struct {
	r       *rand.Rand
	seed    uint64
	in      inputs
	devices []generatedDevice // every device, for pre-allocated claims
}

type generatedDevice struct {
	driver, pool, name string
	shareable          bool
}

func generate(seed uint64) *inputs {
	g := &generator{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), seed: seed}
	g.node()
	for _, driver := range drivers {
		g.class(driver)
		for pool := 0; pool < 1+g.r.IntN(3); pool++ {
			g.pool(driver, fmt.Sprintf("%s-pool-%d", nodeName, pool))
		}
	}
	claims := 1 + g.r.IntN(4)
	for i := 0; i < claims; i++ {
		g.claim(fmt.Sprintf("claim-%d", i))
	}
	g.preallocated()
	return &g.in
}

func (g *generator) chance(percent int) bool { return g.r.IntN(100) < percent }

func (g *generator) pick(options ...string) string { return options[g.r.IntN(len(options))] }

func (g *generator) node() {
	node := &v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: nodeName, Labels: map[string]string{"zone": "a"}},
	}
	if g.chance(70) {
		// Only such a node may get devices of a slice that skips node operations.
		node.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
	}
	g.in.Nodes = append(g.in.Nodes, node)
}

func (g *generator) class(driver string) {
	class := &resourceapi.DeviceClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "DeviceClass"},
		ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: resourceapi.DeviceClassSpec{
			Selectors: []resourceapi.DeviceSelector{celSelector(fmt.Sprintf("device.driver == %q", driver))},
		},
	}
	if g.chance(30) {
		class.Spec.Selectors = append(class.Spec.Selectors, celSelector(g.selector(driver)))
	}
	if g.chance(30) {
		class.Spec.Config = []resourceapi.DeviceClassConfiguration{{DeviceConfiguration: opaqueConfig(driver, "class")}}
	}
	g.in.Classes = append(g.in.Classes, class)
}

func celSelector(expression string) resourceapi.DeviceSelector {
	return resourceapi.DeviceSelector{CEL: &resourceapi.CELDeviceSelector{Expression: expression}}
}

func opaqueConfig(driver, from string) resourceapi.DeviceConfiguration {
	return resourceapi.DeviceConfiguration{Opaque: &resourceapi.OpaqueDeviceConfiguration{
		Driver:     driver,
		Parameters: runtimeRaw(fmt.Sprintf(`{"from":%q}`, from)),
	}}
}

func (g *generator) pool(driver, pool string) {
	counters := g.chance(25)
	slices := 1 + g.r.IntN(2)
	total := slices
	if counters {
		total++
	}
	perDevice := g.chance(15)
	var skip []resourceapi.SkipNodeOperation
	if g.chance(12) {
		// Valid sets only: NodePrepareResources needs NodeUnprepareResources or "*" beside it.
		skip = [][]resourceapi.SkipNodeOperation{
			{resourceapi.SkipNodeOperationNodeUnprepareResources},
			{resourceapi.SkipNodeOperationAll},
			{resourceapi.SkipNodeOperationNodePrepareResources, resourceapi.SkipNodeOperationNodeUnprepareResources},
		}[g.r.IntN(3)]
	}
	for i := 0; i < slices; i++ {
		slice := g.slice(driver, pool, i, total, perDevice)
		slice.Spec.SkipNodeOperations = skip
		for d := 0; d < 1+g.r.IntN(5); d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, g.device(driver, pool, fmt.Sprintf("dev-%d-%d", i, d), counters, perDevice))
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	if counters {
		slice := g.slice(driver, pool, slices, total, false)
		slice.Spec.SharedCounters = []resourceapi.CounterSet{{
			Name:     "memory-set",
			Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(g.pick("16Gi", "32Gi", "40Gi"))}},
		}}
		g.in.Slices = append(g.in.Slices, slice)
	}
}

func (g *generator) slice(driver, pool string, index, count int, perDevice bool) *resourceapi.ResourceSlice {
	slice := &resourceapi.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", driver, pool, index)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: driver,
			Pool:   resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: int64(count)},
		},
	}
	switch {
	case perDevice:
		slice.Spec.PerDeviceNodeSelection = ptr.To(true)
	case g.chance(10):
		slice.Spec.AllNodes = ptr.To(true)
	case g.chance(10):
		slice.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{g.pick("a", "b")}}},
		}}}
	default:
		slice.Spec.NodeName = ptr.To(nodeName)
	}
	return slice
}

func (g *generator) device(driver, pool, name string, counters, perDevice bool) resourceapi.Device {
	device := resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			sharedNuma: {IntValue: ptr.To(int64(g.r.IntN(4)))},
			"model":    {StringValue: ptr.To(g.pick("a100", "h100", "l40", "cx7"))},
		},
		Capacity: map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	if g.chance(60) {
		device.Attributes["healthy"] = resourceapi.DeviceAttribute{BoolValue: ptr.To(g.chance(80))}
	}
	if g.chance(50) {
		device.Attributes["version"] = resourceapi.DeviceAttribute{VersionValue: ptr.To(g.pick("1.0.0", "1.2.0", "2.0.0-rc.1", "2.1.3"))}
	}
	if g.chance(40) {
		numas := []int64{int64(g.r.IntN(4))}
		if g.chance(50) {
			numas = append(numas, numas[0]+1)
		}
		device.Attributes[sharedNumas] = resourceapi.DeviceAttribute{IntValues: numas}
	}
	if g.chance(30) {
		device.Attributes["tags"] = resourceapi.DeviceAttribute{StringValues: []string{g.pick("fast", "slow"), g.pick("rdma", "eth")}}
	}
	memory := g.pick("8Gi", "16Gi", "40Gi", "80Gi")
	capacity := resourceapi.DeviceCapacity{Value: resource.MustParse(memory)}
	shareable := g.chance(25)
	if shareable {
		device.AllowMultipleAllocations = ptr.To(true)
		switch g.r.IntN(3) {
		case 0:
			capacity.RequestPolicy = &resourceapi.CapacityRequestPolicy{
				Default:    ptr.To(resource.MustParse("4Gi")),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("1Gi")), Step: ptr.To(resource.MustParse("1Gi"))},
			}
		case 1:
			capacity.RequestPolicy = &resourceapi.CapacityRequestPolicy{
				Default:     ptr.To(resource.MustParse("8Gi")),
				ValidValues: []resource.Quantity{resource.MustParse("8Gi"), resource.MustParse("16Gi")},
			}
		}
	}
	device.Capacity["memory"] = capacity
	if shareable && g.chance(40) {
		// A fractional share (DRAFractionalCapacityRange): rounded in milli-units.
		device.Capacity["share"] = resourceapi.DeviceCapacity{
			Value: resource.MustParse("1"),
			RequestPolicy: &resourceapi.CapacityRequestPolicy{
				Default: ptr.To(resource.MustParse("200m")),
				ValidRange: &resourceapi.CapacityRequestPolicyRange{
					Min: ptr.To(resource.MustParse("200m")), Max: ptr.To(resource.MustParse("1")),
					Step: ptr.To(resource.MustParse("100m")),
				},
			},
		}
	}
	if g.chance(40) {
		device.Capacity["cores"] = resourceapi.DeviceCapacity{Value: *resource.NewQuantity(int64(8<<g.r.IntN(4)), resource.DecimalSI)}
	}
	if counters && g.chance(80) {
		device.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{
			CounterSet: "memory-set",
			Counters:   map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(g.pick("8Gi", "16Gi"))}},
		}}
		if g.chance(35) {
			// DRADeviceCompatibilityGroups: devices of one counter set must share a group.
			groups := [][]string{{"full"}, {"half"}, {"full", "half"}, {"mig"}}
			device.ConsumesCounters[0].CompatibilityGroups = groups[g.r.IntN(len(groups))]
		}
	}
	if perDevice {
		switch g.r.IntN(3) {
		case 0:
			device.NodeName = ptr.To(g.pick(nodeName, "node-2"))
		case 1:
			device.AllNodes = ptr.To(true)
		default:
			device.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: "zone", Operator: v1.NodeSelectorOpIn, Values: []string{g.pick("a", "b")}}},
			}}}
		}
	}
	if g.chance(15) {
		device.Taints = []resourceapi.DeviceTaint{{Key: taintKey, Value: "true", Effect: resourceapi.DeviceTaintEffect(g.pick("NoSchedule", "NoExecute"))}}
	}
	if g.chance(10) {
		device.BindingConditions = []string{bindingReady}
		device.BindingFailureConditions = []string{bindingFailed}
		if g.chance(50) {
			device.BindsToNode = ptr.To(true)
		}
	}
	g.devices = append(g.devices, generatedDevice{driver: driver, pool: pool, name: name, shareable: shareable})
	return device
}

// selector is a CEL expression over the devices of a driver, from the forms users write.
func (g *generator) selector(driver string) string {
	attr := func(name string) string { return fmt.Sprintf("device.attributes[%q].%s", driver, name) }
	switch g.r.IntN(10) {
	case 0:
		return fmt.Sprintf("device.attributes[%q].numa == %d", "example.com", g.r.IntN(4))
	case 1:
		return fmt.Sprintf("%s.startsWith(%q)", attr("model"), g.pick("a", "h", "l", "c"))
	case 2:
		return fmt.Sprintf("device.capacity[%q].memory.compareTo(quantity(%q)) >= 0", driver, g.pick("8Gi", "16Gi", "40Gi"))
	case 3:
		return fmt.Sprintf("has(%s) && %s.isGreaterThan(semver(%q))", attr("version"), attr("version"), g.pick("1.0.0", "1.5.0", "2.0.0"))
	case 4:
		return fmt.Sprintf("!has(%s) || %s", attr("healthy"), attr("healthy"))
	case 5:
		return fmt.Sprintf("has(device.attributes[%q].numas) && device.attributes[%q].numas.includes(%d)", "example.com", "example.com", g.r.IntN(4))
	case 6:
		return fmt.Sprintf("%s in [%q, %q]", attr("model"), g.pick("a100", "h100"), g.pick("l40", "cx7"))
	case 7:
		return fmt.Sprintf("device.attributes[%q].numa %% 2 == %d", "example.com", g.r.IntN(2))
	case 8:
		return fmt.Sprintf("has(%s) && %q in %s", attr("tags"), g.pick("fast", "rdma"), attr("tags"))
	default:
		return "true"
	}
}

func (g *generator) claim(name string) {
	claim := &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
	}
	requests := 1 + g.r.IntN(3)
	for i := 0; i < requests; i++ {
		request := resourceapi.DeviceRequest{Name: fmt.Sprintf("req-%d", i)}
		if g.chance(20) {
			for s := 0; s < 2; s++ {
				exact := g.exactRequest()
				request.FirstAvailable = append(request.FirstAvailable, resourceapi.DeviceSubRequest{
					Name: fmt.Sprintf("sub-%d", s), DeviceClassName: exact.DeviceClassName, Selectors: exact.Selectors,
					AllocationMode: exact.AllocationMode, Count: exact.Count, Tolerations: exact.Tolerations,
					Capacity: exact.Capacity, DerivedAttributes: exact.DerivedAttributes,
				})
			}
		} else {
			request.Exactly = g.exactRequest()
		}
		claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, request)
	}
	if requests > 1 && g.chance(50) {
		constraint := resourceapi.DeviceConstraint{}
		if g.chance(50) {
			constraint.Requests = []string{"req-0", "req-1"}
		}
		name := resourceapi.FullyQualifiedName(g.pick(sharedNuma, sharedNuma, sharedNumas, derivedNuma))
		if g.chance(25) {
			constraint.DistinctAttribute = &name
		} else {
			constraint.MatchAttribute = &name
		}
		claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints, constraint)
	}
	dropUnusedDerivedAttributes(claim)
	if g.chance(20) {
		claim.Spec.Devices.Config = []resourceapi.DeviceClaimConfiguration{{
			Requests:            []string{"req-0"},
			DeviceConfiguration: opaqueConfig(drivers[0], "claim"),
		}}
	}
	g.in.Claims = append(g.in.Claims, claim)
}

// dropUnusedDerivedAttributes keeps the input valid: the API server refuses a derived attribute
// that no constraint targeting its request (or the request's parent) uses.
func dropUnusedDerivedAttributes(claim *resourceapi.ResourceClaim) {
	used := func(name resourceapi.FullyQualifiedName, request, parent string) bool {
		for _, c := range claim.Spec.Devices.Constraints {
			names := (c.MatchAttribute != nil && *c.MatchAttribute == name) || (c.DistinctAttribute != nil && *c.DistinctAttribute == name)
			targets := len(c.Requests) == 0 || slices.Contains(c.Requests, request) || slices.Contains(c.Requests, parent)
			if names && targets {
				return true
			}
		}
		return false
	}
	keep := func(attributes []resourceapi.DeviceDerivedAttribute, request, parent string) []resourceapi.DeviceDerivedAttribute {
		var kept []resourceapi.DeviceDerivedAttribute
		for _, attribute := range attributes {
			if used(attribute.Name, request, parent) {
				kept = append(kept, attribute)
			}
		}
		return kept
	}
	for i := range claim.Spec.Devices.Requests {
		request := &claim.Spec.Devices.Requests[i]
		if request.Exactly != nil {
			request.Exactly.DerivedAttributes = keep(request.Exactly.DerivedAttributes, request.Name, request.Name)
		}
		for j := range request.FirstAvailable {
			sub := &request.FirstAvailable[j]
			sub.DerivedAttributes = keep(sub.DerivedAttributes, request.Name+"/"+sub.Name, request.Name)
		}
	}
}

func (g *generator) exactRequest() *resourceapi.ExactDeviceRequest {
	driver := g.pick(drivers...)
	exact := &resourceapi.ExactDeviceRequest{DeviceClassName: driver}
	if g.chance(15) {
		exact.AllocationMode = resourceapi.DeviceAllocationModeAll
	} else {
		exact.AllocationMode = resourceapi.DeviceAllocationModeExactCount
		exact.Count = int64(1 + g.r.IntN(3))
	}
	if g.chance(50) {
		exact.Selectors = []resourceapi.DeviceSelector{celSelector(g.selector(driver))}
	}
	if g.chance(20) {
		exact.Tolerations = []resourceapi.DeviceToleration{{Key: taintKey, Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffect(g.pick("NoSchedule", "NoExecute", ""))}}
	}
	if g.chance(25) {
		exact.Capacity = &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{
			"memory": resource.MustParse(g.pick("1Gi", "4Gi", "8Gi", "10Gi", "16Gi")),
		}}
		if g.chance(30) {
			exact.Capacity.Requests["share"] = resource.MustParse(g.pick("250m", "300m", "500m", "1", "2"))
		}
	}
	if g.chance(15) {
		exact.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: derivedNuma, Expression: g.derivedExpression()}}
	}
	if g.chance(8) {
		exact.AdminAccess = ptr.To(true)
	}
	return exact
}

// preallocated marks a few devices as held by claims already in the cluster.
func (g *generator) preallocated() {
	if len(g.devices) == 0 || !g.chance(40) {
		return
	}
	device := g.devices[g.r.IntN(len(g.devices))]
	claim := &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: "in-use", Namespace: "default", UID: "uid-in-use"},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name:    "req-0",
			Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: device.driver, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1},
		}}}},
	}
	result := resourceapi.DeviceRequestAllocationResult{Request: "req-0", Driver: device.driver, Pool: device.pool, Device: device.name}
	if device.shareable {
		result.ShareID = ptr.To(types.UID("11111111-2222-3333-4444-555555555555"))
		result.ConsumedCapacity = map[resourceapi.QualifiedName]resource.Quantity{"memory": resource.MustParse("8Gi")}
	}
	claim.Status.Allocation = &resourceapi.AllocationResult{
		Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{result}},
		NodeSelector: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{nodeName}}},
		}}},
	}
	// The claim in use comes first: dra-allocate counts it against the claims after it.
	g.in.Claims = append([]*resourceapi.ResourceClaim{claim}, g.in.Claims...)
}

// derivedExpression computes a NUMA grouping key from the static attributes, in the forms
// KEP-6080 shows: a copy, a coarser bin, a string, a list.
func (g *generator) derivedExpression() string {
	numa := `device.attributes["example.com"].numa`
	switch g.r.IntN(5) {
	case 0:
		return numa
	case 1:
		return numa + " / 2"
	case 2:
		return `"numa-" + string(` + numa + `)`
	case 3:
		return `has(device.attributes["example.com"].numas) ? device.attributes["example.com"].numas : [` + numa + `]`
	default:
		return numa + ` >= 2 ? "far" : "near"`
	}
}
