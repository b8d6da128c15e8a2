package main

import (
	"fmt"
	"math/rand/v2"
	"numadra.dev/tests/upstream/internal/oracle"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// A seeded generator of clusters, claims and pods: each seed draws a family (families.go), each
// family its own shape of cluster (one node of random pools and claims alone; several nodes with
// pods whose claims are allocated together; claims shared by pods; claims already allocated on
// a node; an invalid pool on one node of many; derived attributes over tainted devices; dense
// nodes; rack-wide pools; nodes sized to be used up; partitions and VFs), and a few inputs in a
// hundred are then made invalid on purpose (invalid.go) so that upstream's validation is
// exercised. The same seed always gives the same input.

const (
	nodeName      = "node-1"
	sharedNuma    = "example.com/numa"  // an int every device has, across drivers
	sharedNumas   = "example.com/numas" // an int list some devices have
	taintKey      = "example.com/unhealthy"
	bindingReady  = "example.com/ready"
	bindingFailed = "example.com/failed"
	derivedNuma   = "derived.example.com/numa" // a derived attribute (KEP-6080) some requests compute
	gpuDriver     = "gpu.example.com"
	nicDriver     = "nic.example.com"
)

var drivers = []string{gpuDriver, nicDriver}

// invalidPercent: how many inputs in a hundred are made invalid on purpose.
const invalidPercent = 8

type generator struct {
	r              *rand.Rand
	seed           uint64
	in             inputs
	nodes          []string          // the nodes with a Node object
	requestDrivers []string          // the classes random requests use
	devices        []generatedDevice // every device, for claims allocated in the input
}

type generatedDevice struct {
	driver, pool, name string
	shareable          bool
	selector           *v1.NodeSelector // of an allocation of it (nil: every node)
}

func newGenerator(seed uint64) *generator {
	return &generator{r: rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)), seed: seed, requestDrivers: drivers}
}

func generate(seed uint64) *inputs { return generateNamed(seed).in }

// generated is a seed's input with the family it came from and how it was made invalid on
// purpose ("": it was not).
type generated struct {
	in             *inputs
	family, broken string
}

func generateNamed(seed uint64) generated {
	g := newGenerator(seed)
	family := g.family()
	family.build(g)
	broken := ""
	if g.chance(invalidPercent) {
		broken = g.breakValidation()
	}
	return generated{in: &g.in, family: family.name, broken: broken}
}

// familyOf names the family a seed draws.
func familyOf(seed uint64) string { return newGenerator(seed).family().name }

func (g *generator) family() family {
	total := 0
	for _, f := range families {
		total += f.weight
	}
	draw := g.r.IntN(total)
	for _, f := range families {
		if draw < f.weight {
			return f
		}
		draw -= f.weight
	}
	panic("unreachable")
}

func (g *generator) chance(percent int) bool { return g.r.IntN(100) < percent }

func (g *generator) pick(options ...string) string { return options[g.r.IntN(len(options))] }

// between draws an int in [low, high].
func (g *generator) between(low, high int) int { return low + g.r.IntN(high-low+1) }

// addNode adds a Node with labels; most declare the optional node operations (only such a node
// may get devices of a slice that skips them).
func (g *generator) addNode(name string, labels map[string]string) *v1.Node {
	node := &v1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
	}
	if g.chance(70) {
		node.Status.DeclaredFeatures = []string{"DRAOptionalNodeOperations"}
	}
	g.in.Nodes = append(g.in.Nodes, node)
	g.nodes = append(g.nodes, name)
	return node
}

// addNodes adds count nodes node-a, node-b... in zones a and b.
func (g *generator) addNodes(count int) {
	for i := 0; i < count; i++ {
		g.addNode(fmt.Sprintf("node-%c", 'a'+i), map[string]string{"zone": string(rune('a' + i%2))})
	}
}

// podClaim is one entry of a pod's resourceClaims: a claim by name or a template.
type podClaim struct{ claim, template string }

// pod is a pod using the claims (by name) and templates, in that order.
func (g *generator) pod(name string, claims ...podClaim) *v1.Pod {
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "main", Image: "registry.example/app:1"}}},
	}
	for i, c := range claims {
		entry := v1.PodResourceClaim{Name: fmt.Sprintf("c%d", i)}
		if c.template != "" {
			entry.ResourceClaimTemplateName = ptr.To(c.template)
		} else {
			entry.ResourceClaimName = ptr.To(c.claim)
		}
		pod.Spec.ResourceClaims = append(pod.Spec.ResourceClaims, entry)
		pod.Spec.Containers[0].Resources.Claims = append(pod.Spec.Containers[0].Resources.Claims, v1.ResourceClaim{Name: entry.Name})
	}
	return pod
}

// template is a claim template with the claim's spec.
func template(name string, claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaimTemplate"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       resourceapi.ResourceClaimTemplateSpec{Spec: claim.Spec},
	}
}

// simpleClaim asks count devices of a class, with selectors.
func simpleClaim(name, class string, count int64, selectors ...string) *resourceapi.ResourceClaim {
	exact := &resourceapi.ExactDeviceRequest{DeviceClassName: class, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
	for _, selector := range selectors {
		exact.Selectors = append(exact.Selectors, celSelector(selector))
	}
	return &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "req-0", Exactly: exact,
		}}}},
	}
}

// podsOverClaims makes pods that take one to perPod claims from a pool of claims (so that some
// pods share a claim), at times one more through a template, and lists the claims before,
// between or after the pods. newClaim makes claim number i.
func (g *generator) podsOverClaims(pods, claims, perPod int, newClaim func(name string) *resourceapi.ResourceClaim) {
	var made []*resourceapi.ResourceClaim
	for i := 0; i < claims; i++ {
		made = append(made, newClaim(fmt.Sprintf("claim-%d", i)))
	}
	listed := make([]bool, len(made))
	listClaims := func() {
		for i, claim := range made {
			if !listed[i] && g.chance(50) {
				g.in.AddClaim(claim)
				listed[i] = true
			}
		}
	}
	listClaims()
	templates := 0
	for p := 0; p < pods; p++ {
		var uses []podClaim
		for _, i := range g.r.Perm(len(made))[:g.between(1, min(perPod, len(made)))] {
			uses = append(uses, podClaim{claim: made[i].Name})
		}
		if g.chance(20) {
			name := fmt.Sprintf("template-%d", templates)
			templates++
			g.in.AddTemplate(template(name, newClaim(name)))
			uses = append(uses, podClaim{template: name})
		}
		g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", p), uses...))
		if g.chance(30) {
			listClaims()
		}
	}
	for i, claim := range made {
		if !listed[i] {
			g.in.AddClaim(claim)
		}
	}
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

// pool adds a pool of random devices local to node (or, at times, to every node or a zone).
func (g *generator) pool(driver, pool, node string) {
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
		slice := g.slice(driver, pool, i, total, perDevice, node)
		slice.Spec.SkipNodeOperations = skip
		for d := 0; d < 1+g.r.IntN(5); d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, g.device(slice, fmt.Sprintf("dev-%d-%d", i, d), counters, perDevice))
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	if counters {
		slice := g.slice(driver, pool, slices, total, false, node)
		slice.Spec.SharedCounters = []resourceapi.CounterSet{{
			Name:     "memory-set",
			Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse(g.pick("16Gi", "32Gi", "40Gi"))}},
		}}
		g.in.Slices = append(g.in.Slices, slice)
	}
}

func (g *generator) slice(driver, pool string, index, count int, perDevice bool, node string) *resourceapi.ResourceSlice {
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
		slice.Spec.NodeName = ptr.To(node)
	}
	return slice
}

// nodeSlice is a slice of one node's pool.
func nodeSlice(driver, pool string, index, count int, node string) *resourceapi.ResourceSlice {
	return &resourceapi.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%s-%d", driver, pool, index)},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: int64(count)},
			NodeName: ptr.To(node),
		},
	}
}

// device is a random device of a slice (counters: it may consume the pool's memory-set).
func (g *generator) device(slice *resourceapi.ResourceSlice, name string, counters, perDevice bool) resourceapi.Device {
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
				ValidValues: validValuesUpTo(memory),
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
			// At times a node that has no Node object: dra-allocate and the judge take it as a bare Node.
			device.NodeName = ptr.To(g.pick(append(slices.Clone(g.nodes), "node-2")...))
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
	g.note(slice, &device)
	return device
}

// note remembers a device for claims that are allocated in the input: where it is and whether
// it can be shared.
func (g *generator) note(slice *resourceapi.ResourceSlice, device *resourceapi.Device) {
	g.devices = append(g.devices, generatedDevice{
		driver: slice.Spec.Driver, pool: slice.Spec.Pool.Name, name: device.Name,
		shareable: ptr.Deref(device.AllowMultipleAllocations, false),
		selector:  allocationSelector(slice, device),
	})
}

// allocationSelector is the node selector upstream puts in an allocation of this device alone.
func allocationSelector(slice *resourceapi.ResourceSlice, device *resourceapi.Device) *v1.NodeSelector {
	onNode := func(name string) *v1.NodeSelector {
		return &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{name}}},
		}}}
	}
	switch {
	case slice.Spec.NodeName != nil:
		return onNode(*slice.Spec.NodeName)
	case slice.Spec.NodeSelector != nil:
		return slice.Spec.NodeSelector.DeepCopy()
	case device.NodeName != nil:
		return onNode(*device.NodeName)
	case device.NodeSelector != nil:
		return device.NodeSelector.DeepCopy()
	}
	return nil
}

// validValues lists 8Gi, and 16Gi where the capacity holds it (the API server refuses an option
// larger than the capacity).
func validValuesUpTo(capacity string) []resource.Quantity {
	values := []resource.Quantity{resource.MustParse("8Gi")}
	if limit := resource.MustParse(capacity); limit.Cmp(resource.MustParse("16Gi")) >= 0 {
		values = append(values, resource.MustParse("16Gi"))
	}
	return values
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

// claim is a random claim over the generator's request drivers.
func (g *generator) claim(name string) *resourceapi.ResourceClaim {
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
			DeviceConfiguration: opaqueConfig(g.requestDrivers[0], "claim"),
		}}
	}
	return claim
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
	driver := g.pick(g.requestDrivers...)
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
	claim := g.allocatedClaim("in-use", g.devices[g.r.IntN(len(g.devices))])
	// The claim in use comes first: dra-allocate counts it against the claims after it.
	g.in.Claims = append([]*resourceapi.ResourceClaim{claim}, g.in.Claims...)
	for i := range g.in.Order {
		if g.in.Order[i].Kind == oracle.ClaimRef {
			g.in.Order[i].Index++
		}
	}
	g.in.Order = append([]oracle.Ref{{Kind: oracle.ClaimRef, Index: 0}}, g.in.Order...)
}

// allocatedClaim is a claim of one device, allocated to it as the scheduler would have.
func (g *generator) allocatedClaim(name string, device generatedDevice) *resourceapi.ResourceClaim {
	claim := &resourceapi.ResourceClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "resource.k8s.io/v1", Kind: "ResourceClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
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
		Devices:      resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{result}},
		NodeSelector: device.selector,
	}
	return claim
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
