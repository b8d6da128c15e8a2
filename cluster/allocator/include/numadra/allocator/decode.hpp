#pragma once
// resource.k8s.io/v1 objects (and Pods and Nodes) from loaded documents into the allocator's
// model, validated as the API server validates them (defaults applied, limits enforced,
// unknown fields refused), and allocations back into the API's JSON.

#include <variant>
#include <vector>

#include "numadra/allocator/model.hpp"
#include "numadra/documents/documents.hpp"
#include "numadra/documents/reader.hpp"

namespace numadra::allocator {

struct Container {
    std::string name;
    // resources.requests, with limits standing in for missing requests; sorted by name
    std::vector<std::pair<std::string, Quantity>> requests;
    std::vector<std::string> claims;  // resources.claims[].name: the pod claims it uses
    bool restartable = false;         // an init container with restartPolicy Always (a sidecar)
};

struct PodClaim {
    std::string name;
    std::optional<std::string> resourceClaimName;
    std::optional<std::string> resourceClaimTemplateName;
};

struct Pod {
    std::string namespace_;
    std::string name;
    std::string uid;
    std::string nodeName;
    std::vector<Container> initContainers;
    std::vector<Container> containers;
    std::vector<PodClaim> resourceClaims;
    ResourceList overhead;          // spec.overhead
    ResourceList podLevelRequests;  // spec.resources.requests
    // status.nodeAllocatableResourceClaimStatuses, as the scheduler wrote them
    std::vector<NodeAllocatableClaimStatus> nodeAllocatableStatuses;
};

// What a run allocates, in input order.
struct ClaimItem {
    Claim claim;
    documents::Json json;  // as read; the output adds status.allocation
    documents::Source source;
    bool fromTemplate = false;  // a ResourceClaimTemplate (its spec.spec), kind in the output
    // status.reservedFor's pods: name, and uid where given
    std::vector<std::pair<std::string, std::string>> reservedForPods = {};
};

struct PodItem {
    Pod pod;
    documents::Json json;
    documents::Source source;
};

struct Inputs {
    std::vector<Slice> slices;
    std::vector<DeviceClass> classes;
    std::vector<Node> nodes;
    std::vector<ClaimItem> claims;  // ResourceClaims and ResourceClaimTemplates
    std::vector<PodItem> pods;
    // Input order of the claims and pods: index into claims (ClaimRef) or pods (PodRef).
    struct ClaimRef {
        size_t index;
    };
    struct PodRef {
        size_t index;
    };
    std::vector<std::variant<ClaimRef, PodRef>> order;
};

// Every object must be a supported kind; the first invalid one ends decoding with an error
// naming its source and field path.
Result<Inputs> decode(const std::vector<documents::Object>& objects);

// The claim spec of a ResourceClaim or ResourceClaimTemplate (`spec` or `spec.spec`) alone,
// for tests and generated claims.
Result<Claim> decodeClaimSpec(const documents::Reader& spec);

documents::Json encodeAllocation(const Allocation& allocation);
documents::Json encodeNodeSelector(const NodeSelector& selector);

}  // namespace numadra::allocator
