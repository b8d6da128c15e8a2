// ResourceSlices: their devices (attributes, capacities and their request policies, counters
// consumed, taints, binding conditions, node-allocatable resources, node selection) and their
// shared counter sets, refused where the API server would refuse them (validation.hpp).

#include <algorithm>
#include <set>

#include "decode_support.hpp"
#include "numadra/allocator/allocator.hpp"
#include "numadra/dracel/device.hpp"
#include "numadra/dracel/semver.hpp"
#include "validation.hpp"

namespace numadra::allocator::decoding {

namespace {

// consumesCounters[].compatibilityGroups.
Status readCompatibilityGroups(const Reader& r, std::vector<std::string>& out) {
    if (Status s = readStrings(r, "compatibilityGroups", out, 2); !s)
        return s;
    return validation::checkCompatibilityGroups(r, out);
}

Result<api::Version> asVersion(const Reader& r) {
    auto text = r.asString();
    if (!text)
        return text.error();
    if (text->size() > 64)
        return r.error("must be at most 64 bytes");
    if (!dracel::Semver::parse(*text))
        return r.error("\"" + *text + "\" is not a semantic version (semver 2.0.0)");
    return api::Version{*text};
}

Result<std::string> asAttributeString(const Reader& r) {
    auto text = r.asString();
    if (!text)
        return text.error();
    if (text->size() > 64)
        return r.error("must be at most 64 bytes");
    return text;
}

Result<AttributeValue> decodeAttribute(const Reader& r) {
    if (Status s = r.rejectUnknownFields(
            {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"});
        !s)
        return s.error();
    std::vector<std::string> present;
    for (const char* field :
         {"int", "bool", "string", "version", "ints", "bools", "strings", "versions"})
        if (r.has(field))
            present.emplace_back(field);
    if (present.size() != 1)
        return r.error(present.empty() ? "an attribute needs exactly one value, has none"
                                       : "an attribute needs exactly one value, has " +
                                             std::to_string(present.size()));
    const std::string& kind = present.front();
    const Reader value = r.field(kind);
    if (kind == "int") {
        auto v = value.asInt();
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "bool") {
        auto v = value.asBool();
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "string") {
        auto v = asAttributeString(value);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "version") {
        auto v = asVersion(value);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (Status s = value.expectArray(); !s)
        return s.error();
    if (value.size() == 0)
        return r.fieldError(kind, "a list attribute needs at least one value");
    if (kind == "ints") {
        auto v = listOf<std::int64_t>(value, [](const Reader& i) { return i.asInt(); });
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    if (kind == "bools") {
        auto v = listOf<bool>(value, [](const Reader& i) { return i.asBool(); });
        return v ? Result<AttributeValue>(std::vector<bool>(v->begin(), v->end()))
                 : Result<AttributeValue>(v.error());
    }
    if (kind == "strings") {
        auto v = listOf<std::string>(value, asAttributeString);
        return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
    }
    auto v = listOf<api::Version>(value, asVersion);
    return v ? Result<AttributeValue>(*v) : Result<AttributeValue>(v.error());
}

Result<std::optional<RequestPolicy>> decodePolicy(const Reader& r) {
    if (!r.has("requestPolicy"))
        return std::optional<RequestPolicy>();
    const Reader policy = r.field("requestPolicy");
    if (Status s = policy.rejectUnknownFields({"default", "validValues", "validRange"}); !s)
        return s.error();
    RequestPolicy out;
    if (Status s = readQuantity(policy, "default", out.defaultValue); !s)
        return s.error();
    Status values = policy.each("validValues", [&](const Reader& item) -> Status {
        auto quantity = asQuantity(item);
        if (!quantity)
            return quantity.error();
        if (!out.validValues.empty() && !(out.validValues.back() < *quantity))
            return item.error("validValues must be sorted in ascending order without duplicates");
        out.validValues.push_back(std::move(*quantity));
        return Status::Ok();
    });
    if (!values)
        return values.error();
    if (out.validValues.size() > 10)
        return policy.fieldError("validValues", "must have at most 10 items");
    if (policy.has("validRange")) {
        const Reader range = policy.field("validRange");
        if (Status s = range.rejectUnknownFields({"min", "max", "step"}); !s)
            return s.error();
        CapacityRange decoded;
        if (Status s = readRequiredQuantity(range, "min", decoded.min); !s)
            return s.error();
        if (Status s = readQuantity(range, "max", decoded.max); !s)
            return s.error();
        if (Status s = readQuantity(range, "step", decoded.step); !s)
            return s.error();
        if (!out.validValues.empty())
            return policy.error("validValues and validRange are mutually exclusive");
        out.validRange = std::move(decoded);
    }
    return std::optional<RequestPolicy>(std::move(out));
}

// What a device's capacity and a shared counter both hold: {value, requestPolicy}.
struct ValueAndPolicy {
    Quantity value;
    std::optional<RequestPolicy> requestPolicy;
};

Result<ValueAndPolicy> decodeValueAndPolicy(const Reader& r) {
    if (Status s = r.rejectUnknownFields({"value", "requestPolicy"}); !s)
        return s.error();
    ValueAndPolicy out;
    if (Status s = readRequiredQuantity(r, "value", out.value); !s)
        return s.error();
    auto policy = decodePolicy(r);
    if (!policy)
        return policy.error();
    out.requestPolicy = std::move(*policy);
    return out;
}

Status decodeNodeAllocatableMapping(const Reader& r,
                                    const std::map<std::string, Capacity>& capacity,
                                    NodeAllocatableResource& out) {
    if (Status s = r.rejectUnknownFields({"capacityKey", "capacityMultiplier", "deviceMultiplier"});
        !s)
        return s;
    out.mapped = true;
    if (r.has("capacityKey")) {
        std::string key;
        if (Status s = readString(r, "capacityKey", key); !s)
            return s;
        if (key.empty())
            return r.fieldError("capacityKey", "capacityKey must not be an empty string");
        if (!capacity.contains(key))
            return r.fieldError("capacityKey", "not found: the device has no capacity " + key);
        out.capacityKey = key;
    }
    if (Status s = readQuantity(r, "capacityMultiplier", out.capacityMultiplier); !s)
        return s;
    if (Status s = readQuantity(r, "deviceMultiplier", out.deviceMultiplier); !s)
        return s;
    return validation::checkNodeAllocatableMapping(r, out);
}

Status decodeNodeAllocatableOverhead(const Reader& r, NodeAllocatableResource& out) {
    if (Status s = r.rejectUnknownFields({"perPod", "perContainer"}); !s)
        return s;
    if (Status s = readQuantity(r, "perPod", out.perPod); !s)
        return s;
    if (Status s = readQuantity(r, "perContainer", out.perContainer); !s)
        return s;
    return validation::checkNodeAllocatableOverhead(r, out);
}

Status decodeNodeAllocatableResources(const Reader& r, Device& device) {
    return r.eachEntry("nodeAllocatableResources", [&](const std::string& name, const Reader& v) {
        if (!validation::isNodeAllocatableResourceName(name))
            return Status(
                v.error("must be a node allocatable resource name (cpu, memory, "
                        "hugepages-<size>), not " +
                        name));
        if (Status s = v.rejectUnknownFields({"mapping", "overhead"}); !s)
            return s;
        if (!v.has("mapping") && !v.has("overhead"))
            return Status(v.error("at least one of mapping or overhead must be set"));
        NodeAllocatableResource resource;
        if (v.has("mapping")) {
            if (Status s =
                    decodeNodeAllocatableMapping(v.field("mapping"), device.capacity, resource);
                !s)
                return s;
        }
        if (v.has("overhead")) {
            if (Status s = decodeNodeAllocatableOverhead(v.field("overhead"), resource); !s)
                return s;
        }
        device.nodeAllocatableResources.emplace(name, std::move(resource));
        return Status::Ok();
    });
}

Result<Device> decodeDevice(const Reader& r, bool perDeviceNodeSelection) {
    if (Status s = r.rejectUnknownFields({"name", "attributes", "capacity", "consumesCounters",
                                          "taints", "allowMultipleAllocations", "bindingConditions",
                                          "bindingFailureConditions", "bindsToNode", "nodeName",
                                          "nodeSelector", "allNodes", "nodeAllocatableResources"});
        !s)
        return s.error();
    Device device;
    if (Status s = readRequiredString(r, "name", device.name); !s)
        return s.error();
    size_t values = 0;
    Status attributes = r.eachEntry("attributes", [&](const std::string& key, const Reader& v) {
        auto value = decodeAttribute(v);
        if (!value)
            return Status(value.error());
        values += api::attributeValueCount(*value);
        device.attributes.emplace(key, std::move(*value));
        return Status::Ok();
    });
    if (!attributes)
        return attributes.error();
    if (Status s = readBool(r, "allowMultipleAllocations", device.allowMultipleAllocations); !s)
        return s.error();
    if (values > 48)
        return r.fieldError("attributes", "a device may have at most 48 attribute values, has " +
                                              std::to_string(values));
    Status capacity = r.eachEntry("capacity", [&](const std::string& key, const Reader& v) {
        auto read = decodeValueAndPolicy(v);
        if (!read)
            return Status(read.error());
        Capacity entry{std::move(read->value), std::move(read->requestPolicy)};
        // A policy says how shares of a capacity are sized: a device allocated once has none.
        if (entry.requestPolicy && !device.allowMultipleAllocations)
            return Status(
                v.fieldError("requestPolicy", "forbidden: allowMultipleAllocations must be true"));
        if (entry.requestPolicy)
            if (Status s = validation::checkRequestPolicy(v.field("requestPolicy"), entry.value,
                                                          *entry.requestPolicy);
                !s)
                return s;
        device.capacity.emplace(key, std::move(entry));
        return Status::Ok();
    });
    if (!capacity)
        return capacity.error();
    if (device.attributes.size() + device.capacity.size() > 32)
        return r.error("a device may have at most 32 attributes and capacities together");
    if (Status s = decodeNodeAllocatableResources(r, device); !s)
        return s.error();
    Status counters = r.each("consumesCounters", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"counterSet", "counters", "compatibilityGroups"});
            !s)
            return s;
        CounterConsumption use;
        if (Status s = readRequiredString(item, "counterSet", use.counterSet); !s)
            return s;
        if (Status s = readCompatibilityGroups(item, use.compatibilityGroups); !s)
            return s;
        Status entries = item.eachEntry("counters", [&](const std::string& key, const Reader& v) {
            if (Status s = v.rejectUnknownFields({"value", "valueFrom"}); !s)
                return s;
            CounterUse counter;
            if (Status s = readQuantity(v, "value", counter.value); !s)
                return s;
            if (v.has("valueFrom")) {
                const Reader from = v.field("valueFrom");
                if (Status s = from.rejectUnknownFields({"capacityKey"}); !s)
                    return s;
                std::string capacityKey;
                if (Status s = readRequiredString(from, "capacityKey", capacityKey); !s)
                    return s;
                counter.capacityKey = capacityKey;
            }
            if (counter.value.has_value() == counter.capacityKey.has_value())
                return Status(v.error("exactly one of value and valueFrom must be set"));
            use.counters.emplace(key, std::move(counter));
            return Status::Ok();
        });
        if (!entries)
            return entries;
        if (use.counters.empty())
            return item.fieldError("counters", "required value: a device consumes counters");
        if (use.counters.size() > 32)
            return item.fieldError("counters", "must have at most 32 counters");
        const bool named = std::any_of(
            device.consumesCounters.begin(), device.consumesCounters.end(),
            [&](const CounterConsumption& other) { return other.counterSet == use.counterSet; });
        if (named)
            return item.error("duplicate value \"" + use.counterSet +
                              "\": a device names a counter set once");
        device.consumesCounters.push_back(std::move(use));
        return Status::Ok();
    });
    if (!counters)
        return counters.error();
    if (device.consumesCounters.size() > 2)
        return r.fieldError("consumesCounters", "must have at most 2 items");
    Status taints = r.each("taints", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"key", "value", "effect", "timeAdded"}); !s)
            return s;
        Taint taint;
        if (Status s = readRequiredString(item, "key", taint.key); !s)
            return s;
        if (Status s = readString(item, "value", taint.value); !s)
            return s;
        if (Status s = readRequiredString(item, "effect", taint.effect); !s)
            return s;
        if (Status s = validation::checkTaintEffect(item, taint.effect); !s)
            return s;
        device.taints.push_back(std::move(taint));
        return Status::Ok();
    });
    if (!taints)
        return taints.error();
    if (device.taints.size() > 16)
        return r.fieldError("taints", "must have at most 16 items");
    device.hasBindingConditions = r.has("bindingConditions");
    if (Status s = readStrings(r, "bindingConditions", device.bindingConditions, 4); !s)
        return s.error();
    if (Status s = readStrings(r, "bindingFailureConditions", device.bindingFailureConditions, 4);
        !s)
        return s.error();
    if (Status s = readBool(r, "bindsToNode", device.bindsToNode); !s)
        return s.error();
    if (Status s = readNodeSelection(r, device.nodeName, device.nodeSelector, device.allNodes,
                                     "must not be empty");
        !s)
        return s.error();
    if (Status s = validation::checkBindingConditions(r, device); !s)
        return s.error();
    if (Status s = validation::checkDeviceNodeSelection(r, device, perDeviceNodeSelection); !s)
        return s.error();
    return device;
}

// spec's node selection: exactly one of nodeName, nodeSelector (of one term: selectors of
// different slices are merged into one), allNodes and perDeviceNodeSelection, counter-set
// slices included.
Status readSliceNodeSelection(const Reader& spec, Slice& slice) {
    if (Status s = readNodeSelection(spec, slice.nodeName, slice.nodeSelector, slice.allNodes,
                                     "must be either unset or set to a non-empty string");
        !s)
        return s;
    auto perDevice = spec.optionalBool("perDeviceNodeSelection");
    if (!perDevice)
        return perDevice.error();
    if (*perDevice && !**perDevice)
        return spec.fieldError("perDeviceNodeSelection", "must be either unset or set to true");
    slice.perDeviceNodeSelection = perDevice->value_or(false);
    return validation::checkSliceNodeSelection(spec, slice);
}

}  // namespace

Result<Slice> decodeSlice(const Reader& object) {
    Slice slice;
    auto metadata = readMetadata(object, slice.name);
    if (!metadata)
        return metadata.error();
    auto spec = object.requiredObject("spec");
    if (!spec)
        return spec.error();
    if (Status s = spec->rejectUnknownFields({"driver", "pool", "nodeName", "nodeSelector",
                                              "allNodes", "perDeviceNodeSelection", "devices",
                                              "sharedCounters", "skipNodeOperations"});
        !s)
        return s.error();
    if (Status s = readRequiredString(*spec, "driver", slice.driver); !s)
        return s.error();
    auto pool = spec->requiredObject("pool");
    if (!pool)
        return pool.error();
    if (Status s = pool->rejectUnknownFields({"name", "generation", "resourceSliceCount"}); !s)
        return s.error();
    if (Status s = readRequiredString(*pool, "name", slice.pool.name); !s)
        return s.error();
    auto generation = pool->requiredInt("generation");
    if (!generation)
        return generation.error();
    auto count = pool->requiredInt("resourceSliceCount");
    if (!count)
        return count.error();
    if (*count < 1)
        return pool->fieldError("resourceSliceCount", "must be at least 1");
    if (*generation < 0)
        return pool->fieldError("generation", "must be greater than or equal to zero");
    slice.pool.generation = *generation;
    slice.pool.resourceSliceCount = *count;
    if (Status s = readSliceNodeSelection(*spec, slice); !s)
        return s.error();
    if (Status s = readSkipNodeOperations(*spec, slice.skipNodeOperations); !s)
        return s.error();
    // A slice publishes devices or counter sets, never both: upstream's allocator reads a slice
    // with counter sets for its counters alone.
    if (spec->has("devices") && spec->has("sharedCounters"))
        return spec->error("only one of `sharedCounters` or `devices` is allowed");
    std::set<std::string> deviceNames;
    Status devices = spec->each("devices", [&](const Reader& item) -> Status {
        auto device = decodeDevice(item, slice.perDeviceNodeSelection);
        if (!device)
            return device.error();
        if (!deviceNames.insert(device->name).second)
            return item.error("duplicate value \"" + device->name +
                              "\": a device name is listed once in a slice");
        slice.devices.push_back(std::move(*device));
        return Status::Ok();
    });
    if (!devices)
        return devices.error();
    Status counters = spec->each("sharedCounters", [&](const Reader& item) -> Status {
        if (Status s = item.rejectUnknownFields({"name", "counters"}); !s)
            return s;
        CounterSet set;
        if (Status s = readRequiredString(item, "name", set.name); !s)
            return s;
        Status entries = item.eachEntry("counters", [&](const std::string& key, const Reader& v) {
            auto read = decodeValueAndPolicy(v);
            if (!read)
                return Status(read.error());
            set.counters.emplace(
                key, SharedCounter{std::move(read->value), std::move(read->requestPolicy)});
            return Status::Ok();
        });
        if (!entries)
            return entries;
        const bool named =
            std::any_of(slice.sharedCounters.begin(), slice.sharedCounters.end(),
                        [&](const CounterSet& other) { return other.name == set.name; });
        if (named)
            return item.error("duplicate value \"" + set.name +
                              "\": a counter set is defined once");
        if (set.counters.empty())
            return item.fieldError("counters", "required value: a counter set has counters");
        if (set.counters.size() > 32)
            return item.fieldError("counters", "must have at most 32 counters");
        slice.sharedCounters.push_back(std::move(set));
        return Status::Ok();
    });
    if (!counters)
        return counters.error();
    if (slice.sharedCounters.size() > 8)
        return spec->fieldError("sharedCounters", "must have at most 8 counter sets");
    if (Status s = validation::checkSliceDeviceCount(*spec, slice); !s)
        return s.error();
    return slice;
}

}  // namespace numadra::allocator::decoding
