package main

import (
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

// A device as numa-probe publishes it; only what the comparison reads.
type device struct {
	Name       string               `json:"name"`
	Attributes map[string]attribute `json:"attributes"`
}

type attribute struct {
	Int    *int64  `json:"int,omitempty"`
	Ints   []int64 `json:"ints,omitempty"`
	String *string `json:"string,omitempty"`
}

const (
	numaNodeName = "resource.kubernetes.io/numaNode"
	pcieRootName = "resource.kubernetes.io/pcieRoot"
	pciBusIDName = "resource.kubernetes.io/pciBusID"
)

// The README's deliberate differences, each with how this tree shows it.
var divergences = map[string]string{
	"sparse-node-ids":      "the distance row's entry k is the k-th online node (upstream: node k)",
	"non-slit-rows":        "a distance row that is not a SLIT gives just the physical node (upstream: every node at the 'minimum')",
	"socket-of-node":       "a node's socket is the package of its first CPU whose package is known, its CPUs read from cpulist or (older kernels) cpumap",
	"hypervisor-pcie-root": "pcieRoot is the first pciDDDD:BB component of the path (upstream fails under VMBUS)",
	"vmd-domain":           "no pciBusID for a 5+ digit PCI domain (upstream's format check rejects it)",
	"cpu-scalar-numa":      "a CPU device's numaNode stays the scalar node with --numa-list (a CPU is its node; KEP-6072 lets CPU drivers publish a scalar)",
	"no-numa-topology":     "a machine whose sysfs has no NUMA nodes has every CPU on node 0, as hwloc and libnuma say (upstream finds no node)",
	"cpu-node-links":       "a CPU's node is read from the node folders (cpulist, cpumap, cpuM links), also where cpuN has no nodeM link (upstream reads only that link)",
}

func divergenceNames() []string {
	names := make([]string, 0, len(divergences))
	for name := range divergences {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

type difference struct {
	what, detail, divergence string
}

type report struct {
	agreed      []string
	explained   []difference
	unexplained []difference
}

func (r *report) agree(format string, args ...any) {
	r.agreed = append(r.agreed, fmt.Sprintf(format, args...))
}

// differ files a difference as the named divergence when `because` names one, else as
// unexplained.
func (r *report) differ(what, detail, because string) {
	d := difference{what: what, detail: detail, divergence: because}
	if because == "" {
		r.unexplained = append(r.unexplained, d)
	} else {
		r.explained = append(r.explained, d)
	}
}

func compare(t *tree, devices []device, list bool) report {
	var r report
	form := deviceattribute.ScalarAttribute
	if list {
		form = deviceattribute.ListAttribute
	}
	published := map[string]bool{}
	for _, d := range devices {
		if busID := stringValue(d.Attributes[pciBusIDName]); busID != "" {
			published[busID] = true
			comparePCIDevice(&r, t, d, busID, form)
		}
		if cpus := stringValue(d.Attributes["cpus"]); cpus != "" {
			compareCPUDevice(&r, t, d, cpus, form)
		}
	}
	compareUnpublishableAddresses(&r, t, published)
	return r
}

func comparePCIDevice(r *report, t *tree, d device, busID string, form deviceattribute.AttributeForm) {
	if attr, err := deviceattribute.GetPCIBusIDAttribute(busID); err != nil {
		r.differ(d.Name+" pciBusID", fmt.Sprintf("we publish %s, upstream refuses it: %v", busID, err), "")
	} else if *attr.Value.StringValue != busID {
		r.differ(d.Name+" pciBusID", fmt.Sprintf("we publish %s, upstream %s", busID, *attr.Value.StringValue), "")
	} else {
		r.agree("%s pciBusID %s", d.Name, busID)
	}

	ours := stringValue(d.Attributes[pcieRootName])
	attr, err := deviceattribute.GetPCIeRootAttributeByPCIBusID(busID, t.modifier())
	switch {
	case err != nil && ours == "":
		r.agree("%s pcieRoot absent (upstream: %v)", d.Name, err)
	case err != nil:
		r.differ(d.Name+" pcieRoot", fmt.Sprintf("we publish %q, upstream fails: %v", ours, err), t.hypervisorRoot(busID))
	case *attr.Value.StringValue != ours:
		r.differ(d.Name+" pcieRoot", fmt.Sprintf("we publish %q, upstream %q", ours, *attr.Value.StringValue), t.hypervisorRoot(busID))
	default:
		r.agree("%s pcieRoot %s", d.Name, ours)
	}

	ourNode, published := d.Attributes[numaNodeName]
	upstream, err := deviceattribute.GetNUMANodeAttributeByPCIBusID(busID, form, t.modifier())
	switch {
	case err != nil && !published:
		r.agree("%s numaNode absent (upstream: %v)", d.Name, err)
	case err != nil:
		r.differ(d.Name+" numaNode", fmt.Sprintf("we publish %s, upstream publishes none: %v", describe(ourNode), err), "")
	case !published:
		r.differ(d.Name+" numaNode", fmt.Sprintf("we publish none, upstream %s", describe(fromUpstream(upstream))), "")
	default:
		compareNUMANode(r, t, d.Name, ourNode, fromUpstream(upstream))
	}
}

func compareCPUDevice(r *report, t *tree, d device, cpus string, form deviceattribute.AttributeForm) {
	ourNode, published := d.Attributes[numaNodeName]
	if !published {
		r.differ(d.Name+" numaNode", "a CPU device without numaNode", "")
		return
	}
	physical := physicalNode(ourNode)
	ids, err := parseCPUList(cpus)
	if err != nil {
		r.differ(d.Name+" cpus", fmt.Sprintf("%q: %v", cpus, err), "")
		return
	}
	for _, cpu := range ids {
		node, err := deviceattribute.GetNUMANodeForCPU(cpu, t.modifier())
		switch {
		case err != nil:
			because := t.noNUMATopology()
			if because == "" && !t.cpuHasNodeLink(cpu) {
				because = "cpu-node-links"
			}
			r.differ(fmt.Sprintf("%s cpu%d", d.Name, cpu), fmt.Sprintf("upstream finds no node: %v", err), because)
		case int64(node) != physical:
			r.differ(fmt.Sprintf("%s cpu%d", d.Name, cpu), fmt.Sprintf("we place it on node %d, upstream on %d", physical, node), "")
		}
	}
	r.agree("%s: its %d CPUs are on node %d for upstream too", d.Name, len(ids), physical)
	upstream, err := deviceattribute.GetNUMANodeAttribute(int(physical), form, t.modifier())
	if err != nil {
		r.differ(d.Name+" numaNode", fmt.Sprintf("upstream refuses node %d: %v", physical, err), "")
		return
	}
	theirs := fromUpstream(upstream)
	if form == deviceattribute.ListAttribute && ourNode.Int != nil && physicalNode(theirs) == physical {
		r.differ(d.Name+" numaNode", fmt.Sprintf("we publish %s, upstream %s", describe(ourNode), describe(theirs)), "cpu-scalar-numa")
		return
	}
	compareNUMANode(r, t, d.Name, ourNode, theirs)
}

func compareNUMANode(r *report, t *tree, name string, ours, upstream attribute) {
	if reflect.DeepEqual(ours, upstream) {
		r.agree("%s numaNode %s", name, describe(ours))
		return
	}
	r.differ(name+" numaNode", fmt.Sprintf("we publish %s, upstream %s", describe(ours), describe(upstream)),
		t.listDivergence(int(physicalNode(ours))))
}

// Addresses whose pciBusID upstream refuses (VMD's 5+ digit domains): we must not publish one.
func compareUnpublishableAddresses(r *report, t *tree, published map[string]bool) {
	for _, address := range t.pciAddresses() {
		if _, err := deviceattribute.GetPCIBusIDAttribute(address); err == nil {
			continue
		}
		if published[address] {
			r.differ(address+" pciBusID", "published, though upstream's format check refuses it", "")
			continue
		}
		because := ""
		if t.longDomain(address) {
			because = "vmd-domain"
		}
		r.differ(address+" pciBusID", "not published: upstream's format check refuses it", because)
	}
}

func fromUpstream(a deviceattribute.DeviceAttribute) attribute {
	return attribute{Int: a.Value.IntValue, Ints: a.Value.IntValues, String: a.Value.StringValue}
}

func physicalNode(a attribute) int64 {
	if a.Int != nil {
		return *a.Int
	}
	if len(a.Ints) > 0 {
		return a.Ints[0]
	}
	return -1
}

func stringValue(a attribute) string {
	if a.String == nil {
		return ""
	}
	return *a.String
}

func describe(a attribute) string {
	switch {
	case a.Int != nil:
		return strconv.FormatInt(*a.Int, 10)
	case a.Ints != nil:
		parts := make([]string, len(a.Ints))
		for i, v := range a.Ints {
			parts[i] = strconv.FormatInt(v, 10)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case a.String != nil:
		return strconv.Quote(*a.String)
	}
	return "nothing"
}
