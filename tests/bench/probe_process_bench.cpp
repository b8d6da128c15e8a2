// numa-probe as a whole process against hwloc's lstopo on the same mocked machine (big-2s-8n):
// each iteration runs `numa-probe ... --output <format>` and `lstopo-no-graphics --of xml`
// (HWLOC_FSROOT = the machine's folder, HWLOC_COMPONENTS=linux,stop, so hwloc reads the same
// tree and nothing of the host) one after the other, in a rotating order, and the counters give
// the medians and their ratio. With NUMA_PROBE_BEFORE=<another numa-probe binary> that binary
// runs in the same rotation (before/after in one run). On 2 noisy cores only ratios measured in
// the same run mean something.
//
// Run: build/bin/probe_process_bench [--benchmark_filter=json]
//      NUMA_PROBE_BEFORE=build-before/bin/numa-probe build/bin/probe_process_bench

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace {

const std::string kMachineDir = std::string(NUMADRA_GENERATED_SYSFS) + "/big-2s-8n";
constexpr int kCpusOfTheMachine = 128;  // a sanity check that lstopo read the mocked tree

struct Command {
    std::string label;  // counter prefix
    std::vector<std::string> argv;
    std::vector<std::string> extraEnv;
};

struct RunTime {
    double wallMs;
    double cpuMs;  // the child's user + system time
};

// posix_spawn (not fork): the benchmark's own size does not weigh on the measurement.
// `stdoutFile` empty: output to /dev/null. nullopt when the program could not be started or
// failed.
std::optional<RunTime> runOnce(const Command& command, const std::string& stdoutFile = {}) {
    std::vector<std::string> env(command.extraEnv);
    for (char** e = environ; *e != nullptr; ++e)
        env.emplace_back(*e);
    std::vector<char*> envp, argv;
    for (auto& e : env)
        envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> args(command.argv);
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string out = stdoutFile.empty() ? "/dev/null" : stdoutFile;
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    const auto begin = std::chrono::steady_clock::now();
    pid_t child = 0;
    const int spawned = posix_spawnp(&child, argv[0], &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0)
        return std::nullopt;
    int status = 0;
    rusage usage{};
    if (::wait4(child, &status, 0, &usage) != child)
        return std::nullopt;
    const auto end = std::chrono::steady_clock::now();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return std::nullopt;
    auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
    return RunTime{std::chrono::duration<double, std::milli>(end - begin).count(),
                   ms(usage.ru_utime) + ms(usage.ru_stime)};
}

Command lstopo() {
    return {"lstopo",
            {"lstopo-no-graphics", "--of", "xml"},
            {"HWLOC_FSROOT=" + kMachineDir, "HWLOC_COMPONENTS=linux,stop"}};
}

Command numaProbe(const std::string& label, const std::string& binary, const std::string& format) {
    return {label,
            {binary, "--sysfs-root", kMachineDir + "/sys", "--node-name", "bench-node",
             "--numa-list", "--shared-consumable-capacity", "--output", format},
            {}};
}

// Why lstopo cannot be compared here, or "" when it can.
std::string lstopoProblem() {
    const std::string xml = (std::filesystem::temp_directory_path() /
                             ("probe_process_bench-" + std::to_string(::getpid()) + ".xml"))
                                .string();
    if (!runOnce(lstopo(), xml))
        return "lstopo-no-graphics is not installed (Debian package hwloc) or failed: no ratio";
    std::ifstream in(xml);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::remove(xml.c_str());
    int cpus = 0;
    for (size_t at = text.find("type=\"PU\""); at != std::string::npos;
         at = text.find("type=\"PU\"", at + 1))
        ++cpus;
    if (cpus != kCpusOfTheMachine)
        return "lstopo did not read the mocked tree (" + std::to_string(cpus) + " PUs)";
    return {};
}

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

void BM_ProbeVsLstopo(benchmark::State& state, const std::string& format) {
    if (const auto problem = lstopoProblem(); !problem.empty()) {
        state.SkipWithError(problem.c_str());
        return;
    }
    std::vector<Command> commands{lstopo(),
                                  numaProbe("probe", NUMADRA_BIN_DIR "/numa-probe", format)};
    if (const char* before = std::getenv("NUMA_PROBE_BEFORE"); before != nullptr && *before)
        commands.push_back(numaProbe("before", before, format));
    std::vector<std::vector<RunTime>> times(commands.size());
    size_t round = 0;
    for (auto _ : state) {
        // Rotate who goes first, so none always runs right after the same neighbour.
        for (size_t k = 0; k < commands.size(); ++k) {
            const size_t which = (round + k) % commands.size();
            auto time = runOnce(commands[which]);
            if (!time) {
                state.SkipWithError((commands[which].label + " failed").c_str());
                return;
            }
            times[which].push_back(*time);
        }
        state.SetIterationTime(times[1].back().wallMs / 1e3);
        ++round;
    }
    std::vector<double> wall(commands.size()), cpu(commands.size());
    for (size_t i = 0; i < commands.size(); ++i) {
        std::vector<double> w, c;
        for (const auto& t : times[i]) {
            w.push_back(t.wallMs);
            c.push_back(t.cpuMs);
        }
        wall[i] = median(w);
        cpu[i] = median(c);
        state.counters[commands[i].label + "_ms"] = wall[i];
        state.counters[commands[i].label + "_cpu_ms"] = cpu[i];
    }
    // Ratios of medians: numa-probe / lstopo (goal <= 0.5), wall and CPU.
    state.counters["ratio"] = wall[1] / wall[0];
    state.counters["ratio_cpu"] = cpu[1] / cpu[0];
    if (commands.size() > 2) {
        state.counters["before_ratio"] = wall[2] / wall[0];
        state.counters["after_vs_before"] = wall[1] / wall[2];
    }
}

BENCHMARK_CAPTURE(BM_ProbeVsLstopo, json, std::string("json"))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(40);
BENCHMARK_CAPTURE(BM_ProbeVsLstopo, yaml, std::string("yaml"))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(40);
BENCHMARK_CAPTURE(BM_ProbeVsLstopo, table, std::string("table"))
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(40);

// The floor every run pays: exec, the dynamic linker, static initialisers, exit.
void BM_ProbeVersion(benchmark::State& state) {
    const Command version{"version", {NUMADRA_BIN_DIR "/numa-probe", "--version"}, {}};
    std::vector<double> wall;
    for (auto _ : state) {
        auto time = runOnce(version);
        if (!time) {
            state.SkipWithError("numa-probe --version failed");
            return;
        }
        wall.push_back(time->wallMs);
        state.SetIterationTime(time->wallMs / 1e3);
    }
    state.counters["version_ms"] = median(wall);
}
BENCHMARK(BM_ProbeVersion)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(40);

}  // namespace

BENCHMARK_MAIN();
