#pragma once
// The allocator's view of the resource.k8s.io/v1 objects: ResourceSlices, DeviceClasses and
// ResourceClaims with every field structured-parameters allocation reads, already defaulted as
// the API server defaults them (allocationMode ExactCount, count 1). Plain values, decoded once.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "numadra/api/quantity.hpp"
#include "numadra/api/resource_slice.hpp"

namespace numadra::allocator {

using Json = nlohmann::ordered_json;
using Quantity = api::Quantity;
using AttributeValue = api::AttributeValue;

// --- nodes -------------------------------------------------------------------------------

struct NodeSelectorRequirement {
    std::string key;
    std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
    std::vector<std::string> values;
    bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
    std::vector<NodeSelectorRequirement> matchExpressions;
    std::vector<NodeSelectorRequirement> matchFields;
    bool operator==(const NodeSelectorTerm&) const = default;
};

struct NodeSelector {
    std::vector<NodeSelectorTerm> terms;  // ORed
    bool operator==(const NodeSelector&) const = default;
};

// Resource name -> quantity, as v1.ResourceList.
using ResourceList = std::map<std::string, Quantity>;

struct Node {
    std::string name;
    std::map<std::string, std::string> labels;
    std::vector<std::string> declaredFeatures = {};  // status.declaredFeatures
    // status.allocatable; without it the node's cpu, memory and pods are not accounted.
    std::optional<ResourceList> allocatable = std::nullopt;
};

// A pod's status.nodeAllocatableResourceClaimStatuses entry: what one claim's devices count
// against the node's allocatable resources (DRANodeAllocatableResources).
struct NodeAllocatableClaimStatus {
    struct Overhead {
        std::optional<Quantity> perPod;
        std::optional<Quantity> perContainer;
        bool operator==(const Overhead&) const = default;
    };
    std::string resourceClaimName;
    std::vector<std::string> containers;  // the containers that use the claim
    ResourceList mapping;
    std::map<std::string, Overhead> overhead;
    bool operator==(const NodeAllocatableClaimStatus&) const = default;
};

// The node feature a slice's skipNodeOperations needs (DRAOptionalNodeOperations, alpha 1.37).
inline constexpr const char* kOptionalNodeOperationsFeature = "DRAOptionalNodeOperations";

// --- ResourceSlice -------------------------------------------------------------------------

struct Taint {
    std::string key;
    std::string value;
    std::string effect;  // NoSchedule, NoExecute, None (others are ignored)
};

struct Toleration {
    std::string key;
    std::string op;  // "", Equal, Exists
    std::string value;
    std::string effect;
    std::optional<std::int64_t> tolerationSeconds;
};

struct CapacityRange {
    Quantity min;
    std::optional<Quantity> max;
    std::optional<Quantity> step;
};

struct RequestPolicy {
    std::optional<Quantity> defaultValue;
    std::vector<Quantity> validValues;
    std::optional<CapacityRange> validRange;
};

struct Capacity {
    Quantity value;
    std::optional<RequestPolicy> requestPolicy;
};

struct SharedCounter {
    Quantity value;
    std::optional<RequestPolicy> requestPolicy;  // KEP-5941: request-driven consumption rules
};

struct CounterSet {
    std::string name;
    std::map<std::string, SharedCounter> counters;
};

// What one device takes from one counter: a static value, or (KEP-5941) the amount the claim
// requests under `capacityKey`, rounded by the counter's requestPolicy.
struct CounterUse {
    std::optional<Quantity> value;
    std::optional<std::string> capacityKey;
};

struct CounterConsumption {
    std::string counterSet;
    std::map<std::string, CounterUse> counters;
    // DRADeviceCompatibilityGroups (alpha 1.37): devices drawing from one counter set may be
    // allocated together only while their groups have a common one; no groups pairs only with
    // no groups.
    std::vector<std::string> compatibilityGroups = {};
};

// DRANodeAllocatableResources: what an allocation of the device counts against the node's
// allocatable cpu, memory or hugepages (read and validated as the API server does; dra-allocate
// accounts them as the scheduler does, node_resources.hpp).
struct NodeAllocatableResource {
    std::optional<std::string> capacityKey;
    std::optional<Quantity> capacityMultiplier;
    std::optional<Quantity> deviceMultiplier;
    bool mapped = false;  // a mapping is set
    std::optional<Quantity> perPod;
    std::optional<Quantity> perContainer;
};

struct Device {
    std::string name;
    std::map<std::string, AttributeValue> attributes;
    std::map<std::string, Capacity> capacity;
    std::map<std::string, NodeAllocatableResource> nodeAllocatableResources;
    std::vector<CounterConsumption> consumesCounters;
    std::vector<Taint> taints;
    bool allowMultipleAllocations = false;
    std::vector<std::string> bindingConditions;
    std::vector<std::string> bindingFailureConditions;
    bool hasBindingConditions = false;  // the field is set (even empty): the pool sorts last
    bool bindsToNode = false;
    // Per-device node selection (the slice sets perDeviceNodeSelection).
    std::optional<std::string> nodeName;
    std::optional<NodeSelector> nodeSelector;
    bool allNodes = false;
};

struct Pool {
    std::string name;
    std::int64_t generation = 0;
    std::int64_t resourceSliceCount = 0;
};

struct Slice {
    std::string name;
    std::string driver;
    Pool pool;
    std::optional<std::string> nodeName;
    std::optional<NodeSelector> nodeSelector;
    bool allNodes = false;
    bool perDeviceNodeSelection = false;
    std::vector<Device> devices;
    std::vector<CounterSet> sharedCounters;
    // DRAOptionalNodeOperations (alpha 1.37): copied into each result of the slice's devices;
    // a slice setting it is only allocated on a node declaring that feature.
    std::vector<std::string> skipNodeOperations = {};
};

// --- DeviceClass ---------------------------------------------------------------------------

struct DeviceConfig {
    std::string driver;
    Json parameters;
};

struct DeviceClass {
    std::string name;
    std::vector<std::string> selectors;  // CEL expressions
    std::vector<DeviceConfig> config;
    std::string extendedResourceName;
    std::string creationTimestamp;  // RFC 3339; the newest class wins an extended resource name
};

// --- ResourceClaim -------------------------------------------------------------------------

struct DerivedAttribute {
    std::string name;
    std::string expression;
};

// The fields an `exactly` request and a `firstAvailable` subrequest share.
struct DeviceRequestSpec {
    std::string deviceClassName;
    std::vector<std::string> selectors;
    std::string allocationMode = "ExactCount";  // or "All"
    std::int64_t count = 1;
    std::optional<bool> adminAccess;  // `exactly` only
    std::vector<Toleration> tolerations;
    std::map<std::string, Quantity> capacityRequests;
    std::vector<DerivedAttribute> derivedAttributes;
};

struct SubRequest {
    std::string name;
    DeviceRequestSpec spec;
};

struct Request {
    std::string name;
    std::optional<DeviceRequestSpec> exactly;
    std::vector<SubRequest> firstAvailable;
};

struct Constraint {
    std::vector<std::string> requests;  // empty: every request
    std::optional<std::string> matchAttribute;
    std::optional<std::string> distinctAttribute;
};

struct ClaimConfig {
    std::vector<std::string> requests;
    DeviceConfig opaque;
};

// --- AllocationResult ----------------------------------------------------------------------

struct DeviceResult {
    std::string request;  // "req" or "req/sub"
    std::string driver;
    std::string pool;
    std::string device;
    bool adminAccess = false;
    std::vector<Toleration> tolerations;
    std::vector<std::string> bindingConditions;
    std::vector<std::string> bindingFailureConditions;
    std::optional<std::string> shareID;
    std::map<std::string, Quantity> consumedCapacity;
    std::vector<std::string> skipNodeOperations = {};  // the slice's, when the device was allocated
};

struct AllocatedConfig {
    std::string source;  // FromClass, FromClaim
    std::vector<std::string> requests;
    DeviceConfig opaque;
};

struct Allocation {
    std::vector<DeviceResult> results;
    std::vector<AllocatedConfig> config;
    std::optional<NodeSelector> nodeSelector;
};

struct Claim {
    std::string namespace_;
    std::string name;
    std::string uid;
    std::vector<Request> requests;
    std::vector<Constraint> constraints;
    std::vector<ClaimConfig> config;
    std::optional<Allocation> allocation;  // status.allocation already present in the input
};

}  // namespace numadra::allocator
