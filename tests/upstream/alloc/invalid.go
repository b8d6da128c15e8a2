package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// Inputs made invalid on purpose, each in one way the API server refuses (so that
// upstream's validation, and dra-allocate's exit status 2, are judged on every kind of object).
type breakage struct {
	name  string
	apply func(g *generator) bool // false: the input has nothing to break this way
}

var breakages = []breakage{
	// A capacity with a requestPolicy on a device that does not allow multiple allocations.
	{"requestPolicy without allowMultipleAllocations", func(g *generator) bool {
		return g.someDevice(func(device *resourceapi.Device) bool {
			if ptr.Deref(device.AllowMultipleAllocations, false) {
				return false
			}
			if device.Capacity == nil {
				device.Capacity = map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}
			}
			device.Capacity["memory"] = resourceapi.DeviceCapacity{
				Value:         resource.MustParse("16Gi"),
				RequestPolicy: &resourceapi.CapacityRequestPolicy{Default: ptr.To(resource.MustParse("1Gi"))},
			}
			return true
		})
	}},
	// A requestPolicy option larger than the capacity.
	{"requestPolicy option above the capacity", func(g *generator) bool {
		return g.someDevice(func(device *resourceapi.Device) bool {
			for name, capacity := range device.Capacity {
				if capacity.RequestPolicy == nil || len(capacity.RequestPolicy.ValidValues) == 0 {
					continue
				}
				larger := capacity.Value.DeepCopy()
				larger.Add(resource.MustParse("1Gi"))
				capacity.RequestPolicy.ValidValues = append(capacity.RequestPolicy.ValidValues, larger)
				device.Capacity[name] = capacity
				return true
			}
			return false
		})
	}},
	// A counter set without counters (beside a pool's counters, or in a slice of its own).
	{"counter set without counters", func(g *generator) bool {
		for _, slice := range g.in.Slices {
			if len(slice.Spec.SharedCounters) > 0 {
				slice.Spec.SharedCounters = append(slice.Spec.SharedCounters, resourceapi.CounterSet{Name: "empty-set"})
				return true
			}
		}
		if len(g.nodes) == 0 {
			return false
		}
		slice := nodeSlice(gpuDriver, "spare", 0, 1, g.nodes[0])
		slice.Spec.SharedCounters = []resourceapi.CounterSet{{Name: "empty-set", Counters: map[string]resourceapi.Counter{}}}
		g.in.Slices = append(g.in.Slices, slice)
		return true
	}},
	// A device listed twice in one slice.
	{"device twice in a slice", func(g *generator) bool {
		for _, slice := range g.in.Slices {
			if len(slice.Spec.Devices) > 0 {
				slice.Spec.Devices = append(slice.Spec.Devices, *slice.Spec.Devices[0].DeepCopy())
				return true
			}
		}
		return false
	}},
	// A taint with an effect that does not exist.
	{"unknown taint effect", func(g *generator) bool {
		return g.someDevice(func(device *resourceapi.Device) bool {
			device.Taints = append(device.Taints, resourceapi.DeviceTaint{Key: taintKey, Effect: "Sometimes"})
			return true
		})
	}},
	// An attribute with two values.
	{"attribute with two values", func(g *generator) bool {
		return g.someDevice(func(device *resourceapi.Device) bool {
			device.Attributes["model"] = resourceapi.DeviceAttribute{StringValue: ptr.To("a100"), IntValue: ptr.To(int64(1))}
			return true
		})
	}},
	// A selector that does not compile.
	{"selector syntax error", func(g *generator) bool {
		return g.someRequest(func(exact *resourceapi.ExactDeviceRequest) bool {
			exact.Selectors = append(exact.Selectors, celSelector(`device.driver == `))
			return true
		})
	}},
	// A negative count.
	{"negative count", func(g *generator) bool {
		return g.someRequest(func(exact *resourceapi.ExactDeviceRequest) bool {
			if exact.AllocationMode != resourceapi.DeviceAllocationModeExactCount {
				return false
			}
			exact.Count = -1
			return true
		})
	}},
	// A constraint on an attribute name without a domain.
	{"unqualified matchAttribute", func(g *generator) bool {
		for _, claim := range g.in.Claims {
			if claim.Status.Allocation == nil {
				claim.Spec.Devices.Constraints = append(claim.Spec.Devices.Constraints,
					resourceapi.DeviceConstraint{MatchAttribute: ptr.To(resourceapi.FullyQualifiedName("numa"))})
				return true
			}
		}
		return false
	}},
	// A derived attribute that no constraint uses.
	{"unused derived attribute", func(g *generator) bool {
		return g.someRequest(func(exact *resourceapi.ExactDeviceRequest) bool {
			exact.DerivedAttributes = append(exact.DerivedAttributes, resourceapi.DeviceDerivedAttribute{
				Name: "derived.example.com/unused", Expression: `device.attributes["example.com"].numa`})
			return true
		})
	}},
	// A class selector that does not compile.
	{"class selector syntax error", func(g *generator) bool {
		if len(g.in.Classes) == 0 {
			return false
		}
		class := g.in.Classes[g.r.IntN(len(g.in.Classes))]
		class.Spec.Selectors = append(class.Spec.Selectors, celSelector(`device.attributes[`))
		return true
	}},
}

// breakValidation makes the input invalid in one of the ways above, drawn at random, and
// names it.
func (g *generator) breakValidation() string {
	for _, index := range g.r.Perm(len(breakages)) {
		if breakages[index].apply(g) {
			return breakages[index].name
		}
	}
	return ""
}

// someDevice applies change to a random device until it takes.
func (g *generator) someDevice(change func(*resourceapi.Device) bool) bool {
	for _, s := range g.r.Perm(len(g.in.Slices)) {
		slice := g.in.Slices[s]
		for _, d := range g.r.Perm(len(slice.Spec.Devices)) {
			if change(&slice.Spec.Devices[d]) {
				return true
			}
		}
	}
	return false
}

// someRequest applies change to a random exact request of a claim not allocated yet (or of a
// template) until it takes.
func (g *generator) someRequest(change func(*resourceapi.ExactDeviceRequest) bool) bool {
	var specs []*resourceapi.ResourceClaimSpec
	for _, claim := range g.in.Claims {
		if claim.Status.Allocation == nil {
			specs = append(specs, &claim.Spec)
		}
	}
	for _, template := range g.in.Templates {
		specs = append(specs, &template.Spec.Spec)
	}
	for _, s := range g.r.Perm(len(specs)) {
		for _, r := range g.r.Perm(len(specs[s].Devices.Requests)) {
			if exact := specs[s].Devices.Requests[r].Exactly; exact != nil && change(exact) {
				return true
			}
		}
	}
	return false
}
