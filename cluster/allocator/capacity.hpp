#pragma once
// Consumable capacity (KEP-5075) and request-driven shared counters (KEP-5941).

#include <map>
#include <optional>
#include <string>

#include "internal.hpp"

namespace numadra::allocator::detail {

// The amount a request takes under a requestPolicy: not requested -> the default (or `whole`);
// a validRange rounds up to min + k * step (in milli-units when every bound is a whole number
// of them, else in whole units, as upstream with DRAFractionalCapacityRange); validValues take
// the first value not below the request. An error when the rounding leaves int64, as upstream.
Result<Quantity> policyAmount(const std::optional<Quantity>& requested, const Quantity& whole,
                      const std::optional<RequestPolicy>& policy);
// Why `amount` breaks the policy, or nullopt.
std::optional<std::string> policyViolation(const Quantity& amount,
                                           const std::optional<RequestPolicy>& policy);

// A device capacity by qualified name (exact, or the bare name in the driver's domain).
const Capacity* findCapacity(const Device& device, const std::string& driver,
                             const std::string& name, std::string* key = nullptr);
// Whether a capacity request key feeds one of the device's counters (valueFrom.capacityKey).
bool feedsCounter(const Device& device, const std::string& capacityKey);

struct CapacityFit {
    bool fits = true;
    std::string reason;
    // Set (with fits false) when the amount cannot be computed or is negative: upstream
    // aborts the allocation with it.
    std::optional<std::string> error;
    std::map<std::string, Quantity> consumed;  // every capacity of the device
};
// Checks the request's capacity requests against the device (inUse: what committed and
// in-flight shares of this device already consume).
CapacityFit fitCapacity(const Device& device, const std::string& driver,
                        const std::map<std::string, Quantity>& requests,
                        const std::map<std::string, Quantity>* inUse);

// What allocating the device for a request takes from each counter of its pool. Request-driven
// amounts are also reported by capacity key in `requestDriven` (they go into the result's
// consumedCapacity, so a later run can account them).
Result<CounterAmounts> counterDemand(const Device& device,
                                     const std::map<std::string, const CounterSet*>& sets,
                                     const std::map<std::string, Quantity>& requests,
                                     std::map<std::string, Quantity>* requestDriven,
                                     bool requestDrivenOnly = false);

}  // namespace numadra::allocator::detail
