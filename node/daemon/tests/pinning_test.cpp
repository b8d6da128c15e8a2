#include "numadra/daemon/pinning.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "numadra/testing/temp_tree.hpp"

namespace numadra::daemon {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

discovery::Machine fourCpusTwoNodes() {
    discovery::Machine machine;
    for (int id = 0; id < 5; ++id) {
        discovery::Cpu cpu;
        cpu.id = id;
        cpu.online = id < 4;  // CPU 4 is offline
        machine.cpus.push_back(cpu);
    }
    discovery::NumaNode withMemory;
    withMemory.id = 0;
    withMemory.memoryBytes = 1 << 30;
    discovery::NumaNode memoryless;
    memoryless.id = 1;
    memoryless.memoryBytes = 0;
    machine.nodes = {withMemory, memoryless};
    return machine;
}

state::DeviceRecord cpuShare(std::vector<int> cpus, int node, bool adminAccess = false) {
    state::DeviceRecord record;
    record.kind = "cpu";
    record.device = "cpu-numa-" + std::to_string(node);
    record.cpus = std::move(cpus);
    record.numaNode = node;
    record.adminAccess = adminAccess;
    return record;
}

state::ClaimRecord claim(const std::string& uid, std::vector<state::DeviceRecord> devices) {
    state::ClaimRecord record;
    record.claimUid = uid;
    record.claimNamespace = "team";
    record.claimName = "claim-" + uid;
    record.devices = std::move(devices);
    return record;
}

TEST(PinningInputs, TheNodesOnlineCpusAndItsNodesWithMemory) {
    auto inputs = pinningInputs(fourCpusTwoNodes(), {});
    EXPECT_THAT(inputs.nodeCpus, ElementsAre(0, 1, 2, 3));
    EXPECT_THAT(inputs.nodeMemoryNodes, ElementsAre(0));
}

TEST(PinningInputs, AClaimsCpuSharesWithTheirNumaNodes) {
    state::DeviceRecord gpu;
    gpu.kind = "gpu";
    auto inputs = pinningInputs(fourCpusTwoNodes(),
                                {claim("a", {cpuShare({3, 2}, 0), gpu}), claim("b", {gpu})});
    ASSERT_EQ(inputs.claims.size(), 2u);
    EXPECT_EQ(inputs.claims[0], (nri::PinnedClaim{"a", "team/claim-a", {2, 3}, {0}}));
    EXPECT_EQ(inputs.claims[1], (nri::PinnedClaim{"b", "team/claim-b", {}, {}}));
}

TEST(PinningInputs, AnAdminAccessShareIsNotExclusive) {
    auto inputs = pinningInputs(fourCpusTwoNodes(), {claim("a", {cpuShare({1}, 0, true)})});
    ASSERT_EQ(inputs.claims.size(), 1u);
    EXPECT_TRUE(inputs.claims[0].cpus.empty());
}

TEST(PinningInputs, AMemoryBoundDeviceBindsToItsNumaNode) {
    discovery::Machine machine = fourCpusTwoNodes();
    discovery::PciFunction gpu;
    gpu.address = "0000:21:00.0";
    gpu.numaNode = 1;
    discovery::PciFunction unaffined;
    unaffined.address = "0000:22:00.0";
    unaffined.numaNode = -1;
    machine.pci = {gpu, unaffined};
    state::DeviceRecord bound;
    bound.kind = "gpu";
    bound.pciAddress = gpu.address;
    bound.bindMemory = true;
    state::DeviceRecord unbound = bound;
    unbound.bindMemory = false;
    state::DeviceRecord noAffinity = bound;
    noAffinity.pciAddress = unaffined.address;
    auto inputs = pinningInputs(
        machine, {claim("a", {bound}), claim("b", {unbound}), claim("c", {noAffinity})});
    ASSERT_EQ(inputs.claims.size(), 3u);
    EXPECT_THAT(inputs.claims[0].memoryNodes, ElementsAre(1));
    EXPECT_TRUE(inputs.claims[0].cpus.empty());
    EXPECT_TRUE(inputs.claims[1].memoryNodes.empty());
    EXPECT_TRUE(inputs.claims[2].memoryNodes.empty());
}

class ContainerPinningTest : public ::testing::Test {
  protected:
    DaemonConfig config(CpuPinning mode) const {
        DaemonConfig c;
        c.cpuPinning = mode;
        c.stateDir = tree_.path("state");
        c.nriSocket = tree_.path("nri.sock");  // nothing listens
        return c;
    }
    InventorySnapshot nodeWithCpuAndGpu() const {
        InventorySnapshot node;
        node.devices["cpu-numa-0"].attributes["type"] = std::string("cpu");
        node.devices["gpu-0"].attributes["type"] = std::string("gpu");
        return node;
    }
    static prepare::ClaimAllocation allocationOf(const std::string& device, bool admin = false) {
        prepare::ClaimAllocation allocation;
        prepare::AllocatedDevice allocated;
        allocated.device = device;
        allocated.adminAccess = admin;
        allocation.devices.push_back(allocated);
        return allocation;
    }

    testing::TempTree tree_;
    Inventory inventory_;
    metrics::Registry metrics_;
};

TEST_F(ContainerPinningTest, RequiredPinningRefusesACpuClaimWhileNriIsNotConnected) {
    auto pinning = ContainerPinning::start(config(CpuPinning::Nri), inventory_, metrics_, 50ms);
    ASSERT_TRUE(pinning) << pinning.error().message;
    Status admitted = (*pinning)->admit(allocationOf("cpu-numa-0"), nodeWithCpuAndGpu());
    ASSERT_FALSE(admitted);
    EXPECT_THAT(admitted.error().message, HasSubstr("--cpu-pinning=nri"));
    EXPECT_THAT(admitted.error().message, HasSubstr(tree_.path("nri.sock")));
}

TEST_F(ContainerPinningTest, RequiredPinningRefusesAMemoryBoundClaimWhileNriIsNotConnected) {
    auto pinning = ContainerPinning::start(config(CpuPinning::Nri), inventory_, metrics_, 50ms);
    ASSERT_TRUE(pinning);
    auto allocation = allocationOf("gpu-0");
    allocation.devices[0].bindMemory = true;
    EXPECT_FALSE((*pinning)->admit(allocation, nodeWithCpuAndGpu()));
}

TEST_F(ContainerPinningTest, RequiredPinningAdmitsClaimsWithoutCpus) {
    auto pinning = ContainerPinning::start(config(CpuPinning::Nri), inventory_, metrics_, 50ms);
    ASSERT_TRUE(pinning);
    EXPECT_TRUE((*pinning)->admit(allocationOf("gpu-0"), nodeWithCpuAndGpu()));
    EXPECT_TRUE((*pinning)->admit(allocationOf("cpu-numa-0", true), nodeWithCpuAndGpu()));
}

TEST_F(ContainerPinningTest, AutoPinningAdmitsACpuClaimWithoutNriAndSaysSoInAMetric) {
    auto pinning = ContainerPinning::start(config(CpuPinning::Auto), inventory_, metrics_, 50ms);
    ASSERT_TRUE(pinning);
    EXPECT_TRUE((*pinning)->admit(allocationOf("cpu-numa-0"), nodeWithCpuAndGpu()));
    EXPECT_EQ(metrics_.value("numadra_nri_connected"), 0);
}

TEST_F(ContainerPinningTest, OffAdmitsEverythingAndStartsNothing) {
    auto pinning = ContainerPinning::start(config(CpuPinning::Off), inventory_, metrics_, 50ms);
    ASSERT_TRUE(pinning);
    EXPECT_TRUE((*pinning)->admit(allocationOf("cpu-numa-0"), nodeWithCpuAndGpu()));
    (*pinning)->claimsChanged();
    EXPECT_FALSE(std::filesystem::exists(tree_.path("state/nri.lock")));
}

}  // namespace
}  // namespace numadra::daemon
