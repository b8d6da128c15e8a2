// Configuration and node selection of an allocation, as upstream builds them (class configs
// first, deduplicated per class; claim configs of unselected subrequests dropped; `requests`
// cleared when an entry covers every request; the node-name selector when any device is local).

#include "results.hpp"

#include <algorithm>
#include <set>

namespace numadra::allocator::detail {

namespace {

std::vector<AllocatedConfig> buildConfig(const ClaimState& state) {
    std::vector<AllocatedConfig> config;
    std::map<std::string, std::vector<size_t>> entriesOfClass;
    std::set<std::string> selected;  // top-level names and "parent/sub" of chosen alternatives
    for (const RequestSlot& slot : state.requests) {
        const Plan& plan = slot.plan();
        selected.insert(plan.name);
        auto [entries, firstTime] = entriesOfClass.try_emplace(plan.deviceClass->name);
        if (firstTime) {
            for (const DeviceConfig& classConfig : plan.deviceClass->config) {
                entries->second.push_back(config.size());
                config.push_back({"FromClass", {plan.name}, classConfig});
            }
        } else {
            for (size_t index : entries->second)
                config[index].requests.push_back(plan.name);
        }
    }
    for (const ClaimConfig& claimConfig : state.claim->config) {
        bool include = claimConfig.requests.empty();
        for (const std::string& name : claimConfig.requests) {
            bool topLevel = std::any_of(state.claim->requests.begin(), state.claim->requests.end(),
                                        [&](const Request& r) { return r.name == name; });
            include = include || topLevel || selected.contains(name);
        }
        if (include)
            config.push_back({"FromClaim", claimConfig.requests, claimConfig.opaque});
    }
    for (AllocatedConfig& entry : config) {
        if (entry.requests.empty())
            continue;
        bool coversAll = true;
        for (const RequestSlot& slot : state.requests) {
            const Plan& plan = slot.plan();
            bool covered = std::any_of(
                entry.requests.begin(), entry.requests.end(),
                [&](const std::string& name) { return name == plan.parent || name == plan.name; });
            coversAll = coversAll && covered;
        }
        if (coversAll)
            entry.requests.clear();
    }
    return config;
}

Result<std::optional<NodeSelector>> buildNodeSelector(const Allocator::Impl& impl, const Node& node,
                                                      const ClaimState& state) {
    NodeSelectorTerm merged;
    auto addUnique = [](std::vector<NodeSelectorRequirement>& into,
                        const std::vector<NodeSelectorRequirement>& from) {
        for (const NodeSelectorRequirement& requirement : from) {
            NodeSelectorRequirement sorted = requirement;
            std::sort(sorted.values.begin(), sorted.values.end());
            bool known = std::any_of(into.begin(), into.end(), [&](NodeSelectorRequirement r) {
                std::sort(r.values.begin(), r.values.end());
                return r == sorted;
            });
            if (!known)
                into.push_back(requirement);
        }
    };
    for (const Placement& placement : state.placements) {
        const DeviceInfo& info = impl.devices[static_cast<size_t>(placement.device)];
        const Slice& slice = *info.slice;
        const Device& device = *info.device;
        const bool perDevice = slice.perDeviceNodeSelection;
        const auto& nodeName = perDevice ? device.nodeName : slice.nodeName;
        const auto& selector = perDevice ? device.nodeSelector : slice.nodeSelector;
        if (nodeName || device.bindsToNode) {
            NodeSelector local;
            local.terms.push_back({{}, {{"metadata.name", "In", {node.name}}}});
            return std::optional<NodeSelector>(local);
        }
        if (!selector)
            continue;
        if (selector->terms.size() != 1)
            return Error{"device " + slice.driver + "/" + slice.pool.name + "/" + device.name +
                         ": a node selector with " + std::to_string(selector->terms.size()) +
                         " terms cannot be merged into the allocation's node selector"};
        addUnique(merged.matchExpressions, selector->terms.front().matchExpressions);
        addUnique(merged.matchFields, selector->terms.front().matchFields);
    }
    if (merged.matchExpressions.empty() && merged.matchFields.empty())
        return std::optional<NodeSelector>();
    return std::optional<NodeSelector>(NodeSelector{{merged}});
}

}  // namespace

Result<Allocation> buildAllocation(const Allocator::Impl& impl, const Node& node,
                                   const ClaimState& state) {
    Allocation allocation;
    allocation.results = state.results;
    allocation.config = buildConfig(state);
    auto selector = buildNodeSelector(impl, node, state);
    if (!selector)
        return selector.error();
    allocation.nodeSelector = std::move(*selector);
    return allocation;
}

}  // namespace numadra::allocator::detail
