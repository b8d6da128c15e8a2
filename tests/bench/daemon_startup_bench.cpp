// From process start to "registered and published": the kubelet wipes a driver's slices after
// 30 s of absence, so a restart must be back well within that. Spawns build/bin/numa-dra-plugin
// against an in-process fake API server and times until the registration socket exists and the
// node's slices are in the API server.
// Run: build/bin/daemon_startup_bench --benchmark_repetitions=10
// --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "numadra/fakes/apiserver.hpp"
#include "numadra/testing/process.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace {

void BM_DaemonStartup(benchmark::State& state, const std::string& machine) {
    numadra::fakes::FakeApiServer api;
    api.addNode("bench-node", "uid-1");
    const numadra::testing::TempTree tree;  // removed with the daemon's files on every return
    const std::string& dir = tree.root();
    std::ofstream(dir + "/kubeconfig")
        << "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n"
           "  cluster:\n    server: "
        << api.url()
        << "\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n"
           "  context:\n    cluster: k\n    user: u\n";
    const std::string registration = dir + "/registry/numa.dra.dev-reg.sock";
    std::vector<std::string> args{std::string(NUMADRA_BIN_DIR) + "/numa-dra-plugin",
                                  "--kubeconfig",
                                  dir + "/kubeconfig",
                                  "--node-name",
                                  "bench-node",
                                  "--sysfs-root",
                                  std::string(NUMADRA_GENERATED_SYSFS) + "/" + machine + "/sys",
                                  "--kubelet-registry-dir",
                                  dir + "/registry",
                                  "--kubelet-plugins-dir",
                                  dir + "/plugins",
                                  "--nri-socket",
                                  dir + "/nri.sock",
                                  "--metrics-addr",
                                  "",
                                  "--log-level",
                                  "error",
                                  "--keep-slices-on-exit=false"};
    for (auto _ : state) {
        const auto begin = std::chrono::steady_clock::now();
        const pid_t child = numadra::testing::startProcess(args);
        if (child < 0) {  // never kill(-1, ...)
            state.SkipWithError("fork failed");
            break;
        }
        while (!(std::filesystem::exists(registration) && !api.resourceSlices().empty())) {
            std::this_thread::sleep_for(std::chrono::microseconds(200));
            if (std::chrono::steady_clock::now() - begin > std::chrono::seconds(10)) {
                state.SkipWithError("daemon did not come up within 10 s");
                break;
            }
        }
        state.SetIterationTime(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count());
        ::kill(child, SIGTERM);
        ::waitpid(child, nullptr, 0);
    }
}

BENCHMARK_CAPTURE(BM_DaemonStartup, epyc_2s_nps4, std::string("epyc-2s-nps4"))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);
BENCHMARK_CAPTURE(BM_DaemonStartup, big_2s_8n, std::string("big-2s-8n"))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
