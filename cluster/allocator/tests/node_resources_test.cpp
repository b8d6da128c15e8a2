// Node-allocatable accounting against upstream's rules (component-helpers' PodRequests and the
// DRA plugin's nodeallocatabledynamicresources.go). Through dra-allocate with YAML inputs: the
// node-allocatable-* scenarios; against the real scheduler: tests/e2e/nodealloc_test.go.

#include "numadra/allocator/node_resources.hpp"

#include <gtest/gtest.h>

namespace numadra::allocator {
namespace {

Quantity q(const char* text) {
    return Quantity::parse(text).value();
}

Container container(std::string name, std::vector<std::pair<std::string, Quantity>> requests,
                    std::vector<std::string> claims = {}, bool restartable = false) {
    return {std::move(name), std::move(requests), std::move(claims), restartable};
}

ResourceList requestsOf(const Pod& pod, const std::vector<NodeAllocatableClaimStatus>& s = {}) {
    auto requests = podRequests(pod, s);
    EXPECT_TRUE(requests.ok()) << requests.error().message;
    return requests.ok() ? *requests : ResourceList{};
}

// A CPU device that maps the cpu capacity a claim consumes, times the multiplier.
Device cpuDevice(const char* multiplier = "1") {
    Device device;
    device.name = "cpu-0";
    NodeAllocatableResource cpu;
    cpu.mapped = true;
    cpu.capacityKey = "cpu";
    cpu.capacityMultiplier = q(multiplier);
    device.nodeAllocatableResources["cpu"] = cpu;
    return device;
}

Allocation allocationOf(const char* device, std::map<std::string, Quantity> consumed = {}) {
    Allocation allocation;
    allocation.results.push_back(
        {"req", "driver-a", "pool-1", device, false, {}, {}, {}, {}, std::move(consumed)});
    return allocation;
}

TEST(PodRequests, ContainersAreSummedAndTheLargestInitContainerWins) {
    Pod pod;
    pod.containers = {container("a", {{"cpu", q("1")}}), container("b", {{"cpu", q("500m")}})};
    pod.initContainers = {container("init", {{"cpu", q("2")}, {"memory", q("1Gi")}})};
    const ResourceList requests = requestsOf(pod);
    EXPECT_EQ(requests.at("cpu").text(), "2");
    EXPECT_EQ(requests.at("memory").text(), "1Gi");
}

TEST(PodRequests, SidecarsRunBesideTheContainersAndLaterInitContainers) {
    Pod pod;
    pod.containers = {container("app", {{"cpu", q("1")}})};
    pod.initContainers = {container("sidecar", {{"cpu", q("1")}}, {}, true),
                          container("init", {{"cpu", q("1500m")}})};
    // app + sidecar = 2; init with the sidecar before it = 2.5.
    EXPECT_EQ(requestsOf(pod).at("cpu").text(), "2500m");
}

TEST(PodRequests, PodLevelRequestsStandForTheContainersAndOverheadIsAdded) {
    Pod pod;
    pod.containers = {container("app", {{"cpu", q("1")}, {"memory", q("1Gi")}})};
    pod.podLevelRequests = {{"cpu", q("4")}};
    pod.overhead = {{"cpu", q("250m")}};
    const ResourceList requests = requestsOf(pod);
    EXPECT_EQ(requests.at("cpu").text(), "4250m");
    EXPECT_EQ(requests.at("memory").text(), "1Gi");
}

TEST(PodRequests, ClaimsAddTheirMappingAndOverheadPerPodAndPerContainer) {
    Pod pod;
    pod.containers = {container("app", {{"cpu", q("1")}})};
    NodeAllocatableClaimStatus status;
    status.resourceClaimName = "claim";
    status.containers = {"app", "sidecar"};
    status.mapping = {{"cpu", q("8")}};
    status.overhead["memory"] = {q("16Mi"), q("2Mi")};
    const ResourceList requests = requestsOf(pod, {status});
    EXPECT_EQ(requests.at("cpu").text(), "9");
    EXPECT_EQ(requests.at("memory").text(), "20Mi");
}

TEST(NodeAllocatableStatuses, ConsumedCapacityTimesTheMultiplierIsMapped) {
    const Device device = cpuDevice("500m");
    Pod pod;
    pod.containers = {container("app", {}, {"cpus"})};
    const Allocation allocation = allocationOf("cpu-0", {{"cpu", q("8")}});
    auto statuses = nodeAllocatableStatuses(pod, {{"cpus", "pod-cpus", &allocation}},
                                            [&](const DeviceResult&) { return &device; });
    ASSERT_TRUE(statuses.ok()) << statuses.error().message;
    ASSERT_EQ(statuses->size(), 1u);
    EXPECT_EQ((*statuses)[0].resourceClaimName, "pod-cpus");
    EXPECT_EQ((*statuses)[0].containers, std::vector<std::string>{"app"});
    EXPECT_EQ((*statuses)[0].mapping.at("cpu").text(), "4");
}

TEST(NodeAllocatableStatuses, ADeviceMultiplierCountsOncePerDevice) {
    Device device;
    device.name = "gpu-0";
    NodeAllocatableResource memory;
    memory.mapped = true;
    memory.deviceMultiplier = q("4Gi");
    device.nodeAllocatableResources["memory"] = memory;
    Allocation allocation = allocationOf("gpu-0");
    allocation.results.push_back(allocation.results.front());
    auto statuses = nodeAllocatableStatuses(Pod{}, {{"gpus", "pod-gpus", &allocation}},
                                            [&](const DeviceResult&) { return &device; });
    ASSERT_TRUE(statuses.ok()) << statuses.error().message;
    EXPECT_EQ((*statuses)[0].mapping.at("memory").text(), "8Gi");
}

TEST(NodeAllocatableStatuses, ClaimsWhoseDevicesMapNothingHaveNoStatusAndTheRestAreSorted) {
    const Device mapped = cpuDevice();
    const Device plain;
    const Allocation cpus = allocationOf("cpu-0", {{"cpu", q("2")}});
    const Allocation gpu = allocationOf("gpu-0");
    auto lookup = [&](const DeviceResult& r) { return r.device == "cpu-0" ? &mapped : &plain; };
    auto statuses = nodeAllocatableStatuses(
        Pod{}, {{"z", "z-claim", &cpus}, {"g", "g-claim", &gpu}, {"a", "a-claim", &cpus}}, lookup);
    ASSERT_TRUE(statuses.ok()) << statuses.error().message;
    ASSERT_EQ(statuses->size(), 2u);
    EXPECT_EQ((*statuses)[0].resourceClaimName, "a-claim");
    EXPECT_EQ((*statuses)[1].resourceClaimName, "z-claim");
    EXPECT_TRUE(mapsNodeResources(cpus, lookup));
    EXPECT_FALSE(mapsNodeResources(gpu, lookup));
}

TEST(NodeAllocatableStatuses, AMappedCapacityKeyWithoutConsumedCapacityIsAnError) {
    const Device device = cpuDevice();
    const Allocation allocation = allocationOf("cpu-0");
    auto statuses = nodeAllocatableStatuses(Pod{}, {{"cpus", "pod-cpus", &allocation}},
                                            [&](const DeviceResult&) { return &device; });
    ASSERT_FALSE(statuses.ok());
    EXPECT_EQ(statuses.error().message,
              "claim pod-cpus, device cpu-0: ConsumedCapacity is nil, but Capacity key 'cpu' is "
              "set in NodeAllocatableResources for resource cpu");
}

TEST(Shortfalls, CpuTheNodesOtherPodsTookIsInsufficient) {
    const auto missing = shortfalls({{"cpu", 9000}, {"memory", 1}}, {{"cpu", 16000}, {"memory", 8}},
                                    {{"cpu", 15000}}, 2);
    ASSERT_EQ(missing.size(), 1u);
    EXPECT_EQ(describe(missing[0]),
              "Insufficient cpu (the pod requests 9, the node's other pods use 15 of its 16 "
              "allocatable)");
}

TEST(Shortfalls, AResourceThePodDoesNotRequestOrTheNodeDoesNotListIsNotChecked) {
    EXPECT_TRUE(
        shortfalls({{"memory", 1}}, {{"cpu", 1000}, {"memory", 8}}, {{"cpu", 5000}}, 0).empty());
    EXPECT_TRUE(shortfalls({{"cpu", 64000}}, {{"memory", 8}}, {}, 0).empty());
}

TEST(Shortfalls, HugepagesAreCheckedAndAFullNodeHasTooManyPods) {
    const auto missing = shortfalls({{"hugepages-2Mi", 4}}, {{"hugepages-2Mi", 8}, {"pods", 3}},
                                    {{"hugepages-2Mi", 6}}, 3);
    ASSERT_EQ(missing.size(), 2u);
    EXPECT_EQ(describe(missing[0]), "Too many pods (the node holds 3 of its 3 allocatable pods)");
    EXPECT_EQ(missing[1].resource, "hugepages-2Mi");
}

TEST(Shortfalls, ExactlyWhatIsLeftFits) {
    EXPECT_TRUE(shortfalls({{"cpu", 1500}}, {{"cpu", 4000}}, {{"cpu", 2500}}, 0).empty());
}

}  // namespace
}  // namespace numadra::allocator
