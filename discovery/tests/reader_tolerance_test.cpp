// The readers accept what real kernels write and hwloc's Linux backend accepts: files padded with
// NUL bytes, hex masks where newer kernels have lists, and node folders without node/online.
// Each test builds the smallest tree that shows one of these forms.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "numadra/discovery/discovery.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::discovery {
namespace {

using numadra::testing::loadMachine;
using numadra::testing::TempTree;

constexpr const char* kNodeDir = "devices/system/node";
constexpr const char* kCpuDir = "devices/system/cpu";

std::vector<int> idsFrom(int first, int last) {
    std::vector<int> ids(static_cast<size_t>(last - first + 1));
    std::iota(ids.begin(), ids.end(), first);
    return ids;
}

std::string nodeFile(int node, const std::string& file) {
    return std::string(kNodeDir) + "/node" + std::to_string(node) + "/" + file;
}

std::string cpuFile(int cpu, const std::string& file) {
    return std::string(kCpuDir) + "/cpu" + std::to_string(cpu) + "/" + file;
}

// What a file holds on machines that pad attributes: the text, then a NUL byte.
std::string nulPadded(std::string text) {
    text.push_back('\0');
    return text;
}

std::string diagnosticsOf(const Machine& machine) {
    std::string out;
    for (const auto& d : machine.diagnostics)
        out += d.path + ": " + d.message + "\n";
    return out;
}

Machine discoverTree(const TempTree& tree) {
    auto machine = discover({tree.root(), nullptr, nullptr});
    if (!machine) {
        ADD_FAILURE() << machine.error().message;
        return {};
    }
    return std::move(machine).value();
}

TEST(ReaderTolerance, NodeCpulistWithNulAfterTheNewlineKeepsItsCpus) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", "0-1\n");
    tree.file(nodeFile(0, "cpulist"), "0-31\n");
    tree.file(nodeFile(1, "cpulist"), nulPadded("32-63\n"));  // as an ARM server has it
    tree.file(std::string(kCpuDir) + "/present", "0-63\n");
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[1].cpus, idsFrom(32, 63));
    EXPECT_EQ(machine.cpu(40)->numaNode, 1);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, NodeCpusComeFromTheCpumapWhenThereIsNoCpulist) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", "0-1\n");
    tree.file(nodeFile(0, "cpumap"), "00000000,0000ffff\n");
    tree.file(nodeFile(1, "cpumap"), "00000001,ffff0000\n");
    tree.file(std::string(kCpuDir) + "/present", "0-32\n");
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[0].cpus, idsFrom(0, 15));
    EXPECT_EQ(machine.nodes[1].cpus, idsFrom(16, 32));
    EXPECT_EQ(machine.cpu(32)->numaNode, 1);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, NodeCpusComeFromTheCpuLinksWhenThereIsNeitherCpulistNorCpumap) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", "0-1\n");
    for (int cpu = 0; cpu < 4; ++cpu) {
        const int node = cpu / 2;
        tree.file(cpuFile(cpu, "uevent"), "DRIVER=processor\n");
        tree.link(nodeFile(node, "cpu" + std::to_string(cpu)),
                  "../../cpu/cpu" + std::to_string(cpu));
    }
    tree.file(nodeFile(0, "meminfo"), "Node 0 MemTotal:       1024 kB\n");
    tree.file(nodeFile(1, "meminfo"), "Node 1 MemTotal:       1024 kB\n");
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[0].cpus, (std::vector<int>{0, 1}));
    EXPECT_EQ(machine.nodes[1].cpus, (std::vector<int>{2, 3}));
    EXPECT_EQ(machine.cpu(3)->numaNode, 1);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, WithoutNodeOnlineTheNodeFoldersAreTheNodesAndNothingIsReported) {
    TempTree tree;
    tree.file(nodeFile(0, "cpulist"), "0-1\n");
    tree.file(nodeFile(2, "cpulist"), "2-3\n");
    tree.file(std::string(kNodeDir) + "/possible", "0-3\n");
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    const Machine machine = discoverTree(tree);
    EXPECT_TRUE(machine.hasNumaInfo);
    EXPECT_EQ(machine.onlineNodes, (std::vector<int>{0, 2}));
    EXPECT_EQ(machine.cpu(2)->numaNode, 2);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, UnparsableNodeOnlineFallsBackToTheNodeFoldersWithAWarning) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", "zero\n");
    tree.file(nodeFile(0, "cpulist"), "0-1\n");
    tree.file(nodeFile(1, "cpulist"), "2-3\n");
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.onlineNodes, (std::vector<int>{0, 1}));
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.root() + "/" + kNodeDir + "/online");
}

// The fuzzer's find: a damaged node/online naming 20,000 nodes made 20,000 bare nodes (and a
// quadratic amount of work after). The kernel makes a folder for every online node.
TEST(ReaderTolerance, NodesListedOnlineWithoutAFolderAreLeftOutWithOneWarning) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", "0-1,6-20350\n");
    tree.file(nodeFile(0, "cpulist"), "0-1\n");
    tree.file(nodeFile(1, "cpulist"), "2-3\n");
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.onlineNodes, (std::vector<int>{0, 1}));
    EXPECT_EQ(machine.nodes.size(), 2u);
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.root() + "/" + kNodeDir + "/online");
    EXPECT_EQ(machine.diagnostics[0].message,
              "lists nodes 6-20350 that have no folder; ignoring them");
}

TEST(ReaderTolerance, CpusListedPresentWithoutAFolderAreLeftOutWithOneWarning) {
    TempTree tree;
    tree.file(nodeFile(0, "cpulist"), "0-1\n");
    tree.file(std::string(kCpuDir) + "/present", "0-1,4,9-65535\n");
    tree.file(cpuFile(0, "online"), "1\n");
    tree.file(cpuFile(1, "online"), "1\n");
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.cpus.size(), 2u);
    EXPECT_EQ(machine.cpus[1].id, 1);
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.root() + "/" + kCpuDir + "/present");
    EXPECT_EQ(machine.diagnostics[0].message,
              "lists CPUs 4,9-65535 that have no folder; ignoring them");
}

TEST(ReaderTolerance, NodeFolderWithoutAnyNodeIsOneNodeZeroWithAWarning) {
    TempTree tree;
    tree.dir(std::string(kNodeDir) + "/power");
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    const Machine machine = discoverTree(tree);
    EXPECT_FALSE(machine.hasNumaInfo);
    ASSERT_EQ(machine.nodes.size(), 1u);
    EXPECT_EQ(machine.nodes[0].cpus, idsFrom(0, 3));
    EXPECT_EQ(machine.cpu(3)->numaNode, 0);
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.root() + "/" + kNodeDir);
}

TEST(ReaderTolerance, ThreadSiblingsComeFromTheMaskWhenThereAreNoListFiles) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-1\n");
    for (int cpu = 0; cpu < 2; ++cpu) {
        tree.file(cpuFile(cpu, "topology/physical_package_id"), "0\n");
        tree.file(cpuFile(cpu, "topology/core_id"), "0\n");
        tree.file(cpuFile(cpu, "topology/thread_siblings"), "00000003\n");
    }
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->threadSiblings, (std::vector<int>{0, 1}));
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, PackageIdWithNulPaddingIsRead) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0\n");
    tree.file(cpuFile(0, "topology/physical_package_id"), nulPadded("1\n"));
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(0)->package, 1);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, PciFilesWithNulPaddingAreRead) {
    TempTree tree;
    const std::string device = "devices/pci0000:00/0000:00:01.0/";
    auto padded = [](const std::string& value) { return nulPadded(nulPadded(value + "\n")); };
    tree.file(device + "class", padded("0x020000"));
    tree.file(device + "vendor", padded("0x8086"));
    tree.file(device + "device", padded("0x1572"));
    tree.file(device + "numa_node", padded("1"));
    tree.file(device + "local_cpulist", padded("2-3"));
    tree.file(device + "current_link_speed", padded("8.0 GT/s PCIe"));
    tree.file(device + "current_link_width", padded("8"));
    tree.file(device + "uevent", padded("DRIVER=i40e\nPCI_CLASS=20000\nPCI_ID=8086:1572"));
    tree.file(device + "net/eth0/speed", padded("10000"));
    tree.file(device + "net/eth0/carrier", padded("1"));
    tree.file(device + "net/eth0/mtu", padded("1500"));
    tree.link("bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.pci.size(), 1u);
    const PciFunction& nic = machine.pci[0];
    EXPECT_EQ(nic.classCode, 0x020000u);
    EXPECT_EQ(nic.deviceId, 0x1572u);
    EXPECT_EQ(nic.kernelDriver, "i40e");
    EXPECT_EQ(nic.numaNode, 1);
    EXPECT_EQ(nic.localCpus, (std::vector<int>{2, 3}));
    EXPECT_EQ(nic.currentLink.speedGTs, 8.0);
    EXPECT_EQ(nic.currentLink.width, 8);
    ASSERT_EQ(nic.netdevs.size(), 1u);
    EXPECT_EQ(nic.netdevs[0].speedMbps, 10000);
    EXPECT_EQ(nic.netdevs[0].carrier, true);
    EXPECT_EQ(nic.netdevs[0].mtu, 1500);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, NodeMeminfoAndDistanceWithNulPaddingAreRead) {
    TempTree tree;
    tree.file(std::string(kNodeDir) + "/online", nulPadded("0\n"));
    tree.file(nodeFile(0, "cpulist"), nulPadded("0\n"));
    tree.file(nodeFile(0, "distance"), nulPadded("10\n"));
    tree.file(nodeFile(0, "meminfo"), nulPadded("Node 0 MemTotal:       2048 kB\n"));
    tree.file(std::string(kCpuDir) + "/present", nulPadded("0\n"));
    const Machine machine = discoverTree(tree);
    ASSERT_EQ(machine.nodes.size(), 1u);
    EXPECT_EQ(machine.nodes[0].distanceRow, (std::vector<int>{10}));
    EXPECT_EQ(machine.nodes[0].memoryBytes, 2048u * 1024u);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

// The mocked machines of both forms read as cleanly as any other (hwloc_test checks them against
// libhwloc too).
TEST(ReaderTolerance, ArmServerWithNulPaddedSystemFilesReadsCompletely) {
    const Machine machine = loadMachine("arm-nul-padded");
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[1].cpus, idsFrom(32, 63));
    EXPECT_EQ(machine.nodes[1].distanceRow, (std::vector<int>{20, 10}));
    EXPECT_EQ(machine.nodes[1].memoryBytes, std::uint64_t{64} << 30);
    EXPECT_EQ(machine.sockets(), (std::vector<int>{0, 1}));
    EXPECT_EQ(machine.cpu(63)->threadSiblings, (std::vector<int>{63}));
}

TEST(ReaderTolerance, LegacyKernelTreeGivesEveryCpuItsNodeAndSiblings) {
    const Machine machine = loadMachine("legacy-kernel");
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
    EXPECT_EQ(machine.onlineNodes, (std::vector<int>{0, 1}));
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[0].cpus, (std::vector<int>{0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17}));
    EXPECT_EQ(machine.cpu(18)->numaNode, 1);
    EXPECT_EQ(machine.cpu(0)->threadSiblings, (std::vector<int>{0, 12}));
    const PciFunction* nic = machine.pciFunction("0000:01:00.0");
    ASSERT_NE(nic, nullptr);
    EXPECT_EQ(nic->localCpus, machine.nodes[0].cpus);  // from local_cpus: no local_cpulist
}

// A PF with one VF below bridge 0000:00:01.0; `vfTarget` is the PF's virtfn0 link.
void writePfAndVf(const TempTree& tree, const std::string& pf, const std::string& vf,
                  const std::string& vfTarget) {
    const std::string bridge = "devices/pci0000:00/0000:00:01.0/";
    tree.file(bridge + pf + "/uevent", "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_ID=15B3:101D\n");
    tree.file(bridge + pf + "/numa_node", "0\n");
    tree.file(bridge + pf + "/sriov_totalvfs", "4\n");
    tree.file(bridge + pf + "/sriov_numvfs", "1\n");
    tree.link(bridge + pf + "/virtfn0", vfTarget);
    tree.file(bridge + vf + "/uevent", "DRIVER=mlx5_core\nPCI_CLASS=20000\nPCI_ID=15B3:101E\n");
    tree.file(bridge + vf + "/numa_node", "0\n");
    tree.link(bridge + vf + "/physfn", "../" + pf);
    for (const auto& address : {pf, vf})
        tree.link("bus/pci/devices/" + address, "../../../" + bridge + address);
}

TEST(ReaderTolerance, VfNamedByItsPfsVirtfnLinkIsItsVfAtTheBusLinksFolder) {
    TempTree tree;
    writePfAndVf(tree, "0000:01:00.0", "0000:01:00.1", "../0000:01:00.1");
    const Machine machine = discoverTree(tree);
    const PciFunction* vf = machine.pciFunction("0000:01:00.1");
    ASSERT_NE(vf, nullptr);
    EXPECT_EQ(vf->devicePath, "devices/pci0000:00/0000:00:01.0/0000:01:00.1");
    EXPECT_EQ(vf->pcieRoot, "pci0000:00");
    EXPECT_EQ(vf->deviceId, 0x101e);
    ASSERT_TRUE(vf->sriovVf.has_value());
    EXPECT_EQ(vf->sriovVf->pfAddress, "0000:01:00.0");
    EXPECT_EQ(vf->sriovVf->index, 0);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, VfWhoseVirtfnLinkDanglesIsFoundThroughItsBusLink) {
    TempTree tree;
    writePfAndVf(tree, "0000:01:00.0", "0000:01:00.1", "../gone/0000:01:00.1");
    const Machine machine = discoverTree(tree);
    const PciFunction* vf = machine.pciFunction("0000:01:00.1");
    ASSERT_NE(vf, nullptr);
    EXPECT_EQ(vf->devicePath, "devices/pci0000:00/0000:00:01.0/0000:01:00.1");
    ASSERT_TRUE(vf->sriovVf.has_value());
    EXPECT_EQ(vf->sriovVf->pfAddress, "0000:01:00.0");
    EXPECT_EQ(vf->sriovVf->index, 0);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, VfBeforeItsPfInAddressOrderIsKnownByItsPhysfnLink) {
    TempTree tree;
    writePfAndVf(tree, "0000:01:00.1", "0000:01:00.0", "../0000:01:00.0");
    const Machine machine = discoverTree(tree);
    const PciFunction* vf = machine.pciFunction("0000:01:00.0");
    ASSERT_NE(vf, nullptr);
    ASSERT_TRUE(vf->sriovVf.has_value());
    EXPECT_EQ(vf->sriovVf->pfAddress, "0000:01:00.1");
    EXPECT_EQ(vf->sriovVf->index, 0);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

// The second thread of a core takes the first thread's package, die and core ids only when its
// own siblings list, read cleanly, is the first thread's; any other tree is read file by file.
void writeCpu(const TempTree& tree, int cpu, const std::string& package, const std::string& core,
              const std::string& siblings) {
    tree.file(cpuFile(cpu, "topology/physical_package_id"), package);
    tree.file(cpuFile(cpu, "topology/die_id"), "0\n");
    tree.file(cpuFile(cpu, "topology/core_id"), core);
    tree.file(cpuFile(cpu, "topology/core_cpus_list"), siblings);
}

TEST(ReaderTolerance, SecondThreadOfACoreHasTheIdsOfTheFirst) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    writeCpu(tree, 0, "1\n", "5\n", "0,2\n");
    writeCpu(tree, 1, "1\n", "6\n", "1,3\n");
    writeCpu(tree, 2, "1\n", "5\n", "0,2\n");
    writeCpu(tree, 3, "1\n", "6\n", "1,3\n");
    const Machine machine = discoverTree(tree);
    for (int id : {0, 2}) {
        EXPECT_EQ(machine.cpu(id)->package, 1);
        EXPECT_EQ(machine.cpu(id)->die, 0);
        EXPECT_EQ(machine.cpu(id)->core, 5);
        EXPECT_EQ(machine.cpu(id)->threadSiblings, (std::vector<int>{0, 2}));
    }
    EXPECT_EQ(machine.cpu(3)->core, 6);
    EXPECT_EQ(machine.cpu(3)->threadSiblings, (std::vector<int>{1, 3}));
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, ThreadWhoseSiblingsDifferFromTheFirstThreadsIsReadOnItsOwn) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-1\n");
    writeCpu(tree, 0, "0\n", "0\n", "0-1\n");
    writeCpu(tree, 1, "1\n", "7\n", "1\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->package, 1);
    EXPECT_EQ(machine.cpu(1)->core, 7);
    EXPECT_EQ(machine.cpu(1)->threadSiblings, (std::vector<int>{1}));
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, SiblingWithoutATopologyFolderHasNoIdsAndNothingIsReported) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-1\n");
    writeCpu(tree, 0, "0\n", "0\n", "0-1\n");
    tree.dir(cpuFile(1, ""));  // offline: the kernel removed its topology folder
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->package, std::nullopt);
    EXPECT_EQ(machine.cpu(1)->core, std::nullopt);
    EXPECT_TRUE(machine.cpu(1)->threadSiblings.empty());
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, FirstThreadWithAWarningLendsItsIdsToNoSibling) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-1\n");
    writeCpu(tree, 0, "0\n", "core\n", "0-1\n");
    writeCpu(tree, 1, "0\n", "3\n", "0-1\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(0)->core, std::nullopt);
    EXPECT_EQ(machine.cpu(1)->core, 3);
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.path(cpuFile(0, "topology/core_id")));
}

TEST(ReaderTolerance, SiblingReadOnItsOwnReportsItsFilesInTheUsualOrder) {
    TempTree tree;
    tree.file(std::string(kCpuDir) + "/present", "0-1\n");
    writeCpu(tree, 0, "0\n", "0\n", "0-1\n");
    writeCpu(tree, 1, "package\n", "0\n", "0-x\n");
    tree.file(cpuFile(1, "topology/thread_siblings_list"), "0-1\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->package, std::nullopt);
    EXPECT_EQ(machine.cpu(1)->core, 0);
    EXPECT_EQ(machine.cpu(1)->threadSiblings, (std::vector<int>{0, 1}));
    ASSERT_EQ(machine.diagnostics.size(), 2u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.path(cpuFile(1, "topology/physical_package_id")));
    EXPECT_EQ(machine.diagnostics[1].path, tree.path(cpuFile(1, "topology/core_cpus_list")));
}

// The first core of a package lends its package (and die) id to the package's other cores only
// when its package_cpus (die_cpus) file names them; the others still read their core ids.
void writePackageOfTwoCores(const TempTree& tree) {
    tree.file(std::string(kCpuDir) + "/present", "0-3\n");
    for (int cpu = 0; cpu < 4; ++cpu) {
        writeCpu(tree, cpu, "1\n", std::to_string(10 + cpu % 2) + "\n",
                 cpu % 2 == 0 ? "0,2\n" : "1,3\n");
        tree.file(cpuFile(cpu, "topology/package_cpus_list"), "0-3\n");
        tree.file(cpuFile(cpu, "topology/die_cpus_list"), "0-3\n");
    }
}

TEST(ReaderTolerance, CoresOfAPackageHaveItsPackageAndTheirOwnCoreIds) {
    TempTree tree;
    writePackageOfTwoCores(tree);
    const Machine machine = discoverTree(tree);
    for (int id = 0; id < 4; ++id) {
        EXPECT_EQ(machine.cpu(id)->package, 1) << id;
        EXPECT_EQ(machine.cpu(id)->die, 0) << id;
        EXPECT_EQ(machine.cpu(id)->core, 10 + id % 2) << id;
    }
    EXPECT_EQ(machine.cpu(1)->threadSiblings, (std::vector<int>{1, 3}));
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, UnreadablePackageCpusIsNotReportedAndEveryCoreReadsItsPackage) {
    TempTree tree;
    writePackageOfTwoCores(tree);
    tree.file(cpuFile(0, "topology/package_cpus_list"), "0-x\n");
    tree.file(cpuFile(1, "topology/physical_package_id"), "2\n");  // read, not lent
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(0)->package, 1);
    EXPECT_EQ(machine.cpu(1)->package, 2);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

TEST(ReaderTolerance, CoreOfAPackageWithABadFileIsReadOnItsOwnAndReported) {
    TempTree tree;
    writePackageOfTwoCores(tree);
    tree.file(cpuFile(1, "topology/core_id"), "core\n");
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->package, 1);
    EXPECT_EQ(machine.cpu(1)->core, std::nullopt);
    ASSERT_EQ(machine.diagnostics.size(), 1u) << diagnosticsOf(machine);
    EXPECT_EQ(machine.diagnostics[0].path, tree.path(cpuFile(1, "topology/core_id")));
}

TEST(ReaderTolerance, OfflineCoreOfAPackageHasNoIds) {
    TempTree tree;
    writePackageOfTwoCores(tree);
    tree.remove(cpuFile(1, "topology"));
    tree.remove(cpuFile(3, "topology"));
    const Machine machine = discoverTree(tree);
    EXPECT_EQ(machine.cpu(1)->package, std::nullopt);
    EXPECT_EQ(machine.cpu(1)->core, std::nullopt);
    EXPECT_TRUE(machine.cpu(1)->threadSiblings.empty());
    EXPECT_EQ(machine.cpu(2)->package, 1);
    EXPECT_TRUE(machine.diagnostics.empty()) << diagnosticsOf(machine);
}

}  // namespace
}  // namespace numadra::discovery
