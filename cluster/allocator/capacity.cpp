// Consumable capacity (KEP-5075) and request-driven shared counters (KEP-5941): how much of a
// device's capacities and of its pool's counters one request takes.

#include "capacity.hpp"

#include <limits>

namespace numadra::allocator::detail {

namespace {

constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();

std::int64_t ceilDivide(std::int64_t numerator, std::int64_t denominator) {
    return numerator / denominator + (numerator % denominator != 0 ? 1 : 0);
}

Error notRepresentable(const std::string& why) {
    return Error{"capacity request cannot be represented in the device's range arithmetic: " + why};
}

// Upstream's useMilli (DRAFractionalCapacityRange, which dra-allocate always has on): a range
// is computed in milli-units when each of its bounds is exactly a whole number of milli-units
// and the step is at least 1m; otherwise in whole units.
bool useMilli(const CapacityRange& range) {
    for (const Quantity* bound :
         {&range.min, range.max ? &*range.max : nullptr, range.step ? &*range.step : nullptr})
        if (bound && !bound->exactMilli())
            return false;
    return !range.step || *range.step->exactMilli() >= 1;
}

// min + k * step, the smallest not below the request, with upstream's overflow guards.
Result<Quantity> roundUpInRange(const Quantity& requested, const CapacityRange& range) {
    if (requested < range.min)
        return range.min;
    if (!range.step || range.step->sign() <= 0)
        return requested;
    const Quantity::Format format = range.step->format();
    if (useMilli(range)) {
        const auto requestedMilli = requested.exactMilli();
        if (!requestedMilli)
            return notRepresentable("request " + requested.text() +
                                    " is not a representable milli value");
        const std::int64_t step = *range.step->exactMilli();
        const std::int64_t min = *range.min.exactMilli();
        const std::int64_t steps = ceilDivide(*requestedMilli - min, step);
        if (steps > (kMaxInt64 - min) / step)
            return notRepresentable("rounding request " + requested.text() +
                                    " up to the next step passes the milli-value range");
        const std::int64_t milli = min + step * steps;
        return milli % 1000 == 0 ? Quantity::fromInt(milli / 1000, format)
                                 : Quantity::fromMilli(milli, format);
    }
    if (Quantity::fromInt(kMaxInt64, format) < requested)
        return notRepresentable("request " + requested.text() + " exceeds MaxInt64");
    // Whole units, as upstream (Quantity.Value() rounds fractions up).
    const std::int64_t min = range.min.value();
    const std::int64_t step = range.step->value();
    const std::int64_t steps = ceilDivide(requested.value() - min, step);
    if (min >= 0 && steps > (kMaxInt64 - min) / step)
        return notRepresentable("rounding request " + requested.text() +
                                " up to the next step passes MaxInt64");
    return Quantity::fromInt(min + step * steps, format);
}

}  // namespace

Result<Quantity> policyAmount(const std::optional<Quantity>& requested, const Quantity& whole,
                              const std::optional<RequestPolicy>& policy) {
    if (!requested)
        return policy && policy->defaultValue ? *policy->defaultValue : whole;
    if (!policy)
        return *requested;
    if (policy->validRange)
        return roundUpInRange(*requested, *policy->validRange);
    if (!policy->validValues.empty()) {
        for (const Quantity& valid : policy->validValues)
            if (!(valid < *requested))
                return valid;
    }
    return *requested;
}

namespace {

// Whether amount is min plus a whole number of steps, in the units upstream computes in.
bool onStep(const Quantity& amount, const CapacityRange& range) {
    if (useMilli(range)) {
        const auto milli = amount.exactMilli();
        return milli && (*milli - *range.min.exactMilli()) % *range.step->exactMilli() == 0;
    }
    return (amount.value() - range.min.value()) % range.step->value() == 0;
}

}  // namespace

std::optional<std::string> policyViolation(const Quantity& amount,
                                           const std::optional<RequestPolicy>& policy) {
    if (!policy)
        return std::nullopt;
    if (policy->defaultValue && *policy->defaultValue == amount)
        return std::nullopt;
    if (policy->validRange) {
        const CapacityRange& range = *policy->validRange;
        if (range.max && *range.max < amount)
            return amount.text() + " is above the maximum " + range.max->text();
        if (range.step && range.step->sign() > 0 && !onStep(amount, range))
            return amount.text() + " is not " + range.min.text() + " plus a multiple of " +
                   range.step->text();
        return std::nullopt;
    }
    if (!policy->validValues.empty()) {
        for (const Quantity& valid : policy->validValues)
            if (valid == amount)
                return std::nullopt;
        return amount.text() + " is not one of the valid values";
    }
    return std::nullopt;
}

const Capacity* findCapacity(const Device& device, const std::string& driver,
                             const std::string& name, std::string* key) {
    auto exact = device.capacity.find(name);
    if (exact != device.capacity.end()) {
        if (key)
            *key = exact->first;
        return &exact->second;
    }
    auto slash = name.find('/');
    if (slash != driver.size() || name.compare(0, slash, driver) != 0)
        return nullptr;
    auto bare = device.capacity.find(name.substr(slash + 1));
    if (bare == device.capacity.end())
        return nullptr;
    if (key)
        *key = bare->first;
    return &bare->second;
}

bool feedsCounter(const Device& device, const std::string& capacityKey) {
    for (const CounterConsumption& use : device.consumesCounters)
        for (const auto& [counter, amount] : use.counters)
            if (amount.capacityKey == capacityKey)
                return true;
    return false;
}

CapacityFit fitCapacity(const Device& device, const std::string& driver,
                        const std::map<std::string, Quantity>& requests,
                        const std::map<std::string, Quantity>* inUse) {
    CapacityFit fit;
    std::map<std::string, const Quantity*> requestedByCapacity;
    // A request names a capacity exactly as the device publishes it: upstream looks the key up
    // as it is, so "numa.dra.dev/cpu" does not find a capacity "cpu" (unlike attributes, where
    // the driver's domain may be left out). Checked against the real kube-scheduler.
    for (const auto& [name, amount] : requests) {
        if (device.capacity.count(name) != 0) {
            requestedByCapacity[name] = &amount;
        } else if (!feedsCounter(device, name)) {
            fit.fits = false;
            fit.reason = "requested capacity " + name + " is not defined on the device";
            std::string bare;
            if (findCapacity(device, driver, name, &bare))
                fit.reason += " (it has \"" + bare +
                              "\": capacity requests name a capacity exactly as the device "
                              "publishes it, as the scheduler matches them)";
            return fit;
        }
    }
    // First what each capacity would take (an amount that cannot be computed, or a negative
    // one, is an error, as upstream), then whether it fits.
    for (const auto& [name, capacity] : device.capacity) {
        auto requested = requestedByCapacity.find(name);
        std::optional<Quantity> asked;
        if (requested != requestedByCapacity.end())
            asked = *requested->second;
        auto amount = policyAmount(asked, capacity.value, capacity.requestPolicy);
        if (amount && amount->sign() < 0)
            amount = Error{"capacity value is negative"};
        if (!amount) {
            fit.fits = false;
            fit.error = "capacity \"" + name + "\": " + amount.error().message;
            return fit;
        }
        fit.consumed.emplace(name, *amount);
    }
    for (const auto& [name, capacity] : device.capacity) {
        const Quantity& amount = fit.consumed.at(name);
        if (auto violation = policyViolation(amount, capacity.requestPolicy)) {
            fit.fits = false;
            fit.reason = "capacity " + name + ": " + *violation;
            return fit;
        }
        Quantity total = amount;
        if (inUse) {
            auto used = inUse->find(name);
            if (used != inUse->end())
                total = total.add(used->second).value_or(capacity.value);
        }
        if (capacity.value < total) {
            fit.fits = false;
            fit.reason = "capacity " + name + ": " + amount.text() + " requested, " +
                         (inUse && inUse->contains(name) ? inUse->at(name).text() : "0") + " of " +
                         capacity.value.text() + " in use";
            return fit;
        }
    }
    return fit;
}

Result<CounterAmounts> counterDemand(const Device& device,
                                     const std::map<std::string, const CounterSet*>& sets,
                                     const std::map<std::string, Quantity>& requests,
                                     std::map<std::string, Quantity>* requestDriven,
                                     bool requestDrivenOnly) {
    CounterAmounts demand;
    for (const CounterConsumption& use : device.consumesCounters) {
        auto set = sets.find(use.counterSet);
        if (set == sets.end())
            return Error{"counter set " + use.counterSet + " is not defined in the pool"};
        for (const auto& [counter, amount] : use.counters) {
            auto definition = set->second->counters.find(counter);
            if (definition == set->second->counters.end())
                return Error{"counter " + counter + " is not defined in counter set " +
                             use.counterSet};
            Quantity taken;
            if (amount.capacityKey) {
                auto requested = requests.find(*amount.capacityKey);
                std::optional<Quantity> asked;
                if (requested != requests.end())
                    asked = requested->second;
                const auto& policy = definition->second.requestPolicy;
                // Nothing requested and no default: the device takes nothing from the counter.
                auto amountTaken = policyAmount(asked, Quantity(), policy);
                if (!amountTaken)
                    return Error{"counter " + counter + " of counter set " + use.counterSet + ": " +
                                 amountTaken.error().message};
                taken = *amountTaken;
                if (auto violation = policyViolation(taken, policy))
                    return Error{"counter " + counter + " of counter set " + use.counterSet + ": " +
                                 *violation};
                if (requestDriven)
                    (*requestDriven)[*amount.capacityKey] = taken;
            } else if (amount.value && !requestDrivenOnly) {
                taken = *amount.value;
            }
            Quantity& slot = demand[use.counterSet][counter];
            slot = slot.add(taken).value_or(taken);
        }
    }
    return demand;
}

}  // namespace numadra::allocator::detail
