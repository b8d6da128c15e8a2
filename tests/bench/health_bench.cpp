// Device health on the largest mocked machine (big-2s-8n: 536 published devices, 8 H100 GPUs,
// 8 CX-7 PFs with 64 VFs each, one CPU device per NUMA node), on a writable copy of its sysfs
// tree in a temp folder:
//
// - BM_HealthRound: one Monitor::checkOnce() over every watched device, the cost of one poll.
//   idle_cpu_percent_at_5s = round time / 5 s (the default --health-interval) x 100;
//   round_cpu_ms is the thread's CPU time per round (below the wall time when the CPU is shared).
// - BM_HealthSnapshot: what the plugin server's event loop spends on one health snapshot (after
//   a change, and every --health-resend-interval): Monitor::snapshot() of every device, and one
//   NodeWatchResources v1 message made of it and serialized (once per open stream).
// - BM_DetectionLatencyPoll: a Monitor polling every second; each iteration waits a part of the
//   interval (untimed; the waits are spread evenly over the interval and shuffled, so the writes
//   cover every phase of the poll even with few samples), writes "down" (or "up" again) to the
//   operstate of the first CX-7 PF's netdev (the PF and its 64 VFs see it), and times until
//   the Monitor's change listener is called. Expected: interval/2 + one round on average.
// - BM_DetectionLatencyEvent: the same, with Monitor::checkNow() right after the write, which is
//   what the daemon does when a kernel uevent arrives. Expected: about one round.
// - BM_DetectionLatencyLinkEvent: the same change as a real node shows it, an rtnetlink link
//   message (Monitor::watchLinks) (a bridge in a network namespace of the benchmark's own, named
//   like the netdev), with the poll an hour away: what a cable pull costs to notice. Needs root
//   (else skipped).
// - BM_DaemonIdleCpu: build/bin/numa-dra-plugin --dry-run on the copy, default health and resync
//   intervals; once its registration socket exists and 5 s have passed, its utime+stime from
//   /proc/<pid>/stat over a 30 s window. cpu_percent is of one core.
// - BM_DaemonRssOverManyRounds: the same daemon rescanning every second and polling health every
//   100 ms for 120 s; its VmRSS every 10 s (rss_growth_KiB: last minus first sample;
//   rss_growth_second_half_KiB: last minus the middle one).
//
// p50_ms/p99_ms/max_ms are over the iterations of one run (nearest rank).
// Run: build/bin/health_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "numadra/discovery/discovery.hpp"
#include "numadra/health/health.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/testing/health_changes.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/netns.hpp"
#include "numadra/testing/process.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "pkg/apis/dra-health/v1/api.pb.h"

namespace {

using numadra::health::Monitor;
using numadra::health::State;
using numadra::health::WatchedDevice;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kMachine = "big-2s-8n";
constexpr const char* kPool = "bench-node";
constexpr auto kDetectionPoll = 1s;

// ----- the node: a writable copy of the machine, discovered once per process -----

struct Node {
    numadra::testing::TempTree tree;  // the copy of <machine>/sys
    numadra::discovery::Machine machine;
    std::vector<WatchedDevice> watched;
    std::string netdev;              // the netdev whose operstate the latency benchmarks flip
    std::set<std::string> affected;  // the devices that see that netdev (its PF and the VFs)
    std::string error;               // why the node is unusable
};

Node& node() {
    static const std::unique_ptr<Node> instance = [] {
        auto n = std::make_unique<Node>();
        n->tree.copyFrom(numadra::testing::machineRoot(kMachine));
        auto machine = numadra::discovery::discover({n->tree.root(), nullptr, nullptr});
        if (!machine) {
            n->error = "discovery failed: " + machine.error().message;
            return n;
        }
        n->machine = std::move(machine).value();
        numadra::slices::SliceOptions options;
        options.nodeName = kPool;
        const auto devices = numadra::slices::buildPoolContent(n->machine, options).devices;
        n->watched = numadra::health::watchList(n->machine, devices);
        for (const auto& f : n->machine.pci) {
            if (f.kind == "nic" && !f.sriovVf && !f.netdevs.empty()) {
                n->netdev = f.netdevs.front().path;
                break;
            }
        }
        if (n->netdev.empty()) {
            n->error = "no NIC physical function with a netdev";
            return n;
        }
        for (const auto& d : n->watched) {
            if (std::count(d.netdevPaths.begin(), d.netdevPaths.end(), n->netdev) != 0 ||
                std::count(d.pfNetdevPaths.begin(), d.pfNetdevPaths.end(), n->netdev) != 0)
                n->affected.insert(d.deviceName);
        }
        return n;
    }();
    return *instance;
}

bool nodeReady(benchmark::State& state) {
    if (!node().error.empty()) {
        state.SkipWithError(node().error.c_str());
        return false;
    }
    return true;
}

std::unique_ptr<Monitor> makeMonitor(std::chrono::milliseconds pollInterval) {
    numadra::health::MonitorOptions options;
    options.poolName = kPool;
    options.pollInterval = pollInterval;
    auto monitor =
        std::make_unique<Monitor>(numadra::discovery::Sysfs(node().tree.root()), options);
    monitor->setDevices(node().watched);
    return monitor;
}

void writeOperstate(bool up) {
    std::ofstream(node().tree.path(node().netdev + "/operstate"), std::ios::trunc)
        << (up ? "up\n" : "down\n");
}

// ----- statistics -----

Clock::duration threadCpuTime() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

double seconds(Clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

class Latencies {
  public:
    double add(Clock::duration wall) {
        ms_.push_back(std::chrono::duration<double, std::milli>(wall).count());
        return ms_.back() * 1e-3;
    }
    void report(benchmark::State& state) {
        if (ms_.empty())
            return;
        std::sort(ms_.begin(), ms_.end());
        state.counters["p50_ms"] = percentile(50);
        state.counters["p99_ms"] = percentile(99);
        state.counters["max_ms"] = ms_.back();
        state.counters["samples"] = static_cast<double>(ms_.size());
    }

  private:
    // Nearest rank: the smallest sample with at least p% of the samples at or below it.
    double percentile(double p) const {
        const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * ms_.size()));
        return ms_[std::clamp<size_t>(rank, 1, ms_.size()) - 1];
    }

    std::vector<double> ms_;
};

// ----- benchmarks -----

// One poll: every watched device checked once, on the caller's thread. Argument 1: the poll of a
// daemon whose event listeners are up (Scope::Unannounced: AER and links only).
void BM_HealthRound(benchmark::State& state) {
    if (!nodeReady(state))
        return;
    auto monitor = makeMonitor(5s);
    monitor->checkOnce();  // the first round sets the AER baselines
    const auto scope =
        state.range(0) == 1 ? Monitor::Scope::Unannounced : Monitor::Scope::Everything;
    Clock::duration wall{}, cpu{};
    for (auto _ : state) {
        const auto cpuStart = threadCpuTime();
        const auto start = Clock::now();
        benchmark::DoNotOptimize(monitor->checkOnce(scope));
        wall += Clock::now() - start;
        cpu += threadCpuTime() - cpuStart;
    }
    const double rounds = static_cast<double>(state.iterations());
    const double roundSeconds = seconds(wall) / rounds;
    state.counters["devices"] = static_cast<double>(node().watched.size());
    state.counters["round_cpu_ms"] = seconds(cpu) / rounds * 1e3;
    state.counters["idle_cpu_percent_at_5s"] = roundSeconds / 5.0 * 100.0;
}
BENCHMARK(BM_HealthRound)
    ->ArgName("unannounced")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->MinTime(2.0);

// The loop's part of a health snapshot: the source's list, then one stream's message. The
// serialization copies the plugin's (plugin/health_service.cpp), which is private to it.
void BM_HealthSnapshot(benchmark::State& state) {
    if (!nodeReady(state))
        return;
    auto monitor = makeMonitor(5s);
    monitor->checkOnce();
    std::size_t bytes = 0;
    for (auto _ : state) {
        const auto reports = monitor->snapshot();
        v1::NodeWatchResourcesResponse message;
        for (const auto& report : reports) {
            auto* device = message.add_devices();
            device->mutable_device()->set_pool_name(report.poolName);
            device->mutable_device()->set_device_name(report.deviceName);
            device->set_health(report.state == State::Healthy ? v1::HEALTHY : v1::UNKNOWN);
            device->set_last_updated_time(report.lastUpdatedUnix);
            device->set_health_check_timeout_seconds(report.timeoutSeconds);
            device->set_message(report.message);
        }
        bytes = message.SerializeAsString().size();
        benchmark::DoNotOptimize(bytes);
    }
    state.counters["devices"] = static_cast<double>(node().watched.size());
    state.counters["message_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_HealthSnapshot)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Flips the netdev's operstate at every phase of the poll in turn and times until the Monitor says
// something changed; `event` also calls checkNow() right after the write.
void detectionLatency(benchmark::State& state, bool event) {
    if (!nodeReady(state))
        return;
    writeOperstate(true);
    auto monitor = makeMonitor(kDetectionPoll);
    numadra::testing::HealthChanges changes(*monitor);
    monitor->start({});
    if (!changes.wait(30s)) {
        state.SkipWithError("the first round did not report");
        return;
    }
    // The wait before iteration i starts when the previous change was seen, at the end of a
    // round: (k + 0.5) / n of the interval for k = 0..n-1, in a shuffled order.
    const auto n = static_cast<size_t>(state.max_iterations);
    std::vector<Clock::duration> phases;
    for (size_t k = 0; k < n; ++k)
        phases.emplace_back(std::chrono::duration_cast<Clock::duration>(kDetectionPoll) *
                            (2 * k + 1) / (2 * n));
    std::shuffle(phases.begin(), phases.end(), std::mt19937(42));
    size_t next = 0;
    Latencies latencies;
    bool up = true;
    for (auto _ : state) {
        std::this_thread::sleep_for(phases[next++ % phases.size()]);
        changes.wait(0ms);  // forget changes seen before the write
        up = !up;
        const auto start = Clock::now();
        writeOperstate(up);
        if (event)
            monitor->checkNow();
        const bool changed = changes.wait(30s);
        state.SetIterationTime(latencies.add(Clock::now() - start));
        if (!changed) {
            state.SkipWithError("no change seen within 30 s");
            break;
        }
        // A round that read the file half-way through its devices reported a part of them: let
        // the Monitor settle on all of them before the next write (untimed).
        const auto expected = up ? State::Healthy : State::Unhealthy;
        const auto deadline = Clock::now() + 30s;
        for (;;) {
            const auto current = monitor->current();
            const bool settled = std::all_of(
                node().affected.begin(), node().affected.end(), [&](const std::string& name) {
                    auto it = current.find(name);
                    return it != current.end() && it->second.state == expected;
                });
            if (settled)
                break;
            if (Clock::now() > deadline) {
                state.SkipWithError("the Monitor did not settle within 30 s");
                break;
            }
            std::this_thread::sleep_for(1ms);
        }
    }
    monitor->stop();
    writeOperstate(true);  // the daemon benchmark reads the same tree
    latencies.report(state);
    state.counters["affected_devices"] = static_cast<double>(node().affected.size());
}

void BM_DetectionLatencyPoll(benchmark::State& state) {
    detectionLatency(state, false);
}
BENCHMARK(BM_DetectionLatencyPoll)->UseManualTime()->Iterations(40)->Unit(benchmark::kMillisecond);

void BM_DetectionLatencyEvent(benchmark::State& state) {
    detectionLatency(state, true);
}
BENCHMARK(BM_DetectionLatencyEvent)
    ->UseManualTime()
    ->Iterations(100)
    ->Unit(benchmark::kMillisecond);

// A carrier change as the daemon sees it on a real node: no uevent, an rtnetlink link message.
// In a network namespace of the benchmark's own, a bridge named like the flipped netdev plays
// it; each iteration writes the mocked operstate, sets the bridge up or down over rtnetlink
// (from a thread that enters the namespace: about 0.1 ms of the sample) and times until the
// Monitor reports the change. The poll is an hour away: only the link message can start the round.
void BM_DetectionLatencyLinkEvent(benchmark::State& state) {
    if (!nodeReady(state))
        return;
    std::string why;
    auto netns = numadra::testing::PrivateNetworkNamespace::create(why);
    if (!netns) {
        state.SkipWithError(("needs a network namespace of its own (root): " + why).c_str());
        return;
    }
    const std::string interface = numadra::discovery::baseName(node().netdev);
    if (auto failed = netns->run([&] { return numadra::testing::addBridge(interface); });
        !failed.empty()) {
        state.SkipWithError(("cannot create the interface: " + failed).c_str());
        return;
    }
    writeOperstate(true);
    auto monitor = makeMonitor(std::chrono::hours(1));
    numadra::testing::HealthChanges changes(*monitor);
    if (auto failed = netns->run([&] {
            auto watching = monitor->watchLinks();
            return watching ? std::string() : watching.error().message;
        });
        !failed.empty()) {
        state.SkipWithError(("no link events: " + failed).c_str());
        return;
    }
    monitor->start({});
    if (!changes.wait(30s)) {
        state.SkipWithError("the first round did not report");
        return;
    }
    // Up first (a new bridge is down, and setting it down again sends no message).
    if (auto failed = netns->run([&] { return numadra::testing::setLinkUp(interface, true); });
        !failed.empty()) {
        state.SkipWithError(failed.c_str());
        return;
    }
    Latencies latencies;
    bool up = true;
    for (auto _ : state) {
        std::this_thread::sleep_for(20ms);  // untimed: the previous round is over
        changes.wait(0ms);
        up = !up;
        const auto start = Clock::now();
        writeOperstate(up);
        const auto failed = netns->run([&] { return numadra::testing::setLinkUp(interface, up); });
        const bool changed = failed.empty() && changes.wait(30s);
        state.SetIterationTime(latencies.add(Clock::now() - start));
        if (!changed) {
            state.SkipWithError(("no change seen within 30 s " + failed).c_str());
            break;
        }
    }
    monitor->stop();
    writeOperstate(true);
    latencies.report(state);
}
BENCHMARK(BM_DetectionLatencyLinkEvent)
    ->UseManualTime()
    ->Iterations(100)
    ->Unit(benchmark::kMillisecond);

// ----- the daemon -----

// utime + stime of every thread of `pid`, in seconds (clock-tick resolution).
std::optional<double> processCpuSeconds(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto paren = content.rfind(')');  // the command name may contain spaces
    if (paren == std::string::npos)
        return std::nullopt;
    std::istringstream fields(content.substr(paren + 2));
    std::string field;
    unsigned long long utime = 0, stime = 0;
    // Field 3 (state) is the first after the name; utime and stime are fields 14 and 15.
    for (int n = 3; n <= 15 && fields >> field; ++n) {
        if (n == 14)
            utime = std::stoull(field);
        else if (n == 15)
            stime = std::stoull(field);
    }
    return static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

// Sum of the scheduler's run time of every thread of `pid` (ns resolution): a cross-check of the
// tick-based number. Threads that exit during the window are not counted.
double schedstatSeconds(pid_t pid) {
    std::error_code ec;
    double total = 0;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream in(task.path() / "schedstat");
        unsigned long long runNs = 0;
        if (in >> runNs)
            total += static_cast<double>(runNs) * 1e-9;
    }
    return total;
}

int threadCount(pid_t pid) {
    std::error_code ec;
    int n = 0;
    for (auto it =
             std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        ++n;
    return n;
}

// numa-dra-plugin --dry-run on the copy of big-2s-8n with its files in `dir`, started and up (its
// registration socket exists); -1 after a SkipWithError.
pid_t startDryRunDaemon(benchmark::State& state, const std::string& dir,
                        const std::vector<std::string>& extraArgs = {}) {
    constexpr auto kStartTimeout = 30s;
    std::filesystem::create_directories(dir + "/claims");
    const std::string registration = dir + "/registry/numa.dra.dev-reg.sock";
    std::vector<std::string> args{std::string(NUMADRA_BIN_DIR) + "/numa-dra-plugin",
                                  "--dry-run",
                                  "--node-name",
                                  kPool,
                                  "--claims-dir",
                                  dir + "/claims",
                                  "--sysfs-root",
                                  node().tree.root(),
                                  "--kubelet-registry-dir",
                                  dir + "/registry",
                                  "--kubelet-plugins-dir",
                                  dir + "/plugins",
                                  "--cdi-dir",
                                  dir + "/cdi",
                                  "--state-dir",
                                  dir + "/state",
                                  "--nri-socket",
                                  dir + "/nri.sock",
                                  "--metrics-addr",
                                  "",
                                  "--log-level",
                                  "warn"};
    args.insert(args.end(), extraArgs.begin(), extraArgs.end());
    const auto begin = Clock::now();
    // Quiet: a dry run prints the slices on every change.
    const pid_t child = numadra::testing::startProcess(args, true);
    if (child < 0) {
        state.SkipWithError("fork failed");
        return -1;
    }
    while (!std::filesystem::exists(registration)) {
        if (::waitpid(child, nullptr, WNOHANG) == child) {
            state.SkipWithError("the daemon exited during start-up");
            return -1;
        }
        if (Clock::now() - begin > kStartTimeout) {
            state.SkipWithError("the daemon did not come up within 30 s");
            ::kill(child, SIGTERM);
            ::waitpid(child, nullptr, 0);
            return -1;
        }
        std::this_thread::sleep_for(10ms);
    }
    state.counters["startup_ms"] = seconds(Clock::now() - begin) * 1e3;
    return child;
}

void stopDaemon(pid_t child) {
    ::kill(child, SIGTERM);
    ::waitpid(child, nullptr, 0);
}

void BM_DaemonIdleCpu(benchmark::State& state) {
    constexpr auto kSettle = 5s;
    constexpr auto kWindow = 30s;
    if (!nodeReady(state))
        return;
    const numadra::testing::TempTree tree;  // removed with the daemon's files on every return
    for (auto _ : state) {
        const pid_t child = startDryRunDaemon(state, tree.root());
        if (child < 0)
            break;
        std::this_thread::sleep_for(kSettle);
        const auto cpuBefore = processCpuSeconds(child);
        const double schedBefore = schedstatSeconds(child);
        const auto windowStart = Clock::now();
        std::this_thread::sleep_for(kWindow);
        const auto cpuAfter = processCpuSeconds(child);
        const double schedAfter = schedstatSeconds(child);
        const double wall = seconds(Clock::now() - windowStart);
        state.counters["threads"] = threadCount(child);
        stopDaemon(child);
        state.SetIterationTime(wall);
        if (!cpuBefore || !cpuAfter) {
            state.SkipWithError("cannot read /proc/<pid>/stat");
            break;
        }
        state.counters["cpu_seconds"] = *cpuAfter - *cpuBefore;
        state.counters["cpu_percent"] = (*cpuAfter - *cpuBefore) / wall * 100.0;
        state.counters["cpu_percent_schedstat"] = (schedAfter - schedBefore) / wall * 100.0;
    }
}
BENCHMARK(BM_DaemonIdleCpu)->UseManualTime()->Iterations(1)->Unit(benchmark::kSecond);

// A field of /proc/<pid>/status in KiB (VmRSS, VmHWM); 0 when unreadable.
long statusKiB(pid_t pid, const std::string& field) {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind(field + ":", 0) == 0)
            return std::stol(line.substr(field.size() + 1));
    }
    return 0;
}

// Steady memory: the daemon rescanning every second and polling health every 100 ms (with the
// argument's seconds, 120 by default: 120 rescans and 1,200 polls, two hours of the defaults'
// rescans), its resident memory sampled every 10 s after a 10 s settle. rss_growth_KiB is the last
// sample minus the first; a leak of a few bytes per round shows as a steady climb.
void BM_DaemonRssOverManyRounds(benchmark::State& state) {
    if (!nodeReady(state))
        return;
    const numadra::testing::TempTree tree;
    const auto window = std::chrono::seconds(state.range(0));
    for (auto _ : state) {
        const pid_t child = startDryRunDaemon(
            state, tree.root(), {"--resync-interval", "1s", "--health-interval", "100ms"});
        if (child < 0)
            break;
        std::this_thread::sleep_for(10s);
        std::vector<long> samples{statusKiB(child, "VmRSS")};
        const auto windowStart = Clock::now();
        while (Clock::now() - windowStart < window) {
            std::this_thread::sleep_for(10s);
            samples.push_back(statusKiB(child, "VmRSS"));
        }
        state.counters["rss_first_MiB"] = static_cast<double>(samples.front()) / 1024;
        state.counters["rss_last_MiB"] = static_cast<double>(samples.back()) / 1024;
        state.counters["rss_growth_KiB"] = static_cast<double>(samples.back() - samples.front());
        // Settling (allocator caches filling) happens early; a leak keeps climbing.
        state.counters["rss_growth_second_half_KiB"] =
            static_cast<double>(samples.back() - samples[samples.size() / 2]);
        state.counters["rss_max_MiB"] =
            static_cast<double>(*std::max_element(samples.begin(), samples.end())) / 1024;
        state.counters["hwm_MiB"] = static_cast<double>(statusKiB(child, "VmHWM")) / 1024;
        state.counters["threads"] = threadCount(child);
        stopDaemon(child);
        state.SetIterationTime(seconds(Clock::now() - windowStart));
    }
}
// 600: `--benchmark_filter=DaemonRss.*/600`, ten hours of the defaults' rescans.
BENCHMARK(BM_DaemonRssOverManyRounds)
    ->Arg(120)
    ->Arg(600)
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

}  // namespace

int main(int argc, char** argv) {
    spdlog::set_level(spdlog::level::warn);  // the Monitor logs every health change at info
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
