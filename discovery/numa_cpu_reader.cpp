// NUMA nodes (devices/system/node) and CPUs (devices/system/cpu).

#include <algorithm>
#include <cerrno>
#include <initializer_list>
#include <iterator>
#include <map>
#include <utility>

#include "numadra/common/text.hpp"
#include "readers.hpp"

namespace numadra::discovery::detail {

namespace {

constexpr std::string_view kNodeDir = "devices/system/node";
constexpr std::string_view kCpuDir = "devices/system/cpu";

std::string nodeFolder(int id) {
    return std::string(kNodeDir) + "/node" + std::to_string(id);
}
std::string nodePath(int id, std::string_view file) {
    return nodeFolder(id) + "/" + std::string(file);
}
std::string cpuPath(int id, std::string_view file) {
    return std::string(kCpuDir) + "/cpu" + std::to_string(id) + "/" + std::string(file);
}

// Numbers N of entries named "<prefix>N" in a folder.
std::vector<int> numberedEntries(const Sysfs& sysfs, std::string_view folder,
                                 std::string_view prefix) {
    std::vector<int> ids;
    for (const auto& name : sysfs.list(folder)) {
        if (!text::startsWith(name, prefix))
            continue;
        if (auto id = text::parseInt(std::string_view(name).substr(prefix.size()));
            id && *id >= 0) {
            ids.push_back(static_cast<int>(*id));
        }
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

// "Node 0 MemTotal:       3762388 kB" -> bytes
std::optional<std::uint64_t> memTotalBytes(Reader& reader, const std::string& path) {
    reader.remember(UnannouncedRead::What::MemTotal, path);
    auto content = reader.text(path, false);
    if (!content)
        return std::nullopt;
    auto bytes = parseMemTotal(*content);
    if (!bytes)
        reader.warn(path, "no parsable 'MemTotal: <n> kB' line");
    return bytes;
}

std::vector<int> distanceRow(Reader& reader, const std::string& path) {
    auto content = reader.text(path, false);
    if (!content)
        return {};
    std::vector<int> row;
    for (auto field : text::splitWhitespace(*content)) {
        auto value = text::parseInt(field);
        if (!value || *value < 0 || *value > 255) {
            reader.warn(path, "distance row has a non-distance field '" + std::string(field) +
                                  "'; ignoring the row");
            return {};
        }
        row.push_back(static_cast<int>(*value));
    }
    return row;
}

// The ids of a list file that have a folder. The kernel makes a folder for each node it lists
// online and each CPU it lists present; an id without one (a damaged tree) is left out with one
// diagnostic, as hwloc leaves out a node whose cpumap it cannot read, and a damaged list of
// millions of ids costs one walk of the folder instead of a lookup per id. A tree without any
// such folder is a reduced one (a test's, a gathered subset): its list is all there is.
std::vector<int> idsWithFolders(Reader& reader, const std::string& listFile,
                                std::vector<int> listed, const std::vector<int>& folders,
                                std::string_view what) {
    if (folders.empty())
        return listed;
    std::vector<int> kept;
    std::vector<int> missing;
    std::set_intersection(listed.begin(), listed.end(), folders.begin(), folders.end(),
                          std::back_inserter(kept));
    std::set_difference(listed.begin(), listed.end(), folders.begin(), folders.end(),
                        std::back_inserter(missing));
    if (!missing.empty()) {
        reader.warn(listFile, "lists " + std::string(what) + " " + text::formatRangeList(missing) +
                                  " that have no folder; ignoring them");
    }
    return kept;
}

// node/online, else the nodeN folders: the file is missing on old kernels and in reduced trees,
// and hwloc lists the folder then too.
std::vector<int> onlineNodeIds(Reader& reader) {
    const std::string online = std::string(kNodeDir) + "/online";
    reader.remember(UnannouncedRead::What::FileText, online);
    auto folders = numberedEntries(reader.sysfs(), kNodeDir, "node");
    if (reader.sysfs().exists(online)) {
        if (auto ids = reader.rangeList(online, true); ids && !ids->empty())
            return idsWithFolders(reader, online, std::move(*ids), folders, "nodes");
    }
    return folders;
}

// nodeN/cpulist, else nodeN/cpumap (kernels before cpulist; hwloc reads only the mask), else the
// nodeN/cpuM links.
std::vector<int> nodeCpus(Reader& reader, int id) {
    if (auto cpus = reader.cpuSet(nodePath(id, "cpulist"), nodePath(id, "cpumap")))
        return *cpus;
    auto linked = numberedEntries(reader.sysfs(), nodeFolder(id), "cpu");
    if (linked.empty()) {
        reader.warn(nodeFolder(id),
                    "has no readable cpulist, cpumap or cpuN links; taken as a "
                    "node without CPUs");
    }
    return linked;
}

void readNodes(Reader& reader, Machine& machine) {
    if (!reader.sysfs().isDirectory(kNodeDir))
        return;
    machine.onlineNodes = onlineNodeIds(reader);
    machine.hasNumaInfo = !machine.onlineNodes.empty();
    if (!machine.hasNumaInfo) {
        reader.warn(kNodeDir,
                    "names no NUMA node (no online file, no nodeN folder); the "
                    "machine is taken as one node 0");
        return;
    }
    for (int id : machine.onlineNodes) {
        NumaNode node;
        node.id = id;
        node.cpus = nodeCpus(reader, id);
        node.memoryBytes = memTotalBytes(reader, nodePath(id, "meminfo"));
        node.distanceRow = distanceRow(reader, nodePath(id, "distance"));
        if (!node.distanceRow.empty() && node.distanceRow.size() != machine.onlineNodes.size()) {
            reader.warn(nodePath(id, "distance"), "has " + std::to_string(node.distanceRow.size()) +
                                                      " entries for " +
                                                      std::to_string(machine.onlineNodes.size()) +
                                                      " online nodes; ignoring it");
            node.distanceRow.clear();
        }
        machine.nodes.push_back(std::move(node));
    }
}

std::vector<int> presentCpus(Reader& reader) {
    const std::string present = std::string(kCpuDir) + "/present";
    auto folders = numberedEntries(reader.sysfs(), kCpuDir, "cpu");
    if (reader.sysfs().exists(present)) {
        if (auto cpus = reader.rangeList(present, true))
            return idsWithFolders(reader, present, std::move(*cpus), folders, "CPUs");
    }
    return folders;
}

// core_cpus_list (5.9 on), thread_siblings_list (older), then the masks the oldest kernels have
// alone: the list files first, so a kernel before 5.9 costs no more reads than before.
// The first of a CPU's topology/ CPU sets that can be read: the list files, then the masks.
std::vector<int> topologySet(Reader& reader, int cpu, std::initializer_list<const char*> lists,
                             std::initializer_list<const char*> masks) {
    auto file = [cpu](std::string_view name) {
        return cpuPath(cpu, "topology/" + std::string(name));
    };
    for (auto list : lists) {
        if (auto set = reader.rangeList(file(list), false))
            return *set;
    }
    for (auto mask : masks) {
        if (auto set = reader.cpuMask(file(mask), false))
            return *set;
    }
    return {};
}

std::vector<int> threadSiblings(Reader& reader, int cpu) {
    return topologySet(reader, cpu, {"core_cpus_list", "thread_siblings_list"},
                       {"core_cpus", "thread_siblings"});
}

// topology/<file> as an id; nullopt when missing, unreadable or -1 (the architecture does not
// say).
std::optional<int> topologyId(Reader& reader, int cpu, std::string_view file) {
    auto value = reader.integer(cpuPath(cpu, "topology/" + std::string(file)), false);
    if (!value || *value < 0)
        return std::nullopt;
    return static_cast<int>(*value);
}

// The package, die and core ids of a CPU; false when it has no topology folder (offline).
bool readCpuIds(Reader& reader, Cpu& cpu) {
    auto optionalId = [&](std::string_view file) { return topologyId(reader, cpu.id, file); };
    // An offline CPU has no topology folder at all: the first failed read tells.
    const std::string packageFile = cpuPath(cpu.id, "topology/physical_package_id");
    auto package = reader.sysfs().read(packageFile);
    if (!package) {
        if (package.error().is(ErrorKind::NotFound) &&
            !reader.sysfs().isDirectory(cpuPath(cpu.id, "topology")))
            return false;
        if (!package.error().is(ErrorKind::NotFound))
            reader.warn(packageFile, package.error().message);
    } else if (auto id = text::parseInt(package.value()); !id) {
        reader.warn(packageFile, "not a decimal integer: '" +
                                     std::string(text::attributeText(package.value())) + "'");
    } else if (*id >= 0) {  // -1: the architecture does not say
        cpu.package = static_cast<int>(*id);
    }
    cpu.die = optionalId("die_id");
    cpu.core = optionalId("core_id");
    return true;
}

void readCpuTopology(Reader& reader, Cpu& cpu) {
    if (readCpuIds(reader, cpu))
        cpu.threadSiblings = threadSiblings(reader, cpu.id);
}

// A CPU that the first CPU of a core names as a sibling (`first` was read without a diagnostic
// and its siblings list starts with itself). When this CPU's own siblings list, read without a
// diagnostic, is the same, the CPU is a thread of that core: the kernel builds the siblings
// masks from equal package, die and core ids, so those are `first`'s, and hwloc too reads
// core_id only for the first CPU of each core_cpus set. Three files fewer per thread beyond the
// first (SMT2: half the CPUs). Otherwise the CPU's files are read as for any CPU, and reported
// in the usual order.
void readSiblingTopology(Reader& reader, Cpu& cpu, const Cpu& first) {
    const size_t mark = reader.diagnosticCount();
    auto siblings = threadSiblings(reader, cpu.id);
    const size_t siblingsEnd = reader.diagnosticCount();
    if (siblingsEnd == mark && siblings == first.threadSiblings) {
        cpu.package = first.package;
        cpu.die = first.die;
        cpu.core = first.core;
        cpu.threadSiblings = std::move(siblings);
        return;
    }
    if (readCpuIds(reader, cpu)) {
        cpu.threadSiblings = std::move(siblings);
        reader.moveDiagnosticsToEnd(mark, siblingsEnd);  // the ids' diagnostics come first
    } else {
        reader.dropDiagnostics(mark);  // no topology folder: its files are not read at all
    }
}

// CPU id -> index in Machine::cpus of the first CPU of the set (core, die or package) it is in,
// as that CPU's own set file lists them.
using FirstOfSet = std::map<int, size_t>;

// A CPU that the first CPU of a package names as a member of its package (package_cpus) takes
// that CPU's package id, and its die id too when the first CPU of its die names it (die_cpus):
// the kernel builds those sets from equal ids, and hwloc too reads physical_package_id only for
// the first CPU of each package. Its own core_id and siblings are read. False, with nothing
// reported, when the CPU is not such a member or any of its reads is not clean (no siblings
// list: no topology folder): the caller reads it as any CPU.
bool readWithinPackage(Reader& reader, Cpu& cpu, const std::vector<Cpu>& cpus,
                       const FirstOfSet& firstOfPackage, const FirstOfSet& firstOfDie) {
    const auto package = firstOfPackage.find(cpu.id);
    if (package == firstOfPackage.end())
        return false;
    const size_t mark = reader.diagnosticCount();
    const auto dieFirst = firstOfDie.find(cpu.id);
    const std::optional<int> die = dieFirst != firstOfDie.end()
                                       ? cpus[dieFirst->second].die
                                       : topologyId(reader, cpu.id, "die_id");
    const std::optional<int> core = topologyId(reader, cpu.id, "core_id");
    std::vector<int> siblings = threadSiblings(reader, cpu.id);
    if (reader.diagnosticCount() != mark || siblings.empty()) {
        reader.dropDiagnostics(mark);
        return false;
    }
    cpu.package = cpus[package->second].package;
    cpu.die = die;
    cpu.core = core;
    cpu.threadSiblings = std::move(siblings);
    return true;
}

// Makes a CPU read cleanly the first of its set for the other members its set file lists.
// Reading the set file is extra work that only saves reads: what it reports is dropped, and a
// tree where it cannot be read (`readable` goes false) is not asked again.
void addFirstOfSet(Reader& reader, const Cpu& cpu, size_t index, FirstOfSet& firstOfSet,
                   bool& readable, std::initializer_list<const char*> lists,
                   std::initializer_list<const char*> masks) {
    if (!readable || firstOfSet.count(cpu.id) != 0)
        return;
    const size_t mark = reader.diagnosticCount();
    const std::vector<int> members = topologySet(reader, cpu.id, lists, masks);
    if (reader.diagnosticCount() != mark || members.empty()) {
        reader.dropDiagnostics(mark);
        readable = false;
        return;
    }
    if (members.front() != cpu.id)
        return;
    for (size_t k = 1; k < members.size(); ++k)
        firstOfSet.emplace(members[k], index);
}

std::optional<int> nodeFromCpuLink(const Sysfs& sysfs, int cpu) {
    auto nodes =
        numberedEntries(sysfs, std::string(kCpuDir) + "/cpu" + std::to_string(cpu), "node");
    if (nodes.empty())
        return std::nullopt;
    return nodes.front();
}

void readCpus(Reader& reader, Machine& machine) {
    const Sysfs& sysfs = reader.sysfs();
    std::optional<std::vector<int>> onlineList;
    reader.remember(UnannouncedRead::What::FileText, std::string(kCpuDir) + "/online");
    if (sysfs.exists(std::string(kCpuDir) + "/online")) {
        onlineList = reader.rangeList(std::string(kCpuDir) + "/online", true);
    }
    std::map<int, int> nodeOfCpu;
    for (const auto& node : machine.nodes) {
        for (int c : node.cpus)
            nodeOfCpu.emplace(c, node.id);
    }
    const std::vector<int> present = presentCpus(reader);
    machine.cpus.reserve(present.size());
    // For the CPUs that the first CPU of their core names as its siblings
    // (readSiblingTopology), and those the first CPU of their package (die) names as members
    // (readWithinPackage).
    FirstOfSet firstOfCore, firstOfPackage, firstOfDie;
    bool packageSetsReadable = true;
    bool dieSetsReadable = true;
    for (int id : present) {
        const size_t index = machine.cpus.size();
        Cpu& cpu = machine.cpus.emplace_back();
        cpu.id = id;
        if (onlineList) {
            cpu.online = std::binary_search(onlineList->begin(), onlineList->end(), cpu.id);
        } else if (auto flag = reader.integer(cpuPath(cpu.id, "online"), false)) {
            cpu.online = *flag != 0;  // a missing file means not hot-pluggable: online
        }
        if (auto first = firstOfCore.find(cpu.id); first != firstOfCore.end()) {
            readSiblingTopology(reader, cpu, machine.cpus[first->second]);
        } else {
            const size_t mark = reader.diagnosticCount();
            if (!readWithinPackage(reader, cpu, machine.cpus, firstOfPackage, firstOfDie))
                readCpuTopology(reader, cpu);
            const auto& siblings = cpu.threadSiblings;
            if (reader.diagnosticCount() == mark && !siblings.empty()) {
                if (siblings.front() == id) {
                    for (size_t k = 1; k < siblings.size(); ++k)
                        firstOfCore.emplace(siblings[k], index);
                }
                addFirstOfSet(reader, cpu, index, firstOfPackage, packageSetsReadable,
                              {"package_cpus_list", "core_siblings_list"},
                              {"package_cpus", "core_siblings"});
                addFirstOfSet(reader, cpu, index, firstOfDie, dieSetsReadable, {"die_cpus_list"},
                              {"die_cpus"});
            }
        }
        // The node cpulists already say where a CPU lives; the cpuN/nodeM link (what upstream's
        // GetNUMANodeForCPU globs) is the fallback for CPUs no cpulist names.
        if (auto it = nodeOfCpu.find(cpu.id); it != nodeOfCpu.end()) {
            cpu.numaNode = it->second;
        } else {
            cpu.numaNode = nodeFromCpuLink(sysfs, cpu.id);
        }
        if (!cpu.numaNode && !machine.hasNumaInfo)
            cpu.numaNode = 0;
    }
}

// A kernel without CONFIG_NUMA has no node folder (and a node folder naming no node is no better):
// the whole machine is node 0, as hwloc has it.
void synthesizeSingleNode(Machine& machine) {
    NumaNode node;
    node.id = 0;
    for (const auto& cpu : machine.cpus) {
        if (cpu.online)
            node.cpus.push_back(cpu.id);
    }
    node.distanceRow = {10};
    machine.onlineNodes = {0};
    machine.nodes.push_back(std::move(node));
}

}  // namespace

void readNumaAndCpus(Reader& reader, Machine& machine) {
    readNodes(reader, machine);
    readCpus(reader, machine);
    if (!machine.hasNumaInfo)
        synthesizeSingleNode(machine);
}

}  // namespace numadra::discovery::detail
