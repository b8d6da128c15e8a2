// The quick search: upstream's own search order without the counting bounds, on candidates
// filled as it reaches them, for a few steps. It answers when it finds a solution (the bounds
// never cut one, so the bounded search would find the same first); anything else (no solution,
// an error, the limits) is the bounded search's to answer. A feasible claim on a big node then
// costs the devices the search visits, as upstream's does, instead of every device's verdict.

#include "search.hpp"

namespace numadra::allocator::detail {

namespace {

// Requests whose plans need every candidate up front: All sets, capacity filters.
bool needsEveryCandidate(const DeviceRequestSpec& spec) {
    return spec.allocationMode != "ExactCount" || !spec.capacityRequests.empty();
}

template <class Visit>
void eachSpec(std::span<const Claim> claims, Visit visit) {
    for (const Claim& claim : claims) {
        for (const Request& request : claim.requests) {
            if (request.exactly)
                visit(*request.exactly);
            for (const SubRequest& sub : request.firstAvailable)
                visit(sub.spec);
        }
    }
}

}  // namespace

bool Search::quickSuits() const {
    bool suits = true;
    eachSpec(claimsIn_,
             [&](const DeviceRequestSpec& spec) { suits = suits && !needsEveryCandidate(spec); });
    return suits;
}

bool Search::candidatesComplete() const {
    bool complete = true;
    eachSpec(claimsIn_, [&](const DeviceRequestSpec& spec) {
        if (!complete)
            return;
        auto deviceClass = impl_.classes.find(spec.deviceClassName);
        if (deviceClass == impl_.classes.end()) {
            complete = false;  // the error is the bounded search's to report
            return;
        }
        auto list = impl_.candidates.find(candidatesKey(deviceClass->second, spec));
        complete = list != impl_.candidates.end() && list->second.scanned == view_.scanOrder.size();
    });
    return complete;
}

// A search without backtracking takes a step per claim, request and device.
std::uint64_t Search::quickSlots() const {
    std::uint64_t slots = 0;
    for (const Claim& claim : claimsIn_) {
        slots += 1;
        for (const Request& request : claim.requests) {
            std::int64_t most = request.exactly ? request.exactly->count : 0;
            for (const SubRequest& sub : request.firstAvailable)
                most = std::max(most, sub.spec.count);
            slots += 1 + static_cast<std::uint64_t>(std::max<std::int64_t>(most, 0));
        }
    }
    return slots;
}

std::optional<Result<Outcome>> Search::searchQuickly(bool lazyPlans) {
    quick_ = true;
    // Room for a little backtracking; beyond it the bounds cut better. Counts, not time, so
    // that the same input always takes the same path (and reports the same searchSteps).
    const std::uint64_t slots = quickSlots();
    stepLimit_ = 16 + 2 * slots;
    tryLimit_ = 64 + 8 * slots;
    // Scanning the node's devices more than twice over is backtracking through devices in use.
    visitLimit_ = 64 + 2 * view_.searchOrder.size();
    bool built = true;
    if (lazyPlans) {
        claims_.resize(claimsIn_.size());
        for (size_t i = 0; i < claimsIn_.size() && built; ++i)
            built = buildClaim(claimsIn_[i], claims_[i]).ok();
    }
    std::vector<bool> prune;
    for (ClaimState& state : claims_) {
        prune.push_back(state.prune);
        state.prune = false;  // the bounds need every candidate
    }
    Step step = Step::Failed;
    if (built) {
        step = allocateOne(0, 0, 0, 0);
        releaseInFlight();
    }
    quick_ = false;
    if (step == Step::Found)
        return found();
    for (size_t i = 0; i < claims_.size(); ++i)
        claims_[i].prune = prune[i];
    resetAfterQuickSearch(lazyPlans);
    return std::nullopt;
}

// A search that found nothing has undone its placements; what remains are the lazy plans (not
// the bounded search's) and the markers of where it stopped.
void Search::resetAfterQuickSearch(bool lazyPlans) {
    if (lazyPlans) {
        claims_.clear();
    } else {
        for (ClaimState& state : claims_) {
            for (RequestSlot& slot : state.requests) {
                slot.selected = 0;
                slot.bound = false;
            }
        }
    }
    failure_.clear();
    steps_ = 0;
    tries_ = 0;
    visits_ = 0;
    sharedInFlight_.clear();
    countersInFlight_.clear();
    groupsInFlight_.clear();
}

}  // namespace numadra::allocator::detail
