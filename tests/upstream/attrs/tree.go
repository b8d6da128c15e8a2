package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"k8s.io/dynamic-resource-allocation/deviceattribute"
)

// The sysfs tree under test, read only to recognise the deliberate divergences.
type tree struct {
	root string
}

func newTree(root string) *tree { return &tree{root: root} }

func (t *tree) modifier() deviceattribute.MachineModifier {
	return deviceattribute.WithFSFromRoot(t.root)
}

func (t *tree) read(path string) string {
	data, err := os.ReadFile(filepath.Join(t.root, path))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimRight(string(data), "\x00"))
}

// hypervisorRoot names the divergence when the device's path in devices/ does not start with a
// pciDDDD:BB component (a bus behind a hypervisor's, such as Hyper-V's VMBUS).
func (t *tree) hypervisorRoot(busID string) string {
	target, err := os.Readlink(filepath.Join(t.root, "bus", "pci", "devices", busID))
	if err != nil {
		return ""
	}
	i := strings.Index(target, "devices/")
	if i < 0 {
		return ""
	}
	first := strings.SplitN(target[i+len("devices/"):], "/", 2)[0]
	if strings.HasPrefix(first, "pci") {
		return ""
	}
	return "hypervisor-pcie-root"
}

func (t *tree) pciAddresses() []string {
	entries, err := os.ReadDir(filepath.Join(t.root, "bus", "pci", "devices"))
	if err != nil {
		return nil
	}
	var addresses []string
	for _, e := range entries {
		addresses = append(addresses, e.Name())
	}
	return addresses
}

func (t *tree) longDomain(address string) bool {
	domain, _, found := strings.Cut(address, ":")
	return found && len(domain) > 4
}

func (t *tree) cpuHasNodeLink(cpu int) bool {
	matches, _ := filepath.Glob(filepath.Join(t.root, "devices", "system", "cpu", fmt.Sprintf("cpu%d", cpu), "node[0-9]*"))
	return len(matches) > 0
}

// nodeFolders: the ids of the devices/system/node/nodeN folders, sorted.
func (t *tree) nodeFolders() []int {
	entries, _ := os.ReadDir(filepath.Join(t.root, "devices", "system", "node"))
	var nodes []int
	for _, e := range entries {
		if id, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "node")); err == nil && strings.HasPrefix(e.Name(), "node") && e.IsDir() {
			nodes = append(nodes, id)
		}
	}
	sort.Ints(nodes)
	return nodes
}

// noNUMATopology names the divergence when the tree has no NUMA node folders at all.
func (t *tree) noNUMATopology() string {
	if len(t.nodeFolders()) > 0 {
		return ""
	}
	return "no-numa-topology"
}

func (t *tree) onlineNodes() []int {
	if online := t.read("devices/system/node/online"); online != "" {
		if nodes, err := parseCPUList(online); err == nil {
			return nodes
		}
	}
	return t.nodeFolders()
}

// listDivergence names the divergence that explains a different numaNode list for `node`, or
// "" when none does.
func (t *tree) listDivergence(node int) string {
	nodes := t.onlineNodes()
	for i, n := range nodes {
		if n != i {
			return "sparse-node-ids"
		}
	}
	if !t.isSLITRow(node, nodes) {
		return "non-slit-rows"
	}
	for _, n := range nodes {
		if t.read(fmt.Sprintf("devices/system/node/node%d/cpulist", n)) == "" || t.hasCPUWithoutPackage(n) {
			return "socket-of-node"
		}
	}
	return ""
}

// A SLIT row: 10 for the node itself, more than 10 for every other.
func (t *tree) isSLITRow(node int, nodes []int) bool {
	fields := strings.Fields(t.read(fmt.Sprintf("devices/system/node/node%d/distance", node)))
	if len(fields) != len(nodes) {
		return false
	}
	for k, field := range fields {
		distance, err := strconv.Atoi(field)
		if err != nil {
			return false
		}
		if (nodes[k] == node) != (distance == 10) || distance < 10 {
			return false
		}
	}
	return true
}

func (t *tree) hasCPUWithoutPackage(node int) bool {
	cpus, err := parseCPUList(t.read(fmt.Sprintf("devices/system/node/node%d/cpulist", node)))
	if err != nil {
		return false
	}
	for _, cpu := range cpus {
		if t.read(fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu)) == "" {
			return true
		}
	}
	return false
}

// parseCPUList reads the kernel's list format: "0-7,64-71", "3", "" (none).
func parseCPUList(text string) ([]int, error) {
	var ids []int
	text = strings.TrimSpace(text)
	if text == "" {
		return ids, nil
	}
	for _, part := range strings.Split(text, ",") {
		low, high, isRange := strings.Cut(part, "-")
		first, err := strconv.Atoi(low)
		if err != nil {
			return nil, fmt.Errorf("malformed CPU list %q", text)
		}
		last := first
		if isRange {
			if last, err = strconv.Atoi(high); err != nil || last < first {
				return nil, fmt.Errorf("malformed CPU list %q", text)
			}
		}
		for id := first; id <= last; id++ {
			ids = append(ids, id)
		}
	}
	return ids, nil
}
