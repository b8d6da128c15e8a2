#pragma once
// The inputs of the allocator benchmarks, built directly as numadra::allocator model objects:
// the devices this driver publishes, the DeviceClasses, the claims. allocator_bench times them
// in memory; allocator-bench-cases writes the same objects as resource.k8s.io/v1 JSON so that
// allocator_files_bench (ours) and upstream-allocator-bench (Kubernetes' own allocator) time the
// very same inputs (docs/PERFORMANCE.md, issues 6 and 15).
//
// Devices carry the attributes the driver publishes (node/slices/devices.cpp): `type` ("gpu",
// "nic", "cpu"; a VF is a "nic" with sriovRole "vf", a PF one with sriovRole "pf"), vendor,
// vendorID, deviceID, model, kernelDriver, iommuGroup, PCIe link, resource.kubernetes.io/{numaNode,
// pcieRoot,pciBusID}, socket; NICs add ifName, linkType, rdma, rdmaDevice, SR-IOV attributes and
// the PF's bandwidth capacity; VFs and PFs consume the PF's counter set ({vfs, bandwidth}), which
// lives in a slice of its own as the driver publishes it. CPU devices (one per NUMA node) are
// shareable with cpu/memory capacity. Device slices hold at most 64 devices; one pool per node
// (named after it), resourceSliceCount = the pool's slice count.
//
// Topologies (PCIe root r sits on NUMA node r % numaNodes; devices are listed in PCI address
// order, so consecutive roots alternate NUMA nodes. The driver itself sorts devices by NUMA node,
// which makes these searches easier, not harder: this listing is the adversarial one):
//  * "big" (bigSlices()): 2 sockets, 2 NUMA nodes, 8 roots with 2 H100 GPUs and 1 ConnectX-7 PF
//    (InfiniBand, 64 VFs) each: 16 GPUs (8 per NUMA node, listed in pairs alternating
//    0,1,0,1...), 8 PFs, 512 VFs, 2 CPU devices. Slices: one with the GPUs, PFs and CPUs (26
//    devices), one per PF with its 64 VFs, one with the 8 counter sets: 10 slices, 546 devices.
//  * "many-vfs" (manyVfSlices()): as "big" with 2 PFs per root (one InfiniBand, one Ethernet):
//    16 GPUs, 16 PFs, 1,024 VFs (1,000 one-VF claims need 1,000 VFs; 8 PFs have 512), 2 CPUs;
//    19 slices.
//  * "spread" (gpusSpread()): 2 sockets, 8 NUMA nodes (NPS4), root r on NUMA node r with 2 GPUs
//    and 1 PF (64 VFs): 16 GPUs, 2 per NUMA node.
//  * "small" x 1,000 (cluster()): 2 NUMA nodes, 8 roots with 1 GPU and 1 PF (6 VFs) each: 8 GPUs,
//    8 PFs, 48 VFs in ONE slice of 64 devices, no counter sets (they would need a second slice),
//    no CPU devices.
//
// The claim of gpuNicClaim(8, false): request `gpu` (class gpu) count 8, request `nic` (class
// nic: PFs) count 1, matchAttribute resource.kubernetes.io/numaNode over both. Answer: the 8 GPUs
// and the first PF of NUMA node 0. gpuNicClaim(8, true): the same with a derived attribute `numa`
// (device.attributes["resource.kubernetes.io"].numaNode) on both requests and matchAttribute
// `numa`.

#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "numadra/allocator/model.hpp"

namespace numadra::bench {

namespace na = numadra::allocator;

inline constexpr const char* kDriver = "numa.dra.dev";
inline constexpr const char* kNumaNode = "resource.kubernetes.io/numaNode";
inline constexpr const char* kPcieRoot = "resource.kubernetes.io/pcieRoot";
inline constexpr const char* kPciBusId = "resource.kubernetes.io/pciBusID";

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

// One node's pool: its slices, in the order the driver would name them.
std::vector<na::Slice> nodeSlices(const std::string& node, const Shape& shape);

// ----- classes and claims -----

// gpu, nic (PFs), vf, vf-ib, vf-eth, cpu: each a CEL selector on the driver and `type` (and
// sriovRole / linkType for NICs).
std::vector<na::DeviceClass> deviceClasses();

na::Request request(std::string name, std::string deviceClass, std::int64_t count,
                    std::vector<std::string> selectors = {}, bool derivedNuma = false);

// A claim in namespace "default" with uid "uid-<name>"; `matchAttribute`: one constraint over
// every request.
na::Claim claim(std::string name, std::vector<na::Request> requests,
                std::optional<std::string> matchAttribute = std::nullopt);

// gpu count N + nic (PF) count 1 on one NUMA node; `derived`: through the derived attribute.
na::Claim gpuNicClaim(std::int64_t gpus, bool derived);

// ----- fixtures (built once) -----

const std::vector<na::Slice>& bigSlices();
const std::vector<na::DeviceClass>& classes();

// (c): 1,000 "small" nodes, node-0000 ... node-0999.
inline constexpr int kNodes = 1000;

struct Cluster {
    std::vector<na::Slice> slices;
    std::vector<na::Node> nodes;
};

const Cluster& cluster();

// (d): the "many-vfs" node and 1,000 one-VF claims vf-0000 ... vf-0999 (even ones class vf-ib,
// odd ones vf-eth).
inline constexpr int kClaims = 1000;

const std::vector<na::Slice>& manyVfSlices();
const std::vector<na::Claim>& thousandClaims();

// ----- (e): claims that cannot fit -----

struct InfeasibleCase {
    na::Node node;
    std::vector<na::Slice> slices;
    std::vector<na::Allocation> committed;  // devices already in use
    std::vector<na::Claim> claims;
};

// An allocation (request "busy") of the pool's devices: what earlier claims hold.
na::Allocation inUse(const std::string& pool, const std::vector<std::string>& devices);

// (e1) 32 VFs of one PF where only 31 match the request's selector.
InfeasibleCase vfs32of31();
// (e2) 6 GPUs on a node where 11 of the 16 are in use: 5 free.
InfeasibleCase gpus6of5();
// (e3) gpuNicClaim(8, false) where no NUMA node holds 8 GPUs: 16 GPUs, 2 per NUMA node over 8.
InfeasibleCase gpusSpread();
// Two requests of `count` VFs each on one NUMA node where each NUMA node has 2 * count - 1
// free VFs (BM_InfeasibleSplitScaling).
InfeasibleCase vfsSplit(int count);
// (e4) vfsSplit(16): 2 x 16 VFs on one NUMA node, 31 free per NUMA node.
InfeasibleCase vfs2x16of31();

// ----- resource.k8s.io/v1 JSON of the model -----
// The inverse of numadra::allocator::decode for the fields these inputs use (and the other
// fields of the model, so a new case does not silently lose one): decoding the output gives the
// objects back, and upstream's Go types read it with unknown fields disallowed.

using Json = nlohmann::ordered_json;

Json encodeSlice(const na::Slice& slice);
Json encodeClass(const na::DeviceClass& deviceClass);
// A ResourceClaim; with `claim.allocation` set, status.allocation too (a claim already
// allocated: its devices are in use).
Json encodeClaim(const na::Claim& claim);
Json encodeNode(const na::Node& node);

// The committed allocations of a case as already-allocated claims, as a cluster holds them:
// results grouped by the class their device belongs to (gpu, nic, vf, cpu, by its attributes in
// `slices`) and split into claims of at most 32 results (the API's limit), named
// busy-000, busy-001, ... with one request "busy" of that class and count. Each allocation gets
// a node selector for `node` (node-local devices).
std::vector<na::Claim> claimsHolding(const std::vector<na::Allocation>& allocations,
                                     const std::vector<na::Slice>& slices, const std::string& node);

}  // namespace numadra::bench
