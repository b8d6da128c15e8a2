// Package devtree fills a mocked machine's /dev (the daemon's --dev-root) with the device nodes
// its devices have, as tests/support/dev_tree.hpp does for the C++ suites: each a symlink to a
// real character device (/dev/null, /dev/zero, ...), so stat() sees a char device with a major and
// minor without root or mknod. Used by the control-plane tier and the node tier alike.
package devtree

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Mock makes dir's nodes for the PCI functions under sys: dri/<name> of DRM functions,
// nvidia<i> (i counts nvidia-bound functions in address order) with nvidiactl and the UVM nodes,
// kfd for amdgpu, infiniband/<uverbs> with rdma_cm, and vfio/<group> of vfio-pci functions with
// vfio/vfio. Nodes already there are kept.
func Mock(sys, dir string) error {
	functions, err := filepath.Glob(filepath.Join(sys, "bus", "pci", "devices", "*"))
	if err != nil {
		return err
	}
	sort.Strings(functions)
	nodes := map[string]bool{}
	nvidia := 0
	for _, function := range functions {
		driver := ""
		if target, err := os.Readlink(filepath.Join(function, "driver")); err == nil {
			driver = filepath.Base(target)
		}
		drm, _ := filepath.Glob(filepath.Join(function, "drm", "*"))
		for _, name := range drm {
			nodes["dri/"+filepath.Base(name)] = true
		}
		switch driver {
		case "nvidia":
			nodes["nvidia"+strconv.Itoa(nvidia)] = true
			nvidia++
			for _, name := range []string{"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"} {
				nodes[name] = true
			}
		case "amdgpu":
			nodes["kfd"] = true
		case "vfio-pci":
			if group, err := os.Readlink(filepath.Join(function, "iommu_group")); err == nil {
				nodes["vfio/"+filepath.Base(group)] = true
			}
			nodes["vfio/vfio"] = true
		}
		verbs, _ := filepath.Glob(filepath.Join(function, "infiniband_verbs", "*"))
		for _, name := range verbs {
			nodes["infiniband/"+filepath.Base(name)] = true
			nodes["infiniband/rdma_cm"] = true
		}
	}
	real := []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	sort.Strings(names)
	for i, name := range names {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if _, err := os.Lstat(path); err == nil {
			continue
		}
		if err := os.Symlink(real[i%len(real)], path); err != nil {
			return err
		}
	}
	return os.MkdirAll(dir, 0o755)
}
