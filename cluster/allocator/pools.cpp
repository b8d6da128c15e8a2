// Which devices a node sees: node selection, pool generations and completeness, pool validity,
// and the scheduler's search order (pools by driver and name, binding-condition pools last,
// slices by name, devices as listed).

#include <algorithm>
#include <charconv>
#include <iterator>

#include "internal.hpp"

namespace numadra::allocator::detail {

namespace {

std::optional<std::int64_t> parseInteger(const std::string& text) {
    std::int64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

bool requirementMatches(const NodeSelectorRequirement& requirement,
                        const std::optional<std::string>& actual) {
    const auto& values = requirement.values;
    auto contains = [&] {
        return actual && std::find(values.begin(), values.end(), *actual) != values.end();
    };
    if (requirement.op == "In")
        return contains();
    if (requirement.op == "NotIn")
        return !contains();
    if (requirement.op == "Exists")
        return actual.has_value();
    if (requirement.op == "DoesNotExist")
        return !actual.has_value();
    if (requirement.op == "Gt" || requirement.op == "Lt") {
        if (!actual || values.size() != 1)
            return false;
        auto have = parseInteger(*actual);
        auto want = parseInteger(values.front());
        if (!have || !want)
            return false;
        return requirement.op == "Gt" ? *have > *want : *have < *want;
    }
    return false;
}

bool termMatches(const NodeSelectorTerm& term, const Node& node) {
    // An empty term selects nothing, as in node affinity.
    if (term.matchExpressions.empty() && term.matchFields.empty())
        return false;
    for (const auto& requirement : term.matchExpressions) {
        auto label = node.labels.find(requirement.key);
        std::optional<std::string> actual;
        if (label != node.labels.end())
            actual = label->second;
        if (!requirementMatches(requirement, actual))
            return false;
    }
    for (const auto& requirement : term.matchFields) {
        std::optional<std::string> actual;
        if (requirement.key == "metadata.name")
            actual = node.name;
        if (!requirementMatches(requirement, actual))
            return false;
    }
    return true;
}

bool selectionMatches(const std::optional<std::string>& nodeName,
                      const std::optional<NodeSelector>& selector, bool allNodes,
                      const Node& node) {
    if (nodeName)
        return *nodeName == node.name;
    if (allNodes)
        return true;
    if (selector)
        return nodeMatches(*selector, node);
    return false;  // an unknown future form of node selection: ignored
}

bool sliceRelevant(const Slice& slice, const Node& node) {
    if (!slice.perDeviceNodeSelection)
        return selectionMatches(slice.nodeName, slice.nodeSelector, slice.allNodes, node);
    return std::any_of(slice.devices.begin(), slice.devices.end(), [&](const Device& device) {
        return selectionMatches(device.nodeName, device.nodeSelector, device.allNodes, node);
    });
}

}  // namespace

bool nodeMatches(const NodeSelector& selector, const Node& node) {
    return std::any_of(selector.terms.begin(), selector.terms.end(),
                       [&](const NodeSelectorTerm& term) { return termMatches(term, node); });
}

bool deviceVisibleOn(const Slice& slice, const Device& device, const Node& node) {
    if (slice.perDeviceNodeSelection)
        return selectionMatches(device.nodeName, device.nodeSelector, device.allNodes, node);
    return selectionMatches(slice.nodeName, slice.nodeSelector, slice.allNodes, node);
}

namespace {

struct PoolGroup {
    std::vector<int> slices;  // indices into Impl::slices
    std::int64_t generation = 0;
};

// Slices of `pool` at `generation` anywhere in the cluster; -1 when a newer generation exists.
std::vector<int> sliceOfGeneration(const std::vector<Slice>& slices, const PoolKey& pool,
                                   std::int64_t generation, bool& obsolete) {
    std::vector<int> found;
    obsolete = false;
    for (size_t i = 0; i < slices.size(); ++i) {
        const Slice& slice = slices[i];
        if (slice.driver != pool.first || slice.pool.name != pool.second)
            continue;
        if (slice.pool.generation > generation)
            obsolete = true;
        else if (slice.pool.generation == generation)
            found.push_back(static_cast<int>(i));
    }
    return found;
}

// Checks the pool's counter sets and consumptions; a problem makes the pool invalid.
void validateCounters(const std::vector<Slice>& slices, const std::vector<int>& poolSlices,
                      PoolView& pool) {
    for (int index : poolSlices) {
        for (const CounterSet& set : slices[index].sharedCounters) {
            if (!pool.counterSets.emplace(set.name, &set).second) {
                pool.invalid = true;
                pool.problem = "counter set " + set.name + " is defined twice";
                return;
            }
        }
    }
    // Devices consuming one set come in runs (the VFs of a PF): the last set found is reused.
    const CounterSet* set = nullptr;
    for (int index : poolSlices) {
        for (const Device& device : slices[index].devices) {
            for (const CounterConsumption& use : device.consumesCounters) {
                if (set == nullptr || set->name != use.counterSet) {
                    auto found = pool.counterSets.find(use.counterSet);
                    set = found == pool.counterSets.end() ? nullptr : found->second;
                }
                if (set == nullptr) {
                    pool.invalid = true;
                    pool.problem = "device " + device.name + " consumes counter set " +
                                   use.counterSet + ", which the pool does not define";
                    return;
                }
                for (const auto& [counter, amount] : use.counters) {
                    if (!set->counters.contains(counter)) {
                        pool.invalid = true;
                        pool.problem = "device " + device.name + " consumes counter " + counter +
                                       ", which counter set " + use.counterSet + " does not define";
                        return;
                    }
                }
            }
        }
    }
}

}  // namespace

}  // namespace numadra::allocator::detail

namespace numadra::allocator {

using namespace detail;

bool nodeSelectorMatches(const NodeSelector& selector, const Node& node) {
    return nodeMatches(selector, node);
}

std::vector<int> Allocator::Impl::slicesConcerning(const Node& node) const {
    const std::vector<int>* named = nullptr;
    if (auto found = slicesByNodeName.find(node.name); found != slicesByNodeName.end())
        named = &found->second;
    if (named == nullptr)
        return slicesOfOtherNodeSelection;
    std::vector<int> merged;
    merged.reserve(named->size() + slicesOfOtherNodeSelection.size());
    std::merge(named->begin(), named->end(), slicesOfOtherNodeSelection.begin(),
               slicesOfOtherNodeSelection.end(), std::back_inserter(merged));
    return merged;
}

const NodeView& Allocator::Impl::nodeView(const Node& node) {
    auto cached = nodes.find(node.name);
    if (cached != nodes.end())
        return cached->second;

    // Relevant slices grouped by pool; only the highest generation survives.
    std::map<PoolKey, PoolGroup> groups;
    for (int i : slicesConcerning(node)) {
        const Slice& slice = slices[static_cast<size_t>(i)];
        if (!sliceRelevant(slice, node))
            continue;
        PoolGroup& group = groups[{slice.driver, slice.pool.name}];
        if (!group.slices.empty() && slice.pool.generation < group.generation)
            continue;
        if (!group.slices.empty() && slice.pool.generation > group.generation)
            group.slices.clear();
        group.generation = slice.pool.generation;
        group.slices.push_back(i);
    }

    NodeView view;
    std::vector<std::pair<bool, PoolView>> ordered;  // (has binding conditions, pool)
    for (auto& [key, group] : groups) {
        PoolView pool;
        pool.driver = key.first;
        pool.name = key.second;
        std::vector<int> poolSlices = group.slices;
        const std::int64_t declared = slices[group.slices.front()].pool.resourceSliceCount;
        if (static_cast<std::int64_t>(group.slices.size()) != declared) {
            bool obsolete = false;
            std::vector<int> all = sliceOfGeneration(slices, key, group.generation, obsolete);
            if (obsolete)
                continue;  // a newer generation is being published elsewhere: not used at all
            if (static_cast<std::int64_t>(all.size()) == declared) {
                poolSlices = all;
            } else {
                pool.incomplete = true;
                pool.problem = "resource pool " + key.second + " of driver " + key.first +
                               " is currently being updated (" + std::to_string(all.size()) +
                               " of " + std::to_string(declared) + " slices)";
            }
        }
        std::sort(poolSlices.begin(), poolSlices.end(),
                  [&](int a, int b) { return slices[a].name < slices[b].name; });
        validateCounters(slices, poolSlices, pool);

        // Same pool, same name: same device id (create() interned them).
        nameMarks.newRound(deviceById.size());
        bool bindingConditions = false;
        for (int sliceIndex : poolSlices) {
            const Slice& slice = slices[sliceIndex];
            const bool relevant = std::find(group.slices.begin(), group.slices.end(), sliceIndex) !=
                                  group.slices.end();
            for (size_t d = 0; d < slice.devices.size(); ++d) {
                const int info = sliceDeviceStart[sliceIndex] + static_cast<int>(d);
                pool.allDevices.push_back(info);
                if (!relevant)
                    continue;
                // As upstream's: any device of a slice for this node, even one that selects
                // another node, puts the pool among the binding-condition pools, and its name
                // counts for the pool's validity.
                bindingConditions = bindingConditions || slice.devices[d].hasBindingConditions;
                if (!nameMarks.mark(devices[static_cast<size_t>(info)].id) && !pool.invalid) {
                    pool.invalid = true;
                    pool.problem = "device " + slice.devices[d].name + " is listed twice";
                }
                const bool visible = deviceVisibleOn(slice, slice.devices[d], node);
                pool.listed.push_back(info);
                pool.forOtherNode.push_back(!visible);
                if (visible)
                    pool.devices.push_back(info);
            }
        }
        if (!pool.problem.empty() && pool.invalid)
            pool.problem = "resource pool " + key.second + " of driver " + key.first +
                           " is invalid: " + pool.problem;
        ordered.emplace_back(bindingConditions, std::move(pool));
    }
    // groups is a std::map ordered by (driver, pool); a stable partition keeps that order.
    std::stable_partition(ordered.begin(), ordered.end(),
                          [](const auto& entry) { return !entry.first; });
    for (auto& [bindingConditions, pool] : ordered) {
        view.anyInvalid = view.anyInvalid || pool.invalid;
        view.anyIncomplete = view.anyIncomplete || pool.incomplete;
        view.poolByKey[{pool.driver, pool.name}] = view.pools.size();
        if (!pool.invalid && !pool.incomplete) {
            view.searchOrder.insert(view.searchOrder.end(), pool.devices.begin(),
                                    pool.devices.end());
            view.scanOrder.insert(view.scanOrder.end(), pool.listed.begin(), pool.listed.end());
            view.forOtherNode.insert(view.forOtherNode.end(), pool.forOtherNode.begin(),
                                     pool.forOtherNode.end());
        }
        view.pools.push_back(std::move(pool));
    }
    return nodes.emplace(node.name, std::move(view)).first->second;
}

}  // namespace numadra::allocator
