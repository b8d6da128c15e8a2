// Answers that misbehave on the wire (endless, oversized, trickling bodies, huge watch events):
// each request is cut off at what it can legitimately weigh, with an error naming the request
// and the limit, and gives its memory back.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../response_body.hpp"
#include "kube_test_support.hpp"

namespace numadra::kube {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;
using detail::ResponseBody;

constexpr const char* kClaimPath = "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/";

fakes::BadAnswer badClaimAnswer(fakes::BadAnswer::Body body) {
    fakes::BadAnswer answer;
    answer.body = body;
    answer.method = "GET";
    answer.pathPrefix = kClaimPath;
    return answer;
}

class BoundedAnswerTest : public ::testing::Test {
  protected:
    fakes::FakeApiServer server_;
    KubeClient client_{test::configFor(server_), test::quickOptions()};
};

TEST_F(BoundedAnswerTest, AnEndlessClaimIsCutOffAtTheObjectLimitAndNotRetried) {
    server_.misbehaveNext(1, badClaimAnswer(fakes::BadAnswer::Body::Endless));
    const auto started = Clock::now();
    auto claim = client_.getResourceClaim("ns", "c", Clock::now() + 10s);
    ASSERT_FALSE(claim.ok());
    EXPECT_THAT(claim.error().message,
                HasSubstr("GET /apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c: the "
                          "answer (HTTP 200) is over 3 MiB, more than a ResourceClaim can weigh"));
    EXPECT_LT(Clock::now() - started, 5s) << "cut off, not read until the timeout";
    EXPECT_EQ(server_.requestCount("GET", kClaimPath), 1) << "the next try would cost as much";
}

TEST_F(BoundedAnswerTest, AnAnnouncedOversizedBodyIsRefusedBeforeItIsRead) {
    auto answer = badClaimAnswer(fakes::BadAnswer::Body::Oversized);
    answer.bytes = std::size_t{1} << 30;  // 1 GiB
    server_.misbehaveNext(1, answer);
    auto claim = client_.getResourceClaim("ns", "c", Clock::now() + 10s);
    ASSERT_FALSE(claim.ok());
    EXPECT_THAT(claim.error().message, HasSubstr("is over 3 MiB, more than a ResourceClaim"));
    // The Content-Length alone ends it: what the server got out is what the sockets buffered.
    EXPECT_LT(server_.badAnswerBytesSent(), std::uint64_t{64} << 20);
}

TEST_F(BoundedAnswerTest, ATricklingBodyEndsAtTheCallersDeadline) {
    auto answer = badClaimAnswer(fakes::BadAnswer::Body::Trickle);
    answer.interval = 50ms;
    server_.misbehaveNext(100, answer);
    const auto started = Clock::now();
    auto claim = client_.getResourceClaim("ns", "c", started + 700ms);
    const auto took = Clock::now() - started;
    ASSERT_FALSE(claim.ok());
    EXPECT_EQ(claim.error().httpStatus, 0);
    EXPECT_GE(took, 600ms);
    EXPECT_LT(took, 2s) << "no GET outlives its caller's deadline";
    // And nothing is still reading it afterwards.
    std::this_thread::sleep_for(200ms);
    const auto sent = server_.badAnswerBytesSent();
    std::this_thread::sleep_for(300ms);
    EXPECT_EQ(server_.badAnswerBytesSent(), sent);
}

TEST_F(BoundedAnswerTest, AListOverItsLimitNamesTheList) {
    ClientOptions options = test::quickOptions();
    options.maxListBytes = 4096;
    KubeClient client(test::configFor(server_), options);
    for (int i = 0; i < 40; ++i)
        server_.addResourceSlice(test::sliceJson("slice-" + std::to_string(i), "n1"));
    auto list = client.listResourceSlices("spec.nodeName=n1");
    ASSERT_FALSE(list.ok());
    EXPECT_THAT(list.error().message,
                HasSubstr("is over 4 KiB, more than a list of ResourceSlices can weigh"));
    EXPECT_TRUE(client_.listResourceSlices("spec.nodeName=n1").ok()) << "the default fits";
}

TEST_F(BoundedAnswerTest, AnErrorStatusOverTheLimitIsCutOffToo) {
    ClientOptions options = test::quickOptions();
    options.maxObjectBytes = 64;
    KubeClient client(test::configFor(server_), options);
    auto node = client.getNode("missing");  // a 404 Status of more than 64 bytes
    ASSERT_FALSE(node.ok());
    EXPECT_THAT(node.error().message, HasSubstr("(HTTP 404) is over 64 bytes, more than a Node"));
}

TEST_F(BoundedAnswerTest, AWatchEventOverTheLimitEndsTheStreamWithAnError) {
    ClientOptions options = test::quickOptions();
    options.maxObjectBytes = 4096;
    KubeClient client(test::configFor(server_), options);
    Json big = test::sliceJson("big", "n1");
    big["metadata"]["annotations"] = {{"padding", std::string(8192, 'x')}};
    server_.addResourceSlice(big);
    std::stop_source stop;
    int events = 0;
    auto status = client.watchResourceSlices(
        "", "", [&](const KubeClient::WatchEvent&) { ++events; }, stop.get_token());
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.error().message,
                HasSubstr("a watch event is over 5 KiB, more than one object can weigh"));
    EXPECT_EQ(events, 0);
}

TEST_F(BoundedAnswerTest, AnEndlessWatchLineIsCutOffAtTheEventLimit) {
    fakes::BadAnswer answer;
    answer.body = fakes::BadAnswer::Body::Endless;
    answer.pathPrefix = kResourceSlicesPath;
    server_.misbehaveNext(1, answer);
    std::stop_source stop;
    const auto started = Clock::now();
    auto status = client_.watchResourceSlices(
        "", "", [](const KubeClient::WatchEvent&) {}, stop.get_token());
    ASSERT_FALSE(status.ok());
    EXPECT_THAT(status.error().message, HasSubstr("a watch event is over"));
    EXPECT_LT(Clock::now() - started, 5s);
}

TEST(ResponseBody, KeepsEverythingUpToItsLimit) {
    ResponseBody body(8);
    EXPECT_TRUE(body.empty());
    EXPECT_EQ(body.append("abcd"), ResponseBody::Append::Ok);
    EXPECT_EQ(body.append(""), ResponseBody::Append::Ok);
    EXPECT_EQ(body.append("efgh"), ResponseBody::Append::Ok);
    EXPECT_EQ(body.view(), "abcdefgh");
}

TEST(ResponseBody, RefusesWhatWouldPassTheLimitAndKeepsWhatItHad) {
    ResponseBody body(8);
    ASSERT_EQ(body.append("abcdef"), ResponseBody::Append::Ok);
    EXPECT_EQ(body.append("ghi"), ResponseBody::Append::OverLimit);
    EXPECT_EQ(body.view(), "abcdef");
    ResponseBody none(0);
    EXPECT_EQ(none.append("a"), ResponseBody::Append::OverLimit);
}

TEST(ResponseBody, MovesItsPages) {
    ResponseBody body(1 << 20);
    ASSERT_EQ(body.append("payload"), ResponseBody::Append::Ok);
    ResponseBody moved(std::move(body));
    EXPECT_EQ(moved.view(), "payload");
    ResponseBody assigned(4);
    assigned = std::move(moved);
    EXPECT_EQ(assigned.view(), "payload");
    EXPECT_EQ(assigned.limit(), std::size_t{1} << 20);
}

}  // namespace
}  // namespace numadra::kube
