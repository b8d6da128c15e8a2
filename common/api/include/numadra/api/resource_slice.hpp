#pragma once
// The resource.k8s.io/v1 ResourceSlice, as much of it as this project publishes, and its JSON
// encoding (field names and omission rules as the API server's).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "numadra/api/quantity.hpp"

namespace numadra::api {

using Json = nlohmann::ordered_json;

inline constexpr const char* kResourceApiVersion = "resource.k8s.io/v1";

struct Version {
    std::string text;  // semver 2.0.0
    bool operator==(const Version&) const = default;
};

// One of: bool, int, string, version, and (DRAListTypeAttributes) their list forms.
using AttributeValue =
    std::variant<bool, std::int64_t, std::string, Version, std::vector<bool>,
                 std::vector<std::int64_t>, std::vector<std::string>, std::vector<Version>>;

bool isListAttribute(const AttributeValue& value);
// Scalars count 1, lists their length (the API's 48-values-per-device limit).
size_t attributeValueCount(const AttributeValue& value);

struct CapacityRange {
    Quantity min;
    std::optional<Quantity> max;
    std::optional<Quantity> step;

    bool operator==(const CapacityRange&) const = default;
};

struct CapacityRequestPolicy {
    std::optional<Quantity> defaultValue;
    std::vector<Quantity> validValues;
    std::optional<CapacityRange> validRange;

    bool operator==(const CapacityRequestPolicy&) const = default;
};

struct DeviceCapacity {
    Quantity value;
    std::optional<CapacityRequestPolicy> requestPolicy;

    bool operator==(const DeviceCapacity&) const = default;
};

// A counter in a shared counter set (value + optional requestPolicy, KEP-5941) or in a
// device's consumption (static value, or valueFrom.capacityKey for request-driven use).
struct Counter {
    std::optional<Quantity> value;
    std::optional<CapacityRequestPolicy> requestPolicy;
    std::optional<std::string> valueFromCapacityKey;

    bool operator==(const Counter&) const = default;
};

struct CounterSet {
    std::string name;
    std::map<std::string, Counter> counters;

    bool operator==(const CounterSet&) const = default;
};

struct DeviceCounterConsumption {
    std::string counterSet;
    std::map<std::string, Counter> counters;

    bool operator==(const DeviceCounterConsumption&) const = default;
};

struct DeviceTaint {
    std::string key;
    std::string value;
    std::string effect;  // NoSchedule, NoExecute, None

    bool operator==(const DeviceTaint&) const = default;
};

// DRANodeAllocatableResources (1.37, alpha): how an allocation of the device counts against the
// node's allocatable cpu, memory... A mapping takes a consumed capacity times a multiplier (or
// a quantity per allocated device); an overhead is charged per pod and per container.
struct NodeAllocatableMapping {
    std::optional<std::string> capacityKey;
    std::optional<Quantity> capacityMultiplier;
    std::optional<Quantity> deviceMultiplier;

    bool operator==(const NodeAllocatableMapping&) const = default;
};

struct NodeAllocatableOverhead {
    std::optional<Quantity> perPod;
    std::optional<Quantity> perContainer;

    bool operator==(const NodeAllocatableOverhead&) const = default;
};

struct NodeAllocatableResource {
    std::optional<NodeAllocatableMapping> mapping;
    std::optional<NodeAllocatableOverhead> overhead;

    bool operator==(const NodeAllocatableResource&) const = default;
};

struct Device {
    std::string name;
    std::map<std::string, AttributeValue> attributes;
    std::map<std::string, DeviceCapacity> capacity;
    std::vector<DeviceCounterConsumption> consumesCounters;
    std::vector<DeviceTaint> taints;
    bool allowMultipleAllocations = false;
    // Keyed by the node resource ("cpu", "memory").
    std::map<std::string, NodeAllocatableResource> nodeAllocatableResources;

    // Taints, counter consumption and list attributes lower the per-slice device limit to 64.
    bool usesAdvancedFeatures() const;

    bool operator==(const Device&) const = default;
};

struct ResourcePool {
    std::string name;
    std::int64_t generation = 1;
    std::int64_t resourceSliceCount = 1;

    bool operator==(const ResourcePool&) const = default;
};

struct OwnerReference {
    std::string apiVersion;
    std::string kind;
    std::string name;
    std::string uid;
    bool controller = true;

    bool operator==(const OwnerReference&) const = default;
};

struct ResourceSlice {
    std::string name;
    std::map<std::string, std::string> labels;
    std::vector<OwnerReference> ownerReferences;
    std::string driver;
    ResourcePool pool;
    std::string nodeName;
    std::vector<Device> devices;
    std::vector<CounterSet> sharedCounters;

    bool operator==(const ResourceSlice&) const = default;
};

Json toJson(const AttributeValue& value);
Json toJson(const CapacityRequestPolicy& policy);
Json toJson(const Device& device);
Json toJson(const ResourceSlice& slice);
// A v1 List of the slices.
Json toJsonList(const std::vector<ResourceSlice>& slices);

}  // namespace numadra::api
