#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>

#include "kube_test_support.hpp"

namespace numadra::kube {
namespace {

using namespace std::chrono_literals;
using test::BackgroundWatch;
using test::quickOptions;
using test::resourceVersionOf;
using test::sliceJson;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

class WatchTest : public ::testing::Test {
  protected:
    std::string currentVersion() const { return std::to_string(server_.currentResourceVersion()); }

    fakes::FakeApiServer server_;
    KubeClient client_{test::configFor(server_), quickOptions()};
};

TEST_F(WatchTest, ReceivesAddedModifiedAndDeleted) {
    BackgroundWatch watch(client_, "", currentVersion());
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    ASSERT_TRUE(client_.updateResourceSlice(*created).ok());
    ASSERT_TRUE(client_.deleteResourceSlice("s").ok());
    ASSERT_TRUE(watch.waitForChanges(3));
    EXPECT_THAT(watch.changes(), ElementsAre("ADDED s", "MODIFIED s", "DELETED s"));
    EXPECT_TRUE(watch.stop().ok());
}

TEST_F(WatchTest, EventsCarryTheObjectWithItsResourceVersion) {
    BackgroundWatch watch(client_, "", currentVersion());
    auto created = client_.createResourceSlice(sliceJson("s", "n1"));
    ASSERT_TRUE(created.ok());
    ASSERT_TRUE(watch.waitForChanges(1));
    const auto events = watch.events();
    const auto added = std::find_if(events.begin(), events.end(),
                                    [](const auto& event) { return event.type == "ADDED"; });
    ASSERT_NE(added, events.end());
    EXPECT_EQ(added->object, *created);
}

TEST_F(WatchTest, AnExternalDeleteIsADeletedEvent) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("s", "n1")).ok());
    BackgroundWatch watch(client_, "", currentVersion());
    ASSERT_TRUE(server_.deleteResourceSliceExternally("s"));
    ASSERT_TRUE(watch.waitForChanges(1));
    EXPECT_THAT(watch.changes(), ElementsAre("DELETED s"));
    const auto deleted = watch.events().back();
    EXPECT_EQ(resourceVersionOf(deleted.object), currentVersion());
}

TEST_F(WatchTest, OnlyMatchingSlicesAreDelivered) {
    BackgroundWatch watch(client_, "spec.nodeName=n1,spec.driver=numa.dra.dev", currentVersion());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("other-node", "n2")).ok());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("other-driver", "n1", "x.example.com")).ok());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("mine", "n1")).ok());
    ASSERT_TRUE(watch.waitForChanges(1));
    std::this_thread::sleep_for(100ms);  // room for a wrong event to show up
    EXPECT_THAT(watch.changes(), ElementsAre("ADDED mine"));
}

TEST_F(WatchTest, ResumesAfterTheGivenResourceVersion) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("before", "n1")).ok());
    const std::string from = currentVersion();
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("after", "n1")).ok());
    BackgroundWatch watch(client_, "", from);
    ASSERT_TRUE(watch.waitForChanges(1));
    EXPECT_THAT(watch.changes(), ElementsAre("ADDED after"));
}

TEST_F(WatchTest, WithoutAResourceVersionStartsWithTheCurrentObjects) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("b", "n1")).ok());
    BackgroundWatch watch(client_, "", "");
    ASSERT_TRUE(watch.waitForChanges(2));
    ASSERT_TRUE(client_.deleteResourceSlice("a").ok());
    ASSERT_TRUE(watch.waitForChanges(3));
    EXPECT_THAT(watch.changes(), ElementsAre("ADDED a", "ADDED b", "DELETED a"));
}

TEST_F(WatchTest, StopsPromptlyOnAnIdleStream) {
    BackgroundWatch watch(client_, "", currentVersion());
    std::this_thread::sleep_for(200ms);  // connected and idle
    const auto start = Clock::now();
    Status stopped = watch.stop();
    const auto elapsed = Clock::now() - start;
    EXPECT_TRUE(stopped.ok()) << stopped.error().message;
    EXPECT_LT(elapsed, 1s);
    EXPECT_LT(elapsed, 200ms) << "the stop should wake the poll, not wait for a tick";
}

TEST_F(WatchTest, AStopRequestedBeforeStartingReturnsAtOnce) {
    std::stop_source stop;
    stop.request_stop();
    int events = 0;
    Status status = client_.watchResourceSlices(
        "", "", [&](const KubeClient::WatchEvent&) { ++events; }, stop.get_token());
    EXPECT_TRUE(status.ok());
    EXPECT_EQ(events, 0);
}

TEST_F(WatchTest, ATooOldResourceVersionIsGone410) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    const std::string old = currentVersion();
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("b", "n1")).ok());
    server_.compactHistory();
    BackgroundWatch watch(client_, "", old);
    const auto result = watch.waitForEnd();
    ASSERT_TRUE(result.has_value()) << "the watch should end by itself";
    ASSERT_FALSE(result->ok());
    EXPECT_EQ(result->error().httpStatus, 410);
    EXPECT_EQ(result->error().kind, ErrorKind::Expired);
    EXPECT_THAT(result->error().message, HasSubstr("too old resource version"));
    EXPECT_TRUE(watch.changes().empty());
}

// What the daemon's resync must not take for an unbroken watch (issue 27): a stream cut off
// mid-answer is an error, not the end the server chose.
TEST_F(WatchTest, AStreamCutOffMidAnswerIsAnError) {
    BackgroundWatch watch(client_, "", currentVersion());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    ASSERT_TRUE(watch.waitForChanges(1));  // the stream is open
    server_.breakWatches();
    const auto result = watch.waitForEnd();
    ASSERT_TRUE(result.has_value()) << "the watch should end by itself";
    ASSERT_FALSE(result->ok());
    EXPECT_NE(result->error().kind, ErrorKind::Expired);
}

TEST_F(WatchTest, AnOpenStreamLeftBehindByACompactionIsGone410) {
    BackgroundWatch watch(client_, "", currentVersion());
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    ASSERT_TRUE(watch.waitForChanges(1));
    server_.expireWatches();
    const auto result = watch.waitForEnd();
    ASSERT_TRUE(result.has_value()) << "the watch should end by itself";
    ASSERT_FALSE(result->ok());
    EXPECT_EQ(result->error().kind, ErrorKind::Expired);
}

TEST_F(WatchTest, AnHttp410IsGoneToo) {
    server_.failNext(1, 410);
    BackgroundWatch watch(client_, "", currentVersion());
    const auto result = watch.waitForEnd();
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(result->ok());
    EXPECT_EQ(result->error().httpStatus, 410);
    EXPECT_EQ(result->error().kind, ErrorKind::Expired);
}

TEST_F(WatchTest, OtherHttpErrorsCarryTheirStatus) {
    server_.failNext(1, 403);
    BackgroundWatch watch(client_, "", currentVersion());
    const auto result = watch.waitForEnd();
    ASSERT_TRUE(result.has_value());
    ASSERT_FALSE(result->ok());
    EXPECT_EQ(result->error().httpStatus, 403);
    EXPECT_EQ(result->error().kind, ErrorKind::PermissionDenied);
    EXPECT_THAT(result->error().message,
                HasSubstr("GET /apis/resource.k8s.io/v1/resourceslices?watch=true"));
}

TEST_F(WatchTest, EndsWithOkWhenTheServerEndsTheStream) {
    ClientOptions options = quickOptions();
    options.watchTimeout = 1s;
    KubeClient client(test::configFor(server_), options);
    const auto start = Clock::now();
    BackgroundWatch watch(client, "", currentVersion());
    const auto result = watch.waitForEnd(5s);
    ASSERT_TRUE(result.has_value());
    EXPECT_TRUE(result->ok()) << result->error().message;
    EXPECT_GE(Clock::now() - start, 900ms);
    const auto requests = server_.requests();
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_THAT(requests[0].query, HasSubstr("timeoutSeconds=1"));
    EXPECT_THAT(requests[0].query, HasSubstr("allowWatchBookmarks=true"));
}

TEST_F(WatchTest, AServerShutdownEndsTheStream) {
    BackgroundWatch watch(client_, "", currentVersion());
    std::this_thread::sleep_for(100ms);
    server_.stop();
    EXPECT_TRUE(watch.waitForEnd(3s).has_value());
}

TEST_F(WatchTest, IdleStreamsGetBookmarksWithTheCurrentResourceVersion) {
    fakes::FakeApiServerOptions options;
    options.bookmarkInterval = 50ms;
    fakes::FakeApiServer server(options);
    KubeClient client(test::configFor(server), quickOptions());
    server.addNode("n1", "uid");  // moves the resourceVersion without a slice event
    BackgroundWatch watch(client, "", "1000");
    ASSERT_TRUE(watch.waitForEventOfType("BOOKMARK"));
    const auto events = watch.events();
    EXPECT_EQ(events.front().type, "BOOKMARK");
    EXPECT_EQ(resourceVersionOf(events.front().object),
              std::to_string(server.currentResourceVersion()));
}

TEST_F(WatchTest, AnExceptionFromTheHandlerPropagatesAfterTheStreamCloses) {
    ASSERT_TRUE(client_.createResourceSlice(sliceJson("a", "n1")).ok());
    std::stop_source stop;
    EXPECT_THROW(
        client_.watchResourceSlices(
            "", "", [](const KubeClient::WatchEvent&) { throw std::runtime_error("handler"); },
            stop.get_token()),
        std::runtime_error);
}

}  // namespace
}  // namespace numadra::kube
