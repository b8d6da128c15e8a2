// Full discovery + slice build on the largest mocked machine (2 sockets, 8 NUMA nodes, 8 GPUs,
// 8 NICs with 64 VFs each). Run: build/bin/discovery_bench --benchmark_repetitions=10
//   --benchmark_report_aggregates_only=true

#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <string>

#include "numadra/api/resource_slice.hpp"
#include "numadra/api/slice_writer.hpp"
#include "numadra/api/yaml.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/probe/pci_ids.hpp"
#include "numadra/slices/builder.hpp"

namespace {

const std::string kBigMachine = std::string(NUMADRA_GENERATED_SYSFS) + "/big-2s-8n/sys";

numadra::slices::SliceOptions sliceOptions(bool list) {
    numadra::slices::SliceOptions options;
    // One device per VF: the most a machine publishes, the figures below were always measured so.
    options.vfLayout = numadra::slices::VfLayout::Individual;
    options.nodeName = "bench-node";
    options.numaForm =
        list ? numadra::topology::NumaForm::List : numadra::topology::NumaForm::Scalar;
    return options;
}

void reportPeakRss(benchmark::State& state) {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    state.counters["peak_rss_MiB"] = static_cast<double>(usage.ru_maxrss) / 1024.0;
}

// What the daemon does on every rescan: the ID database stays loaded for the process.
void BM_DiscoverAndBuildSlices(benchmark::State& state) {
    numadra::discovery::PciNameDatabase names;
    const auto options = sliceOptions(state.range(0) != 0);
    size_t devices = 0;
    for (auto _ : state) {
        auto machine = numadra::discovery::discover({kBigMachine, &names, nullptr});
        if (!machine) {
            state.SkipWithError(machine.error().message.c_str());
            return;
        }
        auto slices = numadra::slices::buildResourceSlices(*machine, options);
        benchmark::DoNotOptimize(slices);
        devices = 0;
        for (const auto& slice : slices.value())
            devices += slice.devices.size();
    }
    state.counters["devices"] = static_cast<double>(devices);
    reportPeakRss(state);
}
BENCHMARK(BM_DiscoverAndBuildSlices)
    ->Arg(0)
    ->Arg(1)
    ->ArgName("numa_list")
    ->Unit(benchmark::kMillisecond);

void BM_DiscoverOnly(benchmark::State& state) {
    numadra::discovery::PciNameDatabase names;
    for (auto _ : state) {
        auto machine = numadra::discovery::discover({kBigMachine, &names, nullptr});
        benchmark::DoNotOptimize(machine);
    }
}
BENCHMARK(BM_DiscoverOnly)->Unit(benchmark::kMillisecond);

// Discovery as numa-probe runs it: no name database (numa-probe names the functions afterwards,
// BM_NamePciFunctions), so this is the scan alone: its system calls and its parsing.
void BM_DiscoverWithoutNames(benchmark::State& state) {
    size_t functions = 0;
    for (auto _ : state) {
        auto machine = numadra::discovery::discover({kBigMachine, nullptr, nullptr});
        functions = machine.ok() ? machine->pci.size() : 0;
        benchmark::DoNotOptimize(machine);
    }
    state.counters["pci_functions"] = static_cast<double>(functions);
}
BENCHMARK(BM_DiscoverWithoutNames)->Unit(benchmark::kMillisecond);

void BM_BuildSlicesOnly(benchmark::State& state) {
    numadra::discovery::PciNameDatabase names;
    auto machine = numadra::discovery::discover({kBigMachine, &names, nullptr});
    const auto options = sliceOptions(true);
    for (auto _ : state) {
        auto slices = numadra::slices::buildResourceSlices(machine.value(), options);
        benchmark::DoNotOptimize(slices);
    }
}
BENCHMARK(BM_BuildSlicesOnly)->Unit(benchmark::kMillisecond);

void BM_SlicesToJson(benchmark::State& state) {
    numadra::discovery::PciNameDatabase names;
    auto machine = numadra::discovery::discover({kBigMachine, &names, nullptr});
    auto slices = numadra::slices::buildResourceSlices(machine.value(), sliceOptions(true));
    for (auto _ : state) {
        std::string json = numadra::api::toJsonList(slices.value()).dump();
        benchmark::DoNotOptimize(json);
    }
}
BENCHMARK(BM_SlicesToJson)->Unit(benchmark::kMillisecond);

// The same slices through the streaming writer (common/api/slice_writer.hpp): the same bytes, no
// DOM.
void BM_SlicesToJsonWriter(benchmark::State& state) {
    auto machine = numadra::discovery::discover({kBigMachine, nullptr, nullptr});
    auto slices = numadra::slices::buildResourceSlices(machine.value(), sliceOptions(true));
    for (auto _ : state) {
        std::string json;
        numadra::api::appendJsonList(json, slices.value(), numadra::api::JsonLayout::Compact);
        benchmark::DoNotOptimize(json);
    }
}
BENCHMARK(BM_SlicesToJsonWriter)->Unit(benchmark::kMillisecond);

// numa-probe's YAML before the writer (a DOM per slice, then common/api/yaml.cpp) and after.
void BM_SlicesToYamlDom(benchmark::State& state) {
    auto machine = numadra::discovery::discover({kBigMachine, nullptr, nullptr});
    auto slices = numadra::slices::buildResourceSlices(machine.value(), sliceOptions(true));
    for (auto _ : state) {
        std::vector<numadra::api::Json> documents;
        for (const auto& slice : slices.value())
            documents.push_back(numadra::api::toJson(slice));
        std::string yaml = numadra::api::toYamlStream(documents);
        benchmark::DoNotOptimize(yaml);
    }
}
BENCHMARK(BM_SlicesToYamlDom)->Unit(benchmark::kMillisecond);

void BM_SlicesToYamlWriter(benchmark::State& state) {
    auto machine = numadra::discovery::discover({kBigMachine, nullptr, nullptr});
    auto slices = numadra::slices::buildResourceSlices(machine.value(), sliceOptions(true));
    for (auto _ : state) {
        std::string yaml;
        numadra::api::appendYamlStream(yaml, slices.value());
        benchmark::DoNotOptimize(yaml);
    }
}
BENCHMARK(BM_SlicesToYamlWriter)->Unit(benchmark::kMillisecond);

// numa-probe's names: one pass over pci.ids for the machine's ids (node/probe/pci_ids.hpp), against
// BM_LoadPciNameDatabase below.
void BM_NamePciFunctions(benchmark::State& state) {
    const auto machine = numadra::discovery::discover({kBigMachine, nullptr, nullptr});
    for (auto _ : state) {
        auto named = machine.value();
        numadra::probe::namePciFunctions(named);
        benchmark::DoNotOptimize(named);
    }
}
BENCHMARK(BM_NamePciFunctions)->Unit(benchmark::kMillisecond);

// Once per process: the cost of the first name lookup (parsing pci.ids).
void BM_LoadPciNameDatabase(benchmark::State& state) {
    for (auto _ : state) {
        numadra::discovery::PciNameDatabase names;
        benchmark::DoNotOptimize(names.vendorName(0x10de));
    }
}
BENCHMARK(BM_LoadPciNameDatabase)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
