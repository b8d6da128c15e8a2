#pragma once
// What hwloc makes of a machine, reduced to the facts discovery also derives (NUMA nodes and their
// CPUs, packages, PCI placement), so the two readings of the same sysfs tree can be compared.
// hwloc is an independent, widely used reader: when it and discovery disagree, one of them is
// wrong and a test should say so.

#include <map>
#include <string>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/discovery/machine.hpp"

namespace numadra::discovery {

struct HwlocView {
    // Every NUMA node hwloc reports (os_index) with the online CPUs of its cpuset, ascending;
    // CPU-less nodes map to an empty list.
    std::map<int, std::vector<int>> cpusByNode;
    // Every PU (online CPU) hwloc reports, ascending.
    std::vector<int> cpus;
    // PU -> os_index of the Package above it; PUs without a Package (the kernel did not say)
    // are absent.
    std::map<int, int> packageOfCpu;
    // Package os_index -> the NUMA nodes sharing CPUs with it, ascending. CPU-less nodes are never
    // listed: their package is a matter of hwloc's tree shape, not of sysfs.
    std::map<int, std::vector<int>> nodesByPackage;
    // PCI busid (DDDD:BB:DD.F, lowercase; devices and PCI-to-PCI bridges) -> the nodeset of its
    // nearest non-I/O ancestor, which is where hwloc's locality puts it (from local_cpus, not
    // from numa_node).
    std::map<std::string, std::vector<int>> pciLocalNodes;
    // busid -> os_index of the NUMA node hwloc places it under: present only when the nearest
    // non-I/O ancestor's nodeset holds exactly one node.
    std::map<std::string, int> numaNodeOfPci;

    bool operator==(const HwlocView&) const = default;
};

// Loads libhwloc on a sysfs tree (root = the folder that plays /sys), keeping every PCI device and
// bridge. Disallowed (cgroup-restricted) resources are included, since discovery ignores cgroups.
//
// hwloc 2.x takes its root from the HWLOC_FSROOT environment variable and wants the folder that
// contains sys/ and proc/: the parent of `sysfsRoot` when that is named "sys", otherwise a
// temporary folder holding a "sys" symlink to it (removed on return). The variables (also
// HWLOC_COMPONENTS=linux,stop, so the host's CPUID never leaks in) are set only for the load and
// restored afterwards, and loads are serialized with each other; the process environment is still
// shared, so this is NOT safe while other threads call setenv/unsetenv/getenv concurrently.
Result<HwlocView> loadHwlocView(const std::string& sysfsRoot);

// The same view from an hwloc XML export (lstopo --of xml, hwloc-gather-topology's NAME.xml).
Result<HwlocView> loadHwlocXml(const std::string& xmlPath);

struct CompareOptions {
    // The CPU-less nodes of the machine hwloc is expected NOT to report, exactly. hwloc drops some
    // memory-only nodes on purpose (NVIDIA GPU memory on POWER, recognised through
    // /proc/driver/nvidia/gpus/*/numa_status). Any other node missing from hwloc, a listed node
    // hwloc does report, and a listed node with CPUs are all disagreements.
    std::vector<int> cpulessNodesHwlocDrops;
    // False when hwloc's PCI placement does not come from the tree (HWLOC_PCI_LOCALITY forced
    // it); PCI placement is then left to the caller.
    bool comparePciPlacement = true;
};

// Human-readable disagreements, empty when discovery and hwloc agree on:
//  - the online CPUs;
//  - the NUMA nodes with CPUs and their (online) CPU sets;
//  - the package of every online CPU and the package(s) each NUMA node with CPUs belongs to;
//  - the CPU-less nodes (present in hwloc too, or listed in cpulessNodesHwlocDrops);
//  - for each PCI function with a known numa_node >= 0, that hwloc places it under that node.
// Only online CPUs count: hwloc has no PU for an offline or absent CPU, while a node's cpulist
// may name them.
std::vector<std::string> compareWithHwloc(const Machine& machine, const HwlocView& hwloc,
                                          const CompareOptions& options = {});

// CPU-less NUMA nodes of the machine that hwloc does not report, ascending.
std::vector<int> cpulessNodesMissingFromHwloc(const Machine& machine, const HwlocView& hwloc);

}  // namespace numadra::discovery
