// Taking a device for a slot of the search (search.hpp) and giving it back: whether it is in
// use, whether its taints are tolerated, its counters fit, its compatibility groups admit it and
// its capacity holds the request; the result it gives, with its share id.

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "capacity.hpp"
#include "results.hpp"
#include "search.hpp"

namespace numadra::allocator::detail {

namespace {

// Share ids are name-based (RFC 9562 version 8, from a 128-bit FNV-1a hash of the claim, the
// request and the device), so the same input always gives the same output.
std::string shareUuid(const std::string& seed) {
    unsigned __int128 hash =
        (static_cast<unsigned __int128>(0x6c62272e07bb0142ULL) << 64) | 0x62b821756295c58dULL;
    const unsigned __int128 prime = (static_cast<unsigned __int128>(1) << 88) | 0x13b;
    for (unsigned char c : seed) {
        hash ^= c;
        hash *= prime;
    }
    auto high = static_cast<std::uint64_t>(hash >> 64);
    auto low = static_cast<std::uint64_t>(hash);
    high = (high & 0xffffffffffff0fffULL) | 0x0000000000008000ULL;  // version 8
    low = (low & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;    // RFC 4122 variant
    char text[37];
    std::snprintf(text, sizeof text, "%08x-%04x-%04x-%04x-%012llx",
                  static_cast<unsigned>(high >> 32), static_cast<unsigned>((high >> 16) & 0xffff),
                  static_cast<unsigned>(high & 0xffff), static_cast<unsigned>(low >> 48),
                  static_cast<unsigned long long>(low & 0xffffffffffffULL));
    return text;
}

bool tolerates(const Toleration& toleration, const Taint& taint) {
    if (!toleration.effect.empty() && toleration.effect != taint.effect)
        return false;
    if (!toleration.key.empty() && toleration.key != taint.key)
        return false;
    if (toleration.op.empty() || toleration.op == "Equal")
        return toleration.value == taint.value;
    return toleration.op == "Exists";
}

}  // namespace

bool anyNegativeCapacity(const Device& device) {
    return std::any_of(device.capacity.begin(), device.capacity.end(),
                       [](const auto& entry) { return entry.second.value.sign() < 0; });
}

bool taintsTolerated(const Device& device, const std::vector<Toleration>& tolerations) {
    for (const Taint& taint : device.taints) {
        if (taint.effect != "NoSchedule" && taint.effect != "NoExecute")
            continue;
        bool tolerated = std::any_of(tolerations.begin(), tolerations.end(),
                                     [&](const Toleration& t) { return tolerates(t, taint); });
        if (!tolerated)
            return false;
    }
    return true;
}

// Upstream's deviceInUse and allocatingDeviceForClaim. Shares never make exclusive marks
// (committed ones carry a shareID, in-flight ones are not counted in inFlight_), so a
// multi-allocatable device stays shareable until someone holds it without a shareID: then it is
// dedicated to that claim, whatever allowMultipleAllocations says now.
bool Search::inUse(const ClaimState& state, const Plan& plan, int device) const {
    const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
    if (plan.admin) {
        // Admin access looks past other claims, not past its own claim's exclusive devices.
        for (const Placement& placement : state.placements)
            if (placement.id == info.id && placement.inFlight)
                return true;
        return false;
    }
    return impl_.committed.exclusive[static_cast<size_t>(info.id)] ||
           inFlight_[static_cast<size_t>(info.id)] > 0;
}

namespace {

// The entry of `key` in a map, or null.
template <class Map, class Key>
const typename Map::mapped_type* entryOf(const Map& map, const Key& key) {
    auto found = map.find(key);
    return found == map.end() ? nullptr : &found->second;
}

// Adds what `amounts` (a counter set's, or null) records for one counter to `used`.
void addCounterUse(const std::map<std::string, Quantity>* amounts, const std::string& counterName,
                   Quantity& used) {
    if (amounts == nullptr)
        return;
    if (const Quantity* amount = entryOf(*amounts, counterName))
        used = used.add(*amount).value_or(used);
}

// Walks the sets of some CounterAmounts (or none) alongside a pool's sets: both are sorted by
// name, so each set is found by advancing, not by a lookup.
class SetCursor {
  public:
    explicit SetCursor(const CounterAmounts* amounts) : amounts_(amounts) {
        if (amounts_ != nullptr)
            at_ = amounts_->begin();
    }

    // The amounts of set `name`, or null; names must come in increasing order.
    const std::map<std::string, Quantity>* find(const std::string& name) {
        if (amounts_ == nullptr)
            return nullptr;
        int order = -1;
        while (at_ != amounts_->end() && (order = at_->first.compare(name)) < 0)
            ++at_;
        return at_ != amounts_->end() && order == 0 ? &at_->second : nullptr;
    }

  private:
    const CounterAmounts* amounts_;
    CounterAmounts::const_iterator at_;
};

}  // namespace

bool Search::countersFit(const PoolView& pool, const PoolKey& key,
                         const CounterAmounts& demand) const {
    // This runs on every try of a counter-consuming device: sets are walked, not looked up.
    SetCursor committed(entryOf(impl_.committed.counters, key));
    SetCursor flying(entryOf(countersInFlight_, key));
    SetCursor demanded(&demand);
    // Every counter of every set of the pool must stay non-negative: an over-committed counter
    // blocks every further counter-consuming device of the pool (upstream behaviour).
    for (const auto& [setName, set] : pool.counterSets) {
        const auto* committedSet = committed.find(setName);
        const auto* flyingSet = flying.find(setName);
        const auto* demandSet = demanded.find(setName);
        for (const auto& [counterName, counter] : set->counters) {
            Quantity used;
            addCounterUse(committedSet, counterName, used);
            addCounterUse(flyingSet, counterName, used);
            addCounterUse(demandSet, counterName, used);
            if (counter.value < used)
                return false;
        }
    }
    return true;
}

namespace {

std::vector<std::string> sortedGroups(const CounterConsumption& use) {
    std::vector<std::string> groups = use.compatibilityGroups;
    std::sort(groups.begin(), groups.end());
    groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
    return groups;
}

std::string describeGroups(const std::vector<std::string>& groups) {
    if (groups.empty())
        return "no groups";
    std::string out = "{";
    for (const std::string& group : groups)
        out += (out.size() > 1 ? ", " : "") + group;
    return out + "}";
}

}  // namespace

bool GroupIntersection::admits(const std::vector<std::string>& sortedGroups) const {
    if (!hasMembers)
        return true;
    if (sortedGroups.empty())
        return allEmpty;  // no groups only with no groups
    if (allEmpty)
        return false;
    return std::find_first_of(groups.begin(), groups.end(), sortedGroups.begin(),
                              sortedGroups.end()) != groups.end();
}

GroupIntersection GroupIntersection::add(const std::vector<std::string>& sortedGroups) const {
    GroupIntersection next = *this;
    if (!hasMembers) {
        next.hasMembers = true;
        next.allEmpty = sortedGroups.empty();
        next.groups = sortedGroups;
        return next;
    }
    if (allEmpty || sortedGroups.empty())
        return next;  // admits() let only the matching kind in: unchanged
    next.groups.clear();
    std::set_intersection(groups.begin(), groups.end(), sortedGroups.begin(), sortedGroups.end(),
                          std::back_inserter(next.groups));
    return next;
}

std::string GroupIntersection::describe() const {
    if (!hasMembers)
        return "no devices";
    return allEmpty ? "no groups" : describeGroups(groups);
}

const GroupsBySet& Search::groupBaseline(const PoolKey& key, const PoolView& pool) const {
    auto cached = groupBaselines_.find(key);
    if (cached != groupBaselines_.end())
        return cached->second;
    // Like the counters of allocated devices: every device of the pool that is allocated,
    // exclusively or shared (admin access takes nothing), with its groups as the slice has them.
    GroupsBySet baseline;
    for (int index : pool.allDevices) {
        const DeviceInfo& info = impl_.devices[static_cast<size_t>(index)];
        const auto id = static_cast<size_t>(info.id);
        const bool allocated =
            (id < impl_.committed.exclusive.size() && impl_.committed.exclusive[id]) ||
            impl_.committed.sharedCapacity.contains(info.id);
        if (!allocated)
            continue;
        for (const CounterConsumption& use : info.device->consumesCounters) {
            GroupIntersection& entry = baseline[use.counterSet];
            entry = entry.add(sortedGroups(use));
        }
    }
    return groupBaselines_.emplace(key, std::move(baseline)).first->second;
}

bool Search::groupsAdmit(const PoolKey& key, const PoolView& pool, const Device& device,
                         std::vector<std::pair<std::string, GroupIntersection>>* updated,
                         std::string* why) const {
    const GroupsBySet& baseline = groupBaseline(key, pool);
    const GroupsBySet* running = nullptr;
    if (auto found = groupsInFlight_.find(key); found != groupsInFlight_.end())
        running = &found->second;
    std::vector<std::pair<std::string, GroupIntersection>> local;
    for (const CounterConsumption& use : device.consumesCounters) {
        // The running state when the set has one (this call's devices), else the allocated ones.
        GroupIntersection current;
        auto earlier = std::find_if(local.rbegin(), local.rend(), [&](const auto& entry) {
            return entry.first == use.counterSet;
        });
        if (earlier != local.rend()) {
            current = earlier->second;
        } else if (auto it =
                       running ? running->find(use.counterSet) : GroupsBySet::const_iterator{};
                   running && it != running->end()) {
            current = it->second;
        } else if (auto base = baseline.find(use.counterSet); base != baseline.end()) {
            current = base->second;
        }
        const std::vector<std::string> groups = sortedGroups(use);
        if (!current.admits(groups)) {
            if (why)
                *why = "device " + device.name + " declares " + describeGroups(groups) +
                       " on counter set " + use.counterSet + " of pool " + pool.name +
                       ", where the devices allocated from it have " +
                       (current.allEmpty ? std::string("no groups")
                                         : "only " + describeGroups(current.groups)) +
                       " in common";
            return false;
        }
        local.emplace_back(use.counterSet, current.add(groups));
    }
    if (updated)
        *updated = std::move(local);
    return true;
}

bool Search::nodeOperationsSupported(const Slice& slice) const {
    return slice.skipNodeOperations.empty() ||
           std::find(node_.declaredFeatures.begin(), node_.declaredFeatures.end(),
                     kOptionalNodeOperationsFeature) != node_.declaredFeatures.end();
}

namespace {

// "claim C, request R" as upstream names them (a subrequest by its own name, not "req/sub").
std::string requestLabel(const Claim& claim, const Plan& plan) {
    return "claim " + claimName(claim) + ", request " + plan.name.substr(plan.name.find('/') + 1);
}

}  // namespace

std::optional<CapacityFit> Search::capacityFit(const DeviceInfo& info, const Plan& plan) const {
    const Device& dev = *info.device;
    const bool multi = dev.allowMultipleAllocations;
    // A dedicated device without capacity requests takes its whole capacity, which always fits
    // (the API refuses a requestPolicy on it); only a negative value is upstream's error.
    if (!multi && plan.spec->capacityRequests.empty() && !anyNegativeCapacity(dev))
        return std::nullopt;
    std::map<std::string, Quantity> used;
    if (multi) {
        if (auto committed = impl_.committed.sharedCapacity.find(info.id);
            committed != impl_.committed.sharedCapacity.end())
            used = committed->second;
        if (auto flying = sharedInFlight_.find(info.id); flying != sharedInFlight_.end())
            for (const auto& [name, amount] : flying->second.amounts)
                used[name] = used[name].add(amount).value_or(used[name]);
    }
    return fitCapacity(dev, info.slice->driver, plan.spec->capacityRequests,
                       multi ? &used : nullptr);
}

// Upstream's checks of one candidate in upstream's order, so that an error (a capacity that
// cannot be computed, a derived attribute that fails at run time) is raised exactly where the
// scheduler raises it, and never for a device it leaves out first:
//   in use; capacity (a device the search picks: upstream's scan checks it before
//   allocateDevice); node operations; compatibility groups; counters; taints; the constraints
//   in order, each evaluating its derived attribute on the device only when it gets there;
//   capacity (a device an "All" request must take: upstream checks it after the constraints,
//   so a broken constraint is an error even when the capacity is taken).
bool Search::allocateDevice(ClaimState& state, const Plan& plan, size_t position, int device,
                            bool must) {
    const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
    const Device& dev = *info.device;
    const bool multi = dev.allowMultipleAllocations;
    if (inUse(state, plan, device))
        return false;
    std::optional<CapacityFit> fit;
    if (!must) {
        fit = capacityFit(info, plan);
        if (fit && !fit->fits) {
            if (fit->error)
                failure_ = requestLabel(*state.claim, plan) + ": checking capacity for device " +
                           deviceName(device) + ": " + *fit->error;
            return false;
        }
    }

    Placement placement;
    placement.device = device;
    placement.id = info.id;
    DeviceResult result;  // named at the end: most tries fail before

    if (!nodeOperationsSupported(*info.slice))
        return false;
    // Counters: a shared device pays its static counters once; request-driven ones per share.
    std::vector<std::pair<std::string, GroupIntersection>> groups;
    if (!dev.consumesCounters.empty()) {
        PoolKey key{info.slice->driver, info.slice->pool.name};
        const PoolView& pool = view_.pools[view_.poolByKey.at(key)];
        const bool alreadyShared = multi && (impl_.committed.sharedCapacity.contains(info.id) ||
                                             sharedInFlight_.contains(info.id));
        // Compatibility groups, checked as upstream checks them: not again for a further share
        // of a device already in use (its groups are already on the counter sets).
        if (!alreadyShared) {
            if (!groupsAdmit(key, pool, dev, &groups, nullptr))
                return false;
            placement.groups.emplace(
                key, std::vector<std::pair<std::string, std::optional<GroupIntersection>>>{});
        }
        std::map<std::string, Quantity> requestDriven;
        auto demand = counterDemand(dev, pool.counterSets, plan.spec->capacityRequests,
                                    &requestDriven, alreadyShared);
        if (!demand || !countersFit(pool, key, *demand))
            return false;
        placement.counters = std::make_pair(key, std::move(*demand));
        for (auto& [capacityKey, amount] : requestDriven)
            result.consumedCapacity[capacityKey] = amount;
    }
    if (!taintsTolerated(dev, plan.spec->tolerations))
        return false;
    auto undoConstraints = [&] {
        for (int pushed : placement.constraintsPushed)
            state.constraints[static_cast<size_t>(pushed)].recorded.pop_back();
    };
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        ConstraintState& constraint = state.constraints[c];
        const ConstraintValue& value = plan.constraintValues[c][position];
        if (value.state == ConstraintValue::State::NotApplicable)
            continue;
        if (value.state == ConstraintValue::State::Failed) {
            undoConstraints();
            failure_ = "claim " + claimName(*state.claim) + ", request " + plan.name + ": device " +
                       deviceName(device) + ": " + *value.error;
            return false;
        }
        bool ok = value.state == ConstraintValue::State::Present;
        if (ok && constraint.match) {
            if (constraint.recorded.empty()) {
                constraint.recorded.push_back(*value.values);
            } else if (intersects(constraint.recorded.back(), *value.values)) {
                constraint.recorded.push_back(
                    intersection(constraint.recorded.back(), *value.values));
            } else {
                ok = false;
            }
        } else if (ok) {
            for (const ValueSet& used : constraint.recorded)
                ok = ok && !intersects(used, *value.values);
            if (ok)
                constraint.recorded.push_back(*value.values);
        }
        if (!ok) {
            undoConstraints();
            if (must)
                failure_ = requestLabel(*state.claim, plan) + ": cannot add device " +
                           deviceName(device) +
                           " because a claim constraint would not be satisfied";
            return false;
        }
        placement.constraintsPushed.push_back(static_cast<int>(c));
    }
    if (must) {
        fit = capacityFit(info, plan);
        if (fit && !fit->fits) {
            undoConstraints();
            if (fit->error)
                failure_ = requestLabel(*state.claim, plan) + ": rechecking capacity for device " +
                           deviceName(device) + ": " + *fit->error;
            return false;
        }
    }
    if (fit && multi)
        placement.sharedCapacity = std::move(fit->consumed);

    if (!multi) {
        placement.inFlight = true;
        ++inFlight_[static_cast<size_t>(info.id)];
    }
    if (placement.sharedCapacity) {
        SharedUse& share = sharedInFlight_[info.id];
        ++share.shares;
        for (const auto& [name, amount] : *placement.sharedCapacity) {
            share.amounts[name] = share.amounts[name].add(amount).value_or(share.amounts[name]);
            result.consumedCapacity[name] = amount;
        }
        result.shareID = shareUuid(claimName(*state.claim) + "\n" + state.claim->uid + "\n" +
                                   plan.name + "\n" + deviceName(device));
    }
    if (placement.counters) {
        CounterAmounts& flying = countersInFlight_[placement.counters->first];
        for (const auto& [setName, counters] : placement.counters->second)
            for (const auto& [counterName, amount] : counters) {
                Quantity& slot = flying[setName][counterName];
                slot = slot.add(amount).value_or(slot);
            }
    }
    if (placement.groups) {
        GroupsBySet& running = groupsInFlight_[placement.groups->first];
        for (auto& [setName, next] : groups) {
            auto previous = running.find(setName);
            placement.groups->second.emplace_back(
                setName, previous == running.end()
                             ? std::nullopt
                             : std::optional<GroupIntersection>(previous->second));
            running[setName] = std::move(next);
        }
    }
    result.request = plan.name;
    result.driver = info.slice->driver;
    result.pool = info.slice->pool.name;
    result.device = dev.name;
    result.adminAccess = plan.admin;
    result.tolerations = plan.spec->tolerations;
    result.bindingConditions = dev.bindingConditions;
    result.bindingFailureConditions = dev.bindingFailureConditions;
    result.skipNodeOperations = info.slice->skipNodeOperations;
    state.results.push_back(std::move(result));
    state.placements.push_back(std::move(placement));
    return true;
}

void Search::deallocate(ClaimState& state) {
    Placement placement = std::move(state.placements.back());
    state.placements.pop_back();
    state.results.pop_back();
    // Each constraint was pushed at most once, onto its own stack: the order does not matter.
    for (int pushed : placement.constraintsPushed)
        state.constraints[static_cast<size_t>(pushed)].recorded.pop_back();
    if (placement.inFlight)
        --inFlight_[static_cast<size_t>(placement.id)];
    if (placement.sharedCapacity) {
        SharedUse& share = sharedInFlight_[placement.id];
        for (const auto& [name, amount] : *placement.sharedCapacity)
            share.amounts[name] = share.amounts[name].sub(amount).value_or(share.amounts[name]);
        if (--share.shares == 0)
            sharedInFlight_.erase(placement.id);
    }
    if (placement.counters) {
        CounterAmounts& flying = countersInFlight_[placement.counters->first];
        for (const auto& [setName, counters] : placement.counters->second)
            for (const auto& [counterName, amount] : counters) {
                Quantity& slot = flying[setName][counterName];
                slot = slot.sub(amount).value_or(slot);
            }
    }
    if (placement.groups) {
        GroupsBySet& running = groupsInFlight_[placement.groups->first];
        auto& saved = placement.groups->second;
        for (size_t i = saved.size(); i-- > 0;) {
            const auto& [setName, previous] = saved[i];
            if (previous)
                running[setName] = *previous;
            else
                running.erase(setName);
        }
    }
}

}  // namespace numadra::allocator::detail
