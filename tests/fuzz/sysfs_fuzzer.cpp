// The sysfs readers with random file contents. At start the fuzzer copies a few mocked machines
// (testdata/generate_sysfs.py, generated into the build tree) into a scratch folder and lists the
// files the readers parse: NUMA node online/cpulist/distance/meminfo, CPU online/present/
// topology ids and sibling lists, and for the published PCI functions (and a bridge above each)
// class/vendor/device ids, numa_node, local_cpulist/local_cpus, link speed/width, SR-IOV counts,
// uevent, config space, AER counters and power_state, plus their netdevs (speed, carrier,
// operstate, mtu, type, address, flags) and RDMA node GUIDs.
//
// Input: byte 0 picks one of those files (modulo their number), the rest replaces its content.
// Then discovery::discover() reads the machine, the slices are built from it, and the health
// Checker checks every published device twice: with the fuzzed file, and after the original
// content is back (counters going down, links coming back). The kernel text parsers
// (common/core/text.hpp) get the content directly too.
//
// Contracts checked: discovery never fails on a sysfs root (only values become unknown, each
// with a diagnostic naming its file); a range list that parses formats back to itself.
//
// NUMADRA_FUZZ_SYSFS overrides the folder of the generated machines. With
// NUMADRA_FUZZ_WRITE_SEEDS=DIR the fuzzer writes one seed per file (its index byte and the
// original content) into DIR and exits: that is how tests/fuzz/corpus/sysfs was made.

#include <sys/stat.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "numadra/common/text.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/health/health.hpp"
#include "numadra/slices/builder.hpp"

namespace {

using namespace numadra;
namespace fs = std::filesystem;

// Small machines that between them have every kind of file: GPUs behind switches with AER
// counters and a downtrained link, an InfiniBand NIC with RDMA (gpu4-nic); a PF with VFs bound
// to two drivers and a PF with its link down (sriov-nic); damaged files and a dangling link
// (bad-files); positional distance rows and CPU-less nodes (sparse-gpu-mem).
const std::vector<std::string> kMachines = {"gpu4-nic", "sriov-nic", "bad-files", "sparse-gpu-mem"};

const std::set<std::string> kCpuTopologyFiles = {"physical_package_id", "die_id", "core_id",
                                                 "core_cpus_list", "thread_siblings_list"};
const std::vector<std::string> kFunctionFiles = {"class",
                                                 "vendor",
                                                 "device",
                                                 "subsystem_vendor",
                                                 "numa_node",
                                                 "local_cpulist",
                                                 "local_cpus",
                                                 "current_link_speed",
                                                 "current_link_width",
                                                 "max_link_speed",
                                                 "max_link_width",
                                                 "sriov_totalvfs",
                                                 "sriov_numvfs",
                                                 "uevent",
                                                 "config",
                                                 "aer_dev_correctable",
                                                 "aer_dev_fatal",
                                                 "aer_dev_nonfatal",
                                                 "power_state",
                                                 "aer_rootport_total_err_cor"};
const std::vector<std::string> kNetdevFiles = {"speed", "carrier", "operstate", "mtu",
                                               "type",  "address", "flags",     "phys_port_name"};

struct Target {
    std::string machine;   // its root in the scratch copy
    std::string relative;  // the file, relative to the root
    std::string original;  // its content
};

struct World {
    fuzz::ScratchDir scratch{"sysfs"};
    std::vector<Target> targets;
};

std::string generatedSysfs() {
    if (const char* dir = std::getenv("NUMADRA_FUZZ_SYSFS"))
        return dir;
    return NUMADRA_GENERATED_SYSFS;
}

bool isRegularFile(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

// At most two files of one name per machine (a function's and its bridge's, two nodes, two
// CPUs): the input's first byte has to be able to pick every file.
void addTarget(World& world, std::map<std::string, int>& perName, const std::string& root,
               const std::string& relative) {
    const std::string path = root + "/" + relative;
    if (!isRegularFile(path))
        return;
    for (const auto& target : world.targets) {
        if (target.machine == root && target.relative == relative)
            return;
    }
    if (++perName[fs::path(relative).filename().string()] > 2)
        return;
    world.targets.push_back({root, relative, fuzz::readFile(path)});
}

// The files worth fuzzing in one machine, in a fixed order.
void listTargets(World& world, const std::string& root) {
    std::map<std::string, int> seen;
    const std::string nodeDir = "devices/system/node";
    addTarget(world, seen, root, nodeDir + "/online");
    addTarget(world, seen, root, nodeDir + "/possible");
    addTarget(world, seen, root, nodeDir + "/has_normal_memory");
    std::error_code ec;
    int nodes = 0;
    for (const auto& name : fuzz::listTree(root + "/" + nodeDir)) {
        const auto slash = name.find('/');
        if (slash == std::string::npos || name.rfind("node", 0) != 0 || nodes > 2)
            continue;
        const std::string file = name.substr(slash + 1);
        if (file == "cpulist" || file == "distance" || file == "meminfo") {
            addTarget(world, seen, root, nodeDir + "/" + name);
            if (file == "meminfo")
                ++nodes;
        }
    }
    const std::string cpuDir = "devices/system/cpu";
    for (const char* file : {"online", "present", "possible", "offline", "kernel_max"})
        addTarget(world, seen, root, cpuDir + "/" + file);
    // Two CPUs: their online flag and topology.
    for (const char* cpu : {"cpu0", "cpu1"}) {
        addTarget(world, seen, root, cpuDir + "/" + cpu + "/online");
        for (const auto& file : kCpuTopologyFiles)
            addTarget(world, seen, root, cpuDir + "/" + cpu + "/topology/" + file);
    }

    // The published PCI functions, the bridge above each, and their netdevs.
    auto machine = discovery::discover({root, nullptr, nullptr});
    if (!machine)
        fuzz::fail("cannot discover " + root + ": " + machine.error().message);
    // The first published function of each kind, and the first VF.
    std::set<std::string> kinds;
    for (const auto& function : machine->pci) {
        if (function.kind.empty() ||
            !kinds.insert(function.kind + (function.sriovVf ? "-vf" : "")).second)
            continue;
        const std::string parent = discovery::dirName(function.devicePath);
        for (const auto& file : kFunctionFiles) {
            addTarget(world, seen, root, function.devicePath + "/" + file);
            addTarget(world, seen, root, parent + "/" + file);
        }
        for (const auto& netdev : function.netdevs) {
            for (const auto& file : kNetdevFiles)
                addTarget(world, seen, root, netdev.path + "/" + file);
        }
        for (const auto& rdma : function.rdma) {
            addTarget(world, seen, root,
                      function.devicePath + "/infiniband/" + rdma.name + "/node_guid");
        }
    }
}

World& world() {
    static World* instance = [] {
        auto* w = new World();
        std::vector<std::string> machines = kMachines;
        if (const char* only = std::getenv("NUMADRA_FUZZ_SYSFS_MACHINES")) {
            machines.clear();
            std::string list = only;
            for (auto part : text::split(list, ','))
                machines.emplace_back(part);
        }
        for (const auto& name : machines) {
            const std::string source = generatedSysfs() + "/" + name + "/sys";
            if (!fs::is_directory(source))
                fuzz::fail("missing mocked machine " + source +
                           " (build the generated_sysfs target or set NUMADRA_FUZZ_SYSFS)");
            const std::string root = w->scratch.path(name);
            fs::create_directories(root);
            fs::copy(source, root, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
            listTargets(*w, root);
        }
        return w;
    }();
    return *instance;
}

void checkTextParsers(std::string_view content) {
    (void)text::parseInt(content);
    (void)text::parseHex(content);
    (void)text::parseLeadingDouble(content);
    (void)text::splitWhitespace(content);
    if (auto mask = text::parseCpuMask(content); mask)
        (void)text::formatRangeList(*mask);
    if (auto list = text::parseRangeList(content); list) {
        const std::string formatted = text::formatRangeList(*list);
        auto again = text::parseRangeList(formatted);
        if (!again || *again != *list)
            fuzz::fail("range list \"" + std::string(content) + "\" formats to \"" + formatted +
                       "\", which does not parse back to it");
    }
}

void discoverAndCheckHealth(const std::string& root, const Target& target) {
    auto machine = discovery::discover({root, nullptr, nullptr});
    if (!machine)
        fuzz::fail("discover failed on a sysfs root: " + machine.error().message);
    for (const auto& diagnostic : machine->diagnostics) {
        if (diagnostic.path.empty())
            fuzz::fail("a diagnostic names no file: " + diagnostic.message);
    }
    (void)machine->sockets();
    for (const auto& node : machine->nodes) {
        for (const auto& other : machine->nodes)
            (void)machine->distance(node.id, other.id);
        (void)machine->socketOfNode(node.id);
    }

    slices::SliceOptions options;
    options.nodeName = "fuzz-node";
    options.numaForm = topology::NumaForm::List;
    options.sharedConsumableCapacity = true;
    options.devicesMayBeTainted = true;
    auto built = slices::buildResourceSlices(*machine, options);
    if (!built)
        return;  // an invalid device is refused with an error (the daemon logs it)
    std::vector<api::Device> devices;
    for (const auto& slice : *built) {
        (void)api::toJson(slice);
        devices.insert(devices.end(), slice.devices.begin(), slice.devices.end());
    }

    // The health checks read few of the files; for the others a round tells nothing new.
    static const std::set<std::string> kHealthFiles = {"aer_dev_correctable",
                                                       "aer_dev_fatal",
                                                       "aer_dev_nonfatal",
                                                       "current_link_speed",
                                                       "current_link_width",
                                                       "max_link_speed",
                                                       "max_link_width",
                                                       "power_state",
                                                       "operstate",
                                                       "carrier",
                                                       "flags",
                                                       "phys_port_name",
                                                       "online",
                                                       "class",
                                                       "vendor",
                                                       "device"};
    if (kHealthFiles.count(fs::path(target.relative).filename().string()) == 0) {
        fuzz::writeFile(root + "/" + target.relative, target.original);
        return;
    }
    const auto watched = health::watchList(*machine, devices);
    health::Checker checker(discovery::Sysfs(root), health::Policy{});
    const auto now = health::Clock::now();
    checker.beginRound();
    for (const auto& device : watched)
        (void)checker.check(device, now);
    // The original content back: a second round sees the change the other way.
    fuzz::writeFile(root + "/" + target.relative, target.original);
    checker.beginRound();
    std::map<std::string, health::DeviceHealth> states;
    for (const auto& device : watched)
        states[device.deviceName] = checker.check(device, now + std::chrono::seconds(61));
    (void)health::taintsFor(states, "numa.dra.dev", "NoSchedule");
}

void writeSeeds(const std::string& dir) {
    fs::create_directories(dir);
    const auto& targets = world().targets;
    for (std::size_t i = 0; i < targets.size() && i < 256; ++i) {
        std::string seed(1, static_cast<char>(i));
        seed += targets[i].original;
        char name[32];
        std::snprintf(name, sizeof name, "%03zu-", i);
        std::string label = fs::path(targets[i].machine).filename().string() + "-" +
                            fs::path(targets[i].relative).filename().string();
        fuzz::writeFile(dir + "/" + name + label, seed);
    }
    std::fprintf(stderr, "wrote %zu seeds to %s\n", std::min<std::size_t>(targets.size(), 256),
                 dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    const auto& targets = world().targets;
    if (targets.empty())
        fuzz::fail("no sysfs files to fuzz");
    if (const char* dir = std::getenv("NUMADRA_FUZZ_WRITE_SEEDS")) {
        writeSeeds(dir);
        std::exit(0);
    }
    if (std::getenv("NUMADRA_FUZZ_LIST_FILES")) {
        for (std::size_t i = 0; i < targets.size(); ++i)
            std::fprintf(stderr, "%3zu %s/%s\n", i, targets[i].machine.c_str(),
                         targets[i].relative.c_str());
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    auto& targets = world().targets;
    const Target& target = targets[data[0] % std::min<std::size_t>(targets.size(), 256)];
    const std::string_view content(reinterpret_cast<const char*>(data + 1), size - 1);
    checkTextParsers(content);

    fuzz::writeFile(target.machine + "/" + target.relative, content);
    discoverAndCheckHealth(target.machine, target);  // restores the file
    return 0;
}
