#pragma once
// Extended resources backed by DRA (KEP-5004): a Pod's container requests for a DeviceClass's
// `extendedResourceName` (or `deviceclass.resource.kubernetes.io/<class>`) become one special
// claim with one request per container and resource, named and ordered as the scheduler's
// DynamicResources plugin makes it (pkg/scheduler/framework/plugins/dynamicresources,
// extendeddynamicresources.go).

#include <optional>
#include <vector>

#include "numadra/allocator/decode.hpp"

namespace numadra::allocator {

struct ExtendedResourceMapping {
    std::string containerName;
    std::string resourceName;
    std::string requestName;  // container-<i>-request-<j>
};

struct ExtendedResourceClaim {
    Claim claim;  // named <pod>-extended-resources, in the pod's namespace
    std::vector<ExtendedResourceMapping> mappings;
};

// The class serving an extended resource name: a class whose extendedResourceName matches (the
// newest by creationTimestamp, then the first by name, as the scheduler picks), or the class
// named by the `deviceclass.resource.kubernetes.io/` prefix. nullptr when none: the resource is
// not DRA-backed (a device-plugin resource, cpu, memory, ...).
const DeviceClass* classForExtendedResource(const std::string& resourceName,
                                            const std::vector<DeviceClass>& classes);

// The special claim, or nullopt when no container asks for a DRA-backed extended resource.
// Containers are numbered init containers first, then regular containers (i); j is the
// resource's position among all of that container's requests in name order, cpu and memory
// included. Per resource, each long-lived container (regular or sidecar) gets a request; an
// init container that is not a sidecar reuses the requests of the long-lived containers after
// it, and only the largest of the init containers' own requests is kept, shared by all of them.
// The requests are sorted by name as text. A request that is not a whole number of devices is
// an error naming the container and resource.
Result<std::optional<ExtendedResourceClaim>> extendedResourceClaim(
    const Pod& pod, const std::vector<DeviceClass>& classes);

// status.extendedResourceClaimStatus of the Pod.
documents::Json encodeExtendedResourceStatus(const ExtendedResourceClaim& claim);

}  // namespace numadra::allocator
