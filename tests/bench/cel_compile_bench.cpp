// What compiling a selector costs, step by step: parsing with the declaration checks alone,
// adding cel-go's type checker (upstream's declarations), and the whole of
// Expression::compileSelector (type check, result type, constant conversions, static cost
// estimate). The compile-time checks issue 15 added are the difference between the rows.
// docs/PERFORMANCE.md "Compiling a selector" has the numbers and the command.

#include <benchmark/benchmark.h>

#include <array>
#include <string_view>

#include "numadra/cel/cel.hpp"
#include "numadra/dracel/device.hpp"

namespace {

using numadra::dracel::ExpressionKind;

constexpr std::array<std::string_view, 3> kSelectors = {
    // a class: one field
    R"(device.driver == "gpu.example.com")",
    // a request: attributes, capacity and a library call
    R"(device.attributes["gpu.example.com"].model == "h100" && )"
    R"(device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0)",
    // a comprehension over a list attribute
    R"(device.attributes["nic.example.com"].tags.exists(t, t.startsWith("rdma")))",
};

numadra::cel::CompileOptions options(bool typed) {
    numadra::cel::CompileOptions compile{
        numadra::dracel::deviceDeclarations(ExpressionKind::Selector)};
    if (!typed)
        compile.declarations->types = nullptr;
    return compile;
}

void ParseAndDeclarationChecks(benchmark::State& state) {
    const auto compile = options(false);
    const std::string_view selector = kSelectors[static_cast<std::size_t>(state.range(0))];
    for (auto _ : state)
        benchmark::DoNotOptimize(numadra::cel::Program::compile(selector, compile));
}

void WithTypeCheck(benchmark::State& state) {
    const auto compile = options(true);
    const std::string_view selector = kSelectors[static_cast<std::size_t>(state.range(0))];
    for (auto _ : state)
        benchmark::DoNotOptimize(numadra::cel::Program::compile(selector, compile));
}

void CompileSelector(benchmark::State& state) {
    const std::string_view selector = kSelectors[static_cast<std::size_t>(state.range(0))];
    for (auto _ : state)
        benchmark::DoNotOptimize(numadra::dracel::Expression::compileSelector(selector));
}

BENCHMARK(ParseAndDeclarationChecks)->DenseRange(0, 2);
BENCHMARK(WithTypeCheck)->DenseRange(0, 2);
BENCHMARK(CompileSelector)->DenseRange(0, 2);

}  // namespace

BENCHMARK_MAIN();
