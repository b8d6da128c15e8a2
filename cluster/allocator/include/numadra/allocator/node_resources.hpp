#pragma once
// A node's allocatable cpu, memory, ephemeral storage, hugepages and pods, accounted as the
// scheduler does: its NodeResourcesFit check of a pod's requests, and the DRA plugin's
// DRANodeAllocatableResources check (upstream pkg/scheduler/framework/plugins/
// dynamicresources/nodeallocatabledynamicresources.go), where the devices a pod's claims get
// count against the node too when their slices map them (Device.nodeAllocatableResources).

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "numadra/allocator/decode.hpp"
#include "numadra/allocator/model.hpp"
#include "numadra/common/result.hpp"
#include "numadra/documents/documents.hpp"

namespace numadra::allocator {

// One of a pod's claims with the allocation it has (or would get).
struct PodClaimAllocation {
    std::string podClaimName;  // the pod's spec.resourceClaims[].name
    std::string claimName;     // the ResourceClaim's name
    const Allocation* allocation = nullptr;
};

// The device an allocation result names, or nullptr.
using DeviceLookup = std::function<const Device*(const DeviceResult&)>;

// The pod's status.nodeAllocatableResourceClaimStatuses for these claims (upstream's
// buildNodeAllocatableDRAInfo): per claim whose devices map or add overhead, the mapped
// quantities (device multiplier, or consumed capacity times its multiplier), the overheads,
// and the containers using it; sorted by claim name. An error names a device that cannot be
// found or a mapped capacity the allocation did not consume.
Result<std::vector<NodeAllocatableClaimStatus>> nodeAllocatableStatuses(
    const Pod& pod, const std::vector<PodClaimAllocation>& claims, const DeviceLookup& lookup);

// Whether any device of the allocation maps a node resource (such a claim is not shared by two
// pods: upstream's validateNodeAllocatableDRAClaimSharing).
bool mapsNodeResources(const Allocation& allocation, const DeviceLookup& lookup);

// What the pod takes from its node (upstream's resourcehelper.PodRequests with the claims'
// statuses): its containers' requests (init containers and sidecars as the KEP-753 formula
// has them), the claims' mapped resources and overheads, pod-level requests where set, and
// spec.overhead.
Result<ResourceList> podRequests(const Pod& pod,
                                 const std::vector<NodeAllocatableClaimStatus>& statuses);

// A resource list in the scheduler's units (its framework.Resource): milli-CPUs for cpu, whole
// units (rounded up) for the others.
using ResourceAmounts = std::map<std::string, std::int64_t>;
ResourceAmounts amounts(const ResourceList& resources);

// A resource the node has too little of ("Insufficient cpu", "Too many pods").
struct Shortfall {
    std::string resource;
    std::int64_t requested = 0;    // by the pod
    std::int64_t used = 0;         // by the node's other pods
    std::int64_t allocatable = 0;  // the node's
};

// "pods" when the node holds as many pods as it allows, then each of cpu, memory,
// ephemeral-storage and hugepages-* that the pod requests more of than the node has left. As
// the scheduler, a resource the pod does not request is not checked, nor is one the node does
// not list.
std::vector<Shortfall> shortfalls(const ResourceAmounts& demand, const ResourceAmounts& allocatable,
                                  const ResourceAmounts& used, std::int64_t podsOnNode);

// An amount in its resource's unit: CPUs ("8", "1500m"), else the number.
std::string formatAmount(const std::string& resource, std::int64_t amount);

// "Insufficient cpu (the pod requests 9, the node's other pods use 56 of its 64)".
std::string describe(const Shortfall& shortfall);

documents::Json encodeNodeAllocatableStatuses(
    const std::vector<NodeAllocatableClaimStatus>& statuses);

// Adds b to a, resource by resource.
Status addResources(ResourceList& a, const ResourceList& b);

}  // namespace numadra::allocator
