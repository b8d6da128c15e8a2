// The search's plans (search.hpp): for each request of a claim its class, selectors,
// constraints and capacity requests, and its candidates in search order, with what each
// selector says of a device found out once and cached.

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <set>

#include "capacity.hpp"
#include "results.hpp"
#include "search.hpp"

namespace numadra::allocator::detail {

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
        key += name + '=' + amount.text() + '\n';
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

}  // namespace numadra::allocator::detail
