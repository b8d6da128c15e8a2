#include "numadra/kube/client.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kube_test_support.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::kube {
namespace {

using namespace std::chrono_literals;
using test::quickOptions;
using test::resourceVersionOf;
using test::sliceJson;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

std::vector<std::string> namesOf(const std::vector<Json>& slices) {
    std::vector<std::string> names;
    for (const auto& slice : slices)
        names.push_back(slice["metadata"]["name"].get<std::string>());
    return names;
}

class KubeClientTest : public ::testing::Test {
  protected:
    fakes::FakeApiServer server_;
    KubeClient client_{test::configFor(server_), quickOptions()};
};

TEST_F(KubeClientTest, CreateAssignsMetadataAndStoresTheSlice) {
    auto created = client_.createResourceSlice(sliceJson("n1-numa-00000", "n1"));
    ASSERT_TRUE(created.ok()) << created.error().message;
    const Json& metadata = (*created)["metadata"];
    EXPECT_EQ(metadata["name"], "n1-numa-00000");
    EXPECT_FALSE(metadata["uid"].get<std::string>().empty());
    EXPECT_FALSE(metadata["creationTimestamp"].get<std::string>().empty());
    EXPECT_EQ(resourceVersionOf(*created), std::to_string(server_.currentResourceVersion()));
    ASSERT_EQ(server_.resourceSlices().size(), 1u);
    EXPECT_EQ(server_.resourceSlices()[0], *created);
}

TEST_F(KubeClientTest, CreateWithGenerateNameGetsAFreshName) {
    Json slice = sliceJson("", "n1");
    slice["metadata"] = {{"generateName", "n1-numa-"}};
    auto first = client_.createResourceSlice(slice);
    auto second = client_.createResourceSlice(slice);
    ASSERT_TRUE(first.ok() && second.ok());
    const std::string name = (*first)["metadata"]["name"];
    EXPECT_THAT(name, ::testing::StartsWith("n1-numa-"));
    EXPECT_EQ(name.size(), std::string("n1-numa-").size() + 5);
    EXPECT_NE(name, (*second)["metadata"]["name"].get<std::string>());
}

TEST_F(KubeClientTest, CreateOfAnExistingNameIsAlreadyExists409) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("s", "n1")).ok());
    auto again = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.error().httpStatus, 409);
    EXPECT_EQ(again.error().kind, ErrorKind::AlreadyExists);
    EXPECT_EQ(again.error().reason, "AlreadyExists");
    EXPECT_THAT(again.error().message, HasSubstr("AlreadyExists"));
    EXPECT_EQ(server_.requestCount("POST", kResourceSlicesPath), 2);  // not retried
}

TEST_F(KubeClientTest, UpdateWithTheCurrentResourceVersionReplacesTheSlice) {
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    Json changed = *created;
    changed["spec"]["pool"]["generation"] = 2;
    auto updated = client_.updateResourceSlice(changed);
    ASSERT_TRUE(updated.ok()) << updated.error().message;
    EXPECT_EQ((*updated)["spec"]["pool"]["generation"], 2);
    EXPECT_NE(resourceVersionOf(*updated), resourceVersionOf(*created));
    EXPECT_EQ((*updated)["metadata"]["uid"], (*created)["metadata"]["uid"]);
    EXPECT_EQ(server_.resourceSlice("s").value()["spec"]["pool"]["generation"], 2);
}

TEST_F(KubeClientTest, UpdateWithAStaleResourceVersionIsConflict409) {
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    ASSERT_TRUE(client_.updateResourceSlice(*created).ok());
    auto stale = client_.updateResourceSlice(*created);  // the first update moved it on
    ASSERT_FALSE(stale.ok());
    EXPECT_EQ(stale.error().httpStatus, 409);
    EXPECT_EQ(stale.error().kind, ErrorKind::Conflict);
    EXPECT_EQ(stale.error().reason, "Conflict");
    EXPECT_THAT(stale.error().message, HasSubstr("PUT /apis/resource.k8s.io/v1/resourceslices/s"));
    EXPECT_THAT(stale.error().message, HasSubstr("the object has been modified"));
}

TEST_F(KubeClientTest, UpdateOfAMissingSliceIsNotFound404) {
    Json slice = sliceJson("gone", "n1");
    slice["metadata"]["resourceVersion"] = "1";
    auto updated = client_.updateResourceSlice(slice);
    ASSERT_FALSE(updated.ok());
    EXPECT_EQ(updated.error().httpStatus, 404);
    EXPECT_EQ(updated.error().kind, ErrorKind::NotFound);
}

TEST_F(KubeClientTest, UpdateWithoutAResourceVersionIsRefusedBeforeSending) {
    auto updated = client_.updateResourceSlice(sliceJson("s", "n1"));
    ASSERT_FALSE(updated.ok());
    EXPECT_THAT(updated.error().message, HasSubstr("metadata.resourceVersion is not set"));
    EXPECT_EQ(server_.requestCount("PUT", ""), 0);
}

TEST_F(KubeClientTest, DeleteRemovesTheSlice) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("s", "n1")).ok());
    Status deleted = client_.deleteResourceSlice("s");
    ASSERT_TRUE(deleted.ok()) << deleted.error().message;
    EXPECT_TRUE(server_.resourceSlices().empty());
}

TEST_F(KubeClientTest, DeleteOfAMissingSliceCountsAsSuccess) {
    EXPECT_TRUE(client_.deleteResourceSlice("never-existed").ok());
    EXPECT_EQ(server_.requestCount("DELETE", kResourceSlicesPath), 1);
}

TEST_F(KubeClientTest, DeleteWithTheCurrentResourceVersionSucceeds) {
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    EXPECT_TRUE(client_.deleteResourceSlice("s", resourceVersionOf(*created)).ok());
    EXPECT_TRUE(server_.resourceSlices().empty());
}

TEST_F(KubeClientTest, DeleteWithAStaleResourceVersionIsConflict409) {
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    ASSERT_TRUE(client_.updateResourceSlice(*created).ok());
    Status deleted = client_.deleteResourceSlice("s", resourceVersionOf(*created));
    ASSERT_FALSE(deleted.ok());
    EXPECT_EQ(deleted.error().httpStatus, 409);
    EXPECT_EQ(deleted.error().kind, ErrorKind::Conflict);
    EXPECT_THAT(deleted.error().message, HasSubstr("Precondition failed"));
    EXPECT_EQ(server_.resourceSlices().size(), 1u);
}

TEST_F(KubeClientTest, ListFiltersByNodeAndDriver) {
    for (const auto& [name, node, driver] :
         {std::tuple{"a", "n1", "numa.dra.dev"}, std::tuple{"b", "n2", "numa.dra.dev"},
          std::tuple{"c", "n1", "gpu.example.com"}, std::tuple{"d", "n1", "numa.dra.dev"}}) {
        ASSERT_TRUE(client_.createResourceSlice(sliceJson(name, node, driver)).ok());
    }
    auto byNode = client_.listResourceSlices("spec.nodeName=n1");
    auto byBoth = client_.listResourceSlices("spec.nodeName=n1,spec.driver=numa.dra.dev");
    auto all = client_.listResourceSlices("");
    ASSERT_TRUE(byNode.ok() && byBoth.ok() && all.ok());
    EXPECT_THAT(namesOf(byNode->items), ElementsAre("a", "c", "d"));
    EXPECT_THAT(namesOf(byBoth->items), ElementsAre("a", "d"));
    EXPECT_EQ(all->items.size(), 4u);
}

TEST_F(KubeClientTest, ListGivesTheResourceVersionToWatchFrom) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    auto list = client_.listResourceSlices("");
    ASSERT_TRUE(list.ok());
    EXPECT_EQ(list->resourceVersion, std::to_string(server_.currentResourceVersion()));
}

TEST_F(KubeClientTest, FieldSelectorIsUrlEncoded) {
    ASSERT_TRUE(client_.listResourceSlices("spec.nodeName=n 1,spec.driver=numa.dra.dev").ok());
    const auto requests = server_.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].query,
              "fieldSelector=spec.nodeName%3Dn%201%2Cspec.driver%3Dnuma.dra.dev");
}

TEST_F(KubeClientTest, AnUnsupportedFieldSelectorIsBadRequest400) {
    auto list = client_.listResourceSlices("spec.pool.name=n1");
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.error().httpStatus, 400);
    EXPECT_EQ(list.error().kind, ErrorKind::InvalidArgument);
    EXPECT_THAT(list.error().message, HasSubstr("field label not supported: spec.pool.name"));
}

TEST_F(KubeClientTest, GetsNodesAndResourceClaims) {
    server_.addNode("n1", "node-uid-1");
    server_.putResourceClaim(
        Json{{"metadata", {{"namespace", "team-a"}, {"name", "gpu-claim"}, {"uid", "claim-uid"}}}});
    auto node = client_.getNode("n1");
    auto claim = client_.getResourceClaim("team-a", "gpu-claim", Clock::now() + 2s);
    ASSERT_TRUE(node.ok()) << node.error().message;
    ASSERT_TRUE(claim.ok()) << claim.error().message;
    EXPECT_EQ((*node)["metadata"]["uid"], "node-uid-1");
    EXPECT_EQ((*claim)["metadata"]["uid"], "claim-uid");
    EXPECT_EQ((*claim)["kind"], "ResourceClaim");
}

TEST_F(KubeClientTest, AMissingClaimIsNotFound404WithTheApiMessage) {
    auto claim = client_.getResourceClaim("team-a", "nope", Clock::now() + 2s);
    ASSERT_FALSE(claim.ok());
    EXPECT_EQ(claim.error().httpStatus, 404);
    EXPECT_EQ(claim.error().kind, ErrorKind::NotFound);
    EXPECT_EQ(claim.error().message,
              "GET /apis/resource.k8s.io/v1/namespaces/team-a/resourceclaims/nope: HTTP 404 "
              "NotFound: resourceclaims.resource.k8s.io \"nope\" not found");
    EXPECT_EQ(server_.requestCount("GET", "/apis"), 1);  // not retried
}

TEST_F(KubeClientTest, SendsTheLiteralBearerTokenAndUserAgent) {
    ClusterConfig config = test::configFor(server_);
    config.bearerToken = "literal-token";
    KubeClient client(config, quickOptions());
    ASSERT_FALSE(client.getNode("n1").ok());
    ASSERT_EQ(server_.requests().size(), 1u);
    EXPECT_EQ(server_.requests()[0].authorization, "Bearer literal-token");
}

TEST_F(KubeClientTest, SendsNoAuthorizationWithoutAToken) {
    ASSERT_FALSE(client_.getNode("n1").ok());
    EXPECT_EQ(server_.requests().at(0).authorization, "");
}

TEST_F(KubeClientTest, ReReadsARotatedTokenFile) {
    testing::TempTree tree;
    tree.file("token", "first-token\n");
    ClusterConfig config = test::configFor(server_);
    config.tokenFile = tree.path("token");
    KubeClient client(config, quickOptions());
    ASSERT_FALSE(client.getNode("n1").ok());

    // As the kubelet rotates it: a new file swapped in atomically.
    tree.file("token.new", "second-token\n");
    std::filesystem::rename(tree.path("token.new"), tree.path("token"));
    ASSERT_FALSE(client.getNode("n1").ok());

    const auto requests = server_.requests();
    ASSERT_EQ(requests.size(), 2u);
    EXPECT_EQ(requests[0].authorization, "Bearer first-token");
    EXPECT_EQ(requests[1].authorization, "Bearer second-token");
}

TEST_F(KubeClientTest, AnUnreadableTokenFileIsAnErrorNamingIt) {
    ClusterConfig config = test::configFor(server_);
    config.tokenFile = "/nonexistent/token";
    KubeClient client(config, quickOptions());
    auto node = client.getNode("n1");
    ASSERT_FALSE(node.ok());
    EXPECT_THAT(node.error().message, HasSubstr("token file /nonexistent/token"));
    EXPECT_TRUE(server_.requests().empty());
}

TEST_F(KubeClientTest, RetriesA429AfterTheRetryAfterDelay) {
    server_.addNode("n1", "uid");
    server_.failNext(1, 429, 1);
    const auto start = Clock::now();
    auto node = client_.getNode("n1");
    const auto elapsed = Clock::now() - start;
    ASSERT_TRUE(node.ok()) << node.error().message;
    EXPECT_EQ(server_.requestCount("GET", "/api/v1/nodes/n1"), 2);
    EXPECT_GE(elapsed, 950ms);  // the server's 1 s, not our 5-20 ms backoff
    EXPECT_LT(elapsed, 3s);
}

TEST_F(KubeClientTest, RetriesServerErrorsThenSucceeds) {
    server_.failNext(3, 500);
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok()) << created.error().message;
    EXPECT_EQ(server_.requestCount("POST", kResourceSlicesPath), 4);
    EXPECT_EQ(server_.resourceSlices().size(), 1u);
}

TEST_F(KubeClientTest, Retries502503And504) {
    server_.failNext(1, 502);
    server_.failNext(1, 503);
    server_.failNext(1, 504);
    EXPECT_TRUE(client_.listResourceSlices("").ok());
    EXPECT_EQ(server_.requestCount("GET", kResourceSlicesPath), 4);
}

TEST_F(KubeClientTest, GivesUpAfterMaxAttemptsWithTheLastError) {
    ClientOptions options = quickOptions();
    options.maxAttempts = 3;
    KubeClient client(test::configFor(server_), options);
    server_.failNext(100, 503);
    auto list = client.listResourceSlices("");
    ASSERT_FALSE(list.ok());
    EXPECT_EQ(list.error().httpStatus, 503);
    EXPECT_EQ(list.error().kind, ErrorKind::Unavailable);
    EXPECT_THAT(list.error().message, HasSubstr("injected fault"));
    EXPECT_THAT(list.error().message, HasSubstr("(attempt 3)"));
    EXPECT_EQ(server_.requestCount("GET", kResourceSlicesPath), 3);
}

TEST_F(KubeClientTest, RetriesStopAtTheDeadline) {
    ClientOptions options = quickOptions();
    options.maxAttempts = 1000;
    options.initialBackoff = 50ms;
    options.maxBackoff = 100ms;
    KubeClient client(test::configFor(server_), options);
    server_.failNext(100000, 503);
    const auto start = Clock::now();
    auto claim = client.getResourceClaim("ns", "c", start + 400ms);
    const auto elapsed = Clock::now() - start;
    ASSERT_FALSE(claim.ok());
    EXPECT_EQ(claim.error().httpStatus, 503);
    EXPECT_EQ(claim.error().kind, ErrorKind::Unavailable);
    EXPECT_LT(elapsed, 600ms);
    EXPECT_GT(server_.requestCount("GET", "/apis"), 1);
}

TEST_F(KubeClientTest, ARetryAfterBeyondTheDeadlineEndsAtOnce) {
    server_.failNext(1, 429, 30);
    const auto start = Clock::now();
    auto claim = client_.getResourceClaim("ns", "c", start + 2s);
    ASSERT_FALSE(claim.ok());
    EXPECT_EQ(claim.error().httpStatus, 429);
    EXPECT_EQ(claim.error().kind, ErrorKind::Unavailable);
    EXPECT_LT(Clock::now() - start, 1s);
}

TEST_F(KubeClientTest, DoesNotRetryClientErrors) {
    for (int status : {400, 403, 404, 409, 410, 422}) {
        server_.failNext(1, status);
        auto list = client_.listResourceSlices("");
        ASSERT_FALSE(list.ok());
        EXPECT_EQ(list.error().httpStatus, status);
    }
    EXPECT_EQ(server_.requestCount("GET", kResourceSlicesPath), 6);
}

TEST_F(KubeClientTest, FaultsCanTargetOneMethod) {
    server_.failNext(1, 500, {}, "POST");
    ASSERT_TRUE(client_.listResourceSlices("").ok());  // GET passes untouched
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("s", "n1")).ok());
    EXPECT_EQ(server_.requestCount("GET", kResourceSlicesPath), 1);
    EXPECT_EQ(server_.requestCount("POST", kResourceSlicesPath), 2);
}

TEST_F(KubeClientTest, TransportFailuresHaveCodeZeroAndNameTheRequest) {
    const std::string url = server_.url();
    server_.stop();
    ClusterConfig config;
    config.server = url;
    ClientOptions options = quickOptions();
    options.maxAttempts = 3;
    KubeClient client(config, options);
    auto node = client.getNode("n1");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().httpStatus, 0);
    EXPECT_THAT(node.error().message, HasSubstr("GET /api/v1/nodes/n1: "));
    EXPECT_THAT(node.error().message, HasSubstr("(attempt 3)"));
}

TEST_F(KubeClientTest, RequestSendsAnArbitraryCall) {
    server_.addNode("n1", "uid-1");
    auto node = client_.request("GET", "/api/v1/nodes/n1", nullptr, Clock::now() + 2s);
    ASSERT_TRUE(node.ok());
    EXPECT_EQ((*node)["metadata"]["name"], "n1");
    auto unknown = client_.request("GET", "/api/v1/pods", nullptr, Clock::now() + 2s);
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().httpStatus, 404);
    EXPECT_EQ(unknown.error().kind, ErrorKind::NotFound);
}

TEST_F(KubeClientTest, IsSafeToUseFromSeveralThreads) {
    constexpr int kThreads = 6;
    constexpr int kSlicesEach = 10;
    {
        std::vector<std::jthread> threads;
        for (int t = 0; t < kThreads; ++t) {
            threads.emplace_back([this, t] {
                for (int i = 0; i < kSlicesEach; ++i) {
                    const std::string name = "t" + std::to_string(t) + "-" + std::to_string(i);
                    EXPECT_TRUE(client_.createResourceSlice(sliceJson(name, "n1")).ok()) << name;
                    EXPECT_TRUE(client_.listResourceSlices("spec.nodeName=n1").ok());
                }
            });
        }
    }
    EXPECT_EQ(server_.resourceSlices().size(), static_cast<size_t>(kThreads * kSlicesEach));
}

TEST(UrlEncode, KeepsUnreservedCharactersAndEncodesTheRest) {
    EXPECT_EQ(urlEncode("spec.nodeName=node-1_a~"), "spec.nodeName%3Dnode-1_a~");
    EXPECT_EQ(urlEncode("a,b c/d"), "a%2Cb%20c%2Fd");
    EXPECT_EQ(urlEncode("\xc3\xa9"), "%C3%A9");
}

}  // namespace
}  // namespace numadra::kube
