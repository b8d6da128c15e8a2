// The search: upstream's allocateOne recursion (claims, requests, device slots; candidates in
// search order; combinations within a request; firstAvailable alternatives in order), plus
// counting bounds that cut branches which cannot succeed. Bounds never cut a branch holding a
// solution, so the first solution found is the one upstream finds.

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

bool anyNegativeCapacity(const Device& device) {
    return std::any_of(device.capacity.begin(), device.capacity.end(),
                       [](const auto& entry) { return entry.second.value.sign() < 0; });
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

Verdict Search::evaluate(ExpressionCache& expression, int device) {
    Verdict& verdict = expression.verdicts[static_cast<size_t>(device)];
    if (verdict != Verdict::Unknown)
        return verdict;
    if (const std::optional<bool> decided = impl_.decideSimply(expression, device)) {
        verdict = *decided ? Verdict::True : Verdict::False;
        return verdict;
    }
    const Result<cel::Value>& value = impl_.celValue(device);
    if (!value) {
        verdict = Verdict::Failed;
        expression.failures[device] = value.error().message;
        return verdict;
    }
    Result<bool> matched = expression.program->matches(*value);
    if (!matched) {
        verdict = Verdict::Failed;
        expression.failures[device] = matched.error().message;
    } else {
        verdict = *matched ? Verdict::True : Verdict::False;
    }
    return verdict;
}

Verdict Search::selectable(const std::vector<ExpressionCache*>& selectors, int device) {
    for (ExpressionCache* selector : selectors) {
        Verdict verdict = evaluate(*selector, device);
        if (verdict != Verdict::True)
            return verdict;
    }
    return Verdict::True;
}

std::string Search::candidatesKey(const DeviceClass& deviceClass,
                                  const DeviceRequestSpec& spec) const {
    std::string key = node_.name + '\n' + deviceClass.name;
    for (const std::string& selector : spec.selectors)
        key += '\n' + selector;
    return key;
}

CandidateList& Search::candidatesFor(const DeviceClass& deviceClass,
                                     const DeviceRequestSpec& spec) {
    return impl_.candidates[candidatesKey(deviceClass, spec)];
}

std::vector<StaticFit>& Search::staticFits(const std::map<std::string, Quantity>& requests) {
    std::string key;
    for (const auto& [name, amount] : requests)
        key += name + '=' + amount.toString() + '\n';
    std::vector<StaticFit>& fits = impl_.staticFits[key];
    fits.resize(impl_.devices.size(), StaticFit::Unknown);
    return fits;
}

StaticFit Search::staticFit(std::vector<StaticFit>& fits, int device,
                            const std::map<std::string, Quantity>& requests) {
    StaticFit& fit = fits[static_cast<size_t>(device)];
    if (fit == StaticFit::Unknown) {
        const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
        const CapacityFit computed =
            fitCapacity(*info.device, info.slice->driver, requests, nullptr);
        fit = computed.error  ? StaticFit::Fails
              : computed.fits ? StaticFit::Fits
                              : StaticFit::DoesNotFit;
    }
    return fit;
}

bool Search::reachCandidate(CandidateList& list, const std::vector<ExpressionCache*>& selectors,
                            size_t position) {
    const std::vector<int>& order = view_.scanOrder;
    while (list.devices.size() <= position && list.scanned < order.size()) {
        const size_t at = list.scanned++;
        const int device = order[at];
        const Verdict verdict = selectable(selectors, device);
        // A device of another node is a candidate only to raise its selector's error where
        // upstream raises it (its selectors run before its node is looked at).
        if (verdict == Verdict::False || (view_.forOtherNode[at] && verdict != Verdict::Failed))
            continue;
        list.devices.push_back(device);
    }
    return position < list.devices.size();
}

bool Search::hasCandidate(const ClaimState& state, Plan& plan, size_t position) {
    if (!quick_)
        return position < plan.candidates.size();
    if (!reachCandidate(*plan.list, plan.selectors, position))
        return false;
    // Constraint values as fillConstraintValues gives them, up to this candidate.
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        auto& values = plan.constraintValues[c];
        if (values.size() > position)
            continue;
        const bool applies = state.constraints[c].appliesTo(plan);
        while (values.size() <= position) {
            const int device = plan.list->devices[values.size()];
            values.push_back(applies ? constraintValue(plan, state.constraints[c], device)
                                     : ConstraintValue{});
        }
    }
    return true;
}

int Search::candidateAt(const Plan& plan, size_t position) const {
    return quick_ ? plan.list->devices[position] : plan.candidates[position];
}

ConstraintValue Search::constraintValue(const Plan& plan, const ConstraintState& constraint,
                                        int device) {
    ConstraintValue out;
    if (!constraint.appliesTo(plan))
        return out;
    for (const auto& [name, expression] : plan.derived) {
        if (name != constraint.attribute)
            continue;
        Verdict& verdict = expression->verdicts[static_cast<size_t>(device)];
        if (verdict == Verdict::Unknown) {
            const Result<cel::Value>& value = impl_.derivedCelValue(device);
            Result<AttributeValue> derived =
                value ? expression->program->derive(*value) : Result<AttributeValue>(value.error());
            if (derived) {
                expression->derivedValues.emplace(device, toValueSet(*derived));
                verdict = Verdict::True;
            } else {
                expression->failures[device] =
                    "derived attribute " + name + ": " + derived.error().message;
                verdict = Verdict::Failed;
            }
        }
        if (verdict == Verdict::Failed) {
            out.state = ConstraintValue::State::Failed;
            out.error = &expression->failures.at(device);
            return out;
        }
        out.state = ConstraintValue::State::Present;
        out.values = &expression->derivedValues.at(device);
        return out;
    }
    const ValueSet& values =
        impl_.attributeValues(device, constraint.attribute, *constraint.valueSets);
    out.state = values.empty() ? ConstraintValue::State::Missing : ConstraintValue::State::Present;
    out.values = &values;
    return out;
}

void Search::fillConstraintValues(ClaimState& state, Plan& plan) {
    plan.constraintValues.assign(state.constraints.size(), {});
    const std::span<const int> devices =
        plan.all ? std::span<const int>(plan.allSet) : plan.candidates;
    for (size_t c = 0; c < state.constraints.size(); ++c) {
        auto& values = plan.constraintValues[c];
        if (!state.constraints[c].appliesTo(plan)) {
            values.assign(devices.size(), {});  // NotApplicable everywhere
            continue;
        }
        values.reserve(devices.size());
        for (int device : devices) {
            values.push_back(constraintValue(plan, state.constraints[c], device));
            if (values.back().state == ConstraintValue::State::Failed)
                plan.anyFailure = true;
        }
    }
}

Result<Plan> Search::buildPlan(const Claim& claim, const std::string& parent,
                               const std::string& name, const DeviceRequestSpec& spec, bool admin,
                               ClaimState& state) {
    const std::string where = "claim " + claimName(claim) + ", request " + name + ": ";
    Plan plan;
    plan.name = name;
    plan.parent = parent;
    plan.spec = &spec;
    plan.admin = admin;
    if (spec.deviceClassName.empty())
        return Error{where + "missing device class name (unsupported request type?)"};
    auto deviceClass = impl_.classes.find(spec.deviceClassName);
    if (deviceClass == impl_.classes.end())
        return Error{where + "could not retrieve device class " + spec.deviceClassName};
    plan.deviceClass = &deviceClass->second;
    for (size_t i = 0; i < deviceClass->second.selectors.size(); ++i) {
        auto compiled = impl_.expression(deviceClass->second.selectors[i], false);
        if (!compiled)
            return Error{"class " + deviceClass->second.name + ": selector #" + std::to_string(i) +
                         ": CEL compile error: " + compiled.error().message};
        plan.selectors.push_back(*compiled);
    }
    plan.classSelectors = plan.selectors.size();
    for (size_t i = 0; i < spec.selectors.size(); ++i) {
        auto compiled = impl_.expression(spec.selectors[i], false);
        if (!compiled)
            return Error{where + "selector #" + std::to_string(i) +
                         ": CEL compile error: " + compiled.error().message};
        plan.selectors.push_back(*compiled);
    }
    for (const DerivedAttribute& derived : spec.derivedAttributes) {
        auto compiled = impl_.expression(derived.expression, true);
        if (!compiled)
            return Error{where + "derived attribute " + derived.name +
                         ": CEL compile error: " + compiled.error().message};
        plan.derived.emplace_back(derived.name, *compiled);
    }
    plan.list = &candidatesFor(deviceClass->second, spec);
    if (quick_) {  // filled as the scan goes (searchQuickly() takes ExactCount requests only)
        plan.numDevices = static_cast<size_t>(spec.count);
        plan.constraintValues.assign(state.constraints.size(), {});
        return plan;
    }
    reachCandidate(*plan.list, plan.selectors, SIZE_MAX);
    plan.candidates = plan.list->devices;
    std::vector<StaticFit>* fits = nullptr;  // looked up on first use only: most plans need none
    auto fitOf = [&](int device) {
        if (fits == nullptr)
            fits = &staticFits(spec.capacityRequests);
        return staticFit(*fits, device, spec.capacityRequests);
    };
    if (!spec.capacityRequests.empty()) {
        // A dedicated device whose capacities cannot hold the request never fits it: leave it
        // out once here (the scan would skip it every time). Devices whose selectors fail stay,
        // so their error surfaces when the search reaches them, as upstream.
        for (int device : plan.candidates) {
            const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
            const bool keep = info.device->allowMultipleAllocations ||
                              selectable(plan.selectors, device) == Verdict::Failed ||
                              fitOf(device) != StaticFit::DoesNotFit;
            if (keep)
                plan.fitting.push_back(device);
        }
        plan.candidates = plan.fitting;
    }

    if (spec.allocationMode == "ExactCount") {
        plan.numDevices = static_cast<size_t>(spec.count);
    } else if (spec.allocationMode == "All") {
        plan.all = true;
        for (const PoolView& pool : view_.pools)
            if (pool.invalid || pool.incomplete)
                return Error{where + "asks for all devices, but " + pool.problem};
        for (int device : plan.candidates) {
            Verdict verdict = selectable(plan.selectors, device);
            if (verdict == Verdict::Failed)
                return Error{selectorFailure(claim, plan, device)};
            // Static capacity only, as upstream: a matching device whose remaining capacity
            // is taken by other claims stays in the set, so "all" fails instead of quietly
            // meaning "all that are left".
            const StaticFit fit = fitOf(device);
            if (fit == StaticFit::Fails) {
                const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
                const CapacityFit failed =
                    fitCapacity(*info.device, info.slice->driver, spec.capacityRequests, nullptr);
                return Error{where + "checking capacity for device " + info.device->name + ": " +
                             failed.error.value_or("")};
            }
            if (fit == StaticFit::DoesNotFit)
                continue;
            plan.allSet.push_back(device);
        }
        plan.numDevices = plan.allSet.size();
    } else {
        return Error{where + "unsupported count mode " + spec.allocationMode};
    }
    // A candidate the search may stop at with an error (its selectors, or a capacity amount
    // that cannot be computed) turns the counting bounds off: they must not cut the branch
    // where upstream raises it.
    for (int device : plan.candidates) {
        const DeviceInfo& info = impl_.devices[static_cast<size_t>(device)];
        if (selectable(plan.selectors, device) == Verdict::Failed ||
            ((!spec.capacityRequests.empty() || anyNegativeCapacity(*info.device)) &&
             fitOf(device) == StaticFit::Fails))
            plan.anyFailure = true;
    }
    fillConstraintValues(state, plan);
    return plan;
}

Status Search::buildClaim(const Claim& claim, ClaimState& state) {
    state.claim = &claim;
    for (const Constraint& constraint : claim.constraints) {
        ConstraintState entry;
        entry.spec = &constraint;
        entry.match = constraint.matchAttribute.has_value();
        entry.attribute =
            entry.match ? *constraint.matchAttribute : constraint.distinctAttribute.value_or("");
        entry.valueSets = &impl_.attributeSets[entry.attribute];
        state.constraints.push_back(std::move(entry));
    }
    if (claim.requests.size() > kMaxResults)
        return Error{"claim " + claimName(claim) + ": " + std::to_string(claim.requests.size()) +
                     " requests exceed the limit of " + std::to_string(kMaxResults)};
    size_t lowerBound = 0;
    size_t upperBound = 0;
    bool anyAll = false;
    for (const Request& request : claim.requests) {
        RequestSlot slot;
        if (request.exactly) {
            auto plan = buildPlan(claim, request.name, request.name, *request.exactly,
                                  request.exactly->adminAccess.value_or(false), state);
            if (!plan)
                return plan.error();
            slot.alternatives.push_back(std::move(*plan));
        } else {
            slot.firstAvailable = true;
            for (const SubRequest& sub : request.firstAvailable) {
                auto plan = buildPlan(claim, request.name, request.name + "/" + sub.name, sub.spec,
                                      false, state);
                if (!plan)
                    return plan.error();
                slot.alternatives.push_back(std::move(*plan));
            }
        }
        size_t minimum = SIZE_MAX;
        size_t maximum = 0;
        for (const Plan& plan : slot.alternatives) {
            minimum = std::min(minimum, plan.numDevices);
            maximum = std::max(maximum, plan.numDevices);
            anyAll = anyAll || plan.all;
            state.prune = state.prune && !plan.anyFailure;
        }
        if (slot.alternatives.empty())
            minimum = 0;
        // Checked request by request, as upstream does: a later request is not even looked at.
        if (minimum > kMaxResults - lowerBound)
            return Error{"claim " + claimName(claim) + ", request " + request.name + ": adding " +
                         std::to_string(minimum) + " devices exceeds the claim limit of " +
                         std::to_string(kMaxResults) + ", with " + std::to_string(lowerBound) +
                         " already accounted for"};
        lowerBound += minimum;
        upperBound += maximum;
        state.requests.push_back(std::move(slot));
    }
    // The bounds below stay exact only while upstream's special outcomes (the 32-device signal,
    // an "All" request's constraint error) cannot occur inside a cut branch.
    if (upperBound > kMaxResults || (anyAll && !claim.constraints.empty()))
        state.prune = false;
    return Status::Ok();
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
