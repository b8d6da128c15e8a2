#include "numadra/daemon/claims.hpp"

#include <gtest/gtest.h>

#include <map>

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

struct ClaimsTest : ::testing::Test {
    MapClaimSource source;
    Inventory inventory;
    metrics::Registry registry;
    std::unique_ptr<ClaimPreparer> preparer;
    const plugin::ClaimRef ref{"ns", "c", "uid-1"};
    const plugin::Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);

    void SetUp() override {
        registry.declareHistogram("numadra_prepare_duration_seconds", "", {}, {1});
        registry.declareCounter("numadra_prepare_claims_total", "", {"result"});
        registry.declareCounter("numadra_unprepare_claims_total", "", {"result"});
        registry.declareHistogram("numadra_unprepare_duration_seconds", "", {}, {1});
        api::ResourceSlice slice;
        slice.name = "s";
        for (const char* name : {"gpu-0", "nic-0", "cpu-numa-0"}) {
            api::Device device;
            device.name = name;
            slice.devices.push_back(device);
        }
        inventory.update({}, {slice});
        preparer =
            std::make_unique<ClaimPreparer>(source, inventory, "numa.dra.dev", "node-a", registry);
    }
};

TEST_F(ClaimsTest, ReturnsTheDriversDevicesWithTopLevelRequestNames) {
    auto results = api::Json::array({result("gpu", "numa.dra.dev", "node-a", "gpu-0"),
                                     result("net/fast", "numa.dra.dev", "node-a", "nic-0"),
                                     result("other", "other.example.com", "node-a", "x")});
    results[1]["shareID"] = "share-1";
    source.claims["ns/c"] = allocatedClaim("uid-1", results);
    auto prepared = preparer->prepare(ref, deadline);
    ASSERT_TRUE(prepared.error.empty()) << prepared.error;
    ASSERT_EQ(prepared.devices.size(), 2u);
    EXPECT_EQ(prepared.devices[0].deviceName, "gpu-0");
    EXPECT_EQ(prepared.devices[0].poolName, "node-a");
    EXPECT_EQ(prepared.devices[0].requestNames, (std::vector<std::string>{"gpu"}));
    EXPECT_EQ(prepared.devices[1].requestNames, (std::vector<std::string>{"net"}));
    EXPECT_EQ(prepared.devices[1].shareId, "share-1");
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"ok"}), 1);
}

TEST_F(ClaimsTest, MissingClaimIsAPerClaimError) {
    auto prepared = preparer->prepare(ref, deadline);
    EXPECT_NE(prepared.error.find("ResourceClaim ns/c not found"), std::string::npos)
        << prepared.error;
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"error"}), 1);
}

TEST_F(ClaimsTest, ReplacedClaimIsRefused) {
    source.claims["ns/c"] = allocatedClaim(
        "uid-2", api::Json::array({result("gpu", "numa.dra.dev", "node-a", "gpu-0")}));
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
    source.claims["ns/c"] = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-b", "gpu-0")}));
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
