#include "numadra/daemon/claims.hpp"

#include <gtest/gtest.h>

#include <map>

#include "numadra/slices/builder.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::daemon {
namespace {

class MapClaimSource : public ClaimSource {
  public:
    std::map<std::string, api::Json> claims;
    Result<api::Json> getClaim(const std::string& ns, const std::string& name, Deadline) override {
        auto it = claims.find(ns + "/" + name);
        if (it == claims.end())
            return Error{"not found", 404};
        return it->second;
    }
};

api::Json allocatedClaim(const std::string& uid, api::Json results) {
    return {{"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", uid}}},
            {"status", {{"allocation", {{"devices", {{"results", std::move(results)}}}}}}}};
}

api::Json result(const std::string& request, const std::string& driver, const std::string& pool,
                 const std::string& device) {
    return {{"request", request}, {"driver", driver}, {"pool", pool}, {"device", device}};
}

constexpr const char* kGpu = "gpu-0000-21-00-0";
constexpr const char* kNic = "nic-0000-c1-00-0";

struct ClaimsTest : ::testing::Test {
    MapClaimSource source;
    Inventory inventory;
    metrics::Registry registry;
    numadra::testing::TempTree dirs;
    std::unique_ptr<prepare::Preparer> devices;
    std::unique_ptr<ClaimPreparer> preparer;
    const plugin::ClaimRef ref{"ns", "c", "uid-1"};
    const plugin::Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);

    void SetUp() override {
        registry.declareHistogram("numadra_prepare_duration_seconds", "", {}, {1});
        registry.declareCounter("numadra_prepare_claims_total", "", {"result"});
        registry.declareCounter("numadra_unprepare_claims_total", "", {"result"});
        registry.declareHistogram("numadra_unprepare_duration_seconds", "", {}, {1});
        auto machine = numadra::testing::loadMachine("epyc-2s-nps4");
        slices::SliceOptions sliceOptions;
        sliceOptions.nodeName = "node-a";
        auto built = slices::buildResourceSlices(machine, sliceOptions);
        ASSERT_TRUE(built);
        const auto dev = numadra::testing::makeDevTree(machine, dirs, "dev");
        inventory.update(std::move(machine), std::move(built).value());
        prepare::Options options;
        options.driverName = "numa.dra.dev";
        options.poolName = "node-a";
        options.cdiDir = dirs.path("cdi");
        options.metadataDir = dirs.path("metadata");
        options.stateDir = dirs.path("state");
        options.hostRoots = {dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/epyc-2s-nps4/proc"};
        auto opened = prepare::Preparer::open(options, registry);
        ASSERT_TRUE(opened) << opened.error().message;
        devices = std::move(opened).value();
        preparer = std::make_unique<ClaimPreparer>(source, inventory, *devices, "numa.dra.dev",
                                                   "node-a", registry);
    }
};

TEST_F(ClaimsTest, ReturnsTheDriversDevicesWithTopLevelRequestNames) {
    auto results = api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu),
                                     result("net/fast", "numa.dra.dev", "node-a", kNic),
                                     result("cpu", "numa.dra.dev", "node-a", "cpu-numa-0"),
                                     result("other", "other.example.com", "node-a", "x")});
    results[2]["shareID"] = "share-1";
    results[2]["consumedCapacity"] = {{"cpu", "2"}};
    source.claims["ns/c"] = allocatedClaim("uid-1", results);
    auto prepared = preparer->prepare(ref, deadline);
    ASSERT_TRUE(prepared.error.empty()) << prepared.error;
    ASSERT_EQ(prepared.devices.size(), 3u);
    EXPECT_EQ(prepared.devices[0].deviceName, kGpu);
    EXPECT_EQ(prepared.devices[0].poolName, "node-a");
    EXPECT_EQ(prepared.devices[0].requestNames, (std::vector<std::string>{"gpu"}));
    EXPECT_EQ(prepared.devices[1].requestNames, (std::vector<std::string>{"net"}));
    EXPECT_EQ(prepared.devices[2].shareId, "share-1");
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"ok"}), 1);
}

TEST_F(ClaimsTest, APreparedClaimIsAnsweredWithoutTheApiServer) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    ASSERT_TRUE(preparer->prepare(ref, deadline).error.empty());
    source.claims.clear();  // the API server no longer has it
    auto again = preparer->prepare(ref, deadline);
    EXPECT_TRUE(again.error.empty()) << again.error;
    ASSERT_EQ(again.devices.size(), 1u);
}

TEST_F(ClaimsTest, TemplateClaimsCarryThePodClaimName) {
    auto claim =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    claim["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "accel"}};
    auto allocation = preparer->allocationFor(ref, claim);
    ASSERT_TRUE(allocation) << allocation.error().message;
    EXPECT_EQ(allocation->podClaimName, "accel");
}

TEST_F(ClaimsTest, MalformedConsumedCapacityNamesTheField) {
    auto results = api::Json::array({result("cpu", "numa.dra.dev", "node-a", "cpu-numa-0")});
    results[0]["consumedCapacity"] = {{"cpu", "lots"}};
    auto allocation = preparer->allocationFor(ref, allocatedClaim("uid-1", results));
    ASSERT_FALSE(allocation);
    EXPECT_NE(allocation.error().message.find(
                  "status.allocation.devices.results[0].consumedCapacity.cpu"),
              std::string::npos)
        << allocation.error().message;
}

TEST_F(ClaimsTest, MissingClaimIsAPerClaimError) {
    auto prepared = preparer->prepare(ref, deadline);
    EXPECT_NE(prepared.error.find("ResourceClaim ns/c not found"), std::string::npos)
        << prepared.error;
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"error"}), 1);
}

TEST_F(ClaimsTest, ReplacedClaimIsRefused) {
    source.claims["ns/c"] =
        allocatedClaim("uid-2", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    auto prepared = preparer->prepare(ref, deadline);
    EXPECT_NE(prepared.error.find("has UID uid-2, not uid-1"), std::string::npos) << prepared.error;
}

TEST_F(ClaimsTest, UnallocatedClaimIsRefused) {
    source.claims["ns/c"] = {{"metadata", {{"uid", "uid-1"}}}, {"status", api::Json::object()}};
    EXPECT_NE(preparer->prepare(ref, deadline).error.find("is not allocated"), std::string::npos);
}

TEST_F(ClaimsTest, ClaimForAnotherDriverOnlyIsRefused) {
    source.claims["ns/c"] = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "other.example.com", "node-a", "g")}));
    EXPECT_NE(
        preparer->prepare(ref, deadline).error.find("no devices allocated by driver numa.dra.dev"),
        std::string::npos);
}

TEST_F(ClaimsTest, DeviceOfAnotherNodesPoolIsRefused) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-b", kGpu)}));
    EXPECT_NE(preparer->prepare(ref, deadline).error.find("not this node's pool 'node-a'"),
              std::string::npos);
}

TEST_F(ClaimsTest, UnknownDeviceIsRefused) {
    source.claims["ns/c"] = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", "gpu-7")}));
    EXPECT_NE(preparer->prepare(ref, deadline)
                  .error.find("gpu-7 of request gpu is not published by this node"),
              std::string::npos);
}

TEST_F(ClaimsTest, UnprepareOfAnUnknownClaimSucceeds) {
    EXPECT_EQ(preparer->unprepare(ref, deadline), "");
}

TEST(FileClaimSource, ReadsJsonAndYamlAndReportsMissing) {
    numadra::testing::TempTree tree;
    tree.file("ns_a.json", R"({"metadata":{"uid":"u1"}})");
    tree.file("ns_b.yaml", "metadata:\n  uid: u2\n");
    tree.file("ns_bad.json", "{not json");
    auto source = makeFileClaimSource(tree.root());
    const auto deadline = std::chrono::steady_clock::now();
    EXPECT_EQ(source->getClaim("ns", "a", deadline).value()["metadata"]["uid"], "u1");
    EXPECT_EQ(source->getClaim("ns", "b", deadline).value()["metadata"]["uid"], "u2");
    EXPECT_EQ(source->getClaim("ns", "missing", deadline).error().code, 404);
    auto bad = source->getClaim("ns", "bad", deadline);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("ns_bad.json"), std::string::npos);
}

}  // namespace
}  // namespace numadra::daemon
