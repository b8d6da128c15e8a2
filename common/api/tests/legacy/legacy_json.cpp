// common/api/resource_slice.cpp's toJson family at 0d2fc31, verbatim but for the names (see
// legacy_json.hpp).

#include "legacy_json.hpp"

namespace numadra::api {

Json legacyToJson(const AttributeValue& value) {
    Json out = Json::object();
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, bool>) {
                out["bool"] = v;
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                out["int"] = v;
            } else if constexpr (std::is_same_v<T, std::string>) {
                out["string"] = v;
            } else if constexpr (std::is_same_v<T, Version>) {
                out["version"] = v.text;
            } else if constexpr (std::is_same_v<T, std::vector<bool>>) {
                Json list = Json::array();
                for (bool b : v)
                    list.push_back(b);
                out["bools"] = list;
            } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
                out["ints"] = v;
            } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
                out["strings"] = v;
            } else {
                Json list = Json::array();
                for (const auto& version : v)
                    list.push_back(version.text);
                out["versions"] = list;
            }
        },
        value);
    return out;
}

Json legacyToJson(const CapacityRequestPolicy& policy) {
    Json out = Json::object();
    if (policy.defaultValue)
        out["default"] = policy.defaultValue->text();
    if (!policy.validValues.empty()) {
        Json values = Json::array();
        for (const auto& q : policy.validValues)
            values.push_back(q.text());
        out["validValues"] = values;
    }
    if (policy.validRange) {
        Json range = Json::object();
        range["min"] = policy.validRange->min.text();
        if (policy.validRange->max)
            range["max"] = policy.validRange->max->text();
        if (policy.validRange->step)
            range["step"] = policy.validRange->step->text();
        out["validRange"] = range;
    }
    return out;
}

namespace {

Json legacyToJson(const std::map<std::string, Counter>& counters) {
    Json out = Json::object();
    for (const auto& [name, counter] : counters) {
        Json c = Json::object();
        if (counter.value)
            c["value"] = counter.value->text();
        if (counter.requestPolicy)
            c["requestPolicy"] = legacyToJson(*counter.requestPolicy);
        if (counter.valueFromCapacityKey)
            c["valueFrom"] = Json{{"capacityKey", *counter.valueFromCapacityKey}};
        out[name] = c;
    }
    return out;
}

}  // namespace

Json legacyToJson(const Device& device) {
    Json out = Json::object();
    out["name"] = device.name;
    if (device.allowMultipleAllocations)
        out["allowMultipleAllocations"] = true;
    if (!device.attributes.empty()) {
        Json attributes = Json::object();
        for (const auto& [name, value] : device.attributes)
            attributes[name] = legacyToJson(value);
        out["attributes"] = attributes;
    }
    if (!device.capacity.empty()) {
        Json capacity = Json::object();
        for (const auto& [name, cap] : device.capacity) {
            Json c = Json::object();
            c["value"] = cap.value.text();
            if (cap.requestPolicy)
                c["requestPolicy"] = legacyToJson(*cap.requestPolicy);
            capacity[name] = c;
        }
        out["capacity"] = capacity;
    }
    if (!device.consumesCounters.empty()) {
        Json list = Json::array();
        for (const auto& consumption : device.consumesCounters) {
            list.push_back(Json{{"counterSet", consumption.counterSet},
                                {"counters", legacyToJson(consumption.counters)}});
        }
        out["consumesCounters"] = list;
    }
    if (!device.taints.empty()) {
        Json list = Json::array();
        for (const auto& taint : device.taints) {
            Json t = Json::object();
            t["key"] = taint.key;
            if (!taint.value.empty())
                t["value"] = taint.value;
            t["effect"] = taint.effect;
            list.push_back(t);
        }
        out["taints"] = list;
    }
    return out;
}

Json legacyToJson(const ResourceSlice& slice) {
    Json metadata = Json::object();
    metadata["name"] = slice.name;
    if (!slice.labels.empty())
        metadata["labels"] = slice.labels;
    if (!slice.ownerReferences.empty()) {
        Json owners = Json::array();
        for (const auto& owner : slice.ownerReferences) {
            owners.push_back(Json{{"apiVersion", owner.apiVersion},
                                  {"kind", owner.kind},
                                  {"name", owner.name},
                                  {"uid", owner.uid},
                                  {"controller", owner.controller}});
        }
        metadata["ownerReferences"] = owners;
    }
    Json spec = Json::object();
    spec["driver"] = slice.driver;
    spec["pool"] = Json{{"name", slice.pool.name},
                        {"generation", slice.pool.generation},
                        {"resourceSliceCount", slice.pool.resourceSliceCount}};
    if (!slice.nodeName.empty())
        spec["nodeName"] = slice.nodeName;
    if (!slice.sharedCounters.empty()) {
        Json sets = Json::array();
        for (const auto& set : slice.sharedCounters) {
            sets.push_back(Json{{"name", set.name}, {"counters", legacyToJson(set.counters)}});
        }
        spec["sharedCounters"] = sets;
    } else {
        // devices is required by the API (may be empty) unless the slice carries counters.
        Json devices = Json::array();
        for (const auto& device : slice.devices)
            devices.push_back(legacyToJson(device));
        spec["devices"] = devices;
    }
    Json out = Json::object();
    out["apiVersion"] = kResourceApiVersion;
    out["kind"] = "ResourceSlice";
    out["metadata"] = metadata;
    out["spec"] = spec;
    return out;
}

Json legacyToJsonList(const std::vector<ResourceSlice>& slices) {
    Json items = Json::array();
    for (const auto& slice : slices)
        items.push_back(legacyToJson(slice));
    Json out = Json::object();
    out["apiVersion"] = "v1";
    out["kind"] = "List";
    out["items"] = items;
    return out;
}

}  // namespace numadra::api
