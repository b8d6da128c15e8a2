#include "numadra/discovery/discovery.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "numadra/discovery/sysfs.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::discovery {
namespace {

using numadra::testing::functionOn;
using numadra::testing::functionsOfKind;
using numadra::testing::loadMachine;
using numadra::testing::machineRoot;
using numadra::testing::TempTree;

bool hasDiagnosticFor(const Machine& machine, const std::string& pathPart) {
    return std::any_of(
        machine.diagnostics.begin(), machine.diagnostics.end(),
        [&](const Diagnostic& d) { return d.path.find(pathPart) != std::string::npos; });
}

TEST(Discovery, RejectsARootThatIsNotSysfs) {
    TempTree tree;
    tree.file("etc/hostname", "x\n");
    auto machine = discover({tree.root(), nullptr, nullptr});
    ASSERT_FALSE(machine.ok());
    EXPECT_NE(machine.error().message.find("does not look like sysfs"), std::string::npos);
    EXPECT_NE(machine.error().message.find(tree.root()), std::string::npos);
}

TEST(Discovery, RejectsAMissingRoot) {
    auto machine = discover({"/nonexistent/sysfs", nullptr, nullptr});
    ASSERT_FALSE(machine.ok());
    EXPECT_NE(machine.error().message.find("/nonexistent/sysfs"), std::string::npos);
}

TEST(Discovery, EpycNps4NodesCpusAndSockets) {
    auto machine = loadMachine("epyc-2s-nps4");
    EXPECT_TRUE(machine.diagnostics.empty()) << machine.diagnostics.front().path;
    ASSERT_EQ(machine.nodes.size(), 8u);
    EXPECT_EQ(machine.cpus.size(), 64u);
    EXPECT_EQ(machine.sockets(), (std::vector<int>{0, 1}));
    for (const auto& node : machine.nodes) {
        EXPECT_EQ(node.cpus.size(), 8u) << node.id;
        EXPECT_EQ(node.memoryBytes, std::uint64_t{64} << 30) << node.id;
        EXPECT_EQ(machine.socketOfNode(node.id), node.id < 4 ? 0 : 1);
    }
    EXPECT_EQ(machine.nodes[5].distanceRow, (std::vector<int>{32, 32, 32, 32, 12, 10, 12, 12}));
    const Cpu* cpu0 = machine.cpu(0);
    ASSERT_NE(cpu0, nullptr);
    EXPECT_TRUE(cpu0->online);  // no online file for cpu0, as on x86
    EXPECT_EQ(cpu0->threadSiblings, (std::vector<int>{0, 32}));
}

TEST(Discovery, ProcessingAcceleratorFromGpuVendorIsAGpu) {
    auto machine = loadMachine("epyc-2s-nps4");
    const auto* mi300 = functionOn(machine, "gpu", 5);
    ASSERT_NE(mi300, nullptr);
    EXPECT_EQ(mi300->classCode >> 8, 0x1200u);
    EXPECT_EQ(mi300->vendorId, 0x1002);
    EXPECT_EQ(mi300->kernelDriver, "amdgpu");
    EXPECT_FALSE(mi300->drm.empty());
}

TEST(Discovery, BmcVgaIsNotPublished) {
    auto machine = loadMachine("epyc-2s-nps4");
    for (const auto& f : machine.pci) {
        if (f.vendorId == 0x1a03) {
            EXPECT_TRUE(f.kind.empty()) << f.address;
        }
    }
}

TEST(Discovery, NicHasNetdevSpeedAndRdma) {
    auto machine = loadMachine("epyc-2s-nps4");
    const auto* nic = functionOn(machine, "nic", 6);
    ASSERT_NE(nic, nullptr);
    ASSERT_EQ(nic->netdevs.size(), 1u);
    EXPECT_EQ(nic->netdevs[0].name, "ens5f0np0");
    EXPECT_EQ(nic->netdevs[0].speedMbps, 200000);
    EXPECT_EQ(nic->netdevs[0].operstate, "up");
    ASSERT_EQ(nic->rdma.size(), 1u);
    EXPECT_EQ(nic->rdma[0].name, "mlx5_0");
    EXPECT_FALSE(nic->pcieRoot.empty());
}

TEST(Discovery, SixRootComplexesOnDualXeon) {
    auto machine = loadMachine("xeon-6320r-2s");
    std::vector<std::string> roots;
    for (const auto& f : machine.pci)
        roots.push_back(f.pcieRoot);
    std::sort(roots.begin(), roots.end());
    roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
    EXPECT_EQ(roots, (std::vector<std::string>{"pci0000:00", "pci0000:17", "pci0000:3a",
                                               "pci0000:85", "pci0000:ae", "pci0000:d7"}));
    ASSERT_EQ(machine.nodes.size(), 2u);
    EXPECT_EQ(machine.nodes[0].cpus.front(), 0);
    EXPECT_EQ(machine.nodes[0].cpus[1], 2);
    EXPECT_EQ(machine.nodes[1].cpus.front(), 1);
}

TEST(Discovery, OldAndNewLinkSpeedFormatsBothParse) {
    auto machine = loadMachine("xeon-6320r-2s");
    bool sawOldFormat = false;
    for (const auto& f : machine.pci) {
        auto raw = Sysfs(machine.sysfsRoot).read(f.devicePath + "/max_link_speed");
        if (!raw || raw.value().find("PCIe") != std::string::npos ||
            raw.value().find("Unknown") != std::string::npos)
            continue;
        sawOldFormat = true;
        EXPECT_TRUE(f.maxLink.speedGTs.has_value()) << f.address;
    }
    EXPECT_TRUE(sawOldFormat);
}

TEST(Discovery, DowntrainedLinkIsVisible) {
    auto machine = loadMachine("gpu4-nic");
    int degraded = 0;
    for (const auto* gpu : functionsOfKind(machine, "gpu")) {
        if (gpu->currentLink == gpu->maxLink)
            continue;
        ++degraded;
        EXPECT_EQ(gpu->currentLink.width, 8);
        EXPECT_EQ(gpu->maxLink.width, 16);
        EXPECT_DOUBLE_EQ(*gpu->maxLink.speedGTs, 32.0);
    }
    EXPECT_EQ(degraded, 1);
}

TEST(Discovery, InfinibandHcaWithIpoibNetdev) {
    auto machine = loadMachine("gpu4-nic");
    auto nics = functionsOfKind(machine, "nic");
    ASSERT_EQ(nics.size(), 1u);
    EXPECT_EQ(nics[0]->classCode >> 8, 0x0207u);
    ASSERT_FALSE(nics[0]->netdevs.empty());
    EXPECT_EQ(nics[0]->netdevs[0].linkType, 32);
    ASSERT_FALSE(nics[0]->rdma.empty());
    EXPECT_FALSE(nics[0]->rdma[0].uverbs.empty());
}

TEST(Discovery, SriovPfListsVfsInIndexOrder) {
    auto machine = loadMachine("sriov-nic");
    const PciFunction* pf = nullptr;
    for (const auto& f : machine.pci) {
        if (f.sriovPf && f.sriovPf->numVfs > 0)
            pf = &f;
    }
    ASSERT_NE(pf, nullptr);
    EXPECT_EQ(pf->sriovPf->totalVfs, 64);
    EXPECT_EQ(pf->sriovPf->numVfs, 8);
    ASSERT_EQ(pf->sriovPf->vfAddresses.size(), 8u);
    for (int k = 0; k < 8; ++k) {
        const auto* vf = machine.pciFunction(pf->sriovPf->vfAddresses[static_cast<size_t>(k)]);
        ASSERT_NE(vf, nullptr);
        ASSERT_TRUE(vf->sriovVf.has_value());
        EXPECT_EQ(vf->sriovVf->pfAddress, pf->address);
        EXPECT_EQ(vf->sriovVf->index, k);
        EXPECT_EQ(vf->kind, "nic");
        EXPECT_TRUE(vf->iommuGroup.has_value());
    }
}

TEST(Discovery, VfioBoundVfHasNoNetdev) {
    auto machine = loadMachine("sriov-nic");
    int vfio = 0;
    for (const auto& f : machine.pci) {
        if (f.sriovVf && f.kernelDriver == "vfio-pci") {
            ++vfio;
            EXPECT_TRUE(f.netdevs.empty()) << f.address;
        }
    }
    EXPECT_EQ(vfio, 2);
}

TEST(Discovery, SixtyFourVfsKeepNumericOrder) {
    // virtfn10 lists before virtfn2: the index must come from the link name.
    auto machine = loadMachine("big-2s-8n");
    size_t pfs = 0;
    for (const auto& f : machine.pci) {
        if (!f.sriovPf || f.sriovPf->numVfs == 0)
            continue;
        ++pfs;
        ASSERT_EQ(f.sriovPf->vfAddresses.size(), 64u);
        for (size_t k = 0; k < 64; ++k) {
            const auto* vf = machine.pciFunction(f.sriovPf->vfAddresses[k]);
            ASSERT_NE(vf, nullptr);
            EXPECT_EQ(vf->sriovVf->index, static_cast<int>(k));
        }
    }
    EXPECT_EQ(pfs, 8u);
}

TEST(Discovery, VirtioNetdevBelowTheFunctionIsFound) {
    auto machine = loadMachine("vm-noaffinity");
    const auto* virtioNet = machine.pciFunction("0000:00:03.0");
    ASSERT_NE(virtioNet, nullptr);
    EXPECT_EQ(virtioNet->kind, "nic");
    ASSERT_EQ(virtioNet->netdevs.size(), 1u);
    EXPECT_EQ(virtioNet->netdevs[0].name, "eth0");
    EXPECT_FALSE(virtioNet->netdevs[0].speedMbps.has_value());  // speed -1
    EXPECT_EQ(virtioNet->numaNode, -1);
    EXPECT_FALSE(virtioNet->currentLink.speedGTs.has_value());  // legacy PCI: no link files
}

TEST(Discovery, VmHasOneNodeAndAffinityFreeDevices) {
    auto machine = loadMachine("vm-noaffinity");
    EXPECT_TRUE(machine.diagnostics.empty()) << machine.diagnostics.front().path;
    ASSERT_EQ(machine.nodes.size(), 1u);
    EXPECT_EQ(machine.cpus.size(), 2u);
    EXPECT_TRUE(machine.cpu(0)->online);
    for (const auto& f : machine.pci)
        EXPECT_EQ(f.numaNode, -1) << f.address;
}

TEST(Discovery, IntegratedGpuHasDrmNodesAndWifiIsANic) {
    auto machine = loadMachine("laptop");
    auto gpus = functionsOfKind(machine, "gpu");
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(gpus[0]->drm, (std::vector<std::string>{"card0", "renderD128"}));
    auto nics = functionsOfKind(machine, "nic");
    ASSERT_EQ(nics.size(), 1u);
    EXPECT_EQ(nics[0]->classCode >> 8, 0x0280u);
}

TEST(Discovery, OfflineCpusHaveNoTopology) {
    auto machine = loadMachine("offline-cpus");
    ASSERT_EQ(machine.cpus.size(), 8u);
    for (int id : {2, 5}) {
        EXPECT_FALSE(machine.cpu(id)->online) << id;
        EXPECT_FALSE(machine.cpu(id)->package.has_value()) << id;
    }
    EXPECT_TRUE(machine.cpu(3)->online);
    EXPECT_EQ(machine.sockets(), (std::vector<int>{0}));
}

TEST(Discovery, KernelWithoutNumaIsOneNode) {
    auto machine = loadMachine("no-numa-dir");
    EXPECT_FALSE(machine.hasNumaInfo);
    ASSERT_EQ(machine.nodes.size(), 1u);
    EXPECT_EQ(machine.nodes[0].id, 0);
    EXPECT_EQ(machine.nodes[0].cpus.size(), 4u);
    EXPECT_EQ(machine.cpu(3)->numaNode, 0);
}

TEST(Discovery, CpuLessNodesAreKept) {
    auto machine = loadMachine("sparse-gpu-mem");
    EXPECT_EQ(machine.onlineNodes, (std::vector<int>{0, 8, 250, 251, 252, 253, 254, 255}));
    EXPECT_TRUE(machine.node(250)->cpus.empty());
    EXPECT_FALSE(machine.socketOfNode(250).has_value());
    EXPECT_EQ(machine.socketOfNode(8), 8);
}

TEST(Discovery, MalformedFilesBecomeDiagnosticsNotCrashes) {
    auto machine = loadMachine("bad-files");
    EXPECT_FALSE(machine.diagnostics.empty());
    EXPECT_TRUE(hasDiagnosticFor(machine, "numa_node"));
    EXPECT_TRUE(hasDiagnosticFor(machine, "/class"));
    EXPECT_TRUE(hasDiagnosticFor(machine, "/uevent"));
    EXPECT_TRUE(hasDiagnosticFor(machine, "distance"));
    // node1/meminfo is cut off after its MemTotal line: the total is still there.
    EXPECT_EQ(machine.node(1)->memoryBytes, std::uint64_t{32} << 30);
    for (const auto& d : machine.diagnostics) {
        EXPECT_EQ(d.path.rfind(machineRoot("bad-files"), 0), 0u)
            << "diagnostic without full path: " << d.path;
        EXPECT_FALSE(d.message.empty());
    }
}

TEST(Discovery, GarbageNumaNodeIsUnknownNotZero) {
    auto machine = loadMachine("bad-files");
    int unknown = 0;
    for (const auto& f : machine.pci) {
        auto raw = Sysfs(machine.sysfsRoot).read(f.devicePath + "/numa_node");
        if (raw && raw.value().find("garbage") != std::string::npos) {
            ++unknown;
            EXPECT_FALSE(f.numaNode.has_value());
        }
    }
    EXPECT_EQ(unknown, 1);
}

TEST(Discovery, MeminfoWithoutTotalIsUnknownAndReported) {
    TempTree tree;
    tree.file("devices/system/node/online", "0\n");
    tree.file("devices/system/node/node0/cpulist", "0\n");
    tree.file("devices/system/node/node0/meminfo", "Node 0 MemFree:  12 kB\nNode 0 MemTot");
    tree.file("devices/system/cpu/present", "0\n");
    auto machine = discover({tree.root(), nullptr, nullptr});
    ASSERT_TRUE(machine.ok());
    EXPECT_FALSE(machine->nodes[0].memoryBytes.has_value());
    EXPECT_TRUE(hasDiagnosticFor(*machine, "node0/meminfo"));
}

TEST(Discovery, DistanceRowOfWrongLengthIsIgnored) {
    TempTree tree;
    tree.file("devices/system/node/online", "0-1\n");
    tree.file("devices/system/node/node0/cpulist", "0\n");
    tree.file("devices/system/node/node0/distance", "10 21 21\n");
    tree.file("devices/system/node/node1/cpulist", "1\n");
    tree.file("devices/system/node/node1/distance", "21 10\n");
    tree.file("devices/system/cpu/present", "0-1\n");
    auto machine = discover({tree.root(), nullptr, nullptr});
    ASSERT_TRUE(machine.ok());
    EXPECT_TRUE(machine->nodes[0].distanceRow.empty());
    EXPECT_EQ(machine->nodes[1].distanceRow, (std::vector<int>{21, 10}));
    EXPECT_TRUE(hasDiagnosticFor(*machine, "node0/distance"));
}

TEST(Discovery, VendorNamesComeFromThePciIdDatabase) {
    PciNameDatabase names;
    auto machine = discover({machineRoot("gpu4-nic"), &names, nullptr});
    ASSERT_TRUE(machine.ok());
    auto gpus = functionsOfKind(*machine, "gpu");
    ASSERT_FALSE(gpus.empty());
    EXPECT_EQ(gpus[0]->vendorName, "NVIDIA Corporation");
    EXPECT_NE(gpus[0]->deviceName.find("H100"), std::string::npos) << gpus[0]->deviceName;
}

TEST(Discovery, UnknownIdsFallBackToHex) {
    PciNameDatabase names;
    EXPECT_EQ(names.vendorName(0x0002), "");
    TempTree tree;
    tree.file("devices/pci0000:00/0000:00:01.0/class", "0x030200\n");
    tree.file("devices/pci0000:00/0000:00:01.0/vendor", "0x0002\n");
    tree.file("devices/pci0000:00/0000:00:01.0/device", "0x1234\n");
    tree.link("bus/pci/devices/0000:00:01.0", "../../../devices/pci0000:00/0000:00:01.0");
    auto machine = discover({tree.root(), &names, nullptr});
    ASSERT_TRUE(machine.ok());
    ASSERT_EQ(machine->pci.size(), 1u);
    EXPECT_EQ(machine->pci[0].vendorName, "0x0002");
    EXPECT_EQ(machine->pci[0].deviceName, "0x1234");
}

TEST(Discovery, CustomKindRuleAddsAClassWithoutTouchingTheCore) {
    DeviceKindRules rules = DeviceKindRules::defaults();
    rules.add({"nvme", "NVM Express controller",
               [](const PciFunction& f) { return (f.classCode >> 8) == 0x0108; }});
    auto machine = discover({machineRoot("laptop"), nullptr, &rules});
    ASSERT_TRUE(machine.ok());
    EXPECT_EQ(functionsOfKind(*machine, "nvme").size(), 1u);
}

// Issue 27: what a periodic check reads again instead of a scan while uevents announce the rest.
class ChangedWithoutUevent : public ::testing::Test {
  protected:
    TempTree tree;
    void SetUp() override { tree.copyFrom(machineRoot("epyc-2s-nps4")); }
    Machine scan() const {
        auto machine = discover({tree.root(), nullptr, nullptr});
        EXPECT_TRUE(machine.ok());
        return machine.ok() ? std::move(machine).value() : Machine{};
    }
};

TEST_F(ChangedWithoutUevent, AnUnchangedTreeReadsTheSame) {
    const Machine machine = scan();
    EXPECT_FALSE(machine.unannounced.empty());
    EXPECT_FALSE(changedWithoutUevent(machine));
}

TEST_F(ChangedWithoutUevent, ALinkThatRenegotiatedItsSpeedIsSeen) {
    const Machine machine = scan();
    tree.file("class/net/ens5f0np0/speed", "100000\n");
    EXPECT_TRUE(changedWithoutUevent(machine));
    EXPECT_FALSE(changedWithoutUevent(scan()));
}

TEST_F(ChangedWithoutUevent, OfANodesMeminfoOnlyMemTotalCounts) {
    const Machine machine = scan();
    const std::string meminfo = "devices/system/node/node5/meminfo";
    tree.file(meminfo, "Node 5 MemTotal:       67108864 kB\nNode 5 MemFree:        1 kB\n");
    EXPECT_FALSE(changedWithoutUevent(machine));  // free memory moves all the time
    tree.file(meminfo, "Node 5 MemTotal:       33554432 kB\nNode 5 MemFree:        1 kB\n");
    EXPECT_TRUE(changedWithoutUevent(machine));  // a balloon driver took some away
}

TEST_F(ChangedWithoutUevent, ADeviceGoneWhoseEventWasLostIsSeen) {
    const Machine machine = scan();
    tree.remove("bus/pci/devices/0000:c1:00.0");
    EXPECT_TRUE(changedWithoutUevent(machine));
}

TEST_F(ChangedWithoutUevent, ADriverBoundIsLeftToItsUevent) {
    const Machine machine = scan();
    const std::string gpu = "bus/pci/devices/0000:21:00.0";
    tree.remove(gpu + "/driver");
    tree.link(gpu + "/driver", "../../../../bus/pci/drivers/vfio-pci");
    tree.file(gpu + "/uevent", "DRIVER=vfio-pci\nPCI_CLASS=30200\nPCI_ID=10DE:2330\n");
    // The kernel announces a bind: the check does not read the thousands of driver links.
    EXPECT_FALSE(changedWithoutUevent(machine));
    EXPECT_EQ(scan().pciFunction("0000:21:00.0")->kernelDriver, "vfio-pci");
}

}  // namespace
}  // namespace numadra::discovery
