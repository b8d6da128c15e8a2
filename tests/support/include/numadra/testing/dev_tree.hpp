#pragma once
// A mocked /dev for a discovered machine: the device nodes the driver would find on that host,
// each a symlink to a real character device every Linux box has, so stat() (which follows the
// link) reports a real char device with a known major/minor and no root or mknod is needed.

#include <sys/stat.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "numadra/discovery/machine.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::testing {

struct MockDev {
    std::string root;  // absolute folder that plays /dev (HostRoots::devRoot)
    // Node path relative to /dev ("dri/renderD129", "nvidia0") -> the real device it links to.
    std::map<std::string, std::string> targets;
};

// Relative /dev paths of the nodes a machine's devices have: DRM nodes, nvidia<i> (i = index of
// the GPU among the nvidia-bound functions in address order, as testdata/generate_sysfs.py
// numbers "Device Minor") with nvidiactl and the UVM nodes, kfd, the uverbs of RDMA devices
// with rdma_cm, and vfio/<group> of vfio-pci functions with vfio/vfio.
inline std::set<std::string> expectedDevNodes(const discovery::Machine& machine) {
    std::set<std::string> nodes;
    int nvidiaIndex = 0;
    for (const auto& f : machine.pci) {  // sorted by address
        for (const auto& name : f.drm)
            nodes.insert("dri/" + name);
        if (f.kernelDriver == "nvidia") {
            nodes.insert("nvidia" + std::to_string(nvidiaIndex++));
            nodes.insert("nvidiactl");
            nodes.insert("nvidia-uvm");
            nodes.insert("nvidia-uvm-tools");
        }
        if (f.kernelDriver == "amdgpu")
            nodes.insert("kfd");
        for (const auto& rdma : f.rdma) {
            for (const auto& verbs : rdma.uverbs)
                nodes.insert("infiniband/" + verbs);
            nodes.insert("infiniband/rdma_cm");
        }
        if (f.kernelDriver == "vfio-pci") {
            if (f.iommuGroup)
                nodes.insert("vfio/" + std::to_string(*f.iommuGroup));
            nodes.insert("vfio/vfio");
        }
    }
    return nodes;
}

// The real character devices the mocked nodes point to; consecutive nodes get different ones so
// a test notices a major/minor taken from the wrong node.
inline const std::vector<std::string>& realCharDevices() {
    static const std::vector<std::string> devices = [] {
        std::vector<std::string> out;
        for (const char* candidate :
             {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}) {
            struct stat info {};
            if (::stat(candidate, &info) == 0 && S_ISCHR(info.st_mode))
                out.emplace_back(candidate);
        }
        return out;
    }();
    return devices;
}

// Creates the mocked /dev at tree.path(subPath) with every node of expectedDevNodes() except
// those in `omit` (to test what happens when a node is missing on the host).
inline MockDev makeDevTree(const discovery::Machine& machine, const TempTree& tree,
                           const std::string& subPath, const std::set<std::string>& omit = {}) {
    MockDev dev{tree.path(subPath), {}};
    tree.dir(subPath);
    const auto& real = realCharDevices();
    size_t next = 0;
    for (const auto& node : expectedDevNodes(machine)) {
        if (omit.count(node) != 0 || real.empty())
            continue;
        const std::string& target = real[next++ % real.size()];
        tree.link(subPath + "/" + node, target);
        dev.targets[node] = target;
    }
    return dev;
}

}  // namespace numadra::testing
