// Why claims do not fit: for each request the funnel from the node's devices to the usable
// ones (class, selectors, in use, capacity, taints, counters), then the constraints that no
// value can satisfy. Runs only after a failed search, when nothing is in flight.

#include <algorithm>
#include <sstream>

#include "capacity.hpp"
#include "search.hpp"

namespace numadra::allocator::detail {

namespace {

std::string plural(size_t count, const char* noun) {
    return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

// A multi-allocatable device in use looks shareable in the slice; say why it is not.
std::string dedicatedNote(size_t shareableInUse) {
    if (shareableInUse == 0)
        return "";
    return " (" + std::to_string(shareableInUse) +
           (shareableInUse == 1 ? " allows multiple allocations but is dedicated"
                                : " allow multiple allocations but are dedicated") +
           ": allocated without a shareID)";
}

}  // namespace

std::string Search::explainPlan(const ClaimState& state, const Plan& plan) {
    const size_t visible = view_.searchOrder.size();
    size_t ofClass = 0;
    size_t selected = 0;
    size_t free = 0;
    size_t shareableInUse = 0;  // nothing is in flight here: these are committed without shareID
    size_t capacityOk = 0;
    size_t tolerated = 0;
    size_t countersOk = 0;
    size_t groupsOk = 0;
    size_t nodeOperationsOk = 0;
    std::string capacityWhy;
    std::string counterWhy;
    std::string groupWhy;
    std::string nodeOperationsWhy;
    for (int device : view_.searchOrder) {
        bool classMatch = true;
        for (size_t i = 0; i < plan.classSelectors && classMatch; ++i)
            classMatch = evaluate(*plan.selectors[i], device) != Verdict::False;
        if (!classMatch)
            continue;
        ++ofClass;
        if (selectable(plan.selectors, device) == Verdict::False)
            continue;
        ++selected;
        const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
        if (inUse(state, plan, device)) {
            shareableInUse += info.device->allowMultipleAllocations ? 1 : 0;
            continue;
        }
        ++free;
        std::map<std::string, Quantity> shared;
        if (auto it = impl_.committed.sharedCapacity.find(info.id);
            it != impl_.committed.sharedCapacity.end())
            shared = it->second;
        CapacityFit fit = fitCapacity(*info.device, info.slice->driver, plan.spec->capacityRequests,
                                      info.device->allowMultipleAllocations ? &shared : nullptr);
        if (!fit.fits) {
            capacityWhy = fit.error ? *fit.error : fit.reason;
            continue;
        }
        ++capacityOk;
        if (!taintsTolerated(*info.device, plan.spec->tolerations))
            continue;
        ++tolerated;
        if (!info.device->consumesCounters.empty()) {
            PoolKey key{info.slice->driver, info.slice->pool.name};
            const PoolView& pool = view_.pools[view_.poolByKey.at(key)];
            auto demand =
                counterDemand(*info.device, pool.counterSets, plan.spec->capacityRequests, nullptr);
            if (!demand) {
                counterWhy = demand.error().message;
                continue;
            }
            if (!countersFit(pool, key, *demand)) {
                counterWhy = "the shared counters of pool " + pool.name + " are exhausted";
                continue;
            }
        }
        ++countersOk;
        if (!info.device->consumesCounters.empty()) {
            PoolKey key{info.slice->driver, info.slice->pool.name};
            const PoolView& pool = view_.pools[view_.poolByKey.at(key)];
            const bool alreadyShared = info.device->allowMultipleAllocations &&
                                       impl_.committed.sharedCapacity.contains(info.id);
            if (!alreadyShared && !groupsAdmit(key, pool, *info.device, nullptr, &groupWhy))
                continue;
        }
        ++groupsOk;
        if (!nodeOperationsSupported(*info.slice)) {
            nodeOperationsWhy = "node " + node_.name + " does not declare the " +
                                std::string(kOptionalNodeOperationsFeature) +
                                " feature (status.declaredFeatures), which slice " +
                                info.slice->name + " needs: it sets skipNodeOperations";
            continue;
        }
        ++nodeOperationsOk;
    }
    const size_t needed = plan.all ? std::max<size_t>(plan.numDevices, 1) : plan.numDevices;
    std::ostringstream out;
    out << "request " << plan.name << " needs " << (plan.all ? "all (at least 1)" : "")
        << (plan.all ? "" : plural(needed, "device")) << " of class " << plan.deviceClass->name
        << ": the node has " << plural(visible, "usable device") << ", " << ofClass
        << " of the class, " << selected << " pass the selectors, " << free << " free";
    if (!plan.spec->capacityRequests.empty())
        out << ", " << capacityOk << " with the requested capacity";
    out << ", " << tolerated << " without an untolerated taint, " << countersOk
        << " within their counters";
    if (groupsOk != countersOk)
        out << ", " << groupsOk << " with compatible groups";
    if (nodeOperationsOk != groupsOk)
        out << ", " << nodeOperationsOk << " on a node that allows skipping node operations";
    if (nodeOperationsOk >= needed)
        return out.str();
    out << " -> ";
    if (ofClass == 0)
        out << "no device of the class";
    else if (selected < needed)
        out << "the selectors reject " << (ofClass - selected) << " of " << ofClass;
    else if (free < needed)
        out << (selected - free) << " of the matching devices are allocated to other claims"
            << dedicatedNote(shareableInUse);
    else if (capacityOk < needed)
        out << "not enough capacity (" << capacityWhy << ")";
    else if (tolerated < needed)
        out << (capacityOk - tolerated) << " are tainted and not tolerated";
    else if (countersOk < needed)
        out << counterWhy;
    else if (groupsOk < needed)
        out << "incompatible groups: " << groupWhy;
    else
        out << nodeOperationsWhy;
    return out.str();
}

std::string Search::explainConstraints(const ClaimState& state) {
    std::ostringstream out;
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        const ConstraintState& constraint = state.constraints[c];
        // For each value, how many free candidates of each covered request carry it.
        std::map<Scalar, std::map<std::string, size_t>> support;
        std::map<std::string, size_t> needed;
        for (const RequestSlot& slot : state.requests) {
            const Plan& plan = slot.plan();
            if (!constraint.appliesTo(plan) || plan.all)
                continue;
            needed[plan.name] = plan.numDevices;
            for (size_t position = 0; position < plan.candidates.size(); ++position) {
                if (inUse(state, plan, plan.candidates[position]))
                    continue;
                const ConstraintValue& value = plan.constraintValues[c][position];
                if (value.values)
                    for (const Scalar& scalar : *value.values)
                        ++support[scalar][plan.name];
            }
        }
        if (needed.empty())
            continue;
        const std::string kind = constraint.match ? "matchAttribute " : "distinctAttribute ";
        if (!constraint.match) {
            size_t total = 0;
            for (const auto& [name, count] : needed)
                total += count;
            if (support.size() < total)
                out << "constraint " << kind << constraint.attribute << ": " << total
                    << " devices need distinct values, the free candidates have " << support.size()
                    << "\n";
            continue;
        }
        bool satisfiable = false;
        std::string best;
        size_t bestShortfall = SIZE_MAX;
        for (const auto& [value, perRequest] : support) {
            size_t shortfall = 0;
            std::string detail;
            for (const auto& [name, count] : needed) {
                auto have = perRequest.find(name);
                size_t got = have == perRequest.end() ? 0 : have->second;
                shortfall += got < count ? count - got : 0;
                detail += (detail.empty() ? "" : ", ") + name + " " + std::to_string(got) + " of " +
                          std::to_string(count);
            }
            if (shortfall == 0)
                satisfiable = true;
            if (shortfall < bestShortfall) {
                bestShortfall = shortfall;
                best = describe(ValueSet{value}) + " (" + detail + ")";
            }
        }
        if (!satisfiable)
            out << "constraint " << kind << constraint.attribute
                << ": no value is shared by enough free devices"
                << (best.empty() ? std::string(" (no candidate has the attribute)")
                                 : "; closest: " + best)
                << "\n";
    }
    return out.str();
}

std::string Search::explain() {
    std::ostringstream out;
    for (const PoolView& pool : view_.pools)
        if (pool.invalid || pool.incomplete)
            out << pool.problem << "; its devices were not used\n";
    // Every request of every claim alone first; the constraints and the "together" finding only
    // when nothing fails alone (otherwise that is the reason, not the combination).
    bool eachFits = true;
    for (const ClaimState& state : claims_) {
        for (const RequestSlot& slot : state.requests) {
            for (const Plan& plan : slot.alternatives) {
                std::string line = explainPlan(state, plan);
                eachFits = eachFits && line.find(" -> ") == std::string::npos;
                out << "claim " << claimName(*state.claim) << ": " << line << "\n";
            }
        }
    }
    if (eachFits) {
        bool constraintFound = false;
        for (const ClaimState& state : claims_) {
            std::string constraints = explainConstraints(state);
            constraintFound = constraintFound || !constraints.empty();
            out << constraints;
        }
        if (!constraintFound)
            out << "every request has enough devices on its own, but no combination satisfies all "
                   "requests, constraints, capacities, counters and compatibility groups together ("
                << steps_ << " search steps)\n";
    }
    std::string text = out.str();
    if (!text.empty() && text.back() == '\n')
        text.pop_back();
    return text;
}

}  // namespace numadra::allocator::detail
