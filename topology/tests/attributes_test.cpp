#include "numadra/topology/attributes.hpp"

#include <gtest/gtest.h>

#include "numadra/testing/machines.hpp"

namespace numadra::topology {
namespace {

using numadra::testing::functionOn;
using numadra::testing::functionsOfKind;
using numadra::testing::loadMachine;
using Nodes = std::vector<int>;

Nodes listFor(const discovery::Machine& machine, const discovery::PciFunction* function) {
    EXPECT_NE(function, nullptr);
    if (function == nullptr)
        return {};
    auto value = numaNodeAttributeForPciBusId(machine, function->address, NumaForm::List);
    EXPECT_TRUE(value.ok()) << value.error().message;
    return value.ok() ? value->nodes : Nodes{};
}

TEST(NumaNodeList, EpycNps4GpuAndNicListTheirWholeSocket) {
    auto machine = loadMachine("epyc-2s-nps4");
    EXPECT_EQ(listFor(machine, functionOn(machine, "gpu", 5)), (Nodes{5, 4, 6, 7}));
    EXPECT_EQ(listFor(machine, functionOn(machine, "nic", 6)), (Nodes{6, 4, 5, 7}));
}

TEST(NumaNodeList, EpycNps4NodeZeroListsSocketZero) {
    auto machine = loadMachine("epyc-2s-nps4");
    EXPECT_EQ(localNumaNodes(machine, 0), (Nodes{0, 1, 2, 3}));
}

TEST(NumaNodeScalar, IsThePhysicalNodeOnly) {
    auto machine = loadMachine("epyc-2s-nps4");
    const auto* gpu = functionOn(machine, "gpu", 5);
    ASSERT_NE(gpu, nullptr);
    auto value = numaNodeAttributeForPciBusId(machine, gpu->address, NumaForm::Scalar);
    ASSERT_TRUE(value.ok());
    EXPECT_EQ(value->nodes, (Nodes{5}));
    EXPECT_EQ(value->form, NumaForm::Scalar);
}

TEST(NumaNodeList, TwoSocketNps1ExcludesTheOtherSocket) {
    auto machine = loadMachine("nps1-2s");
    EXPECT_EQ(listFor(machine, functionOn(machine, "nic", 0)), (Nodes{0}));
}

TEST(NumaNodeList, UnknownSocketDisablesTheSocketFilter) {
    auto machine = loadMachine("nps1-2s-nosocket");
    EXPECT_EQ(listFor(machine, functionOn(machine, "nic", 0)), (Nodes{0, 1}));
}

TEST(NumaNodeList, AsymmetricSnc3UsesOnlyTheDeviceNodesOwnRow) {
    auto machine = loadMachine("xeon6-snc3-2s");
    EXPECT_EQ(localNumaNodes(machine, 0), (Nodes{0, 1}));
    EXPECT_EQ(localNumaNodes(machine, 1), (Nodes{1, 0, 2}));
    EXPECT_EQ(localNumaNodes(machine, 2), (Nodes{2, 1}));
    EXPECT_EQ(localNumaNodes(machine, 4), (Nodes{4, 3, 5}));
    EXPECT_EQ(listFor(machine, functionOn(machine, "nic", 4)), (Nodes{4, 3, 5}));
}

TEST(NumaNodeList, QuadSocketDevicesStayOnTheirNode) {
    auto machine = loadMachine("quad-socket");
    for (int node = 0; node < 4; ++node) {
        EXPECT_EQ(listFor(machine, functionOn(machine, "gpu", node)), (Nodes{node})) << node;
    }
}

TEST(NumaNodeList, InterleavedSncNumberingFollowsSocketsNotIds) {
    auto machine = loadMachine("snc2-interleaved");
    EXPECT_EQ(listFor(machine, functionOn(machine, "nic", 2)), (Nodes{2, 0}));
}

TEST(NumaNodeList, SingleNodeIsJustThatNode) {
    auto machine = loadMachine("laptop");
    EXPECT_EQ(localNumaNodes(machine, 0), (Nodes{0}));
}

TEST(NumaNodeList, MissingOrEmptyDistanceFallsBackToThePhysicalNode) {
    auto machine = loadMachine("missing-distance");
    EXPECT_EQ(localNumaNodes(machine, 0), (Nodes{0}));
    EXPECT_EQ(localNumaNodes(machine, 1), (Nodes{1}));
}

TEST(NumaNodeList, SparseNodeIdsMapRowPositionsToOnlineNodes) {
    // Online nodes 0,8,250-255: the row of node 8 is "40 10 80 ...", position 0 is node 0.
    auto machine = loadMachine("sparse-gpu-mem");
    EXPECT_EQ(machine.distance(8, 0), 40);
    EXPECT_EQ(machine.distance(0, 8), 40);
    EXPECT_EQ(machine.distance(0, 250), 80);
    EXPECT_EQ(machine.distance(250, 250), 10);
    // Node 8's nearest node is 0 but on another socket.
    EXPECT_EQ(localNumaNodes(machine, 8), (Nodes{8}));
    // A CPU-less GPU-memory node has no socket: nothing is filtered at its minimum distance.
    EXPECT_EQ(localNumaNodes(machine, 250), (Nodes{250, 0, 8, 251, 252, 253, 254, 255}));
}

TEST(NumaNodeAttribute, NoAffinityMeansNoAttribute) {
    auto machine = loadMachine("vm-noaffinity");
    auto gpus = functionsOfKind(machine, "gpu");
    ASSERT_FALSE(gpus.empty());
    auto value = numaNodeAttributeForPciBusId(machine, gpus.front()->address, NumaForm::Scalar);
    ASSERT_FALSE(value.ok());
    EXPECT_NE(value.error().message.find("no NUMA affinity"), std::string::npos)
        << value.error().message;
}

TEST(NumaNodeAttribute, RejectsNegativeAndTooLargeNodes) {
    discovery::Machine machine;
    EXPECT_FALSE(numaNodeAttribute(machine, -1, NumaForm::Scalar).ok());
    auto tooLarge = numaNodeAttribute(machine, 1024, NumaForm::Scalar);
    ASSERT_FALSE(tooLarge.ok());
    EXPECT_NE(tooLarge.error().message.find("1023"), std::string::npos);
    EXPECT_TRUE(numaNodeAttribute(machine, 1023, NumaForm::Scalar).ok());
}

TEST(NumaNodeAttribute, NonSlitRowIsIgnored) {
    // A row that is all 10s (a buggy BIOS) is not a SLIT: just the physical node.
    discovery::Machine machine;
    machine.onlineNodes = {0, 1};
    machine.nodes = {{0, {0}, {}, {10, 10}}, {1, {1}, {}, {10, 10}}};
    machine.cpus = {{0, true, 0, {}, {}, {}, 0}, {1, true, 0, {}, {}, {}, 1}};
    EXPECT_EQ(localNumaNodes(machine, 0), (Nodes{0}));
}

TEST(NumaNodeForCpu, FollowsTheCpuNodeLink) {
    auto machine = loadMachine("epyc-2s-nps4");
    EXPECT_EQ(numaNodeForCpu(machine, 0).value(), 0);
    EXPECT_EQ(numaNodeForCpu(machine, 5).value(), 1);
    EXPECT_EQ(numaNodeForCpu(machine, 36).value(), 1);  // SMT sibling of cpu 4
    EXPECT_FALSE(numaNodeForCpu(machine, 4096).ok());
}

TEST(PcieRoot, DeviceBehindSwitchReportsTheRootComplex) {
    auto machine = loadMachine("gpu4-nic");
    for (const auto* gpu : functionsOfKind(machine, "gpu")) {
        auto root = pcieRootAttribute(machine, gpu->address);
        ASSERT_TRUE(root.ok()) << root.error().message;
        EXPECT_EQ("devices/" + root.value(), gpu->devicePath.substr(0, 8 + root->size()));
        EXPECT_GT(std::count(gpu->devicePath.begin(), gpu->devicePath.end(), '/'), 3)
            << gpu->devicePath;
    }
}

TEST(PcieRoot, VirtualFunctionsShareThePfRoot) {
    auto machine = loadMachine("sriov-nic");
    int vfs = 0;
    for (const auto& f : machine.pci) {
        if (!f.sriovVf)
            continue;
        ++vfs;
        const auto* pf = machine.pciFunction(f.sriovVf->pfAddress);
        ASSERT_NE(pf, nullptr);
        EXPECT_EQ(pcieRootAttribute(machine, f.address).value(),
                  pcieRootAttribute(machine, pf->address).value());
        EXPECT_EQ(f.numaNode, pf->numaNode);
    }
    EXPECT_EQ(vfs, 8);
}

TEST(PcieRoot, HypervisorNestedBusStillHasARoot) {
    auto machine = loadMachine("hyperv-nested");
    auto gpus = functionsOfKind(machine, "gpu");
    ASSERT_EQ(gpus.size(), 1u);
    EXPECT_EQ(pcieRootAttribute(machine, gpus.front()->address).value(), "pci0001:00");
}

TEST(PciBusId, AcceptsOnlyTheKubernetesForm) {
    EXPECT_TRUE(pciBusIdAttribute("0000:1a:00.0").ok());
    EXPECT_FALSE(pciBusIdAttribute("").ok());
    EXPECT_FALSE(pciBusIdAttribute("0000:1A:00.0").ok());
    EXPECT_FALSE(pciBusIdAttribute("10000:e0:00.0").ok());  // VMD domains: not publishable
    EXPECT_FALSE(pciBusIdAttribute("0000:1a:00.8").ok());
}

}  // namespace
}  // namespace numadra::topology
