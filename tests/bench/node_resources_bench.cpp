// dra-allocate's node-resources accounting (NodeResourcesFit and DRANodeAllocatableResources, as
// the scheduler does it): the same run of pods with CPU claims on the same nodes, side by side,
// once with Node objects carrying status.allocatable (every pod's demand checked against what the
// node's other pods took) and once without it (no accounting, as before issue 17). The ratio is
// the accounting's cost.
//
// Input, generated: NODES nodes, each with 8 CPU devices (one per NUMA node, 16 CPUs each,
// mapping their consumed cpu to the node's allocatable cpu), 20 pods already bound per node
// (2 CPUs each), and PODS pods to place, each with a claim template for 2 CPUs and 1 CPU of its
// own; the whole run goes through runDraAllocate (decode, allocation, output) in-process.
//
//   build/bench/node_resources_bench [google benchmark flags]

#include <benchmark/benchmark.h>

#include <sstream>
#include <string>

#include "numadra/allocator/cli.hpp"

namespace {

constexpr int kNodes = 16;
constexpr int kPods = 400;

std::string nodeName(int n) {
    return "node-" + std::to_string(n);
}

std::string input(bool allocatable) {
    std::ostringstream out;
    out << "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: cpu}\nspec:\n"
           "  selectors:\n  - cel: {expression: device.driver == \"cpu.example.com\"}\n";
    out << "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: "
           "{name: two-cpus, namespace: default}\nspec:\n  spec:\n    devices:\n      requests:\n"
           "      - name: cpus\n        exactly:\n          deviceClassName: cpu\n"
           "          capacity: {requests: {cpu: \"2\"}}\n";
    for (int n = 0; n < kNodes; ++n) {
        out << "---\napiVersion: v1\nkind: Node\nmetadata: {name: " << nodeName(n) << "}\n";
        if (allocatable)
            out << "status: {allocatable: {cpu: \"128\", memory: 512Gi, pods: \"110\"}}\n";
        out << "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: "
            << nodeName(n)
            << "-cpus}\nspec:\n  driver: cpu.example.com\n  nodeName: " << nodeName(n)
            << "\n  pool: {name: " << nodeName(n)
            << ", generation: 1, resourceSliceCount: 1}\n  devices:\n";
        for (int d = 0; d < 8; ++d) {
            out << "  - name: cpu-numa-" << d
                << "\n    allowMultipleAllocations: true\n    capacity:\n      cpu:\n"
                   "        value: \"16\"\n        requestPolicy: {default: \"1\", validRange: "
                   "{min: \"1\", step: \"1\"}}\n    nodeAllocatableResources:\n      cpu:\n"
                   "        mapping: {capacityKey: cpu, capacityMultiplier: \"1\"}\n";
        }
        for (int p = 0; p < 20; ++p) {
            out << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: bound-" << n << "-" << p
                << ", namespace: default}\nspec:\n  nodeName: " << nodeName(n)
                << "\n  containers:\n  - name: app\n    resources: {requests: {cpu: \"2\"}}\n";
        }
    }
    for (int p = 0; p < kPods; ++p) {
        out << "---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-" << p
            << ", namespace: default}\nspec:\n  resourceClaims: [{name: cpus, "
               "resourceClaimTemplateName: two-cpus}]\n  containers:\n  - name: app\n"
               "    resources: {requests: {cpu: \"1\"}, claims: [{name: cpus}]}\n";
    }
    return out.str();
}

void run(benchmark::State& state, bool allocatable) {
    const std::string text = input(allocatable);
    for (auto _ : state) {
        std::istringstream in(text);
        std::ostringstream out, err;
        const int code = numadra::allocator::runDraAllocate({"-"}, in, out, err);
        if (code != 0) {
            state.SkipWithError(
                ("dra-allocate exited " + std::to_string(code) + ": " + err.str().substr(0, 300))
                    .c_str());
            break;
        }
        benchmark::DoNotOptimize(out.str().size());
    }
    state.counters["pods"] = kPods;
}

void BM_PodsWithNodeAllocatableAccounting(benchmark::State& state) {
    run(state, true);
}
void BM_PodsWithoutNodeAllocatable(benchmark::State& state) {
    run(state, false);
}

}  // namespace

BENCHMARK(BM_PodsWithNodeAllocatableAccounting)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PodsWithoutNodeAllocatable)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
