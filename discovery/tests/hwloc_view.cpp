#include "hwloc_view.hpp"

#include <hwloc.h>
#include <stdlib.h>  // setenv, unsetenv, mkdtemp

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <utility>

#include "numadra/common/text.hpp"

namespace numadra::discovery {

namespace {

namespace fs = std::filesystem;

std::string errnoText() {
    return std::strerror(errno);
}

struct TopologyDeleter {
    void operator()(hwloc_topology_t topology) const { hwloc_topology_destroy(topology); }
};
using Topology = std::unique_ptr<hwloc_topology, TopologyDeleter>;

// One environment variable set (or unset, for nullopt) for the lifetime of the object.
class ScopedEnvironmentVariable {
  public:
    ScopedEnvironmentVariable(std::string name, const std::optional<std::string>& value)
        : name_(std::move(name)) {
        if (const char* previous = std::getenv(name_.c_str()))
            previous_ = previous;
        set(value);
    }
    ~ScopedEnvironmentVariable() { set(previous_); }
    ScopedEnvironmentVariable(const ScopedEnvironmentVariable&) = delete;
    ScopedEnvironmentVariable& operator=(const ScopedEnvironmentVariable&) = delete;

  private:
    // setenv/unsetenv fail only for invalid names or out of memory; the names here are valid.
    void set(const std::optional<std::string>& value) const {
        if (value) {
            ::setenv(name_.c_str(), value->c_str(), 1);
        } else {
            ::unsetenv(name_.c_str());
        }
    }

    std::string name_;
    std::optional<std::string> previous_;
};

// hwloc reads its configuration from the process environment during init and load, so every
// hwloc load in this process goes through this lock. It cannot protect against code elsewhere
// that touches the environment without taking it.
std::mutex& hwlocEnvironmentMutex() {
    static std::mutex mutex;
    return mutex;
}

// The environment of one hwloc load from a filesystem root: the root itself, the Linux backend
// only (the x86 backend would mix in the CPUID of the host running the test), and none of the
// user's variables that would change what hwloc reads or where it places devices.
class ScopedHwlocFsRootEnvironment {
  public:
    explicit ScopedHwlocFsRootEnvironment(const std::string& fsRoot)
        : fsRoot_("HWLOC_FSROOT", fsRoot),
          components_("HWLOC_COMPONENTS", "linux,stop"),
          xmlFile_("HWLOC_XMLFILE", std::nullopt),
          synthetic_("HWLOC_SYNTHETIC", std::nullopt),
          pciLocality_("HWLOC_PCI_LOCALITY", std::nullopt),
          keepGpuNodes_("HWLOC_KEEP_NVIDIA_GPU_NUMA_NODES", std::nullopt),
          thisSystem_("HWLOC_THISSYSTEM", std::nullopt) {}

  private:
    ScopedEnvironmentVariable fsRoot_;
    ScopedEnvironmentVariable components_;
    ScopedEnvironmentVariable xmlFile_;
    ScopedEnvironmentVariable synthetic_;
    ScopedEnvironmentVariable pciLocality_;
    ScopedEnvironmentVariable keepGpuNodes_;
    ScopedEnvironmentVariable thisSystem_;
};

// The folder hwloc treats as "/" for a sysfs root: the root's parent when the root is named
// "sys", else a temporary folder holding only a "sys" symlink, removed with this object.
class HwlocFilesystemRoot {
  public:
    static Result<HwlocFilesystemRoot> forSysfs(const std::string& sysfsRoot) {
        std::error_code error;
        fs::path root = fs::absolute(sysfsRoot, error);
        if (error)
            return Error{"sysfs root '" + sysfsRoot + "': " + error.message()};
        root = root.lexically_normal();
        if (!root.has_filename() && root.has_relative_path())
            root = root.parent_path();  // "sys/"
        if (!fs::is_directory(root, error)) {
            return Error{"sysfs root '" + sysfsRoot + "' is not a directory"};
        }
        if (root.filename() == "sys")
            return HwlocFilesystemRoot(root.parent_path().string(), false);

        fs::path base = fs::temp_directory_path(error);
        if (error)
            base = "/tmp";
        std::string pattern = (base / "numadra-hwloc-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            return Error{"cannot create a temporary folder from '" + pattern + "': " + errnoText()};
        }
        HwlocFilesystemRoot owned(pattern, true);  // removes the folder from here on
        fs::create_directory_symlink(root, fs::path(pattern) / "sys", error);
        if (error) {
            return Error{"cannot link " + pattern + "/sys to '" + root.string() +
                         "': " + error.message()};
        }
        return owned;
    }

    HwlocFilesystemRoot(HwlocFilesystemRoot&& other) noexcept
        : path_(std::move(other.path_)), temporary_(std::exchange(other.temporary_, false)) {}
    HwlocFilesystemRoot& operator=(HwlocFilesystemRoot&&) = delete;
    HwlocFilesystemRoot(const HwlocFilesystemRoot&) = delete;
    HwlocFilesystemRoot& operator=(const HwlocFilesystemRoot&) = delete;
    ~HwlocFilesystemRoot() {
        // remove_all does not follow the symlink: only the temporary folder and the link go.
        std::error_code ignored;
        if (temporary_)
            fs::remove_all(path_, ignored);
    }

    const std::string& path() const { return path_; }

  private:
    HwlocFilesystemRoot(std::string path, bool temporary)
        : path_(std::move(path)), temporary_(temporary) {}

    std::string path_;
    bool temporary_;
};

Result<Topology> newTopology() {
    hwloc_topology_t raw = nullptr;
    if (hwloc_topology_init(&raw) != 0)
        return Error{"hwloc_topology_init: " + errnoText()};
    Topology topology(raw);
    // The default filter keeps only "important" PCI devices and drops bridges; we compare every
    // function, and bridges are what hangs a device below its root complex.
    if (hwloc_topology_set_io_types_filter(raw, HWLOC_TYPE_FILTER_KEEP_ALL) != 0) {
        return Error{"hwloc_topology_set_io_types_filter: " + errnoText()};
    }
    // Discovery ignores cgroups (the tree may carry a cpuset cgroup of whoever gathered it).
    if (hwloc_topology_set_flags(raw, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED) != 0) {
        return Error{"hwloc_topology_set_flags: " + errnoText()};
    }
    return topology;
}

std::vector<int> toVector(hwloc_const_bitmap_t set) {
    std::vector<int> values;
    if (set == nullptr || hwloc_bitmap_weight(set) < 0)
        return values;  // -1: infinite set
    for (int i = hwloc_bitmap_first(set); i >= 0; i = hwloc_bitmap_next(set, i))
        values.push_back(i);
    return values;
}

bool knownIndex(const hwloc_obj* object) {
    return object->os_index != HWLOC_UNKNOWN_INDEX;
}

std::string busId(const hwloc_obj_attr_u::hwloc_pcidev_attr_s& pci) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%04x:%02x:%02x.%01x", static_cast<unsigned>(pci.domain),
                  static_cast<unsigned>(pci.bus), static_cast<unsigned>(pci.dev),
                  static_cast<unsigned>(pci.func));
    return buffer;
}

void addPciFunction(hwloc_topology_t topology, hwloc_obj_t object, const std::string& address,
                    HwlocView& view) {
    // I/O objects have no cpuset; the nearest ancestor that has one is where hwloc's locality
    // (local_cpus, or HWLOC_PCI_LOCALITY) attached the device's host bridge.
    hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, object);
    std::vector<int> nodes = ancestor != nullptr ? toVector(ancestor->nodeset) : std::vector<int>{};
    if (nodes.size() == 1)
        view.numaNodeOfPci[address] = nodes.front();
    view.pciLocalNodes[address] = std::move(nodes);
}

HwlocView viewOf(hwloc_topology_t topology) {
    HwlocView view;
    for (hwloc_obj_t node = nullptr;
         (node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr;) {
        if (knownIndex(node))
            view.cpusByNode[static_cast<int>(node->os_index)] = toVector(node->cpuset);
    }
    for (hwloc_obj_t pu = nullptr;
         (pu = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PU, pu)) != nullptr;) {
        const int cpu = static_cast<int>(pu->os_index);
        view.cpus.push_back(cpu);
        hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, pu);
        if (package != nullptr && knownIndex(package))
            view.packageOfCpu[cpu] = static_cast<int>(package->os_index);
    }
    std::sort(view.cpus.begin(), view.cpus.end());
    for (hwloc_obj_t package = nullptr;
         (package = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_PACKAGE, package)) != nullptr;) {
        if (!knownIndex(package))
            continue;
        std::vector<int>& nodes = view.nodesByPackage[static_cast<int>(package->os_index)];
        for (hwloc_obj_t node = nullptr;
             (node = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, node)) != nullptr;) {
            if (knownIndex(node) && hwloc_bitmap_intersects(node->cpuset, package->cpuset)) {
                nodes.push_back(static_cast<int>(node->os_index));
            }
        }
        std::sort(nodes.begin(), nodes.end());
    }
    for (hwloc_obj_t device = nullptr;
         (device = hwloc_get_next_pcidev(topology, device)) != nullptr;) {
        addPciFunction(topology, device, busId(device->attr->pcidev), view);
    }
    for (hwloc_obj_t bridge = nullptr;
         (bridge = hwloc_get_next_bridge(topology, bridge)) != nullptr;) {
        // Host bridges have no PCI address of their own; PCI-to-PCI bridges are functions.
        if (bridge->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_PCI) {
            addPciFunction(topology, bridge, busId(bridge->attr->bridge.upstream.pci), view);
        }
    }
    return view;
}

std::string cpuList(const std::vector<int>& sortedCpus) {
    return sortedCpus.empty() ? "none" : text::formatRangeList(sortedCpus);
}

std::string packageName(std::optional<int> package) {
    return package ? std::to_string(*package) : "unknown";
}

bool contains(const std::vector<int>& values, int value) {
    return std::find(values.begin(), values.end(), value) != values.end();
}

// Node -> its online CPUs as discovery sees them (every reported node, CPU-less ones included).
std::map<int, std::vector<int>> onlineCpusByNode(const Machine& machine) {
    std::map<int, std::vector<int>> byNode;
    for (const auto& node : machine.nodes) {
        std::vector<int>& cpus = byNode[node.id];
        for (int id : node.cpus) {
            if (const Cpu* cpu = machine.cpu(id); cpu != nullptr && cpu->online)
                cpus.push_back(id);
        }
    }
    return byNode;
}

void compareCpusAndNodes(const Machine& machine, const HwlocView& hwloc,
                         const std::map<int, std::vector<int>>& ours,
                         std::vector<std::string>& out) {
    std::vector<int> onlineCpus;
    for (const auto& cpu : machine.cpus) {
        if (cpu.online)
            onlineCpus.push_back(cpu.id);
    }
    if (onlineCpus != hwloc.cpus) {
        out.push_back("online CPUs: discovery has " + cpuList(onlineCpus) + ", hwloc has " +
                      cpuList(hwloc.cpus));
    }
    std::set<int> nodesWithCpus;
    for (const auto& [id, cpus] : ours) {
        if (!cpus.empty())
            nodesWithCpus.insert(id);
    }
    for (const auto& [id, cpus] : hwloc.cpusByNode) {
        if (!cpus.empty())
            nodesWithCpus.insert(id);
    }
    for (int id : nodesWithCpus) {
        const std::string name = "NUMA node " + std::to_string(id) + ": ";
        auto mine = ours.find(id);
        auto theirs = hwloc.cpusByNode.find(id);
        if (mine == ours.end()) {
            out.push_back(name + "hwloc has CPUs " + cpuList(theirs->second) +
                          ", discovery does not report the node");
        } else if (theirs == hwloc.cpusByNode.end()) {
            out.push_back(name + "discovery has CPUs " + cpuList(mine->second) +
                          ", hwloc does not report the node");
        } else if (mine->second != theirs->second) {
            out.push_back(name + "discovery has CPUs " + cpuList(mine->second) + ", hwloc has " +
                          cpuList(theirs->second));
        }
    }
}

void compareCpulessNodes(const HwlocView& hwloc, const std::map<int, std::vector<int>>& ours,
                         const CompareOptions& options, std::vector<std::string>& out) {
    for (const auto& [id, cpus] : ours) {
        if (!cpus.empty())
            continue;
        const std::string name = "NUMA node " + std::to_string(id) + " (no CPUs): ";
        const bool expectedDropped = contains(options.cpulessNodesHwlocDrops, id);
        const bool inHwloc = hwloc.cpusByNode.count(id) != 0;
        if (expectedDropped && inHwloc) {
            out.push_back(name + "expected hwloc to drop it, but hwloc reports it");
        } else if (!expectedDropped && !inHwloc) {
            out.push_back(name +
                          "hwloc does not report it (hwloc drops some memory-only nodes such as "
                          "NVIDIA GPU memory; list it in cpulessNodesHwlocDrops if expected)");
        }
    }
    for (const auto& [id, cpus] : hwloc.cpusByNode) {
        if (cpus.empty() && ours.count(id) == 0) {
            out.push_back("NUMA node " + std::to_string(id) +
                          " (no CPUs): hwloc reports it, discovery does not");
        }
    }
    for (int id : options.cpulessNodesHwlocDrops) {
        auto mine = ours.find(id);
        if (mine == ours.end()) {
            out.push_back(
                "NUMA node " + std::to_string(id) +
                ": listed as a CPU-less node hwloc drops, but discovery does not report it");
        } else if (!mine->second.empty()) {
            out.push_back("NUMA node " + std::to_string(id) +
                          ": listed as a CPU-less node hwloc drops, but discovery has CPUs " +
                          cpuList(mine->second));
        }
    }
}

void comparePackages(const Machine& machine, const HwlocView& hwloc,
                     const std::map<int, std::vector<int>>& ours, std::vector<std::string>& out) {
    // Per CPU, grouped by the (discovery, hwloc) pair so a wholly wrong socket is one line.
    std::map<std::pair<std::optional<int>, std::optional<int>>, std::vector<int>> mismatches;
    for (const auto& cpu : machine.cpus) {
        if (!cpu.online)
            continue;
        std::optional<int> theirs;
        if (auto it = hwloc.packageOfCpu.find(cpu.id); it != hwloc.packageOfCpu.end())
            theirs = it->second;
        if (cpu.package != theirs)
            mismatches[{cpu.package, theirs}].push_back(cpu.id);
    }
    for (const auto& [packages, cpus] : mismatches) {
        out.push_back("CPUs " + cpuList(cpus) + ": discovery says package " +
                      packageName(packages.first) + ", hwloc says package " +
                      packageName(packages.second));
    }

    std::map<int, std::vector<int>> hwlocPackagesOfNode;
    for (const auto& [package, nodes] : hwloc.nodesByPackage) {
        for (int node : nodes)
            hwlocPackagesOfNode[node].push_back(package);
    }
    for (const auto& [id, cpus] : ours) {
        if (cpus.empty())
            continue;
        std::set<int> packages;
        for (int c : cpus) {
            if (const Cpu* cpu = machine.cpu(c); cpu != nullptr && cpu->package)
                packages.insert(*cpu->package);
        }
        const std::vector<int> mine(packages.begin(), packages.end());
        const std::vector<int>& theirs = hwlocPackagesOfNode[id];
        if (mine != theirs) {
            out.push_back("NUMA node " + std::to_string(id) + ": discovery puts it in package(s) " +
                          cpuList(mine) + ", hwloc in " + cpuList(theirs));
        }
    }
}

void comparePciPlacement(const Machine& machine, const HwlocView& hwloc,
                         std::vector<std::string>& out) {
    for (const auto& function : machine.pci) {
        if (!function.numaNode || *function.numaNode < 0)
            continue;
        const std::string name = "PCI " + function.address + ": discovery says NUMA node " +
                                 std::to_string(*function.numaNode) + ", ";
        auto local = hwloc.pciLocalNodes.find(function.address);
        if (local == hwloc.pciLocalNodes.end()) {
            out.push_back(name + "hwloc does not report the device");
            continue;
        }
        auto placed = hwloc.numaNodeOfPci.find(function.address);
        if (placed == hwloc.numaNodeOfPci.end()) {
            out.push_back(name + "hwloc does not place it under a single node (nodes " +
                          cpuList(local->second) + ")");
        } else if (placed->second != *function.numaNode) {
            out.push_back(name + "hwloc places it under node " + std::to_string(placed->second));
        }
    }
}

Result<HwlocView> loadWith(const Topology& topology, const std::string& what) {
    if (hwloc_topology_load(topology.get()) != 0)
        return Error{"hwloc could not load " + what + ": " + errnoText()};
    return viewOf(topology.get());
}

}  // namespace

Result<HwlocView> loadHwlocView(const std::string& sysfsRoot) {
    auto fsRoot = HwlocFilesystemRoot::forSysfs(sysfsRoot);
    if (!fsRoot)
        return fsRoot.error();
    std::lock_guard lock(hwlocEnvironmentMutex());
    ScopedHwlocFsRootEnvironment environment(fsRoot->path());
    auto topology = newTopology();
    if (!topology)
        return topology.error();
    return loadWith(*topology,
                    "sysfs root '" + sysfsRoot + "' (HWLOC_FSROOT=" + fsRoot->path() + ")");
}

Result<HwlocView> loadHwlocXml(const std::string& xmlPath) {
    std::error_code error;
    if (!fs::is_regular_file(xmlPath, error))
        return Error{"hwloc XML '" + xmlPath + "' is not a file"};
    // No variable is changed, but hwloc still reads the environment during init and load.
    std::lock_guard lock(hwlocEnvironmentMutex());
    auto topology = newTopology();
    if (!topology)
        return topology.error();
    if (hwloc_topology_set_xml(topology->get(), xmlPath.c_str()) != 0) {
        return Error{"hwloc_topology_set_xml '" + xmlPath + "': " + errnoText()};
    }
    return loadWith(*topology, "XML '" + xmlPath + "'");
}

std::vector<std::string> compareWithHwloc(const Machine& machine, const HwlocView& hwloc,
                                          const CompareOptions& options) {
    std::vector<std::string> disagreements;
    const auto ours = onlineCpusByNode(machine);
    compareCpusAndNodes(machine, hwloc, ours, disagreements);
    compareCpulessNodes(hwloc, ours, options, disagreements);
    comparePackages(machine, hwloc, ours, disagreements);
    if (options.comparePciPlacement)
        comparePciPlacement(machine, hwloc, disagreements);
    return disagreements;
}

std::vector<int> cpulessNodesMissingFromHwloc(const Machine& machine, const HwlocView& hwloc) {
    std::vector<int> missing;
    for (const auto& [id, cpus] : onlineCpusByNode(machine)) {
        if (cpus.empty() && hwloc.cpusByNode.count(id) == 0)
            missing.push_back(id);
    }
    return missing;
}

}  // namespace numadra::discovery
