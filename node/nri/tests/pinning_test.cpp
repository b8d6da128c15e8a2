#include "numadra/nri/pinning.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace numadra::nri {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kUid = "5d0c6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f";
constexpr const char* kOtherUid = "11111111-2222-3333-4444-555555555555";

std::vector<int> cpus(int from, int to) {
    std::vector<int> out;
    for (int c = from; c <= to; ++c)
        out.push_back(c);
    return out;
}

PinningInputs eightCpusTwoNodes() {
    PinningInputs inputs;
    inputs.nodeCpus = cpus(0, 7);
    inputs.nodeMemoryNodes = {0, 1};
    return inputs;
}

PinnedClaim cpuClaim(const std::string& uid, std::vector<int> claimCpus, int node) {
    return PinnedClaim{uid, "ns/" + uid.substr(0, 4), std::move(claimCpus), {node}};
}

ContainerView container(const std::string& id, std::vector<std::string> claims = {},
                        std::string currentCpus = "", std::string currentMems = "") {
    return ContainerView{id, "ns/pod/" + id, std::move(claims), std::move(currentCpus),
                         std::move(currentMems)};
}

TEST(SharedPool, IsTheNodesCpusMinusEveryClaimsCpus) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {2, 3}, 0), cpuClaim(kOtherUid, {6}, 1)};
    auto pool = sharedPool(inputs);
    ASSERT_TRUE(pool) << pool.error().message;
    EXPECT_THAT(*pool, ElementsAre(0, 1, 4, 5, 7));
}

TEST(SharedPool, AClaimCpuNotOnTheNodeIsAnErrorNamingTheClaim) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {6, 8, 9}, 1)};
    auto pool = sharedPool(inputs);
    ASSERT_FALSE(pool);
    EXPECT_THAT(pool.error().message, HasSubstr(kUid));
    EXPECT_THAT(pool.error().message, HasSubstr("CPUs 8-9 that are not online"));
}

TEST(SharedPool, ClaimsHoldingEveryCpuLeaveNothingAndThatIsAnError) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, cpus(0, 7), 0)};
    auto pool = sharedPool(inputs);
    ASSERT_FALSE(pool);
    EXPECT_THAT(pool.error().message, HasSubstr("every CPU of the node (0-7)"));
}

TEST(NewContainer, WithACpuClaimRunsOnExactlyItsCpusAndItsNodesMemory) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1)};
    auto cpuset = cpusetForNewContainer(container("c1", {kUid}), inputs);
    ASSERT_TRUE(cpuset) << cpuset.error().message;
    EXPECT_EQ(*cpuset, (Cpuset{"4-5", "1"}));
}

TEST(NewContainer, WithTwoCpuClaimsRunsOnBoth) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {1}, 0), cpuClaim(kOtherUid, {6, 7}, 1)};
    auto cpuset = cpusetForNewContainer(container("c1", {kUid, kOtherUid}), inputs);
    ASSERT_TRUE(cpuset);
    EXPECT_EQ(*cpuset, (Cpuset{"1,6-7", "0-1"}));
}

TEST(NewContainer, WithoutClaimsGetsTheSharedPoolAndKeepsItsMemoryNodes) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1)};
    auto cpuset = cpusetForNewContainer(container("c1"), inputs);
    ASSERT_TRUE(cpuset);
    EXPECT_EQ(*cpuset, (Cpuset{"0-3,6-7", ""}));
}

TEST(NewContainer, WithAMemoryBindingClaimGetsTheSharedPoolAndTheDevicesNode) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1), PinnedClaim{kOtherUid, "ns/gpu", {}, {1}}};
    auto cpuset = cpusetForNewContainer(container("c1", {kOtherUid}), inputs);
    ASSERT_TRUE(cpuset);
    EXPECT_EQ(*cpuset, (Cpuset{"0-3,6-7", "1"}));
}

TEST(NewContainer, UsingAClaimNotPreparedHereIsRefusedRatherThanRunUnpinned) {
    PinningInputs inputs = eightCpusTwoNodes();
    auto cpuset = cpusetForNewContainer(container("c1", {kUid}), inputs);
    ASSERT_FALSE(cpuset);
    EXPECT_THAT(cpuset.error().message,
                HasSubstr("container ns/pod/c1 uses claim " + std::string(kUid)));
    EXPECT_THAT(cpuset.error().message, HasSubstr("not prepared on this node"));
}

TEST(NewContainer, AClaimWhoseCpusLeftTheNodeIsRefusedNamingClaimAndContainer) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {12}, 1)};
    auto cpuset = cpusetForNewContainer(container("c1", {kUid}), inputs);
    ASSERT_FALSE(cpuset);
    EXPECT_THAT(cpuset.error().message, HasSubstr("container ns/pod/c1"));
    EXPECT_THAT(cpuset.error().message, HasSubstr(kUid));
}

TEST(RunningContainers, LoseAnewlyPreparedClaimsCpus) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1)};
    auto updates = updatesForRunningContainers({container("a"), container("b", {}, "0-7")}, inputs);
    ASSERT_TRUE(updates) << updates.error().message;
    ASSERT_EQ(updates->size(), 2u);
    EXPECT_EQ((*updates)[0].containerId, "a");
    EXPECT_EQ((*updates)[0].cpuset, (Cpuset{"0-3,6-7", ""}));
    EXPECT_EQ((*updates)[1].cpuset, (Cpuset{"0-3,6-7", ""}));
}

TEST(RunningContainers, GetTheCpusBackWhenTheClaimIsUnprepared) {
    PinningInputs inputs = eightCpusTwoNodes();
    auto updates = updatesForRunningContainers({container("a", {}, "0-3,6-7")}, inputs);
    ASSERT_TRUE(updates);
    ASSERT_EQ(updates->size(), 1u);
    EXPECT_EQ((*updates)[0].cpuset.cpus, "0-7");
}

TEST(RunningContainers, AlreadyAsDecidedAreLeftAlone) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1)};
    auto updates =
        updatesForRunningContainers({container("pinned", {kUid}, "4-5", "1"),
                                     container("shared", {}, "0-3,6,7", "0-1"), container("fresh")},
                                    inputs);
    ASSERT_TRUE(updates);
    ASSERT_EQ(updates->size(), 1u);
    EXPECT_EQ((*updates)[0].containerId, "fresh");
}

TEST(RunningContainers, NeverSetCpusCountAsTheWholeNode) {
    PinningInputs inputs = eightCpusTwoNodes();
    auto updates = updatesForRunningContainers({container("fresh")}, inputs);
    ASSERT_TRUE(updates);
    EXPECT_THAT(*updates, IsEmpty());
}

TEST(RunningContainers, PinnedByAClaimThatIsGoneReturnToTheSharedPoolAndEveryMemoryNode) {
    PinningInputs inputs = eightCpusTwoNodes();
    auto updates = updatesForRunningContainers({container("was", {kUid}, "4-5", "1")}, inputs);
    ASSERT_TRUE(updates);
    ASSERT_EQ(updates->size(), 1u);
    EXPECT_EQ((*updates)[0].cpuset, (Cpuset{"0-7", "0-1"}));
}

TEST(RunningContainers, PinnedOnesWhoseCpusDriftedAreBroughtBack) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, {4, 5}, 1)};
    auto updates = updatesForRunningContainers({container("p", {kUid}, "0-7", "0-1")}, inputs);
    ASSERT_TRUE(updates);
    ASSERT_EQ(updates->size(), 1u);
    EXPECT_EQ((*updates)[0].cpuset, (Cpuset{"4-5", "1"}));
}

TEST(RunningContainers, UnusableInputsAreAnErrorNotAnUpdate) {
    PinningInputs inputs = eightCpusTwoNodes();
    inputs.claims = {cpuClaim(kUid, cpus(0, 7), 0)};
    auto updates = updatesForRunningContainers({container("a")}, inputs);
    EXPECT_FALSE(updates);
}

TEST(SameCpus, ComparesAsSetsAndTreatsNeverSetAsTheNode) {
    EXPECT_TRUE(sameCpus("0-3", {0, 1, 2, 3}, cpus(0, 7)));
    EXPECT_TRUE(sameCpus("3,0-2", {0, 1, 2, 3}, cpus(0, 7)));
    EXPECT_TRUE(sameCpus("", cpus(0, 7), cpus(0, 7)));
    EXPECT_FALSE(sameCpus("", {0}, cpus(0, 7)));
    EXPECT_FALSE(sameCpus("garbage", {0}, cpus(0, 7)));
}

TEST(UnsolicitedUpdates, OnlyContainerdFrom24OnWhoseNriNoLongerDeadlocks) {
    EXPECT_TRUE(takesUnsolicitedUpdates("containerd", "v2.4.0"));
    EXPECT_TRUE(takesUnsolicitedUpdates("containerd", "2.4.2+unknown"));
    EXPECT_TRUE(takesUnsolicitedUpdates("containerd", "v2.10.0-rc.1"));
    EXPECT_TRUE(takesUnsolicitedUpdates("containerd", "v3.0.0"));
    EXPECT_FALSE(takesUnsolicitedUpdates("containerd", "v2.3.7"));
    EXPECT_FALSE(takesUnsolicitedUpdates("containerd", "v1.7.35"));
    EXPECT_FALSE(takesUnsolicitedUpdates("containerd", "2"));
    EXPECT_FALSE(takesUnsolicitedUpdates("containerd", ""));
    EXPECT_FALSE(takesUnsolicitedUpdates("containerd", "devel"));
    EXPECT_FALSE(takesUnsolicitedUpdates("cri-o", "1.34.0"));
    EXPECT_FALSE(takesUnsolicitedUpdates("", "v2.4.2"));
}

}  // namespace
}  // namespace numadra::nri
