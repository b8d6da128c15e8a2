// numadra::allocator on the case folders allocator-bench-cases writes (DIR/<case>/input.json and
// case.json, see allocator_cases_main.cpp), read through the same loading and decoding as
// dra-allocate (documents::load + allocator::decode), so that its times compare with upstream's
// allocator timed on the very same files by tests/upstream/bench (scripts/bench-vs-upstream.sh).
//
//   allocator_files_bench --cases=DIR [google benchmark flags]
//   NUMADRA_BENCH_CASES=DIR allocator_files_bench ...
//
// DIR is one case folder (it has case.json) or a folder of them. Each case registers
// <case>/warm and <case>/cold, both in wall time:
//  * warm: one Allocator, created (and the held claims committed) before the loop; its CEL
//    verdicts, candidate lists and node views are cached across calls, as a scheduler keeping
//    its allocator between pods would have them. One iteration = one operation of the case
//    ("together": the claims on every node; "sequence": see below).
//  * cold (manual time): create() + commit of the held claims + the operation, from copies of
//    the decoded inputs (copies and the destructor are not timed), so every CEL expression is
//    compiled and evaluated on every device it meets inside the measurement.
//  * "sequence" (1,000 claims allocated and committed in turn) cannot reuse an Allocator across
//    iterations (commits are not undone): warm times the allocations and commits on a fresh
//    Allocator, its create() excluded (allocator_bench's BM_ThousandClaims), cold includes it.
// Before timing, each case is run once with every answer checked against case.json's `expect`;
// a wrong outcome is a SkipWithError naming the node or the claim.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "numadra/allocator/allocator.hpp"
#include "numadra/allocator/decode.hpp"
#include "numadra/documents/documents.hpp"

namespace {

namespace fs = std::filesystem;
namespace na = numadra::allocator;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

struct Case {
    std::string name;
    std::string mode;  // "together" or "sequence"
    na::OutcomeKind expect = na::OutcomeKind::Allocated;
    std::vector<na::Slice> slices;
    std::vector<na::DeviceClass> classes;
    std::vector<na::Allocation> held;  // claims of the input already allocated
    std::vector<na::Node> nodes;
    std::vector<na::Claim> claims;
};

const char* kindName(na::OutcomeKind kind) {
    switch (kind) {
        case na::OutcomeKind::Allocated:
            return "allocated";
        case na::OutcomeKind::Unsatisfiable:
            return "unsatisfiable";
        case na::OutcomeKind::GaveUp:
            return "gave up";
        case na::OutcomeKind::FailedOnNode:
            return "failed on the node";
    }
    return "?";
}

// Reads one case folder; an error message on failure.
std::optional<std::string> loadCase(const fs::path& folder, Case& out) {
    std::ifstream file(folder / "case.json");
    if (!file)
        return "cannot read " + (folder / "case.json").string();
    Json description;
    try {
        description = Json::parse(file);
        out.name = description.at("name").get<std::string>();
        out.mode = description.at("mode").get<std::string>();
        const std::string expect = description.at("expect").get<std::string>();
        if (expect != "allocated" && expect != "unsatisfiable")
            return folder.string() + "/case.json: expect must be allocated or unsatisfiable";
        out.expect =
            expect == "allocated" ? na::OutcomeKind::Allocated : na::OutcomeKind::Unsatisfiable;
    } catch (const std::exception& e) {
        return folder.string() + "/case.json: " + e.what();
    }
    if (out.mode != "together" && out.mode != "sequence")
        return folder.string() + "/case.json: mode must be together or sequence";

    // As dra-allocate reads its inputs.
    auto objects = numadra::documents::load({(folder / "input.json").string()}, std::cin);
    if (!objects)
        return objects.error().message;
    auto inputs = na::decode(*objects);
    if (!inputs)
        return inputs.error().message;
    out.slices = std::move(inputs->slices);
    out.classes = std::move(inputs->classes);
    for (const na::ClaimItem& item : inputs->claims)
        if (item.claim.allocation)
            out.held.push_back(*item.claim.allocation);
    for (const auto& wanted : description.at("nodes")) {
        const std::string name = wanted.get<std::string>();
        na::Node node{name, {}};
        for (const na::Node& known : inputs->nodes)
            if (known.name == name)
                node = known;
        out.nodes.push_back(std::move(node));
    }
    for (const auto& wanted : description.at("claims")) {
        const std::string key = wanted.get<std::string>();
        bool found = false;
        for (const na::ClaimItem& item : inputs->claims)
            if (item.claim.namespace_ + "/" + item.claim.name == key && !item.claim.allocation) {
                out.claims.push_back(item.claim);
                found = true;
                break;
            }
        if (!found)
            return folder.string() + ": claim " + key + " is not an unallocated claim of the input";
    }
    if (out.nodes.empty() || out.claims.empty())
        return folder.string() + "/case.json: no nodes or no claims";
    return std::nullopt;
}

// The outcome must be the case's; otherwise the message says what came instead.
std::optional<std::string> wrongOutcome(const numadra::Result<na::Outcome>& result,
                                        na::OutcomeKind want) {
    if (!result)
        return "allocate() failed: " + result.error().message;
    if (result->kind != want)
        return std::string("expected ") + kindName(want) + ", got " + kindName(result->kind) +
               (result->explanation.empty() ? "" : ": " + result->explanation);
    return std::nullopt;
}

na::Allocator makeAllocator(std::vector<na::Slice> slices, std::vector<na::DeviceClass> classes,
                            const std::vector<na::Allocation>& held) {
    // As dra-allocate: decode() refused every invalid version.
    auto allocator =
        na::Allocator::create(std::move(slices), std::move(classes), {.versionsValid = true});
    for (const na::Allocation& allocation : held)
        allocator.commit(allocation);
    return allocator;
}

// One operation of the case. With `verify`, the first wrong outcome ends it with a message;
// `steps` adds up the search steps.
std::optional<std::string> operate(na::Allocator& allocator, const Case& c, bool verify,
                                   std::uint64_t* steps = nullptr) {
    if (c.mode == "together") {
        for (const na::Node& node : c.nodes) {
            auto result = allocator.allocate(node, c.claims);
            if (verify) {
                if (auto wrong = wrongOutcome(result, c.expect))
                    return "node " + node.name + ": " + *wrong;
                if (steps != nullptr)
                    *steps += result->searchSteps;
            }
            benchmark::DoNotOptimize(result);
        }
        return std::nullopt;
    }
    for (const na::Claim& claim : c.claims) {
        auto result = allocator.allocate(c.nodes.front(), std::span<const na::Claim>(&claim, 1));
        if (auto wrong = wrongOutcome(result, c.expect))  // always: commit needs an answer
            return "claim " + claim.namespace_ + "/" + claim.name + ": " + *wrong;
        if (steps != nullptr)
            *steps += result->searchSteps;
        if (result->kind == na::OutcomeKind::Allocated)
            allocator.commit(result->allocations.front());
    }
    return std::nullopt;
}

bool checkFirst(benchmark::State& state, const Case& c) {
    auto allocator = makeAllocator(c.slices, c.classes, c.held);
    std::uint64_t steps = 0;
    if (auto wrong = operate(allocator, c, true, &steps)) {
        state.SkipWithError(wrong->c_str());
        return false;
    }
    state.counters["searchSteps"] = static_cast<double>(steps);
    return true;
}

void warm(benchmark::State& state, const Case& c) {
    if (!checkFirst(state, c))
        return;
    if (c.mode == "sequence") {
        for (auto _ : state) {
            std::optional<na::Allocator> allocator = makeAllocator(c.slices, c.classes, c.held);
            const auto start = Clock::now();
            operate(*allocator, c, false);
            state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
            allocator.reset();
        }
        return;
    }
    auto allocator = makeAllocator(c.slices, c.classes, c.held);
    operate(allocator, c, false);  // the first call fills the caches
    for (auto _ : state) {
        // Manual time here too, so warm and cold report the same clock (wall, steady_clock).
        const auto start = Clock::now();
        operate(allocator, c, false);
        state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    }
}

void cold(benchmark::State& state, const Case& c) {
    if (!checkFirst(state, c))
        return;
    for (auto _ : state) {
        auto slices = c.slices;
        auto classes = c.classes;
        const auto start = Clock::now();
        std::optional<na::Allocator> allocator =
            makeAllocator(std::move(slices), std::move(classes), c.held);
        operate(*allocator, c, false);
        state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
        allocator.reset();  // the destructor is not part of an allocation
    }
}

std::vector<fs::path> caseFolders(const fs::path& dir) {
    if (fs::exists(dir / "case.json"))
        return {dir};
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_directory() && fs::exists(entry.path() / "case.json"))
            folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end());
    return folders;
}

}  // namespace

int main(int argc, char** argv) {
    benchmark::Initialize(&argc, argv);
    std::string dir;
    if (const char* env = std::getenv("NUMADRA_BENCH_CASES"))
        dir = env;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg.rfind("--cases=", 0) == 0)
            dir = arg.substr(8);
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 2;
    if (dir.empty()) {
        std::cerr << "allocator_files_bench: give --cases=DIR or NUMADRA_BENCH_CASES "
                     "(allocator-bench-cases DIR writes them)\n";
        return 2;
    }
    std::vector<fs::path> folders;
    try {
        folders = caseFolders(dir);
    } catch (const std::exception& e) {
        std::cerr << "allocator_files_bench: " << e.what() << "\n";
        return 2;
    }
    if (folders.empty()) {
        std::cerr << "allocator_files_bench: no case folder in " << dir << "\n";
        return 2;
    }
    std::vector<std::shared_ptr<const Case>> cases;
    for (const fs::path& folder : folders) {
        auto c = std::make_shared<Case>();
        if (auto error = loadCase(folder, *c)) {
            std::cerr << "allocator_files_bench: " << *error << "\n";
            return 2;
        }
        cases.push_back(c);
        benchmark::RegisterBenchmark((c->name + "/warm").c_str(),
                                     [c](benchmark::State& state) { warm(state, *c); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
        benchmark::RegisterBenchmark((c->name + "/cold").c_str(),
                                     [c](benchmark::State& state) { cold(state, *c); })
            ->UseManualTime()
            ->Unit(benchmark::kMicrosecond);
    }
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
