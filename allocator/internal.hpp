#pragma once
// The allocator's private state, shared by its translation units.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "numadra/allocator/allocator.hpp"
#include "numadra/cel/cel.hpp"
#include "numadra/dracel/device.hpp"

namespace numadra::allocator::detail {

// --- attribute values as constraints compare them ----------------------------------------

// Versions compare as strings in constraints (upstream relies on canonical semver).
struct VersionText {
    std::string text;
    auto operator<=>(const VersionText&) const = default;  // NOLINT(modernize-use-nullptr)
};
using Scalar = std::variant<bool, std::int64_t, std::string, VersionText>;
// A scalar attribute is a one-element set; a list attribute its distinct elements, sorted.
using ValueSet = std::vector<Scalar>;

ValueSet toValueSet(const AttributeValue& value);
bool intersects(const ValueSet& a, const ValueSet& b);
ValueSet intersection(const ValueSet& a, const ValueSet& b);
std::string describe(const ValueSet& values);

// Constraint lookup: the exact qualified name, else the bare id when the domain is the driver's.
const AttributeValue* findAttribute(const Device& device, const std::string& driver,
                                    const std::string& qualifiedName);

// --- devices and pools ----------------------------------------------------------------------

struct DeviceInfo {
    const Slice* slice = nullptr;
    const Device* device = nullptr;
    int id = -1;  // DeviceID (driver, pool, device) interned; same id for duplicates
    // Built on first use, kept for the Allocator's life: the selectors' `device`, and the
    // derived attributes' (the same plus device.name).
    mutable std::optional<Result<cel::Value>> celValue;
    mutable std::optional<Result<cel::Value>> derivedCelValue;
};

struct PoolView {
    std::string driver;
    std::string name;
    bool invalid = false;
    bool incomplete = false;
    std::string problem;          // why invalid/incomplete, for errors and explanations
    std::vector<int> devices;     // node-visible, search order (slices by name)
    std::vector<int> allDevices;  // every device of the pool's current generation
    std::map<std::string, const CounterSet*> counterSets;
};

using PoolKey = std::pair<std::string, std::string>;  // driver, pool

struct NodeView {
    std::vector<PoolView> pools;   // search order
    std::vector<int> searchOrder;  // node-visible devices of usable pools, in search order
    std::map<PoolKey, size_t> poolByKey;
    bool anyInvalid = false;
    bool anyIncomplete = false;
};

bool nodeMatches(const NodeSelector& selector, const Node& node);
bool deviceVisibleOn(const Slice& slice, const Device& device, const Node& node);

// --- selector and derived-attribute caches --------------------------------------------------

enum class Verdict : std::int8_t { Unknown, False, True, Failed };

// One compiled expression and what it gave for each device (index = DeviceInfo position).
struct ExpressionCache {
    std::optional<dracel::Expression> program;
    std::vector<Verdict> verdicts;
    std::unordered_map<int, std::string> failures;    // device -> runtime error
    std::unordered_map<int, ValueSet> derivedValues;  // derived attributes only
};

// --- committed state --------------------------------------------------------------------------

using CounterAmounts = std::map<std::string, std::map<std::string, Quantity>>;  // set -> counter

struct CommittedState {
    std::vector<bool> exclusive;                                              // by device id
    std::unordered_map<int, std::map<std::string, Quantity>> sharedCapacity;  // by device id
    std::map<PoolKey, CounterAmounts> counters;  // consumed by committed devices
};

}  // namespace numadra::allocator::detail

namespace numadra::allocator {

struct Allocator::Impl {
    std::vector<Slice> slices;
    std::map<std::string, DeviceClass, std::less<>> classes;
    Options options;

    std::vector<detail::DeviceInfo> devices;                     // every device of every slice
    std::vector<int> sliceDeviceStart;                           // slice -> its first DeviceInfo
    std::unordered_map<std::string, int> deviceIds;              // "driver\0pool\0device" -> id
    std::vector<int> deviceById;                                 // id -> a DeviceInfo index
    std::map<std::string, detail::NodeView, std::less<>> nodes;  // gathered lazily
    std::unordered_map<std::string, detail::ExpressionCache> expressions;
    detail::CommittedState committed;
    // (node, class, request selectors) -> devices passing or failing them, in search order.
    std::unordered_map<std::string, std::vector<int>> candidates;
    std::vector<int> inFlightScratch;
    // attribute -> device -> value set (node-based maps: references stay valid)
    std::unordered_map<std::string, std::unordered_map<int, detail::ValueSet>> attributeSets;
    std::vector<std::uint64_t> stampScratch;
    std::uint64_t stampCounter = 0;

    // A device's attribute as constraints compare it (empty: the device lacks it); computed once.
    const detail::ValueSet& attributeValues(int device, const std::string& attribute);
    int internDevice(const std::string& driver, const std::string& pool, const std::string& device);
    const detail::NodeView& nodeView(const Node& node);
    const Result<cel::Value>& celValue(int device) const;
    const Result<cel::Value>& derivedCelValue(int device) const;
    // The cache entry of an expression; compile errors are returned (and not cached).
    Result<detail::ExpressionCache*> expression(const std::string& text, bool derived);
};

}  // namespace numadra::allocator
