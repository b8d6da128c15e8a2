// Preparer::prepare latency on the largest mocked machine (big-2s-8n: 8 H100 GPUs, 8 CX-7 PFs
// with 64 VFs each, one CPU device per NUMA node): one CDI spec per claim, a KEP-5304 metadata
// file and its CDI spec per request, then the checkpoint record, every file renamed into place
// (fsync'ed first on a disk, not on tmpfs). The state folders live on tmpfs (/dev/shm), on disk
// (a temp folder under the build folder, or $NUMADRA_BENCH_DISK_DIR), or as on most nodes ("node":
// the CDI folder on tmpfs, like /var/run/cdi, the rest on disk); the label names the filesystem.
//
// Every iteration prepares a fresh claim UID (timed, manual time) and unprepares it untimed, so
// every sample is a full first prepare. p50_us/p99_us/max_us are computed from the per-iteration
// latencies of one run; p99_cpu_us from the thread's CPU time over the same calls (well below the
// wall time: the call waited, for the disk or for a CPU). BM_PrepareBreakdown and the last two
// benchmarks say where the time goes. Run: build/bin/prepare_bench --benchmark_repetitions=5
//   --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/statfs.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "numadra/common/files.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace {

using numadra::prepare::AllocatedDevice;
using numadra::prepare::ClaimAllocation;
using numadra::prepare::Preparer;
using Clock = std::chrono::steady_clock;

constexpr const char* kMachine = "big-2s-8n";
constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kPool = "bench-node";

enum class Storage { Tmpfs, Disk, Node };

// ----- the node: discovered once per process, with its mocked /dev -----

struct Node {
    numadra::testing::TempTree tree;  // holds the mocked /dev
    numadra::discovery::Machine machine;
    std::map<std::string, numadra::api::Device> devices;
    numadra::testing::MockDev dev;

    numadra::prepare::NodeView view() const { return {machine, devices}; }
};

const Node& node() {
    static const std::unique_ptr<Node> instance = [] {
        auto n = std::make_unique<Node>();
        n->machine = numadra::testing::loadMachine(kMachine);
        numadra::slices::SliceOptions options;
        options.nodeName = kPool;
        for (auto& device : numadra::slices::buildPoolContent(n->machine, options).devices)
            n->devices.emplace(device.name, device);
        n->dev = numadra::testing::makeDevTree(n->machine, n->tree, "dev");
        return n;
    }();
    return *instance;
}

// ----- where the driver's folders live -----

std::string filesystemName(const std::string& path) {
    struct statfs info {};
    if (::statfs(path.c_str(), &info) != 0)
        return "unknown";
    switch (static_cast<unsigned long>(info.f_type)) {
        case TMPFS_MAGIC:
            return "tmpfs";
        case EXT4_SUPER_MAGIC:  // also ext2/ext3
            return "ext4";
        case XFS_SUPER_MAGIC:
            return "xfs";
        case BTRFS_SUPER_MAGIC:
            return "btrfs";
        case OVERLAYFS_SUPER_MAGIC:
            return "overlayfs";
        case NFS_SUPER_MAGIC:
            return "nfs";
        default: {
            char hex[32];
            std::snprintf(hex, sizeof hex, "fs-0x%lx", static_cast<unsigned long>(info.f_type));
            return hex;
        }
    }
}

bool isTmpfs(const std::string& path) {
    struct statfs info {};
    return ::statfs(path.c_str(), &info) == 0 &&
           static_cast<unsigned long>(info.f_type) == TMPFS_MAGIC;
}

// A folder created under `base`, removed with everything in it at the end of the run.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& base) {
        std::string pattern = base + "/numadra-prepare-bench-XXXXXX";
        if (::mkdtemp(pattern.data()) != nullptr)
            path_ = pattern;
    }
    ~ScratchDir() {
        if (path_.empty())
            return;
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    bool ok() const { return !path_.empty(); }
    const std::string& path() const { return path_; }

  private:
    std::string path_;
};

std::string diskBase() {
    if (const char* dir = std::getenv("NUMADRA_BENCH_DISK_DIR"); dir != nullptr && *dir != 0)
        return dir;
    return NUMADRA_BENCH_DISK_DIR;
}

// One Preparer with its CDI, metadata and state folders in a scratch folder. `afterFileWrite`
// is the pipeline's hook after every file (the breakdown benchmark timestamps it).
class Driver {
  public:
    Driver(benchmark::State& state, Storage storage,
           std::function<void(const std::string&)> afterFileWrite = {}) {
        const std::string base = storage == Storage::Tmpfs ? "/dev/shm" : diskBase();
        if (storage != Storage::Disk && !isTmpfs("/dev/shm")) {
            state.SkipWithError("/dev/shm is not a tmpfs");
            return;
        }
        if (node().machine.pci.empty()) {
            state.SkipWithError("the mocked machine could not be discovered");
            return;
        }
        scratch_ = std::make_unique<ScratchDir>(base);
        if (storage == Storage::Node)
            cdiScratch_ = std::make_unique<ScratchDir>("/dev/shm");
        if (!scratch_->ok() || (cdiScratch_ && !cdiScratch_->ok())) {
            state.SkipWithError(("cannot create a folder under " + base).c_str());
            return;
        }
        numadra::prepare::Options options;
        options.driverName = kDriver;
        options.poolName = kPool;
        options.cdiDir = (cdiScratch_ ? cdiScratch_->path() : scratch_->path()) + "/cdi";
        options.metadataDir = scratch_->path() + "/metadata";
        options.stateDir = scratch_->path() + "/state";
        options.hostRoots = {node().dev.root,
                             std::string(NUMADRA_GENERATED_SYSFS) + "/" + kMachine + "/proc"};
        options.bootId = "bench-boot";
        options.afterFileWrite = std::move(afterFileWrite);
        auto opened = Preparer::open(std::move(options), metrics_);
        if (!opened) {
            state.SkipWithError(opened.error().message.c_str());
            return;
        }
        preparer_ = std::move(opened).value();
        state.SetLabel((cdiScratch_ ? "cdi on " + filesystemName(cdiScratch_->path()) + ", " : "") +
                       filesystemName(scratch_->path()));
    }

    bool ok() const { return preparer_ != nullptr; }
    Preparer& preparer() { return *preparer_; }
    const std::string& root() const { return scratch_->path(); }

  private:
    numadra::metrics::Registry metrics_;
    std::unique_ptr<ScratchDir> scratch_;
    std::unique_ptr<ScratchDir> cdiScratch_;  // Storage::Node only
    std::unique_ptr<Preparer> preparer_;      // destroyed before the folders go
};

// ----- the claims -----

// Field by field: the struct grows (adminAccess, ...) and the defaults are what we want.
AllocatedDevice exclusive(const std::string& request, const std::string& device) {
    AllocatedDevice d;
    d.request = request;
    d.pool = kPool;
    d.device = device;
    return d;
}

AllocatedDevice cpuShare(const std::string& request, const std::string& device,
                         const std::string& shareId, int cpus) {
    AllocatedDevice d = exclusive(request, device);
    d.shareId = shareId;
    d.consumedCapacity.emplace("cpu", numadra::api::Quantity::decimal(cpus));
    return d;
}

std::string uidOf(long n) {
    char uid[48];
    std::snprintf(uid, sizeof uid, "5f0c9a3e-7b21-4d6e-9a0b-%012ld", n);
    return uid;
}

// 1 device: one VF of the first CX-7. 8 devices, one per request (every request gets its own
// metadata file and metadata CDI spec, the most files a claim of 8 devices writes): 3 GPUs, a
// VF of the CX-7 beside each, and two 4-CPU shares on the first two NUMA nodes.
ClaimAllocation claimOf(const std::string& uid, int deviceCount) {
    ClaimAllocation claim{{"default", "claim-" + uid, uid}, std::nullopt, {}};
    if (deviceCount == 1) {
        claim.devices = {exclusive("nic", "nic-0000-02-00-2")};
        return claim;
    }
    claim.devices = {
        exclusive("gpu-0", "gpu-0000-01-00-0"),
        exclusive("gpu-1", "gpu-0000-21-00-0"),
        exclusive("gpu-2", "gpu-0000-41-00-0"),
        exclusive("nic-0", "nic-0000-02-00-2"),
        exclusive("nic-1", "nic-0000-22-00-2"),
        exclusive("nic-2", "nic-0000-42-00-2"),
        cpuShare("cpu-0", "cpu-numa-0", "s0-" + uid, 4),
        cpuShare("cpu-1", "cpu-numa-1", "s1-" + uid, 4),
    };
    return claim;
}

bool devicesPublished(benchmark::State& state, const ClaimAllocation& claim) {
    for (const auto& device : claim.devices) {
        if (node().devices.count(device.device) == 0) {
            state.SkipWithError(("device " + device.device + " is not published").c_str());
            return false;
        }
    }
    return true;
}

// ----- statistics -----

// CPU time of the calling thread: a sample whose wall time is far above it waited (another
// process had the CPU, or the disk), it did not compute.
Clock::duration threadCpuTime() {
    timespec now{};
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec);
}

class Latencies {
  public:
    void reserve(size_t n) {
        wall_.reserve(n);
        cpu_.reserve(n);
    }
    // Records one sample and returns its wall time in seconds (for SetIterationTime).
    double add(Clock::duration wall, Clock::duration cpu) {
        wall_.push_back(std::chrono::duration<double, std::micro>(wall).count());
        cpu_.push_back(std::chrono::duration<double, std::micro>(cpu).count());
        return wall_.back() * 1e-6;
    }
    void report(benchmark::State& state) {
        if (wall_.empty())
            return;
        std::sort(wall_.begin(), wall_.end());
        std::sort(cpu_.begin(), cpu_.end());
        state.counters["p50_us"] = percentile(wall_, 50);
        state.counters["p99_us"] = percentile(wall_, 99);
        state.counters["max_us"] = wall_.back();
        state.counters["p99_cpu_us"] = percentile(cpu_, 99);
        state.counters["samples"] = static_cast<double>(wall_.size());
    }

  private:
    // Nearest rank: the smallest sample with at least p% of the samples at or below it.
    static double percentile(const std::vector<double>& sorted, double p) {
        const auto rank = static_cast<size_t>(std::ceil(p / 100.0 * sorted.size()));
        return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
    }

    std::vector<double> wall_, cpu_;  // µs
};

// Runs `fn` and records its wall and thread CPU time; returns the wall time in seconds.
template <typename Fn>
double timed(Latencies& latencies, Fn&& fn) {
    const auto cpuStart = threadCpuTime();
    const auto start = Clock::now();
    fn();
    const auto wall = Clock::now() - start;
    return latencies.add(wall, threadCpuTime() - cpuStart);
}

bool check(benchmark::State& state, const numadra::Status& status, const char* what) {
    if (status)
        return true;
    state.SkipWithError((std::string(what) + ": " + status.error().message).c_str());
    return false;
}

template <typename T>
bool check(benchmark::State& state, const numadra::Result<T>& result, const char* what) {
    if (result)
        return true;
    state.SkipWithError((std::string(what) + ": " + result.error().message).c_str());
    return false;
}

// One untimed prepare/unprepare first: the folders and the first-use allocations of the process
// are not what a long-running driver pays per claim.
bool warmUp(benchmark::State& state, Driver& driver, int deviceCount) {
    const auto claim = claimOf(uidOf(999'999'999), deviceCount);
    if (!devicesPublished(state, claim))
        return false;
    return check(state, driver.preparer().prepare(claim, node().view()), "warm-up prepare") &&
           check(state, driver.preparer().unprepare(claim.claim), "warm-up unprepare");
}

// ----- benchmarks -----

// A first prepare of a fresh claim (timed), then its unprepare (not timed).
void BM_Prepare(benchmark::State& state, Storage storage) {
    const int deviceCount = static_cast<int>(state.range(0));
    Driver driver(state, storage);
    if (!driver.ok() || !warmUp(state, driver, deviceCount))
        return;
    Latencies latencies;
    latencies.reserve(static_cast<size_t>(state.max_iterations));
    long n = 0;
    for (auto _ : state) {
        const auto claim = claimOf(uidOf(n++), deviceCount);
        numadra::Result<std::vector<numadra::claims::PreparedDevice>> prepared =
            numadra::Error{"not run"};
        state.SetIterationTime(
            timed(latencies, [&] { prepared = driver.preparer().prepare(claim, node().view()); }));
        if (!check(state, prepared, "prepare") ||
            !check(state, driver.preparer().unprepare(claim.claim), "unprepare"))
            return;
    }
    latencies.report(state);
}
BENCHMARK_CAPTURE(BM_Prepare, tmpfs, Storage::Tmpfs)
    ->Arg(1)
    ->Arg(8)
    ->ArgName("devices")
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prepare, disk, Storage::Disk)
    ->Arg(1)
    ->Arg(8)
    ->ArgName("devices")
    ->UseManualTime()
    ->MinTime(1.0)  // enough samples for a p99 despite the fsyncs
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Prepare, node, Storage::Node)
    ->Arg(1)
    ->Arg(8)
    ->ArgName("devices")
    ->UseManualTime()
    ->MinTime(1.0)
    ->Unit(benchmark::kMicrosecond);

// Unprepare of an 8-device claim (timed) after its prepare (not timed).
void BM_Unprepare(benchmark::State& state, Storage storage) {
    constexpr int kDevices = 8;
    Driver driver(state, storage);
    if (!driver.ok() || !warmUp(state, driver, kDevices))
        return;
    Latencies latencies;
    latencies.reserve(static_cast<size_t>(state.max_iterations));
    long n = 0;
    for (auto _ : state) {
        const auto claim = claimOf(uidOf(n++), kDevices);
        if (!check(state, driver.preparer().prepare(claim, node().view()), "prepare"))
            return;
        numadra::Status removed;
        state.SetIterationTime(
            timed(latencies, [&] { removed = driver.preparer().unprepare(claim.claim); }));
        if (!check(state, removed, "unprepare"))
            return;
    }
    latencies.report(state);
}
BENCHMARK_CAPTURE(BM_Unprepare, tmpfs, Storage::Tmpfs)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Unprepare, disk, Storage::Disk)
    ->UseManualTime()
    ->MinTime(1.0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Unprepare, node, Storage::Node)
    ->UseManualTime()
    ->MinTime(1.0)
    ->Unit(benchmark::kMicrosecond);

// The kubelet's retry of a claim that is already prepared (8 devices): verified against the
// node and the files on disk, answered from the checkpoint, nothing written.
void BM_PrepareCheckpointHit(benchmark::State& state, Storage storage) {
    constexpr int kDevices = 8;
    Driver driver(state, storage);
    if (!driver.ok() || !warmUp(state, driver, kDevices))
        return;
    const auto claim = claimOf(uidOf(0), kDevices);
    if (!check(state, driver.preparer().prepare(claim, node().view()), "first prepare"))
        return;
    Latencies latencies;
    latencies.reserve(static_cast<size_t>(state.max_iterations));
    for (auto _ : state) {
        numadra::Result<std::vector<numadra::claims::PreparedDevice>> prepared =
            numadra::Error{"not run"};
        state.SetIterationTime(
            timed(latencies, [&] { prepared = driver.preparer().prepare(claim, node().view()); }));
        if (!check(state, prepared, "repeated prepare"))
            return;
    }
    latencies.report(state);
    static_cast<void>(driver.preparer().unprepare(claim.claim));
}
BENCHMARK_CAPTURE(BM_PrepareCheckpointHit, tmpfs, Storage::Tmpfs)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PrepareCheckpointHit, disk, Storage::Disk)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// Where a first prepare of 8 devices spends its time, from the pipeline's after-write hook:
// plan_metadata_us = identify + reserve + build the plan (CDI specs and metadata in memory) + the
// 8 metadata files; then their 8 CDI specs, the claim's CDI spec, the checkpoint record, and what
// follows the last write. Mean µs per prepare.
void BM_PrepareBreakdown(benchmark::State& state, Storage storage) {
    constexpr int kDevices = 8;
    enum Phase { PlanAndMetadata, MetadataSpecs, ClaimSpec, Record, Tail, kPhases };
    static constexpr const char* kNames[kPhases] = {"plan_metadata_us", "metadata_specs_us",
                                                    "claim_spec_us", "ckpt_us", "tail_us"};
    double totals[kPhases] = {};
    Clock::time_point last;
    std::string root;  // the driver's scratch folder, known once it exists
    auto phaseOf = [&](const std::string& path) {
        if (path.rfind(root + "/state/", 0) == 0)
            return Record;
        if (path.rfind(root + "/metadata/", 0) == 0)
            return PlanAndMetadata;
        if (path.find("_metadata_") != std::string::npos)
            return MetadataSpecs;
        return ClaimSpec;
    };
    Driver driver(state, storage, [&](const std::string& path) {
        const auto now = Clock::now();
        totals[phaseOf(path)] += std::chrono::duration<double, std::micro>(now - last).count();
        last = now;
    });
    if (!driver.ok())
        return;
    root = driver.root();
    if (!warmUp(state, driver, kDevices))
        return;
    std::fill(std::begin(totals), std::end(totals), 0.0);
    long n = 0;
    for (auto _ : state) {
        const auto claim = claimOf(uidOf(n++), kDevices);
        last = Clock::now();
        const auto start = last;
        auto prepared = driver.preparer().prepare(claim, node().view());
        const auto end = Clock::now();
        totals[Tail] += std::chrono::duration<double, std::micro>(end - last).count();
        state.SetIterationTime(std::chrono::duration<double>(end - start).count());
        if (!check(state, prepared, "prepare") ||
            !check(state, driver.preparer().unprepare(claim.claim), "unprepare"))
            return;
    }
    for (int phase = 0; phase < kPhases; ++phase)
        state.counters[kNames[phase]] = totals[phase] / static_cast<double>(state.iterations());
}
BENCHMARK_CAPTURE(BM_PrepareBreakdown, tmpfs, Storage::Tmpfs)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_PrepareBreakdown, disk, Storage::Disk)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

// The CPU part of every checkpoint write (CheckpointStore::save): encode the 8-device record
// (canonical dump + CRC-32C, pretty dump), then decode it again (parse, canonical dump + CRC,
// field by field) to refuse a record that would not read back identically.
void BM_CheckpointRecordCodec(benchmark::State& state) {
    constexpr int kDevices = 8;
    Driver driver(state, Storage::Tmpfs);
    if (!driver.ok())
        return;
    const auto claim = claimOf(uidOf(0), kDevices);
    if (!devicesPublished(state, claim) ||
        !check(state, driver.preparer().prepare(claim, node().view()), "prepare"))
        return;
    auto store = numadra::state::CheckpointStore::open(driver.root() + "/state");
    if (!check(state, store, "opening the checkpoint"))
        return;
    auto loaded = store->load();
    if (!check(state, loaded, "loading the checkpoint"))
        return;
    if (loaded->records.size() != 1) {
        state.SkipWithError("expected one checkpoint record");
        return;
    }
    const auto& record = loaded->records.front();
    size_t bytes = 0;
    for (auto _ : state) {
        const std::string content = numadra::state::encode(record);
        auto decoded = numadra::state::decode(content, "bench");
        benchmark::DoNotOptimize(decoded);
        bytes = content.size();
    }
    state.counters["record_bytes"] = static_cast<double>(bytes);
}
BENCHMARK(BM_CheckpointRecordCodec)->Unit(benchmark::kMicrosecond);

// The primitive every file of the pipeline goes through: create a temp file, write ~2 KiB,
// fsync, rename, fsync the folder.
void BM_WriteFileAtomically(benchmark::State& state, Storage storage) {
    const std::string base = storage == Storage::Tmpfs ? "/dev/shm" : diskBase();
    if (storage == Storage::Tmpfs && !isTmpfs(base)) {
        state.SkipWithError("/dev/shm is not a tmpfs");
        return;
    }
    ScratchDir scratch(base);
    if (!scratch.ok()) {
        state.SkipWithError(("cannot create a folder under " + base).c_str());
        return;
    }
    state.SetLabel(filesystemName(scratch.path()));
    const std::string content(2048, 'x');
    const std::string path = scratch.path() + "/file.json";
    for (auto _ : state) {
        if (!check(state, numadra::files::writeFileAtomically(path, content), "write"))
            return;
    }
}
BENCHMARK_CAPTURE(BM_WriteFileAtomically, tmpfs, Storage::Tmpfs)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_WriteFileAtomically, disk, Storage::Disk)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
