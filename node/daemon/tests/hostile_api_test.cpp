// An API server that misbehaves must never hurt the node: the daemon end to end, in-process (the
// real gRPC server on unix sockets, claims fetched over real HTTP from the fake API server),
// against answers that never end, trickle, or come from an API server that hangs.
//
//   - endless claim bodies cost bounded memory, which is given back afterwards;
//   - Prepares answered from the checkpoint, and Unprepares, do not wait behind 64 Prepares
//     stuck on the API server;
//   - no GET outlives the kubelet's call that needed it, and each missed deadline is counted.
//
// Its own binary: the memory checks read this process's RSS, which other tests would disturb.
// Under AddressSanitizer the memory checks are skipped (its quarantine keeps freed memory).

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "numadra/daemon/daemon.hpp"
#include "numadra/fakes/apiserver.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/http.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "test_support.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define NUMADRA_HOSTILE_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NUMADRA_HOSTILE_TEST_ASAN 1
#endif
#endif
#ifndef NUMADRA_HOSTILE_TEST_ASAN
#define NUMADRA_HOSTILE_TEST_ASAN 0
#endif

namespace numadra::daemon {
namespace {

using namespace std::chrono_literals;
using Json = fakes::FakeApiServer::Json;
using Clock = std::chrono::steady_clock;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
using test_support::eventually;
using test_support::freePort;

constexpr bool kAsan = NUMADRA_HOSTILE_TEST_ASAN != 0;
constexpr const char* kMachine = "epyc-2s-nps4";
constexpr const char* kClaimsPath = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/";
constexpr long kMiB = 1024;  // in the KiB of /proc/self/status

// A field of /proc/self/status, in KiB.
long statusKiB(const std::string& field) {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind(field + ":", 0) == 0)
            return std::stol(line.substr(field.size() + 1));
    }
    return -1;
}

// Peak RSS (VmHWM) starts again from the current RSS.
void resetPeakRss() {
    std::ofstream("/proc/self/clear_refs") << "5";
}

class HostileApiTest : public ::testing::Test {
  protected:
    fakes::FakeApiServer api{[] {
        fakes::FakeApiServerOptions options;
        options.workerThreads = 96;  // room for every stuck answer at once
        return options;
    }()};
    numadra::testing::TempTree dirs;
    std::stop_source stop;
    std::thread daemon;
    int metricsPort = freePort();
    numadra::testing::MockDev dev;

    void SetUp() override {
        dev = numadra::testing::makeDevTree(numadra::testing::loadMachine(kMachine), dirs, "dev");
        api.addNode("node-a", "node-uid-1");
        test_support::writeKubeconfig(dirs.path("kubeconfig"), api.url());
        std::vector<std::string> args = test_support::nodeFlags(
            dirs.root(), kMachine, numadra::testing::machineRoot(kMachine), dev.root);
        args.insert(args.end(), {"--metrics-addr", "127.0.0.1:" + std::to_string(metricsPort),
                                 "--log-level", "error"});
        auto parsed = parseDaemonFlags(args, {}, "unused");
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        daemon = std::thread(
            [this, config = parsed->config] { runDaemon(config, stop.get_token(), Clock::now()); });
        ASSERT_TRUE(eventually(
            [&] { return std::filesystem::exists(draSocket()) && !api.resourceSlices().empty(); }));
    }

    void TearDown() override {
        stop.request_stop();
        if (daemon.joinable())
            daemon.join();
    }

    std::string draSocket() const { return dirs.path("plugins") + "/numa.dra.dev/dra.sock"; }

    std::vector<std::string> publishedGpus() const {
        std::vector<std::string> gpus;
        for (const auto& slice : api.resourceSlices()) {
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                const std::string name = device["name"];
                if (name.rfind("gpu-", 0) == 0)
                    gpus.push_back(name);
            }
        }
        return gpus;
    }

    void putGpuClaim(const std::string& name, const std::string& uid, const std::string& gpu) {
        api.putResourceClaim(test_support::allocatedClaim(name, uid, gpu));
    }

    struct Answer {
        grpc::Status status;
        std::string error;  // the claim's
        Clock::duration took{};
    };

    Answer prepare(const std::string& name, const std::string& uid,
                   std::chrono::milliseconds timeout) const {
        return call<drav1::NodePrepareResourcesRequest, drav1::NodePrepareResourcesResponse>(
            name, uid, timeout, &drav1::DRAPlugin::Stub::NodePrepareResources);
    }

    Answer unprepare(const std::string& name, const std::string& uid) const {
        return call<drav1::NodeUnprepareResourcesRequest, drav1::NodeUnprepareResourcesResponse>(
            name, uid, 10s, &drav1::DRAPlugin::Stub::NodeUnprepareResources);
    }

    // One kubelet call for one claim of namespace "default", timed.
    template <class Request, class Response, class Method>
    Answer call(const std::string& name, const std::string& uid, std::chrono::milliseconds timeout,
                Method method) const {
        Request request;
        auto* claim = request.add_claims();
        claim->set_namespace_("default");
        claim->set_name(name);
        claim->set_uid(uid);
        Response response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + timeout);
        const auto started = Clock::now();
        Answer answer;
        answer.status = (*stub().*method)(&context, request, &response);
        answer.took = Clock::now() - started;
        if (answer.status.ok() && response.claims().contains(uid))
            answer.error = response.claims().at(uid).error();
        return answer;
    }

    std::unique_ptr<drav1::DRAPlugin::Stub> stub() const {
        return drav1::DRAPlugin::NewStub(
            grpc::CreateChannel("unix:" + draSocket(), grpc::InsecureChannelCredentials()));
    }

    // `count` Prepares of claims the node has never seen, each its own call, all at once.
    std::vector<Answer> prepareNewClaimsAtOnce(int count, std::chrono::milliseconds timeout) {
        std::vector<Answer> answers(static_cast<size_t>(count));
        std::vector<std::jthread> kubelets;
        for (int i = 0; i < count; ++i)
            kubelets.emplace_back([&, i] {
                answers[static_cast<size_t>(i)] =
                    prepare("new-" + std::to_string(i), "uid-new-" + std::to_string(i), timeout);
            });
        kubelets.clear();
        return answers;
    }

    std::string metrics() const { return numadra::testing::httpGet(metricsPort, "/metrics"); }

    // numadra_claim_deadline_missed_total{operation="prepare"}, 0 before the first.
    int missedDeadlines() const {
        const std::string series = "numadra_claim_deadline_missed_total{operation=\"prepare\"} ";
        const std::string text = metrics();
        const auto at = text.find(series);
        return at == std::string::npos ? 0 : std::atoi(text.c_str() + at + series.size());
    }
};

fakes::BadAnswer claimAnswer(fakes::BadAnswer::Body body) {
    fakes::BadAnswer answer;
    answer.body = body;
    answer.method = "GET";
    answer.pathPrefix = kClaimsPath;
    return answer;
}

TEST_F(HostileApiTest, EndlessClaimBodiesCostBoundedMemoryThatIsGivenBack) {
    // A warm-up round of the same calls: gRPC's and libcurl's one-time allocations (channels,
    // TLS-less handles, thread stacks) are not what this test is about.
    api.misbehaveNext(20, claimAnswer(fakes::BadAnswer::Body::Endless));
    prepareNewClaimsAtOnce(20, 20s);
    std::this_thread::sleep_for(200ms);
    const long baseline = statusKiB("VmRSS");
    resetPeakRss();

    api.misbehaveNext(20, claimAnswer(fakes::BadAnswer::Body::Endless));
    const auto started = Clock::now();
    const auto answers = prepareNewClaimsAtOnce(20, 20s);
    const auto took = Clock::now() - started;
    const long peak = statusKiB("VmHWM");
    std::this_thread::sleep_for(200ms);
    const long after = statusKiB("VmRSS");

    for (const auto& answer : answers) {
        ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
        EXPECT_NE(answer.error.find("is over 3 MiB, more than a ResourceClaim can weigh"),
                  std::string::npos)
            << answer.error;
    }
    EXPECT_LT(took, 10s) << "cut off at the limit, not read until a timeout";
    if (kAsan)
        GTEST_SKIP() << "memory checks skipped under AddressSanitizer";
    RecordProperty("baseline_kib", static_cast<int>(baseline));
    RecordProperty("peak_extra_kib", static_cast<int>(peak - baseline));
    RecordProperty("after_extra_kib", static_cast<int>(after - baseline));
    std::printf(
        "endless bodies: baseline %ld KiB, peak +%ld KiB, after +%ld KiB, all 20 "
        "answered in %.0f ms\n",
        baseline, peak - baseline, after - baseline,
        std::chrono::duration<double, std::milli>(took).count());
    EXPECT_LT(peak - baseline, 64 * kMiB) << "20 endless answers at once";
    EXPECT_LT(after - baseline, 8 * kMiB) << "no high-water mark kept";
}

TEST_F(HostileApiTest, CheckpointPreparesAndUnpreparesAnswerWhileSixtyFourPreparesHang) {
    const auto gpus = publishedGpus();
    ASSERT_GE(gpus.size(), 2U);
    putGpuClaim("known", "uid-known", gpus[0]);
    putGpuClaim("leaving", "uid-leaving", gpus[1]);
    ASSERT_EQ(prepare("known", "uid-known", 10s).error, "");
    ASSERT_EQ(prepare("leaving", "uid-leaving", 10s).error, "");

    // From now on every claim GET trickles a byte a second: an API server that hangs.
    api.misbehaveNext(1000, claimAnswer(fakes::BadAnswer::Body::Trickle));
    const int getsBefore = api.requestCount("GET", kClaimsPath);
    std::vector<Answer> stuck;
    std::jthread stuckKubelets([&] { stuck = prepareNewClaimsAtOnce(64, 6s); });
    ASSERT_TRUE(eventually([&] { return api.requestCount("GET", kClaimsPath) - getsBefore >= 16; }))
        << "the API lane is full";

    const Answer known = prepare("known", "uid-known", 10s);
    EXPECT_EQ(known.error, "");
    EXPECT_LT(known.took, 1s) << "a checkpoint answer waited behind the API server";
    const Answer leaving = unprepare("leaving", "uid-leaving");
    EXPECT_EQ(leaving.error, "");
    EXPECT_LT(leaving.took, 1s) << "an Unprepare waited behind the API server";

    std::printf(
        "with 64 Prepares stuck on the API server: checkpoint Prepare %.1f ms, "
        "Unprepare %.1f ms\n",
        std::chrono::duration<double, std::milli>(known.took).count(),
        std::chrono::duration<double, std::milli>(leaving.took).count());

    stuckKubelets.join();
    for (const auto& answer : stuck)
        EXPECT_TRUE(answer.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                    answer.error.find("timed out") != std::string::npos ||
                    answer.error.find("deadline exceeded before") != std::string::npos)
            << answer.status.error_message() << answer.error;
    // The 48 that queued behind the 16 stuck GETs missed their deadline for sure, and are
    // counted once the end of their calls is known; the 16 GETs gave up with the time left,
    // just in time or just too late.
    EXPECT_TRUE(eventually([&] { return missedDeadlines() >= 48; }, 15s)) << metrics();
    EXPECT_LE(missedDeadlines(), 64);
    // No claim was fetched after its call was over.
    EXPECT_LE(api.requestCount("GET", kClaimsPath) - getsBefore, 64);
}

TEST_F(HostileApiTest, NoClaimGetOutlivesTheKubeletsCall) {
    auto answer = claimAnswer(fakes::BadAnswer::Body::Trickle);
    answer.interval = 50ms;
    api.misbehaveNext(100, answer);
    const Answer slow = prepare("slow", "uid-slow", 1s);
    // The GET gives up with the call: the kubelet sees the deadline pass, or (when the GET's
    // own timeout, set to the time left, fires a moment earlier) the claim's error saying so.
    EXPECT_TRUE(slow.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                slow.error.find("timed out") != std::string::npos)
        << slow.status.error_message() << slow.error;
    EXPECT_LT(slow.took, 2s);
    // The GET ended with the call: the server's trickle stops reaching anyone.
    std::this_thread::sleep_for(300ms);
    const auto sent = api.badAnswerBytesSent();
    std::this_thread::sleep_for(500ms);
    EXPECT_EQ(api.badAnswerBytesSent(), sent);
}

}  // namespace
}  // namespace numadra::daemon
