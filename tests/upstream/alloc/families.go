package main

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// family is one shape of generated input, with its share of the seeds.
type family struct {
	name   string
	weight int
	build  func(g *generator)
}

// families: the weights are the seeds' distribution (in parts of their sum, 100).
var families = []family{
	{"claims-one-node", 24, buildClaimsOneNode},
	{"pods", 14, buildPods},
	{"allocated-on-a-node", 8, buildAllocatedOnANode},
	{"shared-claims", 8, buildSharedClaims},
	{"invalid-pool-one-node", 7, buildInvalidPoolOnOneNode},
	{"tainted-derived", 9, buildTaintedDerived},
	{"dense-node", 6, buildDenseNode},
	{"rack-pools", 8, buildRackPools},
	{"used-up", 8, buildUsedUp},
	{"partitions-vfs", 8, buildPartitionsAndVFs},
}

// claims-one-node: one node with random pools of both drivers, every allocator feature in
// random claims alone, at times a device already in use.
func buildClaimsOneNode(g *generator) {
	g.addNode(nodeName, map[string]string{"zone": "a"})
	for _, driver := range drivers {
		g.class(driver)
		for pool := 0; pool < 1+g.r.IntN(3); pool++ {
			g.pool(driver, fmt.Sprintf("%s-pool-%d", nodeName, pool), nodeName)
		}
	}
	claims := 1 + g.r.IntN(4)
	for i := 0; i < claims; i++ {
		g.in.AddClaim(g.claim(fmt.Sprintf("claim-%d", i)))
	}
	g.preallocated()
}

// pods: two or three nodes of random pools, pods of one or two random claims (some shared
// with other pods) and at times one from a template, at times a device already in use. (Pods of
// more random claims make searches of seconds, upstream's as ours.)
func buildPods(g *generator) {
	g.addNodes(g.between(2, 3))
	for _, driver := range drivers {
		g.class(driver)
		for _, node := range g.nodes {
			g.pool(driver, node+"-pool", node)
		}
	}
	g.podsOverClaims(g.between(1, 4), g.between(1, 4), 2, g.claim)
	g.preallocated()
}

// simplePools gives every node a pool of each driver with a few plain devices (numa 0-1).
func (g *generator) simplePools(low, high int) {
	for _, driver := range drivers {
		g.class(driver)
		for _, node := range g.nodes {
			slice := nodeSlice(driver, node, 0, 1, node)
			for d := 0; d < g.between(low, high); d++ {
				slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, fmt.Sprintf("dev-%d", d)))
			}
			g.in.Slices = append(g.in.Slices, slice)
		}
	}
}

// plainDevice has the shared numa attribute and a model, nothing else.
func (g *generator) plainDevice(slice *resourceapi.ResourceSlice, name string) resourceapi.Device {
	device := resourceapi.Device{
		Name: name,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{
			sharedNuma: {IntValue: ptr.To(int64(g.r.IntN(2)))},
			"model":    {StringValue: ptr.To(g.pick("a100", "h100", "cx7"))},
		},
	}
	g.note(slice, &device)
	return device
}

// allocated-on-a-node: a claim already allocated on one node (not always the first by name),
// used by a pod with claims of its own, which must then be allocated on that node too.
func buildAllocatedOnANode(g *generator) {
	g.addNodes(g.between(2, 3))
	g.simplePools(1, 3)
	held := g.devices[g.r.IntN(len(g.devices))]
	shared := g.allocatedClaim("shared", held)
	if g.chance(30) {
		shared.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "other", UID: "uid-other"}}
	}
	g.in.AddClaim(shared)
	pods := g.between(1, 2)
	for p := 0; p < pods; p++ {
		uses := []podClaim{{claim: "shared"}}
		for c := 0; c < g.between(1, 2); c++ {
			name := fmt.Sprintf("pod-%d-own-%d", p, c)
			var claim *resourceapi.ResourceClaim
			if g.chance(60) {
				claim = simpleClaim(name, g.pick(drivers...), int64(g.between(1, 2)))
			} else {
				claim = g.claim(name)
			}
			if g.chance(20) {
				g.in.AddTemplate(template(name, claim))
				uses = append(uses, podClaim{template: name})
				continue
			}
			g.in.AddClaim(claim)
			uses = append(uses, podClaim{claim: name})
		}
		g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", p), uses...))
	}
}

// shared-claims: pods that share a claim, some of which cannot be placed (a claim of their own
// asks more than any node has), so that the shared claim is tried again by the next pod.
func buildSharedClaims(g *generator) {
	g.addNodes(g.between(1, 3))
	g.simplePools(1, 3)
	shared := simpleClaim("shared", g.pick(drivers...), 1)
	if g.chance(30) {
		shared = g.claim("shared")
	}
	listedFirst := g.chance(50)
	if listedFirst {
		g.in.AddClaim(shared)
	}
	for p := 0; p < g.between(2, 4); p++ {
		uses := []podClaim{{claim: "shared"}}
		if g.chance(70) {
			name := fmt.Sprintf("pod-%d-own", p)
			count := int64(g.between(1, 2))
			if g.chance(40) {
				count = 8 // more than any node has
			}
			g.in.AddClaim(simpleClaim(name, g.pick(drivers...), count))
			uses = append(uses, podClaim{claim: name})
			if g.chance(50) {
				uses[0], uses[1] = uses[1], uses[0]
			}
		}
		g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", p), uses...))
	}
	if !listedFirst {
		g.in.AddClaim(shared)
	}
}

// invalid-pool-one-node: several nodes, each with a pool; one node's pool lists a device twice
// (in two of its slices), which fails that node only.
func buildInvalidPoolOnOneNode(g *generator) {
	g.addNodes(g.between(2, 4))
	g.class(gpuDriver)
	broken := g.r.IntN(len(g.nodes))
	for n, node := range g.nodes {
		devices := g.between(1, 2)
		if n != broken {
			slice := nodeSlice(gpuDriver, node, 0, 1, node)
			for d := 0; d < devices; d++ {
				slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, fmt.Sprintf("gpu-%d", d)))
			}
			g.in.Slices = append(g.in.Slices, slice)
			continue
		}
		for s := 0; s < 2; s++ {
			slice := nodeSlice(gpuDriver, node, s, 2, node)
			slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, "gpu-0"))
			if s == 1 && g.chance(50) {
				slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, "gpu-1"))
			}
			g.in.Slices = append(g.in.Slices, slice)
		}
	}
	for i := 0; i < g.between(1, 3); i++ {
		claim := simpleClaim(fmt.Sprintf("claim-%d", i), gpuDriver, int64(g.between(1, 2)))
		if g.chance(50) {
			g.in.AddClaim(claim)
			continue
		}
		g.in.AddClaim(claim)
		g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", i), podClaim{claim: claim.Name}))
	}
}

// tainted-derived: devices of which some are tainted or already in use and some lack the
// attribute a derived attribute reads (example.com/socket), claims whose constraint uses that
// derived attribute, tolerating the taint at times: upstream leaves a device that is in use or
// whose taint is not tolerated out before it evaluates a derived attribute on it.
func buildTaintedDerived(g *generator) {
	g.addNodes(g.between(1, 2))
	g.class(gpuDriver)
	for _, node := range g.nodes {
		slice := nodeSlice(gpuDriver, node, 0, 1, node)
		for d := 0; d < g.between(2, 5); d++ {
			device := g.plainDevice(slice, fmt.Sprintf("gpu-%d", d))
			tainted := g.chance(40)
			if tainted {
				device.Taints = []resourceapi.DeviceTaint{{Key: taintKey, Value: "true",
					Effect: resourceapi.DeviceTaintEffect(g.pick("NoSchedule", "NoExecute"))}}
			}
			if !tainted && g.chance(85) || tainted && g.chance(15) {
				device.Attributes["example.com/socket"] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(g.r.IntN(2)))}
			}
			slice.Spec.Devices = append(slice.Spec.Devices, device)
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	if g.chance(40) {
		g.in.AddClaim(g.allocatedClaim("in-use", g.devices[g.r.IntN(len(g.devices))]))
	}
	derived := resourceapi.FullyQualifiedName("derived.example.com/socket")
	for i := 0; i < g.between(1, 3); i++ {
		claim := simpleClaim(fmt.Sprintf("claim-%d", i), gpuDriver, int64(g.between(1, 2)))
		exact := claim.Spec.Devices.Requests[0].Exactly
		exact.DerivedAttributes = []resourceapi.DeviceDerivedAttribute{{Name: derived, Expression: g.pick(
			`device.attributes["example.com"].socket`,
			`device.attributes["example.com"].socket * 2 + device.attributes["example.com"].numa`,
		)}}
		claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &derived}}
		if g.chance(30) {
			exact.Tolerations = []resourceapi.DeviceToleration{{Key: taintKey, Operator: resourceapi.DeviceTolerationOpExists}}
		}
		if g.chance(20) {
			exact.Selectors = []resourceapi.DeviceSelector{celSelector(`has(device.attributes["example.com"].socket)`)}
		}
		g.in.AddClaim(claim)
		if g.chance(50) {
			g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", i), podClaim{claim: claim.Name}))
		}
	}
}

// dense-node: one node with eight GPUs and four NICs over two NUMA nodes, pods of several claims
// asking GPUs and a NIC on one NUMA node.
func buildDenseNode(g *generator) {
	g.addNode(nodeName, map[string]string{"zone": "a"})
	g.class(gpuDriver)
	g.class(nicDriver)
	for _, driver := range drivers {
		slice := nodeSlice(driver, nodeName, 0, 1, nodeName)
		count := map[string]int{gpuDriver: 8, nicDriver: 4}[driver]
		for d := 0; d < count; d++ {
			device := g.plainDevice(slice, fmt.Sprintf("dev-%d", d))
			device.Attributes[sharedNuma] = resourceapi.DeviceAttribute{IntValue: ptr.To(int64(d * 2 / count))}
			device.Attributes["pcieRoot"] = resourceapi.DeviceAttribute{StringValue: ptr.To(fmt.Sprintf("pci0000:%02x", d*4/count))}
			slice.Spec.Devices = append(slice.Spec.Devices, device)
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	numa := resourceapi.FullyQualifiedName(sharedNuma)
	newClaim := func(name string) *resourceapi.ResourceClaim {
		claim := simpleClaim(name, gpuDriver, int64(g.between(1, 4)))
		if g.chance(60) {
			nic := simpleClaim(name, nicDriver, 1)
			nic.Spec.Devices.Requests[0].Name = "nic"
			claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, nic.Spec.Devices.Requests[0])
			claim.Spec.Devices.Constraints = []resourceapi.DeviceConstraint{{MatchAttribute: &numa}}
		}
		if g.chance(20) {
			claim.Spec.Devices.Requests[0].Exactly.AllocationMode = resourceapi.DeviceAllocationModeAll
			claim.Spec.Devices.Requests[0].Exactly.Count = 0
			claim.Spec.Devices.Requests[0].Exactly.Selectors = []resourceapi.DeviceSelector{
				celSelector(fmt.Sprintf(`device.attributes["gpu.example.com"].pcieRoot == "pci0000:%02x"`, g.r.IntN(4)))}
		}
		return claim
	}
	g.podsOverClaims(g.between(2, 4), g.between(2, 5), 3, newClaim)
}

// rack-pools: nodes in two racks; each node has GPUs; each rack has NICs on a switch its nodes
// share (a slice with a nodeSelector), and a fabric every node reaches (allNodes).
func buildRackPools(g *generator) {
	for i := 0; i < g.between(3, 4); i++ {
		g.addNode(fmt.Sprintf("node-%c", 'a'+i), map[string]string{"rack": fmt.Sprintf("rack-%d", i/2), "zone": "a"})
	}
	g.requestDrivers = []string{gpuDriver, nicDriver, "fabric.example.com"}
	for _, driver := range g.requestDrivers {
		g.class(driver)
	}
	for _, node := range g.nodes {
		slice := nodeSlice(gpuDriver, node, 0, 1, node)
		for d := 0; d < g.between(1, 2); d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, fmt.Sprintf("gpu-%d", d)))
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	for rack := 0; rack < (len(g.nodes)+1)/2; rack++ {
		slice := nodeSlice(nicDriver, fmt.Sprintf("rack-%d", rack), 0, 1, "")
		slice.Spec.NodeName = nil
		slice.Spec.NodeSelector = &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "rack", Operator: v1.NodeSelectorOpIn, Values: []string{fmt.Sprintf("rack-%d", rack)}}},
		}}}
		for d := 0; d < g.between(1, 3); d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, fmt.Sprintf("nic-%d", d)))
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	fabric := nodeSlice("fabric.example.com", "fabric", 0, 1, "")
	fabric.Spec.NodeName, fabric.Spec.AllNodes = nil, ptr.To(true)
	for d := 0; d < g.between(1, 2); d++ {
		device := g.plainDevice(fabric, fmt.Sprintf("link-%d", d))
		if g.chance(40) {
			device.AllowMultipleAllocations = ptr.To(true)
			device.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{"bandwidth": {
				Value: resource.MustParse("100G"),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{
					Default:    ptr.To(resource.MustParse("25G")),
					ValidRange: &resourceapi.CapacityRequestPolicyRange{Min: ptr.To(resource.MustParse("10G")), Step: ptr.To(resource.MustParse("5G"))},
				},
			}}
		}
		fabric.Spec.Devices = append(fabric.Spec.Devices, device)
	}
	g.in.Slices = append(g.in.Slices, fabric)
	newClaim := func(name string) *resourceapi.ResourceClaim {
		if g.chance(40) {
			return g.claim(name)
		}
		claim := simpleClaim(name, gpuDriver, 1)
		for _, driver := range []string{nicDriver, "fabric.example.com"} {
			if g.chance(60) {
				extra := simpleClaim(name, driver, 1).Spec.Devices.Requests[0]
				extra.Name = fmt.Sprintf("req-%d", len(claim.Spec.Devices.Requests))
				claim.Spec.Devices.Requests = append(claim.Spec.Devices.Requests, extra)
			}
		}
		return claim
	}
	g.podsOverClaims(g.between(2, 4), g.between(2, 4), 3, newClaim)
}

// used-up: nodes with a few GPUs each and pods asking, together, about as many as there are:
// the last pods fill the nodes exactly, spill to another node or fit nowhere.
func buildUsedUp(g *generator) {
	g.addNodes(g.between(1, 3))
	g.class(gpuDriver)
	perNode := g.between(2, 4)
	for _, node := range g.nodes {
		slice := nodeSlice(gpuDriver, node, 0, 1, node)
		for d := 0; d < perNode; d++ {
			slice.Spec.Devices = append(slice.Spec.Devices, g.plainDevice(slice, fmt.Sprintf("gpu-%d", d)))
		}
		g.in.Slices = append(g.in.Slices, slice)
	}
	total := perNode * len(g.nodes)
	asked := 0
	for p := 0; asked < total+1; p++ {
		claims := g.between(1, 2)
		var uses []podClaim
		for c := 0; c < claims; c++ {
			count := g.between(1, perNode)
			asked += count
			name := fmt.Sprintf("pod-%d-claim-%d", p, c)
			g.in.AddClaim(simpleClaim(name, gpuDriver, int64(count)))
			uses = append(uses, podClaim{claim: name})
		}
		g.in.AddPod(g.pod(fmt.Sprintf("pod-%d", p), uses...))
	}
}

// partitions-vfs: partitionable GPUs (the whole GPU or slices of it, drawing on the GPU's
// counters) and NICs with VFs (each VF draws one of its PF's VF counters), on one or two nodes.
func buildPartitionsAndVFs(g *generator) {
	g.addNodes(g.between(1, 2))
	g.class(gpuDriver)
	g.class(nicDriver)
	for _, node := range g.nodes {
		gpus := g.between(1, 2)
		devices := nodeSlice(gpuDriver, node, 0, 2, node)
		counters := nodeSlice(gpuDriver, node, 1, 2, node)
		for gpu := 0; gpu < gpus; gpu++ {
			set := fmt.Sprintf("gpu-%d-counters", gpu)
			counters.Spec.SharedCounters = append(counters.Spec.SharedCounters, resourceapi.CounterSet{Name: set,
				Counters: map[string]resourceapi.Counter{"memory": {Value: resource.MustParse("40Gi")}, "slices": {Value: resource.MustParse("7")}}})
			profiles := []struct {
				name          string
				memory, parts string
				copies        int
			}{{"whole", "40Gi", "7", 1}, {"3g", "20Gi", "3", 2}, {"1g", "5Gi", "1", g.between(2, 4)}}
			for _, profile := range profiles {
				for c := 0; c < profile.copies; c++ {
					device := g.plainDevice(devices, fmt.Sprintf("gpu-%d-%s-%d", gpu, profile.name, c))
					device.Attributes["profile"] = resourceapi.DeviceAttribute{StringValue: ptr.To(profile.name)}
					device.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
						"memory": {Value: resource.MustParse(profile.memory)}, "slices": {Value: resource.MustParse(profile.parts)}}}}
					devices.Spec.Devices = append(devices.Spec.Devices, device)
				}
			}
		}
		g.in.Slices = append(g.in.Slices, devices, counters)

		vfs := nodeSlice(nicDriver, node, 0, 2, node)
		pfs := nodeSlice(nicDriver, node, 1, 2, node)
		for pf := 0; pf < g.between(1, 2); pf++ {
			set := fmt.Sprintf("pf-%d", pf)
			limit := g.between(2, 4)
			pfs.Spec.SharedCounters = append(pfs.Spec.SharedCounters, resourceapi.CounterSet{Name: set,
				Counters: map[string]resourceapi.Counter{"vfs": {Value: *resource.NewQuantity(int64(limit), resource.DecimalSI)}}})
			whole := g.plainDevice(vfs, fmt.Sprintf("pf-%d", pf))
			whole.Attributes["kind"] = resourceapi.DeviceAttribute{StringValue: ptr.To("pf")}
			whole.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
				"vfs": {Value: *resource.NewQuantity(int64(limit), resource.DecimalSI)}}}}
			vfs.Spec.Devices = append(vfs.Spec.Devices, whole)
			for vf := 0; vf < limit+g.r.IntN(2); vf++ {
				device := g.plainDevice(vfs, fmt.Sprintf("pf-%d-vf-%d", pf, vf))
				device.Attributes["kind"] = resourceapi.DeviceAttribute{StringValue: ptr.To("vf")}
				device.ConsumesCounters = []resourceapi.DeviceCounterConsumption{{CounterSet: set, Counters: map[string]resourceapi.Counter{
					"vfs": {Value: resource.MustParse("1")}}}}
				vfs.Spec.Devices = append(vfs.Spec.Devices, device)
			}
		}
		g.in.Slices = append(g.in.Slices, vfs, pfs)
	}
	newClaim := func(name string) *resourceapi.ResourceClaim {
		if g.chance(50) {
			profile := g.pick("whole", "3g", "1g", "1g")
			return simpleClaim(name, gpuDriver, int64(g.between(1, 3)),
				fmt.Sprintf(`device.attributes["gpu.example.com"].profile == %q`, profile))
		}
		kind := g.pick("vf", "vf", "pf")
		return simpleClaim(name, nicDriver, int64(g.between(1, 3)), fmt.Sprintf(`device.attributes["nic.example.com"].kind == %q`, kind))
	}
	g.podsOverClaims(g.between(1, 4), g.between(1, 4), 3, newClaim)
	if g.chance(30) {
		g.in.AddClaim(g.allocatedClaim("in-use", g.devices[g.r.IntN(len(g.devices))]))
	}
}
