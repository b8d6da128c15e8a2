#pragma once
// The ResourceSlices this node publishes: devices with stable names, the standard topology
// attributes, driver attributes, capacities and shared counter sets, split into slices within
// the API's limits. Same machine + options -> byte-identical slices.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/common/result.hpp"
#include "numadra/discovery/machine.hpp"
#include "numadra/topology/attributes.hpp"

namespace numadra::slices {

inline constexpr const char* kDefaultDriverName = "numa.dra.dev";

// How SR-IOV virtual functions are published.
enum class VfLayout {
    // One device per PF and VF kernel driver, shared by the claims that get its VFs
    // (allowMultipleAllocations; capacity `vfs`, one per claim, and `<driver>/bandwidth`); the
    // daemon picks the concrete VF at Prepare. The scheduler looks at one device instead of every
    // VF, so a node with 512 VFs costs it what one with 16 devices does.
    Pooled,
    // One device per VF (attributes of that VF: pciBusID, vfIndex, ifName, ...), for claims that
    // must select one VF by what only it has.
    Individual,
};

struct SliceOptions {
    std::string driverName = kDefaultDriverName;
    std::string nodeName;  // also the pool name
    topology::NumaForm numaForm = topology::NumaForm::Scalar;
    // Alpha DRA Shared Consumable Capacity (KEP-5941): request-driven VF bandwidth and
    // per-NUMA CPU/memory counter sets consumed by per-PCIe-root CPU devices.
    bool sharedConsumableCapacity = false;
    // Also publish dra.net/numaNode and dra.cpu/numaNodeID, names older drivers used.
    bool legacyNumaAttributes = false;
    // Devices may get taints (health): every slice keeps to the 64-device limit of tainted
    // slices, so a taint coming or going changes one slice instead of re-splitting the pool.
    bool devicesMayBeTainted = false;
    // DRANodeAllocatableResources (1.37): CPU devices declare that the CPUs and memory a claim
    // consumes are the node's allocatable cpu and memory, so the scheduler stops offering them
    // to ordinary pods and the kubelet sizes the pod's cgroup with them.
    bool nodeAllocatableResources = false;
    VfLayout vfLayout = VfLayout::Pooled;
    std::int64_t generation = 1;
};

// API limits (resource.k8s.io/v1) the builder respects.
struct SliceLimits {
    static constexpr size_t kDevicesPerSlice = 128;
    static constexpr size_t kDevicesPerSliceAdvanced = 64;  // taints, counters, list attributes
    static constexpr size_t kCounterSetsPerSlice = 8;
    static constexpr size_t kCountersPerSet = 32;
    static constexpr size_t kConsumptionsPerDevice = 2;
    static constexpr size_t kAttributesAndCapacitiesPerDevice = 32;
    static constexpr size_t kAttributeValuesPerDevice = 48;
    static constexpr size_t kStringValueLength = 64;
    static constexpr size_t kTaintsPerDevice = 16;
};

Status validateOptions(const SliceOptions& options);

// --vf-layout: "pooled" or "individual".
Result<VfLayout> parseVfLayout(const std::string& text);

// Devices and counter sets for the machine, in preference order (what first-fit should pick
// first comes first).
struct PoolContent {
    std::vector<api::Device> devices;
    std::vector<api::CounterSet> counterSets;
};
PoolContent buildPoolContent(const discovery::Machine& machine, const SliceOptions& options);

// Splits a pool into slices: counter sets first (8 per slice), then devices in order, 128 per
// slice or 64 once a slice holds a device with taints/counters/list attributes. A pool with
// nothing still gets one empty slice.
Result<std::vector<api::ResourceSlice>> splitIntoSlices(PoolContent content,
                                                        const SliceOptions& options);

// `taints`: device name -> the taint it carries (unhealthy devices).
Result<std::vector<api::ResourceSlice>> buildResourceSlices(
    const discovery::Machine& machine, const SliceOptions& options,
    const std::map<std::string, api::DeviceTaint>& taints = {});

// Checks one device against the per-device API limits and name rules.
Status validateDevice(const api::Device& device);

// Deterministic slice name "<node>-<driver>-<index as 5 hex digits>", so slices of a pool sort
// in preference order and per node in `kubectl get resourceslices`.
std::string sliceName(const std::string& nodeName, const std::string& driverName, size_t index);

// The name a PCI function is published under ("gpu-0000-3b-00-0"), stable across scans.
std::string deviceName(const discovery::PciFunction& function);

// VfLayout::Pooled: the VFs behind the VF pool device named `deviceName`, in the PF's order
// (empty when no PF of the machine has a pool of that name). Prepare picks one of them.
std::vector<const discovery::PciFunction*> vfsOfPool(const discovery::Machine& machine,
                                                     const std::string& deviceName);

bool isDnsLabel(const std::string& name);
bool isDnsSubdomain(const std::string& name, size_t maxLength = 253);

}  // namespace numadra::slices
