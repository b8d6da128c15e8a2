// The allocator library through its API: search order, pools, counters, capacity, constraints,
// limits and the time budget. End-to-end behaviour with YAML inputs lives in the scenarios
// (testdata/allocator/, scenarios_test.cpp).

#include "numadra/allocator/allocator.hpp"

#include <gtest/gtest.h>

#include "../capacity.hpp"

namespace numadra::allocator {
namespace {

const Node kNode{"node-1", {{"region", "east"}}};

Quantity q(const char* text) {
    return Quantity::parse(text).value();
}

Device device(std::string name, std::int64_t numa = 0) {
    Device out;
    out.name = std::move(name);
    out.attributes["numa"] = AttributeValue(numa);
    return out;
}

Slice slice(std::string name, std::string pool, std::vector<Device> devices,
            std::string driver = "driver-a", std::int64_t generation = 1, std::int64_t count = 1) {
    Slice out;
    out.name = std::move(name);
    out.driver = std::move(driver);
    out.pool = {std::move(pool), generation, count};
    out.nodeName = "node-1";
    out.devices = std::move(devices);
    return out;
}

DeviceClass deviceClass(std::string name = "class-a", const std::string& driver = "driver-a") {
    return {std::move(name), {"device.driver == \"" + driver + "\""}, {}, {}, {}};
}

Request exactly(std::string name, std::int64_t count = 1, std::string className = "class-a") {
    Request out;
    out.name = std::move(name);
    out.exactly.emplace();
    out.exactly->deviceClassName = std::move(className);
    out.exactly->count = count;
    return out;
}

Claim claim(std::vector<Request> requests, std::vector<Constraint> constraints = {},
            std::string name = "claim-0") {
    Claim out;
    out.namespace_ = "default";
    out.name = std::move(name);
    out.requests = std::move(requests);
    out.constraints = std::move(constraints);
    return out;
}

std::vector<std::string> devicesOf(const Outcome& outcome) {
    std::vector<std::string> names;
    for (const Allocation& allocation : outcome.allocations)
        for (const DeviceResult& result : allocation.results)
            names.push_back(result.pool + "/" + result.device);
    return names;
}

Outcome allocateOk(Allocator& allocator, const std::vector<Claim>& claims) {
    auto outcome = allocator.allocate(kNode, claims);
    EXPECT_TRUE(outcome.ok()) << (outcome.ok() ? "" : outcome.error().message);
    return outcome.ok() ? *outcome : Outcome{};
}

TEST(AllocatorOrder, PoolsAreSearchedByNameNotInputOrder) {
    auto allocator = Allocator::create(
        {slice("s3", "pool-3", {device("d")}), slice("s2", "pool-2", {device("d")}),
         slice("s1", "pool-1", {device("d")})},
        {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool-1/d", "pool-2/d"}));
}

TEST(AllocatorOrder, PoolsWithBindingConditionsComeLast) {
    Device conditioned = device("d");
    conditioned.hasBindingConditions = true;
    conditioned.bindingConditions = {"attached"};
    auto allocator = Allocator::create(
        {slice("s1", "pool-1", {conditioned}), slice("s2", "pool-2", {device("d")})},
        {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    EXPECT_EQ(devicesOf(outcome), std::vector<std::string>{"pool-2/d"});
}

TEST(AllocatorOrder, SlicesOfAPoolAreSearchedByName) {
    auto allocator = Allocator::create({slice("b", "pool", {device("from-b")}, "driver-a", 1, 2),
                                        slice("a", "pool", {device("from-a")}, "driver-a", 1, 2)},
                                       {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    EXPECT_EQ(devicesOf(outcome), std::vector<std::string>{"pool/from-a"});
}

TEST(AllocatorOrder, BacktracksAcrossRequests) {
    // The first request could take d0 (numa 0), but only numa 1 has two devices.
    auto allocator = Allocator::create(
        {slice("s", "pool", {device("d0", 0), device("d1", 1), device("d2", 1)})}, {deviceClass()});
    Constraint sameNuma;
    sameNuma.matchAttribute = "driver-a/numa";
    Outcome outcome =
        allocateOk(allocator, {claim({exactly("req-0"), exactly("req-1")}, {sameNuma})});
    ASSERT_EQ(outcome.kind, OutcomeKind::Allocated);
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/d1", "pool/d2"}));
}

TEST(AllocatorPools, IncompletePoolIsNotUsed) {
    auto allocator =
        Allocator::create({slice("s", "pool", {device("d")}, "driver-a", 1, 2)}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    EXPECT_NE(outcome.explanation.find("currently being updated"), std::string::npos)
        << outcome.explanation;
}

TEST(AllocatorPools, IncompletePoolWithANewerGenerationElsewhereIsDropped) {
    Slice old = slice("old", "pool", {device("d")}, "driver-a", 1, 2);
    Slice newer = slice("new", "pool", {device("d")}, "driver-a", 2, 2);
    newer.nodeName = "node-2";
    auto allocator = Allocator::create({old, newer}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    // Dropped, not reported as being updated.
    EXPECT_EQ(outcome.explanation.find("being updated"), std::string::npos) << outcome.explanation;
}

TEST(AllocatorPools, CompleteOldGenerationOnThisNodeIsStillUsed) {
    // Upstream behaviour: the node sees a complete pool, so it never looks further.
    Slice old = slice("old", "pool", {device("d")}, "driver-a", 1, 1);
    Slice newer = slice("new", "pool", {device("d")}, "driver-a", 2, 1);
    newer.nodeName = "node-2";
    auto allocator = Allocator::create({old, newer}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Allocated);
}

// Upstream's ErrFailedAllocationOnNode: not an error for the pod, a failure of this node.
TEST(AllocatorPools, DuplicateDeviceFailsTheNodeWithTheInvalidPoolError) {
    auto allocator = Allocator::create({slice("a", "pool", {device("d")}, "driver-a", 1, 2),
                                        slice("b", "pool", {device("d")}, "driver-a", 1, 2)},
                                       {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 3)})});
    EXPECT_EQ(outcome.kind, OutcomeKind::FailedOnNode);
    EXPECT_NE(outcome.explanation.find("invalid resource pools"), std::string::npos);
}

TEST(AllocatorState, CommittedDevicesAreNotAllocatedAgain) {
    auto allocator =
        Allocator::create({slice("s", "pool", {device("d0"), device("d1")})}, {deviceClass()});
    Outcome first = allocateOk(allocator, {claim({exactly("req-0")})});
    allocator.commit(first.allocations.front());
    Outcome second = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    EXPECT_EQ(devicesOf(second), std::vector<std::string>{"pool/d1"});
    allocator.commit(second.allocations.front());
    Outcome third = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-2")});
    EXPECT_EQ(third.kind, OutcomeKind::Unsatisfiable);
}

// A multi-allocatable device and a committed allocation of it to another claim, with or
// without a shareID.
Device shareable(std::string name) {
    Device out = device(std::move(name));
    out.allowMultipleAllocations = true;
    return out;
}

Allocation allocationOf(const std::string& name, std::optional<std::string> shareID) {
    DeviceResult result;
    result.request = "req-0";
    result.driver = "driver-a";
    result.pool = "pool";
    result.device = name;
    result.shareID = std::move(shareID);
    return {{result}, {}, {}};
}

TEST(AllocatorState, ShareableDeviceAllocatedWithoutShareIdIsNotHandedOutAgain) {
    auto allocator = Allocator::create({slice("s", "pool", {shareable("d0"), shareable("d1")})},
                                       {deviceClass()});
    allocator.commit(allocationOf("d0", std::nullopt));
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    EXPECT_EQ(devicesOf(outcome), std::vector<std::string>{"pool/d1"});
}

TEST(AllocatorState, ShareableDeviceAllocatedWithAShareIdIsSharedAgain) {
    auto allocator =
        Allocator::create({slice("s", "pool", {shareable("d0"), device("d1")})}, {deviceClass()});
    allocator.commit(allocationOf("d0", "3f1c0e56-0d6c-4c1e-9a57-5b0f1e7a9c21"));
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    ASSERT_EQ(devicesOf(outcome), std::vector<std::string>{"pool/d0"});
    EXPECT_TRUE(outcome.allocations.front().results.front().shareID.has_value());
}

TEST(AllocatorState, SharesPlacedInTheSameCallLeaveTheDeviceShareable) {
    auto allocator = Allocator::create({slice("s", "pool", {shareable("d0")})}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-0"),
                                             claim({exactly("req-0")}, {}, "claim-1")});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/d0", "pool/d0"}));
}

TEST(AllocatorState, AdminAccessStillSeesAShareableDeviceAllocatedWithoutShareId) {
    auto allocator = Allocator::create({slice("s", "pool", {shareable("d0")})}, {deviceClass()});
    allocator.commit(allocationOf("d0", std::nullopt));
    Request admin = exactly("req-0");
    admin.exactly->adminAccess = true;
    Outcome outcome = allocateOk(allocator, {claim({admin}, {}, "monitor")});
    EXPECT_EQ(devicesOf(outcome), std::vector<std::string>{"pool/d0"});
}

TEST(AllocatorState, DeviceNoLongerShareableIsFreeDespiteCommittedShares) {
    // Upstream's in-use set holds dedicated results only: shares of a device that has since
    // lost allowMultipleAllocations do not block it.
    auto allocator = Allocator::create({slice("s", "pool", {device("d0")})}, {deviceClass()});
    allocator.commit(allocationOf("d0", "3f1c0e56-0d6c-4c1e-9a57-5b0f1e7a9c21"));
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    EXPECT_EQ(devicesOf(outcome), std::vector<std::string>{"pool/d0"});
}

TEST(AllocatorExplain, ShareableDeviceAllocatedWithoutShareIdIsNamedAsDedicated) {
    auto allocator = Allocator::create({slice("s", "pool", {shareable("d0")})}, {deviceClass()});
    allocator.commit(allocationOf("d0", std::nullopt));
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    ASSERT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    EXPECT_NE(outcome.explanation.find("1 of the matching devices are allocated to other claims "
                                       "(1 allows multiple allocations but is dedicated: "
                                       "allocated without a shareID)"),
              std::string::npos)
        << outcome.explanation;
}

TEST(AllocatorCounters, ExhaustedCounterSetBlocksTheDevice) {
    Slice counters = slice("counters", "pool", {}, "driver-a", 1, 2);
    counters.sharedCounters.push_back({"set", {{"memory", {q("8Gi"), {}}}}});
    auto partition = [](std::string name, const char* amount) {
        Device out = device(std::move(name));
        out.consumesCounters.push_back(
            {"set", {{"memory", {Quantity::parse(amount).value(), {}}}}});
        return out;
    };
    Slice devices = slice("devices", "pool", {partition("big", "6Gi"), partition("small", "4Gi")},
                          "driver-a", 1, 2);
    auto allocator = Allocator::create({counters, devices}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    Outcome one = allocateOk(allocator, {claim({exactly("req-0", 1)})});
    EXPECT_EQ(devicesOf(one), std::vector<std::string>{"pool/big"});
}

// --- DRADeviceCompatibilityGroups -----------------------------------------------------------

// A pool with counter set "set" (8 units) in its own slice and the given devices in another.
std::vector<Slice> groupedPool(std::vector<Device> devices) {
    Slice counters = slice("counters", "pool", {}, "driver-a", 1, 2);
    counters.sharedCounters.push_back({"set", {{"units", {q("8"), {}}}}});
    counters.sharedCounters.push_back({"other", {{"units", {q("8"), {}}}}});
    return {counters, slice("devices", "pool", std::move(devices), "driver-a", 1, 2)};
}

Device grouped(std::string name, std::vector<std::string> groups, std::int64_t numa = 0,
               const std::string& set = "set") {
    Device out = device(std::move(name), numa);
    CounterConsumption use;
    use.counterSet = set;
    use.counters["units"] = {q("1"), {}};
    use.compatibilityGroups = std::move(groups);
    out.consumesCounters.push_back(std::move(use));
    return out;
}

TEST(AllocatorGroups, DevicesWithACommonGroupShareACounterSet) {
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {"mig", "full"}), grouped("b", {"mig"})}), {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/a", "pool/b"}));
}

TEST(AllocatorGroups, ADeviceWithoutACommonGroupIsSkipped) {
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {"mig"}), grouped("b", {"vgpu"}), grouped("c", {"mig"})}),
        {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/a", "pool/c"}));
}

TEST(AllocatorGroups, NoGroupsPairOnlyWithNoGroups) {
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {}), grouped("b", {"mig"}), grouped("c", {})}), {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/a", "pool/c"}));
}

TEST(AllocatorGroups, TheCommonGroupsNarrowWithEachDevice) {
    // a and b have only y in common, so c (x alone) cannot join them.
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {"x", "y"}), grouped("b", {"y", "z"}), grouped("c", {"x"})}),
        {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 3)})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
}

TEST(AllocatorGroups, DifferentCounterSetsAreNotCompared) {
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {"mig"}), grouped("b", {"vgpu"}, 0, "other")}), {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 2)})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/a", "pool/b"}));
}

TEST(AllocatorGroups, AllocatedDevicesCountForLaterClaims) {
    auto allocator = Allocator::create(groupedPool({grouped("a", {"mig"}), grouped("b", {"vgpu"})}),
                                       {deviceClass()});
    Allocation held = allocationOf("b", std::nullopt);
    allocator.commit(held);
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
}

TEST(AllocatorGroups, BacktrackingRestoresTheCommonGroups) {
    // req-0 first takes a (mig); req-1 needs numa 1, only c (vgpu): req-0 moves to b (vgpu).
    auto allocator = Allocator::create(
        groupedPool({grouped("a", {"mig"}), grouped("b", {"vgpu"}), grouped("c", {"vgpu"}, 1)}),
        {deviceClass()});
    Request numaOne = exactly("req-1");
    numaOne.exactly->selectors = {"device.attributes[\"driver-a\"].numa == 1"};
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0"), numaOne})});
    EXPECT_EQ(devicesOf(outcome), (std::vector<std::string>{"pool/b", "pool/c"}));
}

TEST(AllocatorExplain, IncompatibleGroupsNameTheCounterSetAndGroups) {
    auto allocator = Allocator::create(groupedPool({grouped("a", {"mig"}), grouped("b", {"vgpu"})}),
                                       {deviceClass()});
    allocator.commit(allocationOf("b", std::nullopt));
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")}, {}, "claim-1")});
    ASSERT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    EXPECT_NE(outcome.explanation.find("0 with compatible groups -> incompatible groups: device a "
                                       "declares {mig} on counter set set of pool pool, where the "
                                       "devices allocated from it have only {vgpu} in common"),
              std::string::npos)
        << outcome.explanation;
}

// --- DRAOptionalNodeOperations --------------------------------------------------------------

Slice skippingNodeOperations() {
    Slice out = slice("s", "pool", {device("d")});
    out.skipNodeOperations = {"*"};
    return out;
}

TEST(AllocatorNodeOperations, ResultCopiesTheSlicesSkipNodeOperations) {
    auto allocator = Allocator::create({skippingNodeOperations()}, {deviceClass()});
    Node node = kNode;
    node.declaredFeatures = {"DRAOptionalNodeOperations"};
    auto outcome = allocator.allocate(node, std::vector<Claim>{claim({exactly("req-0")})});
    ASSERT_TRUE(outcome.ok()) << outcome.error().message;
    ASSERT_EQ(outcome->kind, OutcomeKind::Allocated);
    EXPECT_EQ(outcome->allocations.front().results.front().skipNodeOperations,
              std::vector<std::string>{"*"});
}

TEST(AllocatorNodeOperations, ANodeWithoutTheFeatureGetsNoSuchDevice) {
    auto allocator = Allocator::create({skippingNodeOperations()}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0")})});
    ASSERT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    EXPECT_NE(outcome.explanation.find("does not declare"), std::string::npos)
        << outcome.explanation;
}

TEST(AllocatorLimits, ClaimOverThirtyTwoDevicesIsAnError) {
    auto allocator = Allocator::create({slice("s", "pool", {device("d")})}, {deviceClass()});
    auto outcome = allocator.allocate(kNode, std::vector<Claim>{claim({exactly("req-0", 33)})});
    ASSERT_FALSE(outcome.ok());
    EXPECT_NE(outcome.error().message.find("exceeds the claim limit of 32"), std::string::npos);
}

TEST(AllocatorLimits, InfeasibleCountIsProvedWithoutSearching) {
    std::vector<Device> devices;
    for (int i = 0; i < 31; ++i)
        devices.push_back(device("d" + std::to_string(i)));
    auto allocator = Allocator::create({slice("s", "pool", devices)}, {deviceClass()});
    Outcome outcome = allocateOk(allocator, {claim({exactly("req-0", 32)})});
    EXPECT_EQ(outcome.kind, OutcomeKind::Unsatisfiable);
    EXPECT_LE(outcome.searchSteps, 2U);
}

TEST(AllocatorLimits, UnknownClassIsAnError) {
    auto allocator = Allocator::create({slice("s", "pool", {device("d")})}, {deviceClass()});
    auto outcome =
        allocator.allocate(kNode, std::vector<Claim>{claim({exactly("req-0", 1, "nope")})});
    ASSERT_FALSE(outcome.ok());
    EXPECT_NE(outcome.error().message.find("could not retrieve device class nope"),
              std::string::npos);
}

TEST(AllocatorBudget, ASearchOverTheBudgetGivesUp) {
    // A firstAvailable alternative over 32 devices turns the counting bounds off, so this is
    // upstream's plain search: 10 pairwise distinct values among 24 devices with only 9 values.
    std::vector<Device> devices;
    for (int i = 0; i < 24; ++i)
        devices.push_back(device("d" + std::to_string(i), i % 9));
    auto options = Options{std::chrono::milliseconds(1)};
    auto allocator = Allocator::create({slice("s", "pool", devices)}, {deviceClass()}, options);
    Request request;
    request.name = "req-0";
    request.firstAvailable.push_back({"huge", exactly("x", 33).exactly.value()});
    request.firstAvailable.push_back({"ten", exactly("x", 10).exactly.value()});
    Constraint distinct;
    distinct.distinctAttribute = "driver-a/numa";
    Outcome outcome = allocateOk(allocator, {claim({request}, {distinct})});
    EXPECT_EQ(outcome.kind, OutcomeKind::GaveUp);
}

TEST(AllocatorCapacity, RangeRoundsUpToTheNextStep) {
    RequestPolicy policy;
    policy.validRange = CapacityRange{q("2"), q("10"), q("2")};
    EXPECT_EQ(*detail::policyAmount(q("3"), q("10"), policy), q("4"));
    EXPECT_EQ(*detail::policyAmount(q("1"), q("10"), policy), q("2"));
    EXPECT_EQ(*detail::policyAmount(std::nullopt, q("10"), policy), q("10"));
}

// Upstream's DRAFractionalCapacityRange: bounds that are whole milli-units round in milli-units.
TEST(AllocatorCapacity, FractionalRangeRoundsInMilliUnits) {
    RequestPolicy policy;
    policy.validRange = CapacityRange{q("200m"), q("1"), q("100m")};
    EXPECT_EQ(*detail::policyAmount(q("250m"), q("1"), policy), q("300m"));
    EXPECT_EQ(*detail::policyAmount(q("200m"), q("1"), policy), q("200m"));
    EXPECT_FALSE(detail::policyViolation(q("300m"), policy).has_value());
    EXPECT_TRUE(detail::policyViolation(q("250m"), policy).has_value());
}

TEST(AllocatorCapacity, RoundingPastInt64IsAnError) {
    RequestPolicy policy;
    policy.validRange = CapacityRange{q("2"), std::nullopt, q("2")};
    auto above = detail::policyAmount(q("18446744073709551616"), q("4"), policy);
    ASSERT_FALSE(above.ok());
    EXPECT_NE(above.error().message.find("cannot be represented"), std::string::npos);
    EXPECT_FALSE(detail::policyAmount(q("9223372036854775807"), q("4"), policy).ok());
}

// Upstream looks a capacity request's key up as it is: "driver-a/memory" does not name the
// device's capacity "memory" (the real kube-scheduler leaves such a claim unallocated).
TEST(AllocatorCapacity, ARequestNamesTheCapacityExactlyAsPublished) {
    Device shared = device("shared");
    shared.allowMultipleAllocations = true;
    shared.capacity["memory"] = Capacity{q("10"), {}};
    auto allocator = Allocator::create({slice("s", "pool", {shared})}, {deviceClass()});
    Request qualified = exactly("req-0");
    qualified.exactly->capacityRequests["driver-a/memory"] = q("5");
    auto refused = allocateOk(allocator, {claim({qualified})});
    EXPECT_EQ(refused.kind, OutcomeKind::Unsatisfiable);
    Request exact = exactly("req-0");
    exact.exactly->capacityRequests["memory"] = q("5");
    EXPECT_EQ(allocateOk(allocator, {claim({exact})}).kind, OutcomeKind::Allocated);
}

TEST(AllocatorCapacity, ANegativeRequestAbortsTheAllocation) {
    Device shared = device("shared");
    shared.allowMultipleAllocations = true;
    shared.capacity["memory"] = Capacity{q("10"), {}};
    auto allocator = Allocator::create({slice("s", "pool", {shared})}, {deviceClass()});
    Request request = exactly("req-0");
    request.exactly->capacityRequests["memory"] = q("-5");
    const std::vector<Claim> claims{claim({request})};
    auto outcome = allocator.allocate(kNode, claims);
    ASSERT_FALSE(outcome.ok());
    EXPECT_NE(outcome.error().message.find("capacity value is negative"), std::string::npos)
        << outcome.error().message;
}

TEST(AllocatorCapacity, ValidValuesPickTheFirstNotBelowTheRequest) {
    RequestPolicy policy;
    policy.validValues = {q("1"), q("3"), q("5")};
    EXPECT_EQ(*detail::policyAmount(q("2"), q("8"), policy), q("3"));
    EXPECT_EQ(*detail::policyAmount(q("6"), q("8"), policy), q("6"));
    EXPECT_TRUE(detail::policyViolation(q("6"), policy).has_value());
    EXPECT_FALSE(detail::policyViolation(q("5"), policy).has_value());
}

TEST(AllocatorCapacity, SharedDeviceServesSeveralClaimsUntilFull) {
    Device shared = device("shared");
    shared.allowMultipleAllocations = true;
    shared.capacity["memory"] = Capacity{q("10Gi"), {}};
    auto allocator = Allocator::create({slice("s", "pool", {shared})}, {deviceClass()});
    Request request = exactly("req-0");
    request.exactly->capacityRequests["memory"] = q("4Gi");
    for (int i = 0; i < 2; ++i) {
        Outcome outcome = allocateOk(allocator, {claim({request}, {}, "c" + std::to_string(i))});
        ASSERT_EQ(outcome.kind, OutcomeKind::Allocated);
        const DeviceResult& result = outcome.allocations.front().results.front();
        EXPECT_TRUE(result.shareID.has_value());
        EXPECT_EQ(result.consumedCapacity.at("memory"), q("4Gi"));
        allocator.commit(outcome.allocations.front());
    }
    Outcome full = allocateOk(allocator, {claim({request}, {}, "c2")});
    EXPECT_EQ(full.kind, OutcomeKind::Unsatisfiable);
}

TEST(AllocatorTaints, UntoleratedTaintBlocksAndTolerationIsCopied) {
    Device tainted = device("d");
    tainted.taints.push_back({"example.com/unhealthy", "aer", "NoSchedule"});
    auto allocator = Allocator::create({slice("s", "pool", {tainted})}, {deviceClass()});
    EXPECT_EQ(allocateOk(allocator, {claim({exactly("req-0")})}).kind, OutcomeKind::Unsatisfiable);
    Request tolerant = exactly("req-0");
    tolerant.exactly->tolerations.push_back({"example.com/unhealthy", "Exists", "", "", {}});
    Outcome outcome = allocateOk(allocator, {claim({tolerant})});
    ASSERT_EQ(outcome.kind, OutcomeKind::Allocated);
    EXPECT_EQ(outcome.allocations.front().results.front().tolerations.size(), 1U);
}

TEST(AllocatorSelectors, RuntimeErrorIsFatalWhenTheDeviceIsReached) {
    DeviceClass broken{"class-a", {"device.attributes[\"driver-a\"].missing == 1"}, {}, {}, {}};
    auto allocator = Allocator::create({slice("s", "pool", {device("d")})}, {broken});
    auto outcome = allocator.allocate(kNode, std::vector<Claim>{claim({exactly("req-0")})});
    ASSERT_FALSE(outcome.ok());
    EXPECT_NE(outcome.error().message.find("no such key"), std::string::npos)
        << outcome.error().message;
}

}  // namespace
}  // namespace numadra::allocator
