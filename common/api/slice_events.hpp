#pragma once
// Internal: the one description of how the API types are encoded (field names, order, omission
// rules as the API server's), as events for a writer: JSON text, YAML text or a Json DOM. A
// Writer has beginObject/endObject, beginArray/endArray, key, stringValue, intValue, boolValue.

#include <string_view>
#include <type_traits>

#include "numadra/api/resource_slice.hpp"

namespace numadra::api::detail {

template <class Writer>
void writeString(Writer& w, std::string_view key, std::string_view value) {
    w.key(key);
    w.stringValue(value);
}

template <class Writer>
void writeAttribute(Writer& w, const AttributeValue& value) {
    w.beginObject();
    std::visit(
        [&w](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                w.key("bool");
                w.boolValue(v);
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                w.key("int");
                w.intValue(v);
            } else if constexpr (std::is_same_v<T, std::string>) {
                writeString(w, "string", v);
            } else if constexpr (std::is_same_v<T, Version>) {
                writeString(w, "version", v.text);
            } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
                w.key("bools");
                w.beginArray();
                for (bool b : v)
                    w.boolValue(b);
                w.endArray();
            } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                w.key("ints");
                w.beginArray();
                for (std::int64_t i : v)
                    w.intValue(i);
                w.endArray();
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                w.key("strings");
                w.beginArray();
                for (const auto& s : v)
                    w.stringValue(s);
                w.endArray();
            } else {
                w.key("versions");
                w.beginArray();
                for (const auto& version : v)
                    w.stringValue(version.text);
                w.endArray();
            }
        },
        value);
    w.endObject();
}

template <class Writer>
void writePolicy(Writer& w, const CapacityRequestPolicy& policy) {
    w.beginObject();
    if (policy.defaultValue)
        writeString(w, "default", policy.defaultValue->text());
    if (!policy.validValues.empty()) {
        w.key("validValues");
        w.beginArray();
        for (const auto& q : policy.validValues)
            w.stringValue(q.text());
        w.endArray();
    }
    if (policy.validRange) {
        w.key("validRange");
        w.beginObject();
        writeString(w, "min", policy.validRange->min.text());
        if (policy.validRange->max)
            writeString(w, "max", policy.validRange->max->text());
        if (policy.validRange->step)
            writeString(w, "step", policy.validRange->step->text());
        w.endObject();
    }
    w.endObject();
}

template <class Writer>
void writeCounters(Writer& w, const std::map<std::string, Counter>& counters) {
    w.beginObject();
    for (const auto& [name, counter] : counters) {
        w.key(name);
        w.beginObject();
        if (counter.value)
            writeString(w, "value", counter.value->text());
        if (counter.requestPolicy) {
            w.key("requestPolicy");
            writePolicy(w, *counter.requestPolicy);
        }
        if (counter.valueFromCapacityKey) {
            w.key("valueFrom");
            w.beginObject();
            writeString(w, "capacityKey", *counter.valueFromCapacityKey);
            w.endObject();
        }
        w.endObject();
    }
    w.endObject();
}

template <class Writer>
void writeDeviceCapacity(Writer& w, const std::map<std::string, DeviceCapacity>& capacity) {
    w.beginObject();
    for (const auto& [name, cap] : capacity) {
        w.key(name);
        w.beginObject();
        writeString(w, "value", cap.value.text());
        if (cap.requestPolicy) {
            w.key("requestPolicy");
            writePolicy(w, *cap.requestPolicy);
        }
        w.endObject();
    }
    w.endObject();
}

template <class Writer>
void writeNodeAllocatableResources(
    Writer& w, const std::map<std::string, NodeAllocatableResource>& resources) {
    w.beginObject();
    for (const auto& [name, resource] : resources) {
        w.key(name);
        w.beginObject();
        if (const auto& mapping = resource.mapping) {
            w.key("mapping");
            w.beginObject();
            if (mapping->capacityKey)
                writeString(w, "capacityKey", *mapping->capacityKey);
            if (mapping->capacityMultiplier)
                writeString(w, "capacityMultiplier", mapping->capacityMultiplier->text());
            if (mapping->deviceMultiplier)
                writeString(w, "deviceMultiplier", mapping->deviceMultiplier->text());
            w.endObject();
        }
        if (const auto& overhead = resource.overhead) {
            w.key("overhead");
            w.beginObject();
            if (overhead->perPod)
                writeString(w, "perPod", overhead->perPod->text());
            if (overhead->perContainer)
                writeString(w, "perContainer", overhead->perContainer->text());
            w.endObject();
        }
        w.endObject();
    }
    w.endObject();
}

template <class Writer>
void writeDevice(Writer& w, const Device& device) {
    w.beginObject();
    writeString(w, "name", device.name);
    if (device.allowMultipleAllocations) {
        w.key("allowMultipleAllocations");
        w.boolValue(true);
    }
    if (!device.attributes.empty()) {
        w.key("attributes");
        w.beginObject();
        for (const auto& [name, value] : device.attributes) {
            w.key(name);
            writeAttribute(w, value);
        }
        w.endObject();
    }
    if (!device.capacity.empty()) {
        w.key("capacity");
        writeDeviceCapacity(w, device.capacity);
    }
    if (!device.consumesCounters.empty()) {
        w.key("consumesCounters");
        w.beginArray();
        for (const auto& consumption : device.consumesCounters) {
            w.beginObject();
            writeString(w, "counterSet", consumption.counterSet);
            w.key("counters");
            writeCounters(w, consumption.counters);
            w.endObject();
        }
        w.endArray();
    }
    if (!device.taints.empty()) {
        w.key("taints");
        w.beginArray();
        for (const auto& taint : device.taints) {
            w.beginObject();
            writeString(w, "key", taint.key);
            if (!taint.value.empty())
                writeString(w, "value", taint.value);
            writeString(w, "effect", taint.effect);
            w.endObject();
        }
        w.endArray();
    }
    if (!device.nodeAllocatableResources.empty()) {
        w.key("nodeAllocatableResources");
        writeNodeAllocatableResources(w, device.nodeAllocatableResources);
    }
    w.endObject();
}

template <class Writer>
void writeMetadata(Writer& w, const ResourceSlice& slice, std::string_view resourceVersion) {
    w.beginObject();
    writeString(w, "name", slice.name);
    if (!slice.labels.empty()) {
        w.key("labels");
        w.beginObject();
        for (const auto& [key, value] : slice.labels)
            writeString(w, key, value);
        w.endObject();
    }
    if (!slice.ownerReferences.empty()) {
        w.key("ownerReferences");
        w.beginArray();
        for (const auto& owner : slice.ownerReferences) {
            w.beginObject();
            writeString(w, "apiVersion", owner.apiVersion);
            writeString(w, "kind", owner.kind);
            writeString(w, "name", owner.name);
            writeString(w, "uid", owner.uid);
            w.key("controller");
            w.boolValue(owner.controller);
            w.endObject();
        }
        w.endArray();
    }
    if (!resourceVersion.empty())
        writeString(w, "resourceVersion", resourceVersion);
    w.endObject();
}

template <class Writer>
void writeSlice(Writer& w, const ResourceSlice& slice, std::string_view resourceVersion = {}) {
    w.beginObject();
    writeString(w, "apiVersion", kResourceApiVersion);
    writeString(w, "kind", "ResourceSlice");
    w.key("metadata");
    writeMetadata(w, slice, resourceVersion);
    w.key("spec");
    w.beginObject();
    writeString(w, "driver", slice.driver);
    w.key("pool");
    w.beginObject();
    writeString(w, "name", slice.pool.name);
    w.key("generation");
    w.intValue(slice.pool.generation);
    w.key("resourceSliceCount");
    w.intValue(slice.pool.resourceSliceCount);
    w.endObject();
    if (!slice.nodeName.empty())
        writeString(w, "nodeName", slice.nodeName);
    if (!slice.sharedCounters.empty()) {
        w.key("sharedCounters");
        w.beginArray();
        for (const auto& set : slice.sharedCounters) {
            w.beginObject();
            writeString(w, "name", set.name);
            w.key("counters");
            writeCounters(w, set.counters);
            w.endObject();
        }
        w.endArray();
    } else {
        // devices is required by the API (may be empty) unless the slice carries counters.
        w.key("devices");
        w.beginArray();
        for (const auto& device : slice.devices)
            writeDevice(w, device);
        w.endArray();
    }
    w.endObject();
    w.endObject();
}

template <class Writer>
void writeList(Writer& w, const std::vector<ResourceSlice>& slices) {
    w.beginObject();
    writeString(w, "apiVersion", "v1");
    writeString(w, "kind", "List");
    w.key("items");
    w.beginArray();
    for (const auto& slice : slices)
        writeSlice(w, slice);
    w.endArray();
    w.endObject();
}

}  // namespace numadra::api::detail
