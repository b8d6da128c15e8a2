// The claim status publisher with a recording sink: what it applies, when, and how it retries.
// Against the fake API server: daemon_test.cpp; against kube-apiserver: tests/e2e.

#include "numadra/daemon/claim_status.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <memory>
#include <mutex>
#include <thread>

#include "numadra/kube/errors.hpp"
#include "numadra/testing/threads.hpp"

namespace numadra::daemon {
namespace {

using namespace std::chrono_literals;

const claims::ClaimRef kClaim{"default", "vf-claim", "uid-1"};

claims::PreparedDevice nic(std::string device, std::string interfaceName,
                           std::string mac = "02:00:00:00:00:01") {
    claims::PreparedDevice out;
    out.requestNames = {"nic"};
    out.poolName = "node-a";
    out.deviceName = std::move(device);
    out.interfaceName = std::move(interfaceName);
    out.hardwareAddress = std::move(mac);
    return out;
}

claims::PreparedDevice gpu() {
    claims::PreparedDevice out;
    out.requestNames = {"gpu"};
    out.poolName = "node-a";
    out.deviceName = "gpu-0000-3b-00-0";
    return out;
}

class RecordingSink : public ClaimStatusSink {
  public:
    Result<api::Json> apply(const claims::ClaimRef&, const api::Json& body) override {
        std::lock_guard lock(mutex_);
        bodies.push_back(body);
        if (!failures.empty()) {
            Error error = failures.front();
            failures.pop_front();
            return error;
        }
        return body;
    }
    std::vector<api::Json> applied() {
        std::lock_guard lock(mutex_);
        return bodies;
    }
    std::deque<Error> failures;  // answers of the next applies
    std::vector<api::Json> bodies;

  private:
    std::mutex mutex_;
};

class ClaimStatusTest : public ::testing::Test {
  protected:
    ClaimStatusTest() { declareClaimStatusMetrics(metrics); }
    metrics::Registry metrics;
    RecordingSink sink;
};

TEST(ClaimStatusApply, ANicGetsItsNetworkDataAndAReadyCondition) {
    const api::Json body = claimStatusApply(
        kClaim, "numa.dra.dev", {nic("nic-0000-01-02-0", "ens1f0v0")}, "2026-11-25T10:00:00Z");
    EXPECT_EQ(body["metadata"],
              (api::Json{{"name", "vf-claim"}, {"namespace", "default"}, {"uid", "uid-1"}}));
    ASSERT_EQ(body["status"]["devices"].size(), 1u);
    const api::Json& entry = body["status"]["devices"][0];
    EXPECT_EQ(entry["driver"], "numa.dra.dev");
    EXPECT_EQ(entry["pool"], "node-a");
    EXPECT_EQ(entry["device"], "nic-0000-01-02-0");
    EXPECT_EQ(entry["networkData"],
              (api::Json{{"interfaceName", "ens1f0v0"}, {"hardwareAddress", "02:00:00:00:00:01"}}));
    EXPECT_EQ(entry["conditions"][0]["type"], "Ready");
    EXPECT_EQ(entry["conditions"][0]["status"], "True");
    EXPECT_EQ(entry["conditions"][0]["lastTransitionTime"], "2026-11-25T10:00:00Z");
}

TEST(ClaimStatusApply, DevicesWithoutAnInterfaceAndRepeatsAreLeftOut) {
    auto twice = nic("nic-0000-01-02-0", "ens1f0v0");
    twice.requestNames = {"other"};
    const api::Json body = claimStatusApply(
        kClaim, "numa.dra.dev", {gpu(), nic("nic-0000-01-02-0", "ens1f0v0"), twice}, "t");
    EXPECT_EQ(body["status"]["devices"].size(), 1u);
}

TEST_F(ClaimStatusTest, APreparedNicIsAppliedOnceAndRemovedOnUnprepare) {
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics);
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    ASSERT_TRUE(publisher.waitIdle(5s));
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});  // a kubelet retry
    ASSERT_TRUE(publisher.waitIdle(5s));
    publisher.unprepared(kClaim);
    ASSERT_TRUE(publisher.waitIdle(5s));
    const auto bodies = sink.applied();
    ASSERT_EQ(bodies.size(), 2u);
    EXPECT_EQ(bodies[0]["status"]["devices"].size(), 1u);
    EXPECT_EQ(bodies[1]["status"]["devices"], api::Json::array());
}

TEST_F(ClaimStatusTest, AClaimWithoutANicInterfaceIsNotWritten) {
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics);
    publisher.prepared(kClaim, {gpu()});
    ASSERT_TRUE(publisher.waitIdle(5s));
    EXPECT_TRUE(sink.applied().empty());
}

TEST_F(ClaimStatusTest, AServerErrorIsRetriedAndCounted) {
    sink.failures.push_back(
        kube::errorFromHttp(503, "ServiceUnavailable", "PATCH ...: 503 Service Unavailable"));
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics);
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    ASSERT_TRUE(publisher.waitIdle(10s));
    EXPECT_EQ(sink.applied().size(), 2u);
    EXPECT_EQ(metrics.value("numadra_claim_status_writes_total", {"error"}), 1);
    EXPECT_EQ(metrics.value("numadra_claim_status_writes_total", {"ok"}), 1);
}

TEST_F(ClaimStatusTest, AForbiddenWriteIsNotRetried) {
    sink.failures.push_back(kube::errorFromHttp(403, "Forbidden", "PATCH ...: 403 Forbidden"));
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics);
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    ASSERT_TRUE(publisher.waitIdle(5s));
    EXPECT_EQ(sink.applied().size(), 1u);
    EXPECT_EQ(metrics.value("numadra_claim_status_writes_total", {"error"}), 1);
}

TEST_F(ClaimStatusTest, AnUnprepareQueuedBehindAPrepareWins) {
    sink.failures.push_back(
        kube::errorFromHttp(503, "ServiceUnavailable", "PATCH ...: 503 Service Unavailable"));
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics);
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    publisher.unprepared(kClaim);  // before or during the failed first try
    ASSERT_TRUE(publisher.waitIdle(10s));
    const auto bodies = sink.applied();
    ASSERT_FALSE(bodies.empty());
    EXPECT_EQ(bodies.back()["status"]["devices"], api::Json::array());
}

TEST_F(ClaimStatusTest, TheWriterThreadRunsOnlyWhileSomethingIsQueued) {
    using numadra::testing::threadsNamed;
    ClaimStatusPublisher publisher(sink, "numa.dra.dev", metrics, 20ms);
    EXPECT_EQ(threadsNamed("claim-status"), 0U);
    publisher.prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    ASSERT_TRUE(publisher.waitIdle(5s));
    EXPECT_EQ(sink.applied().size(), 1u);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (threadsNamed("claim-status") > 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(threadsNamed("claim-status"), 0U) << numadra::testing::joinedThreadNames();
    publisher.unprepared(kClaim);  // and it comes back for the next write
    ASSERT_TRUE(publisher.waitIdle(5s));
    EXPECT_EQ(sink.applied().size(), 2u);
}

TEST_F(ClaimStatusTest, StoppingDoesNotWaitForARetrysTurn) {
    for (int i = 0; i < 3; ++i)
        sink.failures.push_back(
            kube::errorFromHttp(503, "ServiceUnavailable", "PATCH ...: 503 Service Unavailable"));
    auto publisher = std::make_unique<ClaimStatusPublisher>(sink, "numa.dra.dev", metrics);
    publisher->prepared(kClaim, {nic("nic-0000-01-02-0", "ens1f0v0")});
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (sink.applied().empty() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(1ms);
    ASSERT_EQ(sink.applied().size(), 1u);  // failed: the next try is 500 ms away
    const auto begin = std::chrono::steady_clock::now();
    publisher.reset();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 450ms);
    EXPECT_EQ(sink.applied().size(), 1u) << "given up, not tried once more";
}

}  // namespace
}  // namespace numadra::daemon
