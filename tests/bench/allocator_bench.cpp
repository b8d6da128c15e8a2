// Structured-parameters allocation latency: numadra::allocator::Allocator (the offline
// re-implementation of the scheduler's allocator) on the devices this driver publishes, built
// directly in C++ (no files, no decoding). The machines, classes and claims are built by
// allocator_cases.{hpp,cpp} (shared with allocator-bench-cases, which writes them as files for
// the comparison with upstream's allocator); its header describes the topologies:
//  * "big": BM_GpuNicNuma*, BM_DerivedVsPlain, BM_Infeasible/{vfs_32_of_31, gpus_6_of_5,
//    vfs_2x16_31_free}, BM_InfeasibleSplitScaling
//  * "many-vfs": BM_ThousandClaims
//  * "spread": BM_Infeasible/gpus_8_2_per_numa
//  * "small" x 1,000: BM_ThousandNodes
//
// The claim of BM_GpuNicNuma: request `gpu` (class gpu) count 8, request `nic` (class nic: PFs)
// count 1, matchAttribute resource.kubernetes.io/numaNode over both. Answer: the 8 GPUs and the
// first PF of NUMA node 0. BM_GpuNicNumaDerived: the same with a derived attribute `numa`
// (device.attributes["resource.kubernetes.io"].numaNode) on both requests and matchAttribute
// `numa`. BM_DerivedVsPlain times both claims alternately in one loop and reports the ratio.
//
// Warm: the Allocator is created once outside the loop (its CEL verdicts, candidate lists and
// node views are cached after the first call); every iteration allocates without committing.
// Cold: every iteration creates the Allocator from copies of the inputs (the copies are not
// timed: manual time covers create() + allocate()), so the first evaluation of every CEL
// expression on every device is inside the measurement. Every benchmark checks its outcome
// (Allocated / Unsatisfiable) before timing and fails with SkipWithError otherwise.
//
// Run: build/bin/allocator_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "allocator_cases.hpp"
#include "numadra/allocator/allocator.hpp"

namespace {

namespace na = numadra::allocator;
using namespace numadra::bench;
using Clock = std::chrono::steady_clock;

const char* kindName(na::OutcomeKind kind) {
    switch (kind) {
        case na::OutcomeKind::Allocated:
            return "Allocated";
        case na::OutcomeKind::Unsatisfiable:
            return "Unsatisfiable";
        case na::OutcomeKind::GaveUp:
            return "GaveUp";
        case na::OutcomeKind::FailedOnNode:
            return "FailedOnNode";
    }
    return "?";
}

// The outcome's kind must be `want`; otherwise the message says what came instead.
std::optional<std::string> wrongOutcome(const numadra::Result<na::Outcome>& result,
                                        na::OutcomeKind want) {
    if (!result)
        return "allocate() failed: " + result.error().message;
    if (result->kind != want) {
        std::string message = std::string("expected ") + kindName(want) + ", got " +
                              kindName(result->kind) + " after " +
                              std::to_string(result->searchSteps) + " search steps";
        if (!result->explanation.empty())
            message += ": " + result->explanation;
        return message;
    }
    return std::nullopt;
}

bool check(benchmark::State& state, const numadra::Result<na::Outcome>& result,
           na::OutcomeKind want) {
    if (auto wrong = wrongOutcome(result, want)) {
        state.SkipWithError(wrong->c_str());
        return false;
    }
    return true;
}

double micros(Clock::duration d) {
    return std::chrono::duration<double, std::micro>(d).count();
}

// ----- (a), (b): 8 GPUs + 1 NIC on one NUMA node -----

void gpuNicNumaWarm(benchmark::State& state, bool derived) {
    const na::Node node{"big", {}};
    const std::vector<na::Claim> claims{gpuNicClaim(8, derived)};
    auto allocator = na::Allocator::create(bigSlices(), classes());
    auto first = allocator.allocate(node, claims);
    if (!check(state, first, na::OutcomeKind::Allocated))
        return;
    for (auto _ : state) {
        auto result = allocator.allocate(node, claims);
        benchmark::DoNotOptimize(result);
    }
    state.counters["searchSteps"] = static_cast<double>(first->searchSteps);
}

void gpuNicNumaCold(benchmark::State& state, bool derived) {
    const na::Node node{"big", {}};
    const std::vector<na::Claim> claims{gpuNicClaim(8, derived)};
    {
        auto allocator = na::Allocator::create(bigSlices(), classes());
        if (!check(state, allocator.allocate(node, claims), na::OutcomeKind::Allocated))
            return;
    }
    double createUs = 0;
    for (auto _ : state) {
        auto slices = bigSlices();
        auto deviceClasses = classes();
        const auto start = Clock::now();
        auto allocator = na::Allocator::create(std::move(slices), std::move(deviceClasses));
        const auto created = Clock::now();
        auto result = allocator.allocate(node, claims);
        const auto end = Clock::now();
        benchmark::DoNotOptimize(result);
        state.SetIterationTime(std::chrono::duration<double>(end - start).count());
        createUs += micros(created - start);
    }
    state.counters["create_us"] = createUs / static_cast<double>(state.iterations());
}

void BM_GpuNicNuma(benchmark::State& state) {
    gpuNicNumaWarm(state, false);
}
void BM_GpuNicNumaCold(benchmark::State& state) {
    gpuNicNumaCold(state, false);
}
void BM_GpuNicNumaDerived(benchmark::State& state) {
    gpuNicNumaWarm(state, true);
}
void BM_GpuNicNumaDerivedCold(benchmark::State& state) {
    gpuNicNumaCold(state, true);
}

// Plain and derived claims alternately in one loop: the ratio is immune to the machine's drift.
void BM_DerivedVsPlain(benchmark::State& state) {
    const na::Node node{"big", {}};
    const std::vector<na::Claim> plain{gpuNicClaim(8, false)};
    const std::vector<na::Claim> derived{gpuNicClaim(8, true)};
    auto allocator = na::Allocator::create(bigSlices(), classes());
    auto a = allocator.allocate(node, plain);
    auto b = allocator.allocate(node, derived);
    if (!check(state, a, na::OutcomeKind::Allocated) ||
        !check(state, b, na::OutcomeKind::Allocated))
        return;
    if (a->allocations.front().results.size() != b->allocations.front().results.size()) {
        state.SkipWithError("the plain and the derived claim got different allocations");
        return;
    }
    for (size_t i = 0; i < a->allocations.front().results.size(); ++i)
        if (a->allocations.front().results[i].device != b->allocations.front().results[i].device) {
            state.SkipWithError("the plain and the derived claim got different devices");
            return;
        }
    Clock::duration plainTime{};
    Clock::duration derivedTime{};
    constexpr int kInner = 16;
    for (auto _ : state) {
        auto t0 = Clock::now();
        for (int i = 0; i < kInner; ++i) {
            auto result = allocator.allocate(node, plain);
            benchmark::DoNotOptimize(result);
        }
        auto t1 = Clock::now();
        for (int i = 0; i < kInner; ++i) {
            auto result = allocator.allocate(node, derived);
            benchmark::DoNotOptimize(result);
        }
        auto t2 = Clock::now();
        plainTime += t1 - t0;
        derivedTime += t2 - t1;
    }
    const double n = static_cast<double>(state.iterations()) * kInner;
    state.counters["plain_us"] = micros(plainTime) / n;
    state.counters["derived_us"] = micros(derivedTime) / n;
    state.counters["derived_over_plain"] = micros(derivedTime) / micros(plainTime);
}

// ----- (c): one claim, tried on 1,000 nodes in turn (the scheduler's Filter) -----

// Allocates the claim on every node; the first node whose answer is not Allocated fails.
std::optional<std::string> allocateEverywhere(na::Allocator& allocator,
                                              const std::vector<na::Node>& nodes,
                                              std::span<const na::Claim> claims, bool verify) {
    for (const na::Node& node : nodes) {
        auto result = allocator.allocate(node, claims);
        if (verify) {
            if (auto wrong = wrongOutcome(result, na::OutcomeKind::Allocated))
                return node.name + ": " + *wrong;
        }
        benchmark::DoNotOptimize(result);
    }
    return std::nullopt;
}

// Allocates once with the answers checked; a wrong one ends the benchmark with its reason.
bool answersChecked(benchmark::State& state, na::Allocator& allocator, const Cluster& c,
                    std::span<const na::Claim> claims) {
    if (auto wrong = allocateEverywhere(allocator, c.nodes, claims, true)) {
        state.SkipWithError(wrong->c_str());
        return false;
    }
    return true;
}

void BM_ThousandNodes(benchmark::State& state) {
    const Cluster& c = cluster();
    const std::vector<na::Claim> claims{gpuNicClaim(2, false)};
    auto allocator = na::Allocator::create(c.slices, classes());
    if (!answersChecked(state, allocator, c, claims))
        return;
    Clock::duration total{};
    for (auto _ : state) {
        const auto start = Clock::now();
        allocateEverywhere(allocator, c.nodes, claims, false);
        total += Clock::now() - start;
    }
    state.counters["per_node_us"] =
        micros(total) / static_cast<double>(state.iterations() * kNodes);
}

void BM_ThousandNodesCold(benchmark::State& state) {
    const Cluster& c = cluster();
    const std::vector<na::Claim> claims{gpuNicClaim(2, false)};
    if (auto allocator = na::Allocator::create(c.slices, classes());
        !answersChecked(state, allocator, c, claims))
        return;
    double createMs = 0;
    for (auto _ : state) {
        auto slices = c.slices;
        auto deviceClasses = classes();
        const auto start = Clock::now();
        std::optional<na::Allocator> allocator =
            na::Allocator::create(std::move(slices), std::move(deviceClasses));
        const auto created = Clock::now();
        allocateEverywhere(*allocator, c.nodes, claims, false);
        const auto end = Clock::now();
        state.SetIterationTime(std::chrono::duration<double>(end - start).count());
        createMs += micros(created - start) / 1000;
        allocator.reset();  // the destructor (64,000 devices) is outside the manual time
    }
    state.counters["create_ms"] = createMs / static_cast<double>(state.iterations());
}

// ----- (d): 1,000 one-VF claims allocated and committed one after another -----

// Allocates and commits every claim in turn (as dra-allocate does for a claim list).
std::optional<std::string> allocateAll(na::Allocator& allocator, const na::Node& node,
                                       const std::vector<na::Claim>& claims) {
    for (const na::Claim& c : claims) {
        auto result = allocator.allocate(node, std::span<const na::Claim>(&c, 1));
        if (auto wrong = wrongOutcome(result, na::OutcomeKind::Allocated))
            return c.name + ": " + *wrong;
        allocator.commit(result->allocations.front());
    }
    return std::nullopt;
}

void BM_ThousandClaims(benchmark::State& state) {
    const na::Node node{"many-vfs", {}};
    const auto& claims = thousandClaims();
    {
        auto allocator = na::Allocator::create(manyVfSlices(), classes());
        if (auto wrong = allocateAll(allocator, node, claims)) {
            state.SkipWithError(wrong->c_str());
            return;
        }
    }
    double createUs = 0;
    Clock::duration total{};
    for (auto _ : state) {
        auto slices = manyVfSlices();
        auto deviceClasses = classes();
        const auto start = Clock::now();
        auto allocator = na::Allocator::create(std::move(slices), std::move(deviceClasses));
        const auto created = Clock::now();
        auto wrong = allocateAll(allocator, node, claims);
        const auto end = Clock::now();
        if (wrong) {
            state.SkipWithError(wrong->c_str());
            break;
        }
        state.SetIterationTime(std::chrono::duration<double>(end - created).count());
        total += end - created;
        createUs += micros(created - start);
    }
    state.counters["create_us"] = createUs / static_cast<double>(state.iterations());
    state.counters["per_claim_us"] =
        micros(total) / static_cast<double>(state.iterations() * kClaims);
}

// ----- (e): claims that cannot fit -----

void BM_Infeasible(benchmark::State& state, InfeasibleCase (*make)()) {
    static std::map<InfeasibleCase (*)(), std::string> failed;  // repetitions fail fast
    if (auto it = failed.find(make); it != failed.end()) {
        state.SkipWithError(it->second.c_str());
        return;
    }
    InfeasibleCase c = make();
    auto allocator = na::Allocator::create(std::move(c.slices), classes());
    for (const auto& allocation : c.committed)
        allocator.commit(allocation);
    const auto start = Clock::now();
    auto first = allocator.allocate(c.node, c.claims);
    const double firstMs = micros(Clock::now() - start) / 1000;
    if (auto wrong = wrongOutcome(first, na::OutcomeKind::Unsatisfiable)) {
        std::string message = *wrong + " (first call: " + std::to_string(firstMs) + " ms)";
        failed[make] = message;
        state.SkipWithError(message.c_str());
        return;
    }
    for (auto _ : state) {
        auto result = allocator.allocate(c.node, c.claims);
        benchmark::DoNotOptimize(result);
    }
    state.counters["searchSteps"] = static_cast<double>(first->searchSteps);
    state.counters["first_call_ms"] = firstMs;
}

// How (4) grows with its size: two requests of k VFs, 2k - 1 free VFs per NUMA node (k = 16 is
// (4)). Bounding each request on its own, the search visits every k-subset of a node's free VFs
// for the first request: 2 * C(2k - 1, k) - 1 steps (k = 8: 12,869; k = 16: ~6e8). A bound over
// the requests together (distinct devices) answers in one step; searchSteps shows which it is.
void BM_InfeasibleSplitScaling(benchmark::State& state) {
    InfeasibleCase c = vfsSplit(static_cast<int>(state.range(0)));
    auto allocator = na::Allocator::create(std::move(c.slices), classes());
    for (const auto& allocation : c.committed)
        allocator.commit(allocation);
    auto first = allocator.allocate(c.node, c.claims);
    if (!check(state, first, na::OutcomeKind::Unsatisfiable))
        return;
    for (auto _ : state) {
        auto result = allocator.allocate(c.node, c.claims);
        benchmark::DoNotOptimize(result);
    }
    state.counters["searchSteps"] = static_cast<double>(first->searchSteps);
}

}  // namespace

BENCHMARK(BM_GpuNicNuma)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuNicNumaCold)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuNicNumaDerived)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_GpuNicNumaDerivedCold)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DerivedVsPlain)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ThousandNodes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ThousandNodesCold)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ThousandClaims)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Infeasible, vfs_32_of_31, vfs32of31)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Infeasible, gpus_6_of_5, gpus6of5)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Infeasible, gpus_8_2_per_numa, gpusSpread)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_Infeasible, vfs_2x16_31_free, vfs2x16of31)->Unit(benchmark::kMicrosecond);

BENCHMARK(BM_InfeasibleSplitScaling)->DenseRange(2, 8)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
