// Discovery against real machines nobody here built: sysfs trees gathered by hwloc-gather-topology
// (such as those of hwloc's own regression tests), checked against the output hwloc expects from
// them (NAME.console, lstopo -v text, or NAME.xml), both as discovery reads them and as the
// ResourceSlices publish their CPUs. The folder comes from NUMADRA_HWLOC_GATHERED_DIR, so the
// checkout needs nothing outside itself: unset, the test is skipped saying so; set to a folder
// without NAME.tar.bz2, it fails.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <hwloc.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "hwloc_view.hpp"
#include "numadra/common/text.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/topology/attributes.hpp"

extern char** environ;

namespace numadra::discovery {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGatheredDirVariable = "NUMADRA_HWLOC_GATHERED_DIR";

std::optional<std::string> gatheredDir() {
    const char* value = std::getenv(kGatheredDirVariable);
    if (value == nullptr)
        return std::nullopt;
    return std::string(value);
}

// NAME of every NAME.tar.bz2 in the folder, sorted; empty when there is none or no such folder.
std::vector<std::string> gatheredMachines(const std::string& folder) {
    std::vector<std::string> names;
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(folder, error)) {
        const std::string file = entry.path().filename().string();
        const std::string suffix = ".tar.bz2";
        if (file.size() > suffix.size() &&
            file.compare(file.size() - suffix.size(), suffix.size(), suffix) == 0) {
            names.push_back(file.substr(0, file.size() - suffix.size()));
        }
    }
    std::sort(names.begin(), names.end());
    return names;
}

class TemporaryDirectory {
  public:
    TemporaryDirectory() {
        std::string pattern =
            (fs::temp_directory_path() / "numadra-hwloc-gathered-XXXXXX").string();
        if (::mkdtemp(pattern.data()) != nullptr)
            path_ = pattern;
    }
    ~TemporaryDirectory() {
        std::error_code ignored;
        if (!path_.empty())
            fs::remove_all(path_, ignored);
    }
    TemporaryDirectory(const TemporaryDirectory&) = delete;
    TemporaryDirectory& operator=(const TemporaryDirectory&) = delete;

    // Empty when the folder could not be created.
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// Runs a program without a shell (no quoting of file names); true on exit status 0.
bool run(const std::vector<std::string>& arguments) {
    std::vector<char*> argv;
    argv.reserve(arguments.size() + 1);
    for (const auto& argument : arguments)
        argv.push_back(const_cast<char*>(argument.c_str()));
    argv.push_back(nullptr);
    pid_t child = 0;
    if (posix_spawnp(&child, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
        return false;
    int status = 0;
    while (waitpid(child, &status, 0) < 0) {
        if (errno != EINTR)
            return false;
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

std::optional<std::string> readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream content;
    content << in.rdbuf();
    return content.str();
}

// ---- hwloc's expected output, as an object tree ----

// One object of hwloc's tree as printed in NAME.console or NAME.xml.
struct TreeObject {
    std::string
        type;  // Machine, Package, Group, NUMANode, Core, PU, HostBridge/Bridge, PCI/PCIDev, ...
    std::optional<int> osIndex;  // P# / os_index
    std::string busId;           // of PCI devices and PCI-to-PCI bridges
    int parent = -1;
    std::vector<int> children;
    std::vector<int> cpuset;   // sorted
    std::vector<int> nodeset;  // sorted
};
using Tree = std::vector<TreeObject>;

const TreeObject& at(const Tree& tree, int id) {
    return tree[static_cast<size_t>(id)];
}

std::string lowercase(std::string value) {
    for (char& c : value)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return value;
}

// I/O objects have no cpuset; their locality is that of their nearest non-I/O ancestor.
bool isIoType(const std::string& type) {
    static const std::set<std::string> io = {"HostBridge", "PCIBridge", "Bridge",
                                             "PCI",        "PCIDev",    "OSDev"};
    return io.count(type) != 0;
}

void addChild(Tree& tree, TreeObject object, int parent) {
    object.parent = parent;
    const int id = static_cast<int>(tree.size());
    if (parent >= 0)
        tree[static_cast<size_t>(parent)].children.push_back(id);
    tree.push_back(std::move(object));
}

void collectSubtree(const Tree& tree, int id, std::vector<int>& out) {
    out.push_back(id);
    for (int child : at(tree, id).children)
        collectSubtree(tree, child, out);
}

std::vector<int> subtree(const Tree& tree, int id) {
    std::vector<int> out;
    collectSubtree(tree, id, out);
    return out;
}

std::vector<int> pusBelow(const Tree& tree, int id) {
    std::vector<int> cpus;
    for (int member : subtree(tree, id)) {
        if (at(tree, member).type == "PU" && at(tree, member).osIndex)
            cpus.push_back(*at(tree, member).osIndex);
    }
    std::sort(cpus.begin(), cpus.end());
    return cpus;
}

// NAME.console: the tree part of `lstopo -v` (it ends where the "depth N:" summary starts),
// nested by indentation. The text carries no sets, so they are rebuilt the way hwloc defines them:
// a NUMA node is printed as a memory child of the object whose CPUs are local to it (Machine,
// Package or Group), so its cpuset is the PUs below that parent; an object's nodeset is the nodes
// attached below it or on its ancestor line.
Tree parseConsole(const std::string& content) {
    static const std::regex objectLine(
        R"(^( *)([A-Za-z][A-Za-z0-9]*)(\([^)]*\))?( L#\d+)?( \(|$| "))");
    static const std::regex osIndex(R"(\(P#(\d+))");
    static const std::regex busId(
        R"(busid=([0-9a-fA-F]+:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-9a-fA-F]))");
    Tree tree;
    std::vector<std::pair<size_t, int>> open;  // (indent, object) of the ancestors of the next line
    std::istringstream lines(content);
    std::string line;
    while (std::getline(lines, line)) {
        std::smatch match;
        if (!std::regex_search(line, match, objectLine))
            break;
        const size_t indent = static_cast<size_t>(match[1].length());
        if (tree.empty() ? indent != 0 : indent == 0)
            break;  // a single root: the Machine
        TreeObject object;
        object.type = match[2].str();
        if (std::smatch index; std::regex_search(line, index, osIndex))
            object.osIndex = std::stoi(index[1].str());
        if (std::smatch bus; std::regex_search(line, bus, busId))
            object.busId = lowercase(bus[1].str());
        while (!open.empty() && open.back().first >= indent)
            open.pop_back();
        addChild(tree, std::move(object), open.empty() ? -1 : open.back().second);
        open.emplace_back(indent, static_cast<int>(tree.size()) - 1);
    }
    for (int id = 0; id < static_cast<int>(tree.size()); ++id) {
        TreeObject& object = tree[static_cast<size_t>(id)];
        if (isIoType(object.type))
            continue;
        object.cpuset =
            object.type == "NUMANode" ? pusBelow(tree, object.parent) : pusBelow(tree, id);
    }
    for (int id = 0; id < static_cast<int>(tree.size()); ++id) {
        if (isIoType(at(tree, id).type))
            continue;
        std::vector<int> ancestry = subtree(tree, id);
        for (int above = at(tree, id).parent; above >= 0; above = at(tree, above).parent)
            ancestry.push_back(above);
        std::set<int> nodes;
        for (const auto& candidate : tree) {
            if (candidate.type == "NUMANode" && candidate.osIndex &&
                std::find(ancestry.begin(), ancestry.end(), candidate.parent) != ancestry.end()) {
                nodes.insert(*candidate.osIndex);
            }
        }
        tree[static_cast<size_t>(id)].nodeset.assign(nodes.begin(), nodes.end());
    }
    return tree;
}

// hwloc's bitmap text "0x000000ff,0xffffffff": 32-bit words, most significant first.
std::vector<int> parseHwlocBitmap(const std::string& text) {
    std::vector<std::string> words;
    std::istringstream parts(text);
    for (std::string word; std::getline(parts, word, ',');)
        words.push_back(word);
    std::vector<int> bits;
    for (size_t w = 0; w < words.size(); ++w) {
        const unsigned long value = std::stoul(words[w], nullptr, 16);
        const int base = static_cast<int>(32 * (words.size() - 1 - w));
        for (int bit = 0; bit < 32; ++bit) {
            if ((value >> bit) & 1UL)
                bits.push_back(base + bit);
        }
    }
    std::sort(bits.begin(), bits.end());
    return bits;
}

// NAME.xml read without hwloc: hwloc 2.9 refuses XML newer than its own version 2 format, and
// the object tree with its cpuset/nodeset/os_index/pci_busid attributes is all we need.
Tree parseXml(const std::string& content) {
    static const std::regex tag(R"(<(/?)object\b([^>]*?)(/?)>)");
    static const std::regex attribute(R"re(([a-z_]+)="([^"]*)")re");
    Tree tree;
    std::vector<int> open;
    for (auto it = std::sregex_iterator(content.begin(), content.end(), tag);
         it != std::sregex_iterator(); ++it) {
        const std::smatch& match = *it;
        if (match[1].length() > 0) {  // </object>
            if (!open.empty())
                open.pop_back();
            continue;
        }
        TreeObject object;
        const std::string attributes = match[2].str();
        for (auto a = std::sregex_iterator(attributes.begin(), attributes.end(), attribute);
             a != std::sregex_iterator(); ++a) {
            const std::string name = (*a)[1].str(), value = (*a)[2].str();
            if (name == "type")
                object.type = value;
            if (name == "os_index")
                object.osIndex = std::stoi(value);
            if (name == "pci_busid")
                object.busId = lowercase(value);
            if (name == "cpuset")
                object.cpuset = parseHwlocBitmap(value);
            if (name == "nodeset")
                object.nodeset = parseHwlocBitmap(value);
        }
        addChild(tree, std::move(object), open.empty() ? -1 : open.back());
        if (match[3].length() == 0)
            open.push_back(static_cast<int>(tree.size()) - 1);
    }
    return tree;
}

bool intersects(const std::vector<int>& sortedA, const std::vector<int>& sortedB) {
    std::vector<int> both;
    std::set_intersection(sortedA.begin(), sortedA.end(), sortedB.begin(), sortedB.end(),
                          std::back_inserter(both));
    return !both.empty();
}

// The same facts loadHwlocView() extracts from a loaded topology.
HwlocView viewOf(const Tree& tree) {
    HwlocView view;
    for (const auto& object : tree) {
        if (object.type == "NUMANode" && object.osIndex)
            view.cpusByNode[*object.osIndex] = object.cpuset;
    }
    for (const auto& object : tree) {
        if (object.type == "PU" && object.osIndex) {
            view.cpus.push_back(*object.osIndex);
            for (int above = object.parent; above >= 0; above = at(tree, above).parent) {
                if (at(tree, above).type == "Package" && at(tree, above).osIndex) {
                    view.packageOfCpu[*object.osIndex] = *at(tree, above).osIndex;
                    break;
                }
            }
        }
        if (object.type == "Package" && object.osIndex) {
            std::vector<int>& nodes = view.nodesByPackage[*object.osIndex];
            for (const auto& [node, cpus] : view.cpusByNode) {
                if (intersects(object.cpuset, cpus))
                    nodes.push_back(node);
            }
        }
        if (!object.busId.empty()) {
            int ancestor = object.parent;
            while (ancestor >= 0 && isIoType(at(tree, ancestor).type))
                ancestor = at(tree, ancestor).parent;
            const std::vector<int> nodes =
                ancestor >= 0 ? at(tree, ancestor).nodeset : std::vector<int>{};
            if (nodes.size() == 1)
                view.numaNodeOfPci[object.busId] = nodes.front();
            view.pciLocalNodes[object.busId] = nodes;
        }
    }
    std::sort(view.cpus.begin(), view.cpus.end());
    return view;
}

// "<topology version="3.0">" -> 3
int xmlMajorVersion(const std::string& content) {
    static const std::regex version(R"re(<topology\s+version="(\d+))re");
    std::smatch match;
    return std::regex_search(content, match, version) ? std::stoi(match[1].str()) : 0;
}

// ---- what the tree itself says, read without discovery ----

// Value of bus/pci/devices/<address>/numa_node; nullopt when the file is missing.
std::optional<int> rawNumaNode(const std::string& sysfsRoot, const std::string& address) {
    auto content = readFile(sysfsRoot + "/bus/pci/devices/" + address + "/numa_node");
    if (!content)
        return std::nullopt;
    return std::stoi(*content);
}

// hwloc ignores the NUMA nodes that hold NVIDIA GPU memory on POWER; it recognises them from the
// "Node: N" lines of /proc/driver/nvidia/gpus/*/numa_status.
std::vector<int> nvidiaGpuMemoryNodes(const std::string& fsRoot) {
    std::set<int> nodes;
    std::error_code error;
    for (const auto& gpu : fs::directory_iterator(fsRoot + "/proc/driver/nvidia/gpus", error)) {
        auto content = readFile(gpu.path().string() + "/numa_status");
        if (!content)
            continue;
        static const std::regex nodeLine(R"((^|\n)Node:\s*(\d+))");
        if (std::smatch match; std::regex_search(*content, match, nodeLine))
            nodes.insert(std::stoi(match[2].str()));
    }
    return {nodes.begin(), nodes.end()};
}

bool hwlocForcesPciLocality(const std::string& testFile) {
    auto content = readFile(testFile);
    return content && content->find("HWLOC_PCI_LOCALITY=") != std::string::npos;
}

std::vector<std::string> keys(const std::map<std::string, std::vector<int>>& map) {
    std::vector<std::string> out;
    out.reserve(map.size());
    for (const auto& [key, value] : map)
        out.push_back(key);
    return out;
}

// ---- what the ResourceSlices publish ----

// The CPUs the published CPU devices hand out, from their numaNode and cpus attributes.
struct PublishedCpus {
    std::map<int, std::set<int>> nodesOfCpu;     // CPU -> the nodes of the devices naming it
    std::map<int, std::int64_t> cpuCountOfNode;  // node -> its CPU capacity or counter
    std::vector<std::string> problems;           // devices the above could not be read from
};

std::optional<std::int64_t> intAttribute(const api::Device& device, const std::string& name) {
    auto it = device.attributes.find(name);
    if (it == device.attributes.end() || !std::holds_alternative<std::int64_t>(it->second))
        return std::nullopt;
    return std::get<std::int64_t>(it->second);
}

std::optional<std::string> stringAttribute(const api::Device& device, const std::string& name) {
    auto it = device.attributes.find(name);
    if (it == device.attributes.end() || !std::holds_alternative<std::string>(it->second))
        return std::nullopt;
    return std::get<std::string>(it->second);
}

// Per-node CPU devices ("cpu-numa-N") name their CPUs; with shared consumable capacity the node's
// CPU count is in the counter set the devices draw on, otherwise in the device's capacity.
PublishedCpus publishedCpus(const std::vector<api::ResourceSlice>& slices) {
    PublishedCpus published;
    for (const auto& slice : slices) {
        for (const auto& set : slice.sharedCounters) {
            auto cpu = set.counters.find("cpu");
            if (text::startsWith(set.name, "numa-") && cpu != set.counters.end() &&
                cpu->second.value) {
                const auto node = text::parseInt(std::string_view(set.name).substr(5));
                published.cpuCountOfNode[static_cast<int>(node.value_or(-1))] =
                    cpu->second.value->value();
            }
        }
        for (const auto& device : slice.devices) {
            if (stringAttribute(device, "type") != "cpu" ||
                !text::startsWith(device.name, "cpu-numa-"))
                continue;
            const auto node = intAttribute(device, topology::kNumaNodeAttribute);
            const auto cpus = stringAttribute(device, "cpus");
            auto list = cpus ? text::parseRangeList(*cpus) : Error{"no cpus attribute"};
            if (!node || !list) {
                published.problems.push_back(device.name + ": no numaNode or no readable cpus");
                continue;
            }
            for (int cpu : list.value())
                published.nodesOfCpu[cpu].insert(static_cast<int>(*node));
            if (auto capacity = device.capacity.find("cpu"); capacity != device.capacity.end())
                published.cpuCountOfNode[static_cast<int>(*node)] = capacity->second.value.value();
        }
    }
    return published;
}

// ---- the test ----

// One gathered machine: its tarball unpacked, read by discovery, and hwloc's expected answer.
class GatheredMachine {
  public:
    explicit GatheredMachine(std::string name) : name_(std::move(name)) {}

    // Unpacks NAME.tar.bz2 from `folder` and reads it and hwloc's answer; false (with the
    // failure recorded) when any of it cannot be read.
    bool load(const std::string& folder) {
        loadInto(folder);
        return loaded_;
    }

    // Discovery against hwloc's expected output, what discovery warned about, and the hwloc
    // loader against the same expected output.
    void expectAgreesWithHwloc() const;

    // What a scheduler sees: every PU hwloc places is handed out by the CPU device of the NUMA
    // node hwloc places it on, and by no other, in both forms the slices come in. The one
    // deliberate difference, the NVIDIA GPU-memory nodes hwloc drops, holds no CPU, so no CPU
    // device is published for it either.
    void expectEveryCpuPublishedOnHwlocsNode() const;

  private:
    void loadInto(const std::string& folder);
    void loadExpected(const std::string& base);

    std::string name_;
    bool loaded_ = false;
    TemporaryDirectory unpacked_;
    std::string fsRoot_;
    std::string sysfsRoot_;
    Machine machine_;
    HwlocView expected_;
    std::string expectedSource_;
    bool pciLocalityForced_ = false;
    CompareOptions options_;
};

void GatheredMachine::loadInto(const std::string& folder) {
    ASSERT_FALSE(unpacked_.path().empty()) << "cannot create a temporary folder";
    const std::string tarball = folder + "/" + name_ + ".tar.bz2";
    ASSERT_TRUE(run({"tar", "xjf", tarball, "-C", unpacked_.path()}))
        << "tar xjf " << tarball << " failed";
    // The top folder inside a tarball can differ from its name (…+pcilocality -> …+pci).
    std::vector<std::string> tops;
    for (const auto& entry : fs::directory_iterator(unpacked_.path()))
        tops.push_back(entry.path().string());
    ASSERT_EQ(tops.size(), 1u) << tarball << " should unpack to a single folder";
    fsRoot_ = tops.front();
    sysfsRoot_ = fsRoot_ + "/sys";

    auto machine = discover({sysfsRoot_, nullptr, nullptr});
    ASSERT_TRUE(machine.ok()) << machine.error().message;
    machine_ = std::move(machine).value();

    const std::string base = folder + "/" + name_;
    loadExpected(base);
    if (expectedSource_.empty())
        return;  // loadExpected failed and said why
    pciLocalityForced_ = hwlocForcesPciLocality(base + ".test");
    options_.cpulessNodesHwlocDrops = nvidiaGpuMemoryNodes(fsRoot_);
    options_.comparePciPlacement = !pciLocalityForced_;
    loaded_ = true;
}

void GatheredMachine::loadExpected(const std::string& base) {
    if (fs::exists(base + ".console")) {
        auto content = readFile(base + ".console");
        ASSERT_TRUE(content.has_value());
        const Tree tree = parseConsole(*content);
        ASSERT_FALSE(tree.empty()) << base << ".console has no object tree";
        ASSERT_EQ(tree.front().type, "Machine");
        expected_ = viewOf(tree);
        expectedSource_ = ".console";
        return;
    }
    auto content = readFile(base + ".xml");
    ASSERT_TRUE(content.has_value())
        << "no expected output (.console or .xml) beside " << base << ".tar.bz2";
    auto view = loadHwlocXml(base + ".xml");
    if (view.ok()) {
        expected_ = std::move(view).value();
        expectedSource_ = ".xml";
        return;
    }
    // Only a format newer than this hwloc understands may be read by the test itself.
    ASSERT_GT(xmlMajorVersion(*content), 2) << view.error().message;
    const Tree tree = parseXml(*content);
    ASSERT_FALSE(tree.empty()) << base << ".xml has no object tree";
    ASSERT_EQ(tree.front().type, "Machine");
    expected_ = viewOf(tree);
    expectedSource_ = ".xml (v" + std::to_string(xmlMajorVersion(*content)) +
                      ", newer than hwloc " HWLOC_VERSION " imports; read by the test)";
}

void GatheredMachine::expectEveryCpuPublishedOnHwlocsNode() const {
    std::map<int, std::set<int>> expectedNodesOfCpu;
    std::map<int, std::int64_t> expectedCountOfNode;
    for (const auto& [node, cpus] : expected_.cpusByNode) {
        for (int cpu : cpus)
            expectedNodesOfCpu[cpu].insert(node);
        if (!cpus.empty())
            expectedCountOfNode[node] = static_cast<std::int64_t>(cpus.size());
    }
    for (const bool consumable : {false, true}) {
        SCOPED_TRACE(consumable ? "slices with shared consumable capacity"
                                : "slices with per-node CPU capacity");
        slices::SliceOptions options;
        options.nodeName = "hwloc-gathered";
        options.sharedConsumableCapacity = consumable;
        auto built = slices::buildResourceSlices(machine_, options);
        ASSERT_TRUE(built.ok()) << built.error().message;
        const PublishedCpus published = publishedCpus(built.value());
        EXPECT_THAT(published.problems, ::testing::IsEmpty());
        EXPECT_EQ(published.nodesOfCpu, expectedNodesOfCpu)
            << name_ << ": CPU -> NUMA node as published vs as hwloc's " << expectedSource_;
        EXPECT_EQ(published.cpuCountOfNode, expectedCountOfNode) << name_;
        for (int dropped : options_.cpulessNodesHwlocDrops)
            EXPECT_EQ(published.cpuCountOfNode.count(dropped), 0u) << "GPU-memory node " << dropped;
    }
}

void GatheredMachine::expectAgreesWithHwloc() const {
    EXPECT_THAT(compareWithHwloc(machine_, expected_, options_), ::testing::IsEmpty())
        << name_ << ": discovery disagrees with hwloc's " << expectedSource_;

    // hwloc reads every file of these trees; discovery may only miss the files a tree lacks
    // (gathered trees are reduced: no vendor/device files, for one), never misread one.
    const std::string missing = std::generic_category().message(ENOENT);
    std::vector<std::string> misread;
    for (const auto& diagnostic : machine_.diagnostics) {
        if (diagnostic.message.find(missing) == std::string::npos)
            misread.push_back(diagnostic.path + ": " + diagnostic.message);
    }
    EXPECT_THAT(misread, ::testing::IsEmpty()) << name_;

    // The GPU-memory nodes hwloc drops must be CPU-less in discovery (compareWithHwloc checks
    // each listed one) and be the only nodes it drops.
    EXPECT_EQ(cpulessNodesMissingFromHwloc(machine_, expected_), options_.cpulessNodesHwlocDrops);

    // Both readers see the same PCI functions.
    std::vector<std::string> addresses;
    for (const auto& function : machine_.pci)
        addresses.push_back(function.address);
    EXPECT_EQ(addresses, keys(expected_.pciLocalNodes));

    // Where hwloc's placement cannot be compared, discovery must still say exactly what the tree
    // says: the numa_node file's value, or unknown when there is no such file (hwloc then places
    // the device from local_cpus alone).
    int compared = 0, noAffinity = 0, noFile = 0, placedByLocalCpus = 0;
    std::vector<std::string> contradicted;  // numa_node values a forced placement leaves out
    for (const auto& function : machine_.pci) {
        const std::optional<int> raw = rawNumaNode(sysfsRoot_, function.address);
        EXPECT_EQ(function.numaNode, raw) << function.address;
        if (!raw) {
            ++noFile;
            placedByLocalCpus += expected_.numaNodeOfPci.count(function.address) != 0 ? 1 : 0;
        } else if (*raw < 0) {
            ++noAffinity;
        } else {
            ++compared;
            const auto where = expected_.pciLocalNodes.find(function.address);
            const std::vector<int> placed =
                where != expected_.pciLocalNodes.end() ? where->second : std::vector<int>{};
            if (std::find(placed.begin(), placed.end(), *raw) == placed.end()) {
                contradicted.push_back(function.address + " numa_node " + std::to_string(*raw) +
                                       " vs hwloc nodes " + text::formatRangeList(placed));
            }
        }
    }

    int nodesWithCpus = 0, onlineCpus = 0, unlistedCpus = 0;
    for (const auto& node : machine_.nodes) {
        int online = 0;
        for (int id : node.cpus) {
            const Cpu* cpu = machine_.cpu(id);
            if (cpu != nullptr && cpu->online)
                ++online;
        }
        nodesWithCpus += online > 0 ? 1 : 0;
        onlineCpus += online;
        unlistedCpus += static_cast<int>(node.cpus.size()) - online;
    }
    std::ostringstream summary;
    summary << "[ gathered ] " << name_ << " vs hwloc " << expectedSource_ << ": " << nodesWithCpus
            << " nodes with " << onlineCpus << " CPUs, " << machine_.sockets().size()
            << " packages, " << machine_.diagnostics.size() << " warnings (" << misread.size()
            << " about files present)";
    if (unlistedCpus > 0)
        summary << " (node cpulists also name " << unlistedCpus << " absent/offline CPUs)";
    if (!options_.cpulessNodesHwlocDrops.empty()) {
        summary << ", CPU-less GPU nodes dropped by hwloc: "
                << text::formatRangeList(options_.cpulessNodesHwlocDrops);
    }
    if (machine_.pci.empty()) {
        summary << "; no PCI devices in the tree";
    } else if (pciLocalityForced_) {
        summary << "; PCI: " << machine_.pci.size()
                << " functions, placement forced by HWLOC_PCI_LOCALITY so not compared ("
                << noAffinity << " with numa_node -1, " << compared
                << " with a node, all checked against the raw files";
        if (!contradicted.empty()) {
            summary << "; the forced placement contradicts " << text::join(contradicted, ", ");
        }
        summary << ")";
    } else {
        summary << "; PCI: " << machine_.pci.size() << " functions, " << compared
                << " placements compared, " << noAffinity << " with numa_node -1, " << noFile
                << " without numa_node (unknown to discovery; hwloc placed " << placedByLocalCpus
                << " of them from local_cpus)";
    }
    std::cout << summary.str() << std::endl;

    // loadHwlocView on the same tree must read what hwloc's own test expects: a check of the
    // loader and of the readers of the expected output above, not of discovery.
    SCOPED_TRACE("loadHwlocView(" + sysfsRoot_ + ") vs hwloc's " + expectedSource_);
    auto live = loadHwlocView(sysfsRoot_);
    ASSERT_TRUE(live.ok()) << live.error().message;
    EXPECT_EQ(live->cpusByNode, expected_.cpusByNode);
    EXPECT_EQ(live->cpus, expected_.cpus);
    EXPECT_EQ(live->packageOfCpu, expected_.packageOfCpu);
    EXPECT_EQ(live->nodesByPackage, expected_.nodesByPackage);
    EXPECT_EQ(keys(live->pciLocalNodes), keys(expected_.pciLocalNodes));
    if (!pciLocalityForced_) {  // the live load does not get the .test's HWLOC_PCI_LOCALITY
        EXPECT_EQ(live->pciLocalNodes, expected_.pciLocalNodes);
        EXPECT_EQ(live->numaNodeOfPci, expected_.numaNodeOfPci);
    }
}

// Every machine of the folder (each unpacks its tarball, which is the slow part), one after the
// other: the test names do not depend on the environment, so ctest, which lists them when the
// binary is built, runs the machines of whatever folder the variable names when it runs.
TEST(HwlocGathered, EveryMachineAgreesWithHwlocsExpectedOutput) {
    const auto folder = gatheredDir();
    if (!folder) {
        GTEST_SKIP() << kGatheredDirVariable
                     << " is not set: set it to a folder of hwloc-gathered machines (NAME.tar.bz2 "
                        "beside NAME.console or NAME.xml) to compare discovery with hwloc on them";
    }
    const std::vector<std::string> machines = gatheredMachines(*folder);
    ASSERT_FALSE(machines.empty()) << kGatheredDirVariable << "=" << *folder
                                   << " holds no NAME.tar.bz2 (or is not a readable folder)";
    for (const auto& name : machines) {
        SCOPED_TRACE("hwloc-gathered machine " + name);
        GatheredMachine machine(name);
        if (!machine.load(*folder))
            continue;
        machine.expectAgreesWithHwloc();
        machine.expectEveryCpuPublishedOnHwlocsNode();
    }
}

}  // namespace
}  // namespace numadra::discovery
