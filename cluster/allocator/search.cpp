// The search: upstream's allocateOne recursion (claims, requests, device slots; candidates in
// search order; combinations within a request; firstAvailable alternatives in order), plus
// counting bounds that cut branches which cannot succeed. Bounds never cut a branch holding a
// solution, so the first solution found is the one upstream finds. The plans the recursion
// follows are built in search_plan.cpp; taking and giving back a device is search_device.cpp.

#include "search.hpp"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "capacity.hpp"
#include "results.hpp"

namespace numadra::allocator::detail {

bool ConstraintState::appliesTo(const Plan& plan) const {
    if (spec->requests.empty())
        return true;
    for (const std::string& name : spec->requests)
        if (name == plan.name || name == plan.parent)
            return true;
    return false;
}

std::string claimName(const Claim& claim) {
    return claim.namespace_.empty() ? claim.name : claim.namespace_ + "/" + claim.name;
}

std::string Search::deviceName(int device) const {
    const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
    return info.slice->driver + "/" + info.slice->pool.name + "/" + info.device->name;
}

// Upstream's words: the class or the claim, the selector's index among its own, the device.
std::string Search::selectorFailure(const Claim& claim, const Plan& plan, int device) const {
    for (size_t i = 0; i < plan.selectors.size(); ++i) {
        auto it = plan.selectors[i]->failures.find(device);
        if (it == plan.selectors[i]->failures.end())
            continue;
        const std::string which =
            i < plan.classSelectors
                ? "class " + plan.deviceClass->name + ": selector #" + std::to_string(i)
                : "claim " + claimName(claim) + ": selector #" +
                      std::to_string(i - plan.classSelectors);
        return which + " on device " + deviceName(device) + ": CEL runtime error: " + it->second;
    }
    return "claim " + claimName(claim) + ": selector on device " + deviceName(device) +
           ": CEL runtime error";
}

Step Search::fail(std::string message) {
    failure_ = std::move(message);
    return Step::Failed;
}

// Whether a candidate can still join under the constraints' current state (`assumed`, when set,
// stands for the running intersection of constraint `assumedConstraint`).
bool Search::compatible(const ClaimState& state, const Plan& plan, size_t position,
                        const ValueSet* assumed, size_t assumedConstraint) const {
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        const ConstraintValue& value = plan.constraintValues[c][position];
        if (value.state == ConstraintValue::State::NotApplicable)
            continue;
        if (value.state != ConstraintValue::State::Present)
            return false;
        const ConstraintState& constraint = state.constraints[c];
        if (assumed && c == assumedConstraint) {
            if (!intersects(*assumed, *value.values))
                return false;
            continue;
        }
        if (constraint.recorded.empty())
            continue;
        if (constraint.match) {
            if (!intersects(constraint.recorded.back(), *value.values))
                return false;
            continue;
        }
        for (const ValueSet& used : constraint.recorded)
            if (intersects(used, *value.values))
                return false;
    }
    return true;
}

// Counting bounds: can the remaining slots of this claim's requests still be filled, looking
// only at the devices in use and the constraints' current state? Each request needs enough
// compatible free candidates, and all of them together need enough distinct exclusive devices
// (a multi-allocatable device may serve every request). Never false when a solution exists:
// everything it ignores only over-counts.
bool Search::feasible(const ClaimState& state, size_t request, size_t slot, size_t cursor,
                      const ValueSet* assumed, size_t assumedConstraint) const {
    if (!state.prune)
        return true;
    size_t totalNeeded = 0;
    for (size_t r = request; r < state.requests.size(); ++r) {
        const RequestSlot& requestSlot = state.requests[r];
        if ((requestSlot.firstAvailable && !requestSlot.bound) || requestSlot.plan().all)
            continue;
        totalNeeded += requestSlot.plan().numDevices - (r == request ? slot : 0);
    }
    ++stamp_;
    size_t distinct = 0;
    for (size_t r = request; r < state.requests.size(); ++r) {
        const RequestSlot& requestSlot = state.requests[r];
        if (requestSlot.firstAvailable && !requestSlot.bound)
            continue;  // its alternative is chosen later
        const Plan& plan = requestSlot.plan();
        if (plan.all)
            continue;
        const size_t needed = plan.numDevices - (r == request ? slot : 0);
        size_t found = 0;
        for (size_t position = (r == request ? cursor : 0); position < plan.candidates.size();
             ++position) {
            if (found >= needed && distinct >= totalNeeded)
                break;
            const int device = plan.candidates[position];
            if (inUse(state, plan, device) ||
                !compatible(state, plan, position, assumed, assumedConstraint))
                continue;
            ++found;
            const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
            if (info.device->allowMultipleAllocations) {
                ++distinct;  // may serve each request once
            } else if (stamps_[static_cast<size_t>(info.id)] != stamp_) {
                stamps_[static_cast<size_t>(info.id)] = stamp_;
                ++distinct;
            }
        }
        if (found < needed)
            return false;
    }
    return distinct >= totalNeeded;
}

// distinctAttribute: pairwise-disjoint non-empty value sets need at least one distinct value per
// device, so the covered requests cannot need more devices than their candidates have values.
bool Search::enoughDistinctValues(const ClaimState& state, size_t constraint) const {
    std::set<Scalar> values;
    size_t needed = 0;
    for (const RequestSlot& slot : state.requests) {
        if ((slot.firstAvailable && !slot.bound) || slot.plan().all)
            continue;
        const Plan& plan = slot.plan();
        if (!state.constraints[constraint].appliesTo(plan))
            continue;
        needed += plan.numDevices;
        for (size_t position = 0; position < plan.candidates.size(); ++position) {
            const ConstraintValue& value = plan.constraintValues[constraint][position];
            if (value.values && !inUse(state, plan, plan.candidates[position]))
                values.insert(value.values->begin(), value.values->end());
        }
    }
    return values.size() >= needed;
}

// At a claim's start: a matchAttribute constraint needs one value that every covered request can
// be filled with. Tries each value the candidates carry (when there are few) with the bounds.
bool Search::someValueFeasible(const ClaimState& state) const {
    if (!state.prune)
        return true;
    constexpr size_t kMaxValues = 64;
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        const ConstraintState& constraint = state.constraints[c];
        if (!constraint.recorded.empty())
            continue;
        if (!constraint.match) {
            if (!enoughDistinctValues(state, c))
                return false;
            continue;
        }
        std::set<Scalar> values;
        for (const RequestSlot& slot : state.requests) {
            if (slot.firstAvailable || slot.plan().all)
                continue;
            const Plan& plan = slot.plan();
            for (const ConstraintValue& value : plan.constraintValues[c])
                if (value.values)
                    values.insert(value.values->begin(), value.values->end());
            if (values.size() > kMaxValues)
                break;
        }
        if (values.empty() || values.size() > kMaxValues)
            continue;
        bool any = false;
        for (const Scalar& value : values) {
            ValueSet assumed{value};
            if (feasible(state, 0, 0, 0, &assumed, c)) {
                any = true;
                break;
            }
        }
        if (!any)
            return false;
    }
    return true;
}

Step Search::tryFirstAvailable(size_t claim, size_t request) {
    RequestSlot& slot = claims_[claim].requests[request];
    bool allExceeded = true;
    slot.bound = true;
    for (size_t i = 0; i < slot.alternatives.size(); ++i) {
        slot.selected = static_cast<int>(i);
        Step step = allocateOne(claim, request, 0, 0);
        if (step == Step::Found)
            return step;
        if (step == Step::Failed || step == Step::GaveUp) {
            slot.bound = false;
            return step;
        }
        allExceeded = allExceeded && step == Step::ExceedsMax;
    }
    slot.bound = false;
    slot.selected = 0;
    return allExceeded ? Step::ExceedsMax : Step::NotFound;
}

Step Search::scanCandidates(size_t claim, size_t request, size_t slot, size_t cursor) {
    ClaimState& state = claims_[claim];
    Plan& plan = state.requests[request].plan();
    const size_t remaining = plan.numDevices - slot;
    for (size_t position = cursor; hasCandidate(state, plan, position); ++position) {
        if (state.prune && plan.candidates.size() - position < remaining)
            break;  // not enough positions left for the remaining slots
        if (quick_ && ++visits_ > visitLimit_)
            return Step::GaveUp;
        const int device = candidateAt(plan, position);
        if (inUse(state, plan, device))
            continue;
        Verdict verdict = selectable(plan.selectors, device);
        if (verdict == Verdict::False)
            continue;
        if (verdict == Verdict::Failed)
            return fail(selectorFailure(*state.claim, plan, device));
        if (quick_ && ++tries_ > tryLimit_)
            return Step::GaveUp;
        if (!allocateDevice(state, plan, position, device, false)) {
            if (!failure_.empty())
                return Step::Failed;
            continue;
        }
        if (!feasible(state, request, slot + 1, position + 1)) {
            deallocate(state);
            continue;
        }
        Step step = allocateOne(claim, request, slot + 1, position + 1);
        if (step == Step::Found)
            return step;
        deallocate(state);
        if (step != Step::NotFound)
            return step;
    }
    return Step::NotFound;
}

Step Search::allocateOne(size_t claim, size_t request, size_t slot, size_t cursor) {
    ++steps_;
    if (hasDeadline_ && (steps_ & 255) == 0 && std::chrono::steady_clock::now() > deadline_)
        return Step::GaveUp;
    if (quick_ && steps_ > stepLimit_)
        return Step::GaveUp;  // searchQuickly() leaves it to the bounded search
    if (claim == claims_.size())
        return Step::Found;
    ClaimState& state = claims_[claim];
    if (request == state.requests.size()) {
        Step step = allocateOne(claim + 1, 0, 0, 0);
        return step == Step::ExceedsMax ? Step::NotFound : step;
    }
    RequestSlot& requestSlot = state.requests[request];
    if (requestSlot.firstAvailable && !requestSlot.bound)
        return tryFirstAvailable(claim, request);
    const Plan& plan = requestSlot.plan();
    if (plan.all && plan.allSet.empty())
        return Step::NotFound;
    if (slot >= plan.numDevices)
        return allocateOne(claim, request + 1, 0, 0);
    if (state.results.size() + (plan.numDevices - slot) > kMaxResults)
        return Step::ExceedsMax;
    if (slot == 0 && !feasible(state, request, 0, 0))
        return Step::NotFound;
    if (slot == 0 && request == 0 && !someValueFeasible(state))
        return Step::NotFound;
    if (!plan.all)
        return scanCandidates(claim, request, slot, cursor);

    const int device = plan.allSet[slot];
    if (!allocateDevice(state, plan, slot, device, true))
        return failure_.empty() ? Step::NotFound : Step::Failed;
    Step step = allocateOne(claim, request, slot + 1, 0);
    if (step != Step::Found)
        deallocate(state);
    return step;
}

Result<Outcome> Search::run() {
    // Kept between calls (sized once): the search undoes every in-flight mark it makes except
    // those of a solution, which are cleared when the search ends.
    inFlight_.resize(impl_.deviceById.size(), 0);
    stamps_.resize(impl_.deviceById.size(), 0);
    if (impl_.options.timeBudget.count() > 0) {
        hasDeadline_ = true;
        deadline_ = std::chrono::steady_clock::now() + impl_.options.timeBudget;
    }
    const bool quick = quickSuits();
    const bool known = quick && candidatesComplete();
    if (quick && !known) {
        if (std::optional<Result<Outcome>> answer = searchQuickly(true))
            return std::move(*answer);
    }
    claims_.resize(claimsIn_.size());
    for (size_t i = 0; i < claimsIn_.size(); ++i)
        if (Status built = buildClaim(claimsIn_[i], claims_[i]); !built)
            return built.error();
    const bool allowed = boundsAllow();
    // With every candidate known the same quick search runs on the full plans (a first call
    // and a later one answer alike), unless the bounds already rule a solution out.
    if (known && allowed) {
        if (std::optional<Result<Outcome>> answer = searchQuickly(false))
            return std::move(*answer);
    }
    return searchFully(allowed);
}

// A claim that cannot be satisfied even alone makes the whole group fail: say so before trying
// every combination of the claims before it (when no claim could raise an error along the way,
// which would be upstream's answer instead).
bool Search::boundsAllow() {
    const bool allPrune = std::all_of(claims_.begin(), claims_.end(),
                                      [](const ClaimState& state) { return state.prune; });
    if (!allPrune)
        return true;
    return std::all_of(claims_.begin(), claims_.end(), [&](const ClaimState& state) {
        return feasible(state, 0, 0, 0) && someValueFeasible(state);
    });
}

// Clears what a finished search leaves in flight (a solution's marks).
void Search::releaseInFlight() {
    for (const ClaimState& state : claims_)
        for (const Placement& placement : state.placements)
            if (placement.inFlight)
                --inFlight_[static_cast<size_t>(placement.id)];
}

Result<Outcome> Search::found() {
    Outcome outcome;
    outcome.searchSteps = steps_;
    outcome.kind = OutcomeKind::Allocated;
    for (const ClaimState& state : claims_) {
        auto allocation = buildAllocation(impl_, node_, state);
        if (!allocation)
            return allocation.error();
        outcome.allocations.push_back(std::move(*allocation));
    }
    return outcome;
}

Result<Outcome> Search::searchFully(bool boundsAllow) {
    const Step step = boundsAllow ? allocateOne(0, 0, 0, 0) : Step::NotFound;
    releaseInFlight();
    Outcome outcome;
    outcome.searchSteps = steps_;
    switch (step) {
        case Step::Failed:
            return Error{failure_};
        case Step::Found:
            return found();
        case Step::GaveUp:
            outcome.kind = OutcomeKind::GaveUp;
            outcome.explanation = "gave up after " + std::to_string(steps_) +
                                  " search steps: the time budget ran out";
            return outcome;
        case Step::NotFound:
        case Step::ExceedsMax:
            break;
    }
    // Upstream's ErrFailedAllocationOnNode: the scheduler fails this node only.
    if (view_.anyInvalid) {
        for (const PoolView& pool : view_.pools) {
            if (pool.invalid) {
                outcome.kind = OutcomeKind::FailedOnNode;
                outcome.explanation = "invalid resource pools were encountered: " + pool.problem;
                return outcome;
            }
        }
    }
    outcome.kind = OutcomeKind::Unsatisfiable;
    outcome.explanation = explain();
    return outcome;
}

}  // namespace numadra::allocator::detail

namespace numadra::allocator {

Result<Outcome> Allocator::allocate(const Node& node, std::span<const Claim> claims) {
    detail::Search search(*impl_, node, claims);
    return search.run();
}

}  // namespace numadra::allocator
