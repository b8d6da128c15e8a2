package main

import (
	"fmt"
	"numadra.dev/tests/upstream/internal/oracle"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
)

// minimize shrinks an input on which the two allocators differ, one removal at a time
// (a pod, a claim, a pod's use of a claim, a node, a class, a slice, a device, a request, a
// constraint, an attribute, a capacity, a selector, a taint), keeping each removal after which
// they still differ. What is left is the
// regression file: small enough to read, and still a difference.
func minimize(draAllocate, scratch string, in *inputs) (*inputs, error) {
	path := filepath.Join(scratch, "minimizing.json")
	if err := writeInputsFile(path, in); err != nil {
		return nil, err
	}
	diff, _, err := compare(draAllocate, []string{path}, "", in, false)
	if err != nil || diff == "" {
		return nil, fmt.Errorf("the input does not differ again (%v)", err)
	}
	kind := signature(diff)
	stillDiffers := func(candidate *inputs) bool {
		if err := writeInputsFile(path, candidate); err != nil {
			return false
		}
		diff, _, err := compare(draAllocate, []string{path}, "", candidate, false)
		return err == nil && diff != "" && signature(diff) == kind
	}
	current := clone(in)
	for changed := true; changed; {
		changed = false
		for _, candidate := range shrinks(current) {
			if stillDiffers(candidate) {
				current, changed = candidate, true
				break
			}
		}
	}
	os.Remove(path)
	return current, nil
}

var (
	numbers = regexp.MustCompile(`[0-9]+`)
	quoted  = regexp.MustCompile(`"[^"]*"`)
)

// signature is what kind of difference a report is, without names and numbers: minimising keeps
// the same kind and does not drift to another difference on the way (a claim left without its
// class or its nodes differs too, in its own way).
func signature(diff string) string {
	lines := strings.SplitN(diff, "\n", 3)
	first, second := lines[0], ""
	if len(lines) > 1 {
		second = strings.TrimSpace(lines[1])
	}
	if strings.HasPrefix(first, "pod ") || strings.HasPrefix(first, "claim ") {
		_, first, _ = strings.Cut(first, ": ")
	}
	switch {
	case strings.HasPrefix(first, "upstream's validation refuses"):
		_, second, _ = strings.Cut(second, ": ") // the first refused object's first error, without its name
		second, _, _ = strings.Cut(second, ",")
	case strings.HasPrefix(second, "dra-allocate: "):
		second = strings.Fields(second)[1] // placed:, refused:, not, no
	}
	// Which answers upstream gave on the nodes, and what kind of error dra-allocate gave.
	var tags []string
	for _, tag := range []string{"unschedulable before any node", ": fits", ": does not fit", ": fails this node",
		": an allocated claim is not available", ": error:"} {
		if strings.Contains(diff, "upstream"+tag) || strings.Contains(diff, "upstream on") && strings.Contains(diff, tag) {
			tags = append(tags, strings.TrimPrefix(tag, ": "))
		}
	}
	if _, ours, ok := strings.Cut(diff, "dra-allocate: refused: "); ok {
		ours, _, _ = strings.Cut(ours, "\n")
		for _, tag := range []string{"derived attribute", "CEL runtime error", "constraint", "invalid resource pools",
			"no node is known", "device class"} {
			if strings.Contains(ours, tag) {
				tags = append(tags, "ours: "+tag)
			}
		}
	}
	text := first + " | " + second + " | " + strings.Join(tags, ", ")
	return numbers.ReplaceAllString(quoted.ReplaceAllString(text, "V"), "N")
}

func clone(in *inputs) *inputs {
	out := &inputs{Order: slices.Clone(in.Order)}
	for _, pod := range in.Pods {
		out.Pods = append(out.Pods, pod.DeepCopy())
	}
	for _, template := range in.Templates {
		out.Templates = append(out.Templates, template.DeepCopy())
	}
	for _, node := range in.Nodes {
		out.Nodes = append(out.Nodes, node.DeepCopy())
	}
	for _, class := range in.Classes {
		out.Classes = append(out.Classes, class.DeepCopy())
	}
	for _, slice := range in.Slices {
		out.Slices = append(out.Slices, slice.DeepCopy())
	}
	for _, claim := range in.Claims {
		out.Claims = append(out.Claims, claim.DeepCopy())
	}
	return out
}

// shrinks lists every input one removal smaller than in, biggest removals first.
func shrinks(in *inputs) []*inputs {
	var out []*inputs
	variant := func(change func(*inputs)) {
		candidate := clone(in)
		change(candidate)
		out = append(out, candidate)
	}
	for i := range in.Pods {
		variant(func(c *inputs) { c.Remove(oracle.Ref{Kind: oracle.PodRef, Index: i}) })
	}
	for i := range in.Claims {
		variant(func(c *inputs) { c.Remove(oracle.Ref{Kind: oracle.ClaimRef, Index: i}) })
	}
	for i := range in.Templates {
		variant(func(c *inputs) { c.Remove(oracle.Ref{Kind: oracle.TemplateRef, Index: i}) })
	}
	for p, pod := range in.Pods {
		if len(pod.Spec.ResourceClaims) > 1 {
			for k := range pod.Spec.ResourceClaims {
				variant(func(c *inputs) {
					spec := &c.Pods[p].Spec
					spec.ResourceClaims = slices.Delete(spec.ResourceClaims, k, k+1)
					spec.Containers[0].Resources.Claims = nil
				})
			}
		}
	}
	for i := range in.Nodes {
		variant(func(c *inputs) { c.Nodes = slices.Delete(c.Nodes, i, i+1) })
	}
	for i := range in.Classes {
		variant(func(c *inputs) { c.Classes = slices.Delete(c.Classes, i, i+1) })
	}
	for i := range in.Slices {
		variant(func(c *inputs) { removeSlice(c, i) })
	}
	for s, slice := range in.Slices {
		for d := range slice.Spec.Devices {
			variant(func(c *inputs) {
				c.Slices[s].Spec.Devices = slices.Delete(c.Slices[s].Spec.Devices, d, d+1)
			})
			for name := range slice.Spec.Devices[d].Attributes {
				variant(func(c *inputs) { delete(c.Slices[s].Spec.Devices[d].Attributes, name) })
			}
			for name := range slice.Spec.Devices[d].Capacity {
				variant(func(c *inputs) { delete(c.Slices[s].Spec.Devices[d].Capacity, name) })
			}
			if len(slice.Spec.Devices[d].Taints) > 0 {
				variant(func(c *inputs) { c.Slices[s].Spec.Devices[d].Taints = nil })
			}
		}
	}
	for c, claim := range in.Claims {
		devices := claim.Spec.Devices
		if claim.Status.Allocation != nil {
			continue
		}
		if len(devices.Requests) > 1 {
			for r := range devices.Requests {
				variant(func(x *inputs) { removeRequest(x.Claims[c], r) })
			}
		}
		for k := range devices.Constraints {
			variant(func(x *inputs) {
				x.Claims[c].Spec.Devices.Constraints = slices.Delete(x.Claims[c].Spec.Devices.Constraints, k, k+1)
			})
		}
		if len(devices.Config) > 0 {
			variant(func(x *inputs) { x.Claims[c].Spec.Devices.Config = nil })
		}
		for r, request := range devices.Requests {
			if request.Exactly != nil && len(request.Exactly.Selectors) > 0 {
				variant(func(x *inputs) { x.Claims[c].Spec.Devices.Requests[r].Exactly.Selectors = nil })
			}
			if request.Exactly != nil && request.Exactly.Capacity != nil {
				variant(func(x *inputs) { x.Claims[c].Spec.Devices.Requests[r].Exactly.Capacity = nil })
			}
			if len(request.FirstAvailable) > 1 {
				for s := range request.FirstAvailable {
					variant(func(x *inputs) {
						sub := &x.Claims[c].Spec.Devices.Requests[r]
						sub.FirstAvailable = slices.Delete(sub.FirstAvailable, s, s+1)
					})
				}
			}
		}
	}
	for i, class := range in.Classes {
		if len(class.Spec.Config) > 0 {
			variant(func(c *inputs) { c.Classes[i].Spec.Config = nil })
		}
		if len(class.Spec.Selectors) > 1 {
			variant(func(c *inputs) { c.Classes[i].Spec.Selectors = c.Classes[i].Spec.Selectors[:1] })
		}
	}
	return out
}

// removeSlice drops a slice and keeps its pool's slice count true.
func removeSlice(in *inputs, index int) {
	removed := in.Slices[index].Spec
	in.Slices = slices.Delete(in.Slices, index, index+1)
	for _, slice := range in.Slices {
		if slice.Spec.Driver == removed.Driver && slice.Spec.Pool.Name == removed.Pool.Name {
			slice.Spec.Pool.ResourceSliceCount--
		}
	}
}

// removeRequest drops a request and every reference to it.
func removeRequest(claim *resourceapi.ResourceClaim, index int) {
	devices := &claim.Spec.Devices
	name := devices.Requests[index].Name
	devices.Requests = slices.Delete(devices.Requests, index, index+1)
	keep := func(names []string) []string {
		return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == name })
	}
	var constraints []resourceapi.DeviceConstraint
	for _, constraint := range devices.Constraints {
		if len(constraint.Requests) > 0 {
			constraint.Requests = keep(constraint.Requests)
			if len(constraint.Requests) == 0 {
				continue
			}
		}
		constraints = append(constraints, constraint)
	}
	devices.Constraints = constraints
	var configs []resourceapi.DeviceClaimConfiguration
	for _, config := range devices.Config {
		if len(config.Requests) > 0 {
			config.Requests = keep(config.Requests)
			if len(config.Requests) == 0 {
				continue
			}
		}
		configs = append(configs, config)
	}
	devices.Config = configs
}
