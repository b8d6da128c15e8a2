// Structured-parameters allocation latency: numadra::allocator::Allocator (the offline
// re-implementation of the scheduler's allocator) on the devices this driver publishes, built
// directly in C++ (no files, no decoding).
//
// Devices carry the attributes the driver publishes (slices/devices.cpp): `type` ("gpu", "nic",
// "cpu"; a VF is a "nic" with sriovRole "vf", a PF one with sriovRole "pf"), vendor, vendorID,
// deviceID, model, kernelDriver, iommuGroup, PCIe link, resource.kubernetes.io/{numaNode,
// pcieRoot,pciBusID}, socket; NICs add ifName, linkType, rdma, rdmaDevice, SR-IOV attributes and
// the PF's bandwidth capacity; VFs and PFs consume the PF's counter set ({vfs, bandwidth}), which
// lives in a slice of its own as the driver publishes it. CPU devices (one per NUMA node) are
// shareable with cpu/memory capacity. Device slices hold at most 64 devices; one pool per node
// (named after it), resourceSliceCount = the pool's slice count.
//
// Topologies (PCIe root r sits on NUMA node r % numaNodes; devices are listed in PCI address
// order, so consecutive roots alternate NUMA nodes. The driver itself sorts devices by NUMA node,
// which makes these searches easier, not harder: this listing is the adversarial one):
//  * "big" (BM_GpuNicNuma*, BM_DerivedVsPlain, BM_Infeasible/{vfs_32_of_31, gpus_6_of_5,
//    vfs_2x16_31_free}, BM_InfeasibleSplitScaling): 2 sockets, 2 NUMA nodes,
//    8 roots with 2 H100 GPUs and 1 ConnectX-7 PF (InfiniBand, 64 VFs) each: 16 GPUs (8 per NUMA
//    node, listed in pairs alternating 0,1,0,1...), 8 PFs, 512 VFs, 2 CPU devices. Slices: one
//    with the GPUs, PFs and CPUs (26 devices), one per PF with its 64 VFs, one with the 8 counter
//    sets: 10 slices, 546 devices.
//  * "many-vfs" (BM_ThousandClaims): as "big" with 2 PFs per root (one InfiniBand, one Ethernet):
//    16 GPUs, 16 PFs, 1,024 VFs (1,000 one-VF claims need 1,000 VFs; 8 PFs have 512), 2 CPUs;
//    19 slices.
//  * "spread" (BM_Infeasible/gpus_8_2_per_numa): 2 sockets, 8 NUMA nodes (NPS4), root r on NUMA
//    node r with 2 GPUs and 1 PF (64 VFs): 16 GPUs, 2 per NUMA node.
//  * "small" x 1,000 (BM_ThousandNodes): 2 NUMA nodes, 8 roots with 1 GPU and 1 PF (6 VFs) each:
//    8 GPUs, 8 PFs, 48 VFs in ONE slice of 64 devices, no counter sets (they would need a second
//    slice), no CPU devices.
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

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "numadra/allocator/allocator.hpp"

namespace {

namespace na = numadra::allocator;
using Clock = std::chrono::steady_clock;

constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kNumaNode = "resource.kubernetes.io/numaNode";
constexpr const char* kPcieRoot = "resource.kubernetes.io/pcieRoot";
constexpr const char* kPciBusId = "resource.kubernetes.io/pciBusID";
constexpr std::int64_t kBandwidth = 400'000'000'000;  // 400 Gb/s per PF

na::Quantity decimal(std::int64_t value) {
    return na::Quantity::fromInt(value, na::Quantity::Format::DecimalSI);
}
na::Quantity binary(std::int64_t value) {
    return na::Quantity::fromInt(value, na::Quantity::Format::BinarySI);
}

std::string hex2(int value) {
    char text[16];
    std::snprintf(text, sizeof text, "%02x", value);
    return text;
}

std::string pciAddress(int bus, int device, int function) {
    return "0000:" + hex2(bus) + ":" + hex2(device) + "." + std::to_string(function);
}

// As slices/devices.cpp names devices: kind-address with ':' and '.' replaced by '-'.
std::string deviceName(const std::string& kind, const std::string& address) {
    std::string name = kind + "-" + address;
    for (char& c : name)
        if (c == ':' || c == '.')
            c = '-';
    return name;
}

// ----- the machine shapes -----

struct Shape {
    int numaNodes = 2;
    int roots = 8;
    int gpusPerRoot = 2;
    int nicsPerRoot = 1;
    int vfsPerNic = 64;
    bool counterSets = true;  // publish the PFs' counter sets (a slice of their own)
    bool cpus = true;
    bool vfSlicePerNic = true;  // else every device in one slice
    int cpusPerNuma = 64;

    int numaOf(int root) const { return root % numaNodes; }
    int socketOf(int numa) const { return numa / std::max(1, numaNodes / 2); }
    int rootBus(int root) const { return 0x10 + 0x18 * root; }
    // NIC n of a root: even ones InfiniBand (compute fabric), odd ones Ethernet (storage).
    static const char* linkType(int nic) { return nic % 2 == 0 ? "infiniband" : "ethernet"; }
};

void pciAttributes(na::Device& device, const Shape& shape, int root, const std::string& address,
                   int iommuGroup) {
    auto& a = device.attributes;
    const int numa = shape.numaOf(root);
    a["iommuGroup"] = std::int64_t{iommuGroup};
    a["pcieMaxLinkSpeed"] = std::string("32.0GT/s");
    a["pcieMaxLinkWidth"] = std::int64_t{16};
    a[kPciBusId] = address;
    a[kPcieRoot] = "pci0000:" + hex2(shape.rootBus(root));
    a[kNumaNode] = std::int64_t{numa};
    a["socket"] = std::int64_t{shape.socketOf(numa)};
}

na::Device gpuDevice(const Shape& shape, int root, int bus, int iommuGroup) {
    const std::string address = pciAddress(bus, 0, 0);
    na::Device device;
    device.name = deviceName("gpu", address);
    auto& a = device.attributes;
    a["type"] = std::string("gpu");
    a["vendor"] = std::string("NVIDIA Corporation");
    a["vendorID"] = std::string("0x10de");
    a["deviceID"] = std::string("0x2330");
    a["model"] = std::string("GH100 [H100 SXM5 80GB]");
    a["kernelDriver"] = std::string("nvidia");
    pciAttributes(device, shape, root, address, iommuGroup);
    return device;
}

void nicAttributes(na::Device& device, int nicIndex, int ifIndex, int rdmaIndex) {
    auto& a = device.attributes;
    a["type"] = std::string("nic");
    a["vendor"] = std::string("Mellanox Technologies");
    a["vendorID"] = std::string("0x15b3");
    a["kernelDriver"] = std::string("mlx5_core");
    a["ifName"] = "ens" + std::to_string(ifIndex) + "np0";
    a["linkType"] = std::string(Shape::linkType(nicIndex));
    a["rdma"] = true;
    a["rdmaDevice"] = "mlx5_" + std::to_string(rdmaIndex);
}

std::string counterSetName(const std::string& pfAddress) {
    return deviceName("pf", pfAddress);
}

na::Device pfDevice(const Shape& shape, int root, int nic, const std::string& address,
                    int iommuGroup, int pfIndex) {
    na::Device device;
    device.name = deviceName("nic", address);
    nicAttributes(device, nic, pfIndex, pfIndex);
    auto& a = device.attributes;
    a["deviceID"] = std::string("0x1021");
    a["model"] = std::string("MT2910 Family [ConnectX-7]");
    a["sriovRole"] = std::string("pf");
    a["sriovTotalVFs"] = std::int64_t{std::max(shape.vfsPerNic, 8)};
    a["sriovNumVFs"] = std::int64_t{shape.vfsPerNic};
    pciAttributes(device, shape, root, address, iommuGroup);
    device.capacity["bandwidth"] = na::Capacity{decimal(kBandwidth), std::nullopt};
    if (shape.counterSets && shape.vfsPerNic > 0) {
        na::CounterConsumption use;
        use.counterSet = counterSetName(address);
        use.counters["vfs"] = na::CounterUse{decimal(shape.vfsPerNic), std::nullopt};
        use.counters["bandwidth"] = na::CounterUse{decimal(kBandwidth), std::nullopt};
        device.consumesCounters.push_back(std::move(use));
    }
    return device;
}

na::Device vfDevice(const Shape& shape, int root, int nic, const std::string& pfAddress, int bus,
                    int vf, int iommuGroup, int pfIndex, int* rdmaIndex) {
    const int devfn = 2 + vf;  // VFs follow the PF at function 0 (and its sibling at 1)
    const std::string address = pciAddress(bus, devfn / 8, devfn % 8);
    na::Device device;
    device.name = deviceName("nic", address);
    nicAttributes(device, nic, 1000 + pfIndex * 100 + vf, (*rdmaIndex)++);
    auto& a = device.attributes;
    a["deviceID"] = std::string("0x101e");
    a["model"] = std::string("ConnectX Family mlx5Gen Virtual Function");
    a["sriovRole"] = std::string("vf");
    a["pfPciBusID"] = pfAddress;
    a["vfIndex"] = std::int64_t{vf};
    pciAttributes(device, shape, root, address, iommuGroup);
    if (shape.counterSets) {
        na::CounterConsumption use;
        use.counterSet = counterSetName(pfAddress);
        use.counters["vfs"] = na::CounterUse{decimal(1), std::nullopt};
        device.consumesCounters.push_back(std::move(use));
    }
    return device;
}

na::Device cpuDevice(const Shape& shape, int numa) {
    na::Device device;
    device.name = "cpu-numa-" + std::to_string(numa);
    device.allowMultipleAllocations = true;
    auto& a = device.attributes;
    a["type"] = std::string("cpu");
    a[kNumaNode] = std::int64_t{numa};
    a["socket"] = std::int64_t{shape.socketOf(numa)};
    const int first = numa * shape.cpusPerNuma;
    a["cpus"] = std::to_string(first) + "-" + std::to_string(first + shape.cpusPerNuma - 1);
    na::RequestPolicy cpuPolicy;
    cpuPolicy.defaultValue = decimal(1);
    cpuPolicy.validRange = na::CapacityRange{decimal(1), std::nullopt, decimal(1)};
    device.capacity["cpu"] = na::Capacity{decimal(shape.cpusPerNuma), cpuPolicy};
    na::RequestPolicy memoryPolicy;
    memoryPolicy.defaultValue = decimal(0);
    memoryPolicy.validRange = na::CapacityRange{decimal(0), std::nullopt, binary(1 << 20)};
    device.capacity["memory"] = na::Capacity{binary(std::int64_t{256} << 30), memoryPolicy};
    return device;
}

// One node's pool: its slices, in the order the driver would name them.
std::vector<na::Slice> nodeSlices(const std::string& node, const Shape& shape) {
    std::vector<na::Device> main;
    std::vector<std::vector<na::Device>> vfSlices;
    std::vector<na::CounterSet> sets;
    int iommuGroup = 10;
    int pfIndex = 0;
    int rdmaIndex = 0;
    for (int root = 0; root < shape.roots; ++root) {
        int bus = shape.rootBus(root) + 1;
        for (int g = 0; g < shape.gpusPerRoot; ++g)
            main.push_back(gpuDevice(shape, root, bus++, iommuGroup++));
        for (int n = 0; n < shape.nicsPerRoot; ++n, ++bus, ++pfIndex) {
            const std::string pfAddress = pciAddress(bus, 0, 0);
            main.push_back(pfDevice(shape, root, n, pfAddress, iommuGroup++, rdmaIndex++));
            std::vector<na::Device> vfs;
            for (int vf = 0; vf < shape.vfsPerNic; ++vf)
                vfs.push_back(vfDevice(shape, root, n, pfAddress, bus, vf, iommuGroup++, pfIndex,
                                       &rdmaIndex));
            if (shape.vfSlicePerNic)
                vfSlices.push_back(std::move(vfs));
            else
                for (auto& vf : vfs)
                    main.push_back(std::move(vf));
            if (shape.counterSets && shape.vfsPerNic > 0) {
                na::CounterSet set;
                set.name = counterSetName(pfAddress);
                set.counters["vfs"] = na::SharedCounter{decimal(shape.vfsPerNic), std::nullopt};
                set.counters["bandwidth"] = na::SharedCounter{decimal(kBandwidth), std::nullopt};
                sets.push_back(std::move(set));
            }
        }
    }
    if (shape.cpus)
        for (int numa = 0; numa < shape.numaNodes; ++numa)
            main.push_back(cpuDevice(shape, numa));

    std::vector<na::Slice> slices;
    auto newSlice = [&](const std::string& suffix) -> na::Slice& {
        na::Slice slice;
        slice.name = node + "-" + kDriver + "-" + suffix;
        slice.driver = kDriver;
        slice.pool = na::Pool{node, 1, 0};
        slice.nodeName = node;
        slices.push_back(std::move(slice));
        return slices.back();
    };
    for (size_t i = 0; i < sets.size(); i += 8) {  // kCounterSetsPerSlice
        na::Slice& slice = newSlice("counters-" + std::to_string(i / 8));
        for (size_t k = i; k < std::min(sets.size(), i + 8); ++k)
            slice.sharedCounters.push_back(sets[k]);
    }
    auto addDevices = [&](std::vector<na::Device>& devices, int& number) {
        for (size_t i = 0; i < devices.size(); i += 64) {
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, "%02d", number++);
            na::Slice& slice = newSlice(suffix);
            for (size_t k = i; k < std::min(devices.size(), i + 64); ++k)
                slice.devices.push_back(std::move(devices[k]));
        }
    };
    int number = 0;
    addDevices(main, number);
    for (auto& vfs : vfSlices)
        addDevices(vfs, number);
    for (na::Slice& slice : slices)
        slice.pool.resourceSliceCount = static_cast<std::int64_t>(slices.size());
    return slices;
}

// ----- classes and claims -----

std::string typeSelector(const std::string& rest) {
    return std::string("device.driver == \"") + kDriver + "\" && device.attributes[\"" + kDriver +
           "\"].type == " + rest;
}

std::vector<na::DeviceClass> deviceClasses() {
    const std::string attr = std::string("device.attributes[\"") + kDriver + "\"].";
    auto make = [](std::string name, std::string selector) {
        na::DeviceClass c;
        c.name = std::move(name);
        c.selectors.push_back(std::move(selector));
        return c;
    };
    return {
        make("gpu", typeSelector("\"gpu\"")),
        make("nic", typeSelector("\"nic\" && " + attr + "sriovRole == \"pf\"")),
        make("vf", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\"")),
        make("vf-ib", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\" && " + attr +
                                   "linkType == \"infiniband\"")),
        make("vf-eth", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\" && " + attr +
                                    "linkType == \"ethernet\"")),
        make("cpu", typeSelector("\"cpu\"")),
    };
}

na::Request request(std::string name, std::string deviceClass, std::int64_t count,
                    std::vector<std::string> selectors = {}, bool derivedNuma = false) {
    na::DeviceRequestSpec spec;
    spec.deviceClassName = std::move(deviceClass);
    spec.count = count;
    spec.selectors = std::move(selectors);
    if (derivedNuma)
        spec.derivedAttributes.push_back(
            {"numa", "device.attributes[\"resource.kubernetes.io\"].numaNode"});
    na::Request r;
    r.name = std::move(name);
    r.exactly = std::move(spec);
    return r;
}

na::Claim claim(std::string name, std::vector<na::Request> requests,
                std::optional<std::string> matchAttribute = std::nullopt) {
    na::Claim c;
    c.namespace_ = "default";
    c.uid = "uid-" + name;
    c.name = std::move(name);
    if (matchAttribute) {
        na::Constraint constraint;
        for (const auto& r : requests)
            constraint.requests.push_back(r.name);
        constraint.matchAttribute = std::move(matchAttribute);
        c.constraints.push_back(std::move(constraint));
    }
    c.requests = std::move(requests);
    return c;
}

// gpu count N + nic (PF) count 1 on one NUMA node; `derived`: through the derived attribute.
na::Claim gpuNicClaim(std::int64_t gpus, bool derived) {
    return claim("gpu-nic",
                 {request("gpu", "gpu", gpus, {}, derived), request("nic", "nic", 1, {}, derived)},
                 derived ? std::string("numa") : std::string(kNumaNode));
}

// ----- fixtures -----

const std::vector<na::Slice>& bigSlices() {
    static const auto slices = nodeSlices("big", Shape{});
    return slices;
}

const std::vector<na::DeviceClass>& classes() {
    static const auto list = deviceClasses();
    return list;
}

const char* kindName(na::OutcomeKind kind) {
    switch (kind) {
        case na::OutcomeKind::Allocated:
            return "Allocated";
        case na::OutcomeKind::Unsatisfiable:
            return "Unsatisfiable";
        case na::OutcomeKind::GaveUp:
            return "GaveUp";
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

constexpr int kNodes = 1000;

struct Cluster {
    std::vector<na::Slice> slices;
    std::vector<na::Node> nodes;
};

const Cluster& cluster() {
    static const Cluster instance = [] {
        Cluster c;
        Shape shape;
        shape.gpusPerRoot = 1;
        shape.vfsPerNic = 6;
        shape.counterSets = false;
        shape.cpus = false;
        shape.vfSlicePerNic = false;
        c.slices.reserve(kNodes);
        for (int i = 0; i < kNodes; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "node-%04d", i);
            for (auto& slice : nodeSlices(name, shape))
                c.slices.push_back(std::move(slice));
            c.nodes.push_back(na::Node{name, {}});
        }
        return c;
    }();
    return instance;
}

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

void BM_ThousandNodes(benchmark::State& state) {
    const Cluster& c = cluster();
    const std::vector<na::Claim> claims{gpuNicClaim(2, false)};
    auto allocator = na::Allocator::create(c.slices, classes());
    if (auto wrong = allocateEverywhere(allocator, c.nodes, claims, true)) {
        state.SkipWithError(wrong->c_str());
        return;
    }
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
    {
        auto allocator = na::Allocator::create(c.slices, classes());
        if (auto wrong = allocateEverywhere(allocator, c.nodes, claims, true)) {
            state.SkipWithError(wrong->c_str());
            return;
        }
    }
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

constexpr int kClaims = 1000;

const std::vector<na::Slice>& manyVfSlices() {
    static const auto slices = [] {
        Shape shape;
        shape.nicsPerRoot = 2;
        return nodeSlices("many-vfs", shape);
    }();
    return slices;
}

const std::vector<na::Claim>& thousandClaims() {
    static const auto list = [] {
        std::vector<na::Claim> claims;
        for (int i = 0; i < kClaims; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "vf-%04d", i);
            claims.push_back(claim(name, {request("vf", i % 2 == 0 ? "vf-ib" : "vf-eth", 1)}));
        }
        return claims;
    }();
    return list;
}

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

struct InfeasibleCase {
    na::Node node;
    std::vector<na::Slice> slices;
    std::vector<na::Allocation> committed;  // devices already in use
    std::vector<na::Claim> claims;
};

na::Allocation inUse(const std::string& pool, const std::vector<std::string>& devices) {
    na::Allocation allocation;
    for (const auto& device : devices) {
        na::DeviceResult result;
        result.request = "busy";
        result.driver = kDriver;
        result.pool = pool;
        result.device = device;
        allocation.results.push_back(std::move(result));
    }
    return allocation;
}

bool attribute(const na::Device& device, const char* key, const std::string& value) {
    auto it = device.attributes.find(key);
    if (it == device.attributes.end())
        return false;
    const auto* text = std::get_if<std::string>(&it->second);
    return text != nullptr && *text == value;
}

// (1) 32 VFs of one PF where only 31 match the request's selector.
InfeasibleCase vfs32of31() {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::string pf;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices)
            if (pf.empty() && attribute(device, "sriovRole", "pf"))
                pf = std::get<std::string>(device.attributes.at(kPciBusId));
    const std::string attr = std::string("device.attributes[\"") + kDriver + "\"].";
    c.claims.push_back(claim(
        "vfs-32", {request("vf", "vf", 32,
                           {attr + "pfPciBusID == \"" + pf + "\" && " + attr + "vfIndex < 31"})}));
    return c;
}

// (2) 6 GPUs on a node where 11 of the 16 are in use: 5 free.
InfeasibleCase gpus6of5() {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::vector<std::string> busy;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices)
            if (busy.size() < 11 && attribute(device, "type", "gpu"))
                busy.push_back(device.name);
    c.committed.push_back(inUse("big", busy));
    c.claims.push_back(claim("gpus-6", {request("gpu", "gpu", 6)}));
    return c;
}

// (3) The claim of BM_GpuNicNuma (8 GPUs + 1 NIC, one NUMA node) where no NUMA node holds 8
// GPUs: 16 GPUs, 2 per NUMA node over 8 NUMA nodes.
InfeasibleCase gpusSpread() {
    Shape shape;
    shape.numaNodes = 8;
    InfeasibleCase c{{"spread", {}}, nodeSlices("spread", shape), {}, {}};
    c.claims.push_back(gpuNicClaim(8, false));
    return c;
}

// Two requests of `count` VFs each on one NUMA node where each NUMA node has 2 * count - 1
// free VFs (the others of its 256 are in use; the free ones are the last 8 of each PF in listing
// order, as many as needed).
InfeasibleCase vfsSplit(int count) {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::map<std::int64_t, int> freeLeft{{0, 2 * count - 1}, {1, 2 * count - 1}};
    std::vector<std::string> busy;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices) {
            if (!attribute(device, "sriovRole", "vf"))
                continue;
            const auto numa = std::get<std::int64_t>(device.attributes.at(kNumaNode));
            const auto index = std::get<std::int64_t>(device.attributes.at("vfIndex"));
            if (index >= 56 && freeLeft[numa] > 0)
                --freeLeft[numa];
            else
                busy.push_back(device.name);
        }
    c.committed.push_back(inUse("big", busy));
    c.claims.push_back(claim("vfs-2x" + std::to_string(count),
                             {request("vf-a", "vf", count), request("vf-b", "vf", count)},
                             std::string(kNumaNode)));
    return c;
}

// (4) Two requests of 16 VFs each on one NUMA node where each NUMA node has 31 free VFs (the
// other 225 of its 256 are in use).
InfeasibleCase vfs2x16of31() {
    return vfsSplit(16);
}

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
