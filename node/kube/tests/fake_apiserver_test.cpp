// The fake API server's own behaviours that the client tests do not already pin down.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube_test_support.hpp"
#include "numadra/fakes/apiserver.hpp"

namespace numadra::kube {
namespace {

using namespace std::chrono_literals;
using test::quickOptions;
using test::resourceVersionOf;
using test::sliceJson;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

Json sliceWithAttributes() {
    Json slice = sliceJson("s", "n1");
    slice["spec"]["devices"] =
        Json::array({Json{{"name", "gpu-0"},
                          {"attributes",
                           {{"resource.kubernetes.io/numaNode", {{"ints", {1, 0}}}},
                            {"resource.kubernetes.io/pcieRoot", {{"string", "pci0000:00"}}},
                            {"numa.dra.dev/names", {{"strings", {"a", "b"}}}},
                            {"numa.dra.dev/rdma", {{"bool", true}}}}}}});
    return slice;
}

// kube-apiserver 1.37.2's words for an attribute left without a value (the end-to-end tests see
// them from the real server).
const std::string kNoValue =
    "Invalid value: \"\": must specify one of: `int`, `bool`, `string`, `version`, `ints`, "
    "`bools`, `strings`, `versions`";

TEST(FakeApiServer, WithoutListAttributesACreateIsRefusedAsKubeApiserverDoes) {
    fakes::FakeApiServer server;
    server.setRefuseListAttributes(true);
    KubeClient client(test::configFor(server), quickOptions());
    auto created = client.createResourceSlice(sliceWithAttributes());
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.error().httpStatus, 422);
    EXPECT_EQ(created.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(created.error().message,
              "POST /apis/resource.k8s.io/v1/resourceslices: HTTP 422 Invalid: "
              "ResourceSlice.resource.k8s.io \"s\" is invalid: "
              "[spec.devices[0].attributes[resource.kubernetes.io/numaNode]: " +
                  kNoValue + ", spec.devices[0].attributes[numa.dra.dev/names]: " + kNoValue + "]");
    EXPECT_EQ(
        created.error().causes,
        (std::vector<FieldCause>{
            {"spec.devices[0].attributes[resource.kubernetes.io/numaNode]", kNoValue,
             "FieldValueInvalid"},
            {"spec.devices[0].attributes[numa.dra.dev/names]", kNoValue, "FieldValueInvalid"}}));
    EXPECT_EQ(created.error().reason, "Invalid");
    EXPECT_FALSE(server.resourceSlice("s").has_value());
}

TEST(FakeApiServer, WithoutListAttributesScalarSlicesAreStored) {
    fakes::FakeApiServer server;
    server.setRefuseListAttributes(true);
    KubeClient client(test::configFor(server), quickOptions());
    Json slice = sliceWithAttributes();
    auto& attributes = slice["spec"]["devices"][0]["attributes"];
    attributes["resource.kubernetes.io/numaNode"] = Json{{"int", 1}};
    attributes.erase("numa.dra.dev/names");
    auto created = client.createResourceSlice(slice);
    ASSERT_TRUE(created.ok()) << created.error().message;
    EXPECT_EQ((*created)["spec"]["devices"][0]["attributes"], attributes);
}

TEST(FakeApiServer, KeepsListValuesByDefault) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto created = client.createResourceSlice(sliceWithAttributes());
    ASSERT_TRUE(created.ok());
    EXPECT_EQ((*created)["spec"]["devices"][0]["attributes"]["resource.kubernetes.io/numaNode"],
              (Json{{"ints", {1, 0}}}));
}

TEST(FakeApiServer, WithoutListAttributesAnUpdateIsRefusedToo) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto created = client.createResourceSlice(sliceWithAttributes());
    ASSERT_TRUE(created.ok());
    server.setRefuseListAttributes(true);
    auto updated = client.updateResourceSlice(*created);
    ASSERT_FALSE(updated.ok());
    EXPECT_EQ(updated.error().httpStatus, 422);
    EXPECT_EQ(updated.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(updated.error().causes.size(), 2u);
    EXPECT_EQ(server.resourceSlice("s").value(), *created);  // unchanged
}

// kube-apiserver v1.37.2's NodeDeclaredFeatureValidator answers with apierrors.NewForbidden:
// reason Forbidden, no causes, the feature in the message.
TEST(FakeApiServer, AnUndeclaredNodeAllocatableIsForbiddenAsKubeApiserverDoes) {
    fakes::FakeApiServer server;
    server.setCheckDeclaredFeatures(true);
    server.addNode("n1", "uid-n1", std::vector<std::string>{});
    KubeClient client(test::configFor(server), quickOptions());
    Json slice = sliceJson("s", "n1");
    slice["spec"]["devices"] =
        Json::array({Json{{"name", "gpu-0"},
                          {"nodeAllocatableResources", {{"cpu", {{"allocationMultiple", "1"}}}}}}});
    auto created = client.createResourceSlice(slice);
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.error().kind, ErrorKind::PermissionDenied);
    EXPECT_EQ(created.error().httpStatus, 403);
    EXPECT_EQ(created.error().reason, "Forbidden");
    EXPECT_TRUE(created.error().causes.empty());
    EXPECT_THAT(created.error().message,
                HasSubstr("resourceslices.resource.k8s.io \"s\" is forbidden: node \"n1\" does "
                          "not support DRANodeAllocatableResources feature"));
}

Json allocatedClaim() {
    return Json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", "uid-c"}}},
                {"status",
                 {{"allocation",
                   {{"devices",
                     {{"results", Json::array({Json{{"request", "r"},
                                                    {"driver", "numa.dra.dev"},
                                                    {"pool", "n1"},
                                                    {"device", "nic-0"}}})}}}}}}}};
}

Json statusEntry(const std::string& device) {
    return Json{
        {"metadata", {{"uid", "uid-c"}}},
        {"status",
         {{"devices",
           Json::array({Json{{"driver", "numa.dra.dev"}, {"pool", "n1"}, {"device", device}}})}}}};
}

TEST(FakeApiServer, AStatusEntryForAnUnallocatedDeviceIsInvalidAsKubeApiserverSaysIt) {
    fakes::FakeApiServer server;
    server.putResourceClaim(allocatedClaim());
    KubeClient client(test::configFor(server), quickOptions());
    auto applied = client.applyResourceClaimStatus("ns", "c", statusEntry("nic-9"), "numa.dra.dev",
                                                   Clock::now() + 5s);
    ASSERT_FALSE(applied.ok());
    EXPECT_EQ(applied.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(applied.error().httpStatus, 422);
    EXPECT_EQ(applied.error().reason, "Invalid");
    ASSERT_EQ(applied.error().causes.size(), 1u);
    EXPECT_EQ(applied.error().causes[0].field, "status.devices[0]");
    EXPECT_EQ(applied.error().causes[0].reason, "FieldValueInvalid");
    EXPECT_THAT(applied.error().causes[0].message,
                HasSubstr("must be an allocated device in the claim"));
    EXPECT_THAT(applied.error().message,
                HasSubstr("ResourceClaim.resource.k8s.io \"c\" is invalid: status.devices[0]: "
                          "Invalid value: "));
    EXPECT_TRUE(client
                    .applyResourceClaimStatus("ns", "c", statusEntry("nic-0"), "numa.dra.dev",
                                              Clock::now() + 5s)
                    .ok());
}

TEST(FakeApiServer, AnApplyWithoutAFieldManagerIsInvalidPatchOptions) {
    fakes::FakeApiServer server;
    server.putResourceClaim(allocatedClaim());
    KubeClient client(test::configFor(server), quickOptions());
    auto applied =
        client.applyResourceClaimStatus("ns", "c", statusEntry("nic-0"), "", Clock::now() + 5s);
    ASSERT_FALSE(applied.ok());
    EXPECT_EQ(applied.error().kind, ErrorKind::InvalidArgument);
    EXPECT_EQ(applied.error().httpStatus, 422);
    EXPECT_EQ(
        applied.error().causes,
        (std::vector<FieldCause>{{"fieldManager", "Required value: is required for apply patch",
                                  "FieldValueRequired"}}));
    EXPECT_THAT(applied.error().message,
                HasSubstr("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required "
                          "value: is required for apply patch"));
}

TEST(FakeApiServer, OneResourceVersionCounterForAllKinds) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto first = client.createResourceSlice(sliceJson("a", "n1"));
    server.addNode("n1", "uid");
    auto second = client.createResourceSlice(sliceJson("b", "n1"));
    ASSERT_TRUE(first.ok() && second.ok());
    EXPECT_EQ(std::stoll(resourceVersionOf(*second)), std::stoll(resourceVersionOf(*first)) + 2);
}

TEST(FakeApiServer, UpdateBumpsGenerationOnlyWhenTheSpecChanges) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto created = client.createResourceSlice(sliceJson("a", "n1"));
    ASSERT_TRUE(created.ok());
    auto same = client.updateResourceSlice(*created);
    ASSERT_TRUE(same.ok());
    EXPECT_EQ((*same)["metadata"]["generation"], 1);
    Json changed = *same;
    changed["spec"]["nodeName"] = "n2";
    auto updated = client.updateResourceSlice(changed);
    ASSERT_TRUE(updated.ok());
    EXPECT_EQ((*updated)["metadata"]["generation"], 2);
}

TEST(FakeApiServer, RejectsASliceWithoutAName) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    Json slice = sliceJson("", "n1");
    slice["metadata"] = Json::object();
    auto created = client.createResourceSlice(slice);
    ASSERT_FALSE(created.ok());
    EXPECT_EQ(created.error().httpStatus, 422);
    EXPECT_EQ(created.error().kind, ErrorKind::InvalidArgument);
}

TEST(FakeApiServer, RecordsEveryRequest) {
    fakes::FakeApiServer server;
    ClusterConfig config = test::configFor(server);
    config.bearerToken = "t";
    KubeClient client(config, quickOptions());
    ASSERT_TRUE(client.listResourceSlices("spec.nodeName=n1").ok());
    ASSERT_FALSE(client.getNode("n1").ok());
    const auto requests = server.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0].method, "GET");
    EXPECT_EQ(requests[0].path, kResourceSlicesPath);
    EXPECT_EQ(requests[0].query, "fieldSelector=spec.nodeName%3Dn1");
    EXPECT_EQ(requests[1].path, "/api/v1/nodes/n1");
    EXPECT_EQ(requests[1].authorization, "Bearer t");
    EXPECT_EQ(server.requestCount("", "/api/"), 1);
    EXPECT_EQ(server.requestCount("GET", "/apis/"), 1);
}

TEST(FakeApiServer, RemovedClaimsAreNotFound) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    server.putResourceClaim(Json{{"metadata", {{"namespace", "ns"}, {"name", "c"}}}});
    ASSERT_TRUE(client.getResourceClaim("ns", "c", Clock::now() + 1s).ok());
    EXPECT_TRUE(server.removeResourceClaim("ns", "c"));
    auto gone = client.getResourceClaim("ns", "c", Clock::now() + 1s);
    ASSERT_FALSE(gone.ok());
    EXPECT_EQ(gone.error().httpStatus, 404);
    EXPECT_EQ(gone.error().kind, ErrorKind::NotFound);
}

TEST(FakeApiServer, AddResourceSliceStoresLikeACreate) {
    fakes::FakeApiServer server;
    const Json stored = server.addResourceSlice(sliceJson("seeded", "n1"));
    EXPECT_FALSE(stored["metadata"]["uid"].get<std::string>().empty());
    EXPECT_EQ(server.resourceSlices().size(), 1u);
    EXPECT_EQ(server.requestCount("", ""), 0);
    EXPECT_THROW(server.addResourceSlice(sliceJson("seeded", "n1")), std::invalid_argument);
}

TEST(FakeApiServer, StopsQuicklyAndOnlyOnce) {
    auto server = std::make_unique<fakes::FakeApiServer>();
    const auto start = Clock::now();
    server->stop();
    server->stop();
    server.reset();
    EXPECT_LT(Clock::now() - start, 2s);
}

TEST(FakeApiServer, SurvivesWatchersThatWentAway) {
    fakes::FakeApiServerOptions options;
    options.bookmarkInterval = 10ms;  // writes to the closed connections soon after
    fakes::FakeApiServer server(options);
    KubeClient client(test::configFor(server), quickOptions());
    for (int i = 0; i < 3; ++i) {
        test::BackgroundWatch watch(client, "", std::to_string(server.currentResourceVersion()));
        ASSERT_TRUE(watch.waitForEventOfType("BOOKMARK"));
        EXPECT_TRUE(watch.stop().ok());
    }
    std::this_thread::sleep_for(100ms);
    EXPECT_TRUE(client.listResourceSlices("").ok());
}

TEST(FakeApiServer, UnknownPathsAreNotFoundStatuses) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto answer = client.request("GET", "/apis/apps/v1/deployments", nullptr, Clock::now() + 1s);
    ASSERT_FALSE(answer.ok());
    EXPECT_EQ(answer.error().httpStatus, 404);
    EXPECT_EQ(answer.error().kind, ErrorKind::NotFound);
    EXPECT_THAT(answer.error().message, HasSubstr("NotFound"));
}

// A dry run (dryRun=All) answers as the create would and stores nothing: the daemon asks it
// before its first write.
TEST(FakeApiServer, ADryRunCreateAnswersAndStoresNothing) {
    fakes::FakeApiServer server;
    KubeClient client(test::configFor(server), quickOptions());
    auto tried = client.tryCreateResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(tried.ok()) << tried.error().message;
    EXPECT_EQ((*tried)["metadata"]["name"], "s");
    EXPECT_FALSE((*tried)["metadata"].contains("resourceVersion"));
    EXPECT_TRUE(server.resourceSlices().empty());
    EXPECT_EQ(server.requests().back().query, "dryRun=All");
    EXPECT_TRUE(client.createResourceSlice(sliceJson("s", "n1")).ok());  // the name is still free
}

// The admission a real create meets refuses a dry run too.
TEST(FakeApiServer, ADryRunMeetsTheNodeDeclaredFeaturesAdmission) {
    fakes::FakeApiServer server;
    server.setCheckDeclaredFeatures(true);
    KubeClient client(test::configFor(server), quickOptions());
    Json slice = sliceJson("s", "n1");
    slice["spec"]["devices"] = Json::array(
        {Json{{"name", "cpu-0"}, {"nodeAllocatableResources", {{"cpu", Json::object()}}}}});
    auto tried = client.tryCreateResourceSlice(slice);
    ASSERT_FALSE(tried.ok());
    EXPECT_EQ(tried.error().httpStatus, 403);
    EXPECT_TRUE(server.resourceSlices().empty());
}

}  // namespace
}  // namespace numadra::kube
