// Allocations back into the API's JSON (status.allocation), as dra-allocate prints them: fields
// at their defaults are left out, as the API server's encoding leaves them out.

#include "numadra/allocator/decode.hpp"

namespace numadra::allocator {

using documents::Json;

namespace {

Json encodeRequirements(const std::vector<NodeSelectorRequirement>& requirements) {
    Json out = Json::array();
    for (const NodeSelectorRequirement& requirement : requirements) {
        Json entry = {{"key", requirement.key}, {"operator", requirement.op}};
        if (!requirement.values.empty())
            entry["values"] = requirement.values;
        out.push_back(std::move(entry));
    }
    return out;
}

Json encodeTolerations(const std::vector<Toleration>& tolerations) {
    Json out = Json::array();
    for (const Toleration& toleration : tolerations) {
        Json entry = Json::object();
        if (!toleration.key.empty())
            entry["key"] = toleration.key;
        if (!toleration.op.empty())
            entry["operator"] = toleration.op;
        if (!toleration.value.empty())
            entry["value"] = toleration.value;
        if (!toleration.effect.empty())
            entry["effect"] = toleration.effect;
        if (toleration.tolerationSeconds)
            entry["tolerationSeconds"] = *toleration.tolerationSeconds;
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace

Json encodeNodeSelector(const NodeSelector& selector) {
    Json terms = Json::array();
    for (const NodeSelectorTerm& term : selector.terms) {
        Json entry = Json::object();
        if (!term.matchExpressions.empty())
            entry["matchExpressions"] = encodeRequirements(term.matchExpressions);
        if (!term.matchFields.empty())
            entry["matchFields"] = encodeRequirements(term.matchFields);
        terms.push_back(std::move(entry));
    }
    return {{"nodeSelectorTerms", terms}};
}

Json encodeAllocation(const Allocation& allocation) {
    Json results = Json::array();
    for (const DeviceResult& result : allocation.results) {
        Json entry = {{"request", result.request},
                      {"driver", result.driver},
                      {"pool", result.pool},
                      {"device", result.device}};
        if (result.adminAccess)
            entry["adminAccess"] = true;
        if (!result.tolerations.empty())
            entry["tolerations"] = encodeTolerations(result.tolerations);
        if (!result.bindingConditions.empty())
            entry["bindingConditions"] = result.bindingConditions;
        if (!result.bindingFailureConditions.empty())
            entry["bindingFailureConditions"] = result.bindingFailureConditions;
        if (result.shareID)
            entry["shareID"] = *result.shareID;
        if (!result.consumedCapacity.empty()) {
            Json consumed = Json::object();
            for (const auto& [name, amount] : result.consumedCapacity)
                consumed[name] = amount.text();
            entry["consumedCapacity"] = std::move(consumed);
        }
        if (!result.skipNodeOperations.empty())
            entry["skipNodeOperations"] = result.skipNodeOperations;
        results.push_back(std::move(entry));
    }
    Json devices = {{"results", results}};
    if (!allocation.config.empty()) {
        Json config = Json::array();
        for (const AllocatedConfig& entry : allocation.config) {
            Json item = {{"source", entry.source}};
            if (!entry.requests.empty())
                item["requests"] = entry.requests;
            item["opaque"] = {{"driver", entry.opaque.driver},
                              {"parameters", entry.opaque.parameters}};
            config.push_back(std::move(item));
        }
        devices["config"] = std::move(config);
    }
    Json out = {{"devices", devices}};
    if (allocation.nodeSelector)
        out["nodeSelector"] = encodeNodeSelector(*allocation.nodeSelector);
    return out;
}

}  // namespace numadra::allocator
