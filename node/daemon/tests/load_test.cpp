// Load: 1,000 Prepare/Unprepare cycles from 16 concurrent kubelet connections against the
// in-process daemon (the real unix-socket gRPC server, claims fetched over real HTTP, the mocked
// epyc-2s-nps4 node), checking that memory (RSS, and the malloc heap in use) and open file
// descriptors do not grow between a warm-up and the end.
//
// The fake API server runs in a child process (forked before any thread exists, driven over a
// pipe): it records every request it gets, and that growth must not count as the daemon's.
//
// Every cycle prepares a claim the daemon has never seen (a fresh UID: the claim was deleted
// and re-created), so per-claim state that is never released (locks, records, cached files,
// connections) shows up as growth. Three clients hold the node's exclusive devices (two GPUs,
// one NIC), the others take CPU shares of the NUMA nodes.
//
// Under AddressSanitizer (the `ctest -L unit` run of scripts/test.sh, where it takes about 10 s)
// the memory checks are skipped: its quarantine keeps freed memory on purpose, and
// LeakSanitizer checks for leaks at exit instead.

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "numadra/daemon/daemon.hpp"
#include "numadra/daemon/logging.hpp"
#include "numadra/fakes/apiserver.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "test_support.hpp"

#if defined(__SANITIZE_ADDRESS__)
#define NUMADRA_LOAD_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NUMADRA_LOAD_TEST_ASAN 1
#endif
#endif
#ifndef NUMADRA_LOAD_TEST_ASAN
#define NUMADRA_LOAD_TEST_ASAN 0
#endif

namespace numadra::daemon {
namespace {

using namespace std::chrono_literals;
using Json = fakes::FakeApiServer::Json;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;

constexpr bool kAsan = NUMADRA_LOAD_TEST_ASAN != 0;
constexpr int kConnections = 16;
constexpr int kDefaultCycles = 1000;
constexpr int kWarmupCycles = 8 * kConnections;
// Allowed growth from the warm-up to the end. A leak of a few hundred bytes per cycle would
// exceed the heap limit; the RSS limit leaves room for allocator noise.
constexpr long kRssToleranceKiB = 8L * 1024;
constexpr long kHeapToleranceBytes = 1024L * 1024;
constexpr long kFdTolerance = 4;  // the daemon's API-server connections come and go
constexpr const char* kMachine = "epyc-2s-nps4";

// NUMADRA_LOAD_CYCLES=N runs N cycles instead (a longer soak).
int cycles() {
    const char* text = std::getenv("NUMADRA_LOAD_CYCLES");
    return text != nullptr && std::atoi(text) > 0 ? std::atoi(text) : kDefaultCycles;
}

// --- Copied from daemon_test.cpp (the daemon and kubelet helpers) ---

using test_support::eventually;
using test_support::freePort;
using test_support::procRoot;

// --- What the process holds ---

long rssKiB() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    }
    return -1;
}

long openFds() {
    long count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++count;
    return count;
}

struct Usage {
    long rssKiB = 0;
    long heapBytes = 0;  // malloc'ed and not freed (glibc); 0 when unknown
    long fds = 0;
};

Usage usage() {
    Usage u;
#if defined(__GLIBC__) && !NUMADRA_LOAD_TEST_ASAN
    ::malloc_trim(0);  // freed memory back to the kernel, so RSS shows what is in use
    u.heapBytes = static_cast<long>(::mallinfo2().uordblks);
#endif
    u.rssKiB = rssKiB();
    u.fds = openFds();
    return u;
}

// The fake API server in a child process. Commands, one line each way:
//   <claim JSON>  -> "ok"       stores (replaces) the ResourceClaim
//   "slices"      -> <count>    how many ResourceSlices are stored
class ApiServerProcess {
  public:
    // Call before any thread exists (fork).
    void start() {
        int toChild[2];
        int fromChild[2];
        ASSERT_EQ(::pipe(toChild), 0);
        ASSERT_EQ(::pipe(fromChild), 0);
        pid_ = ::fork();
        ASSERT_GE(pid_, 0);
        if (pid_ == 0) {
            ::close(toChild[1]);
            ::close(fromChild[0]);
            serve(toChild[0], fromChild[1]);
            ::_exit(0);
        }
        ::close(toChild[0]);
        ::close(fromChild[1]);
        to_ = ::fdopen(toChild[1], "w");
        from_ = ::fdopen(fromChild[0], "r");
        url_ = readLine();
        ASSERT_EQ(url_.rfind("http://", 0), 0u) << url_;
    }
    ~ApiServerProcess() {
        if (to_ != nullptr)
            std::fclose(to_);  // EOF: the child stops its server and exits
        if (from_ != nullptr)
            std::fclose(from_);
        if (pid_ > 0) {
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
    }

    const std::string& url() const { return url_; }

    void putResourceClaim(const Json& claim) {
        std::lock_guard lock(mutex_);
        std::fprintf(to_, "%s\n", claim.dump().c_str());
        std::fflush(to_);
        const std::string answer = readLine();
        if (answer != "ok")
            throw std::runtime_error("fake API server: " + answer);
    }

    int resourceSliceCount() {
        std::lock_guard lock(mutex_);
        std::fputs("slices\n", to_);
        std::fflush(to_);
        return std::atoi(readLine().c_str());
    }

  private:
    static void serve(int in, int out) {
        FILE* commands = ::fdopen(in, "r");
        FILE* answers = ::fdopen(out, "w");
        {
            fakes::FakeApiServer api;
            api.addNode("node-a", "node-uid-1");
            std::fprintf(answers, "%s\n", api.url().c_str());
            std::fflush(answers);
            char* line = nullptr;
            size_t capacity = 0;
            while (::getline(&line, &capacity, commands) > 0) {
                const std::string command(line);
                if (command == "slices\n") {
                    std::fprintf(answers, "%zu\n", api.resourceSlices().size());
                } else {
                    api.putResourceClaim(Json::parse(command));
                    std::fputs("ok\n", answers);
                }
                std::fflush(answers);
            }
            std::free(line);
        }
        std::fclose(answers);
        std::fclose(commands);
    }

    std::string readLine() {
        char buffer[4096];
        if (std::fgets(buffer, sizeof buffer, from_) == nullptr)
            return "(the fake API server process is gone)";
        std::string line(buffer);
        if (!line.empty() && line.back() == '\n')
            line.pop_back();
        return line;
    }

    pid_t pid_ = -1;
    FILE* to_ = nullptr;
    FILE* from_ = nullptr;
    std::string url_;
    std::mutex mutex_;
};

class LoadTest : public ::testing::Test {
  protected:
    ApiServerProcess api;
    numadra::testing::TempTree dirs;
    numadra::testing::MockDev dev;
    std::stop_source stop;
    std::thread daemonThread;
    std::atomic<int> exitCode{-1};

    void SetUp() override {
        api.start();  // first: no thread may exist when it forks
        ASSERT_FALSE(HasFatalFailure());
        dev = numadra::testing::makeDevTree(numadra::testing::loadMachine(kMachine), dirs, "dev");
        test_support::writeKubeconfig(dirs.path("kubeconfig"), api.url());
        auto parsed = parseDaemonFlags({"--kubeconfig",
                                        dirs.path("kubeconfig"),
                                        "--node-name",
                                        "node-a",
                                        "--sysfs-root",
                                        numadra::testing::machineRoot(kMachine),
                                        "--kubelet-registry-dir",
                                        dirs.path("registry"),
                                        "--kubelet-plugins-dir",
                                        dirs.path("plugins"),
                                        "--cdi-dir",
                                        dirs.path("cdi"),
                                        "--nri-socket",
                                        dirs.path("nri.sock"),
                                        "--dev-root",
                                        dev.root,
                                        "--proc-root",
                                        procRoot(kMachine),
                                        "--metrics-addr",
                                        "127.0.0.1:" + std::to_string(freePort()),
                                        "--log-level",
                                        "error"},
                                       {}, "unused");
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        const DaemonConfig config = parsed->config;
        setupLogging(config.logFormat, config.logLevel);  // as numa-dra-plugin's main() does
        daemonThread = std::thread([this, config] {
            exitCode = runDaemon(config, stop.get_token(), std::chrono::steady_clock::now());
        });
    }

    void TearDown() override {
        stop.request_stop();
        if (daemonThread.joinable())
            daemonThread.join();
    }

    std::string draSocket() const { return dirs.path("plugins") + "/numa.dra.dev/dra.sock"; }

    // The allocation result client `k` gets: its own exclusive device, or a CPU share.
    static Json resultFor(int k) {
        static const char* exclusive[] = {"gpu-0000-21-00-0", "gpu-0000-a3-00-0",
                                          "nic-0000-c1-00-0"};
        Json result{{"driver", "numa.dra.dev"}, {"pool", "node-a"}};
        if (k < 3) {
            result["request"] = "dev";
            result["device"] = exclusive[k];
        } else {
            result["request"] = "cpu";
            result["device"] = "cpu-numa-" + std::to_string(k % 8);
            result["shareID"] = "share-" + std::to_string(k);
            result["consumedCapacity"] = {{"cpu", "1"}};
        }
        return result;
    }

    // The claim of client `k` re-created with a new UID, allocated.
    void putClaim(int k, const std::string& uid) {
        Json claim{
            {"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata",
             {{"name", "load-" + std::to_string(k)}, {"namespace", "default"}, {"uid", uid}}},
            {"status",
             {{"allocation", {{"devices", {{"results", Json::array({resultFor(k)})}}}}}}}};
        api.putResourceClaim(claim);
    }

    // `cycles` Prepare/Unprepare cycles spread over the clients, each on its own connection.
    // Returns the failures (described).
    std::vector<std::string> runCycles(int cycles, int& nextCycle) {
        std::atomic<int> next{nextCycle};
        const int end = nextCycle + cycles;
        std::mutex failuresMutex;
        std::vector<std::string> failures;
        auto fail = [&](std::string what) {
            std::lock_guard lock(failuresMutex);
            if (failures.size() < 10)
                failures.push_back(std::move(what));
        };
        std::vector<std::thread> clients;
        for (int k = 0; k < kConnections; ++k) {
            clients.emplace_back([&, k] {
                // A channel of its own (not the global subchannel pool): one connection each.
                grpc::ChannelArguments args;
                args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
                auto dra = drav1::DRAPlugin::NewStub(grpc::CreateCustomChannel(
                    "unix:" + draSocket(), grpc::InsecureChannelCredentials(), args));
                for (int cycle = next.fetch_add(1); cycle < end; cycle = next.fetch_add(1)) {
                    const std::string uid =
                        "load-uid-" + std::to_string(k) + "-" + std::to_string(cycle);
                    putClaim(k, uid);
                    drav1::Claim claim;
                    claim.set_namespace_("default");
                    claim.set_name("load-" + std::to_string(k));
                    claim.set_uid(uid);
                    {
                        drav1::NodePrepareResourcesRequest request;
                        *request.add_claims() = claim;
                        drav1::NodePrepareResourcesResponse response;
                        grpc::ClientContext context;
                        context.set_deadline(std::chrono::system_clock::now() + 45s);
                        auto status = dra->NodePrepareResources(&context, request, &response);
                        if (!status.ok()) {
                            fail("prepare " + uid + ": " + status.error_message());
                            continue;
                        }
                        const auto entry = response.claims().find(uid);
                        if (entry == response.claims().end())
                            fail("prepare " + uid + ": no answer for the claim");
                        else if (!entry->second.error().empty() ||
                                 entry->second.devices_size() != 1)
                            fail("prepare " + uid + ": " + entry->second.error());
                    }
                    {
                        drav1::NodeUnprepareResourcesRequest request;
                        *request.add_claims() = claim;
                        drav1::NodeUnprepareResourcesResponse response;
                        grpc::ClientContext context;
                        context.set_deadline(std::chrono::system_clock::now() + 45s);
                        auto status = dra->NodeUnprepareResources(&context, request, &response);
                        const auto entry = response.claims().find(uid);
                        if (!status.ok())
                            fail("unprepare " + uid + ": " + status.error_message());
                        else if (entry == response.claims().end())
                            fail("unprepare " + uid + ": no answer for the claim");
                        else if (!entry->second.error().empty())
                            fail("unprepare " + uid + ": " + entry->second.error());
                    }
                }
            });
        }
        for (auto& client : clients)
            client.join();
        nextCycle = end;
        return failures;
    }
};

TEST_F(LoadTest, ThousandPrepareUnprepareCyclesOnSixteenConnectionsLeakNothing) {
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(draSocket()); }, 30s));
    // The slices are published once the node is scanned; prepare needs that scan.
    ASSERT_TRUE(eventually([&] { return api.resourceSliceCount() > 0; }, 30s));

    int cycle = 0;
    auto failures = runCycles(kWarmupCycles, cycle);
    ASSERT_TRUE(failures.empty()) << failures.front();
    std::this_thread::sleep_for(200ms);  // in-flight gRPC and HTTP work settles
    const Usage before = usage();

    const int kCycles = cycles();
    const auto started = std::chrono::steady_clock::now();
    failures = runCycles(kCycles, cycle);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_TRUE(failures.empty()) << failures.size() << " failures, first: " << failures.front();
    std::this_thread::sleep_for(200ms);
    const Usage after = usage();

    std::printf("[ load ] %d cycles on %d connections in %.2f s (%.0f cycles/s)\n", kCycles,
                kConnections, seconds, kCycles / seconds);
    std::printf("[ load ] RSS %ld -> %ld KiB, heap in use %ld -> %ld bytes, fds %ld -> %ld\n",
                before.rssKiB, after.rssKiB, before.heapBytes, after.heapBytes, before.fds,
                after.fds);
    EXPECT_LE(after.fds, before.fds + kFdTolerance) << "file descriptors leak";
    if (!kAsan) {
        EXPECT_LE(after.rssKiB, before.rssKiB + kRssToleranceKiB) << "memory grows";
        if (before.heapBytes > 0) {
            EXPECT_LE(after.heapBytes, before.heapBytes + kHeapToleranceBytes) << "heap grows";
        }
    }

    // Nothing left behind.
    const std::string pluginDir = dirs.path("plugins/numa.dra.dev");
    EXPECT_TRUE(std::filesystem::is_empty(dirs.path("cdi")));
    EXPECT_TRUE(std::filesystem::is_empty(pluginDir + "/checkpoints"));
    EXPECT_TRUE(std::filesystem::is_empty(pluginDir + "/dra-device-metadata"));
}

}  // namespace
}  // namespace numadra::daemon
