#pragma once
// The allocator's private state, shared by its translation units.

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include "numadra/allocator/allocator.hpp"
#include "numadra/cel/cel.hpp"
#include "numadra/dracel/device.hpp"
#include "simple_selector.hpp"

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
// One attribute's value sets, by device (node-based: references stay valid).
using ValueSetsByDevice = std::unordered_map<int, ValueSet>;

ValueSet toValueSet(const AttributeValue& value);
bool intersects(const ValueSet& a, const ValueSet& b);
ValueSet intersection(const ValueSet& a, const ValueSet& b);
std::string describe(const ValueSet& values);

// Constraint lookup: the exact qualified name, else the bare id when the domain is the driver's.
const AttributeValue* findAttribute(const Device& device, const std::string& driver,
                                    const std::string& qualifiedName);

// --- devices and pools ----------------------------------------------------------------------

// Whether dracel::deviceValue accepts a device (it refuses invalid versions); found out once.
enum class ValueCheck : std::int8_t { Unknown, Builds, Fails };

// Small on purpose: one per device of the cluster, all made by Allocator::create.
struct DeviceInfo {
    const Slice* slice = nullptr;
    const Device* device = nullptr;
    int id = -1;  // DeviceID (driver, pool, device) interned; same id for duplicates
    mutable ValueCheck valueCheck = ValueCheck::Unknown;
    // Some attribute is named "<driver>/id" (found out with valueCheck): when none is, a
    // SimpleSelector skips that lookup in the driver's domain.
    mutable bool qualifiedDriverNames = true;
};

// A DeviceID, viewing strings the Allocator owns (its slices, or copies for devices only
// allocations name).
struct DeviceKey {
    std::string_view driver;
    std::string_view pool;
    std::string_view device;
    bool operator==(const DeviceKey&) const = default;
};

// DeviceID -> id, as an open-addressing table: create() interns every device of the cluster on
// every cold path, where a node-based map's allocation per device showed. Ids count from 0.
class DeviceIdTable {
  public:
    // The part of a key's hash its slice shares, then the whole hash.
    static std::size_t poolHash(std::string_view driver, std::string_view pool);
    static std::size_t hash(std::size_t poolHash, std::string_view device);

    void reserve(std::size_t keys);
    int find(const DeviceKey& key, std::size_t hash) const;  // -1 when absent
    int add(const DeviceKey& key, std::size_t hash);         // the new id
    std::size_t size() const { return keys_.size(); }

  private:
    // The hash's high half rides along, so that a probe rarely has to read another key.
    struct Slot {
        std::uint32_t tag = 0;
        int idPlusOne = 0;  // 0: free
    };
    static std::uint32_t tagOf(std::size_t hash) { return static_cast<std::uint32_t>(hash >> 32); }
    void place(int id, std::size_t hash);
    void rehash(std::size_t slotCount);

    std::vector<DeviceKey> keys_;      // by id
    std::vector<std::size_t> hashes_;  // by id
    std::vector<Slot> slots_;          // a power of two, at most half used
};

// "Seen in this round" marks by device id, reused across rounds without clearing.
class IdMarks {
  public:
    void newRound(std::size_t ids) {
        marks_.resize(ids, 0);
        ++round_;
    }
    // False when the id was already marked in this round.
    bool mark(int id) {
        std::uint64_t& mark = marks_[static_cast<std::size_t>(id)];
        if (mark == round_)
            return false;
        mark = round_;
        return true;
    }

  private:
    std::vector<std::uint64_t> marks_;
    std::uint64_t round_ = 0;
};

struct PoolView {
    std::string driver;
    std::string name;
    bool invalid = false;
    bool incomplete = false;
    std::string problem;       // why invalid/incomplete, for errors and explanations
    std::vector<int> devices;  // node-visible, search order (slices by name)
    // Every device of the node's slices in search order, visible or not: a slice with
    // perDeviceNodeSelection lists devices of other nodes too (`forOtherNode`).
    std::vector<int> listed;
    std::vector<bool> forOtherNode;  // by position in `listed`
    std::vector<int> allDevices;     // every device of the pool's current generation
    std::map<std::string, const CounterSet*> counterSets;
};

using PoolKey = std::pair<std::string, std::string>;  // driver, pool

struct NodeView {
    std::vector<PoolView> pools;   // search order
    std::vector<int> searchOrder;  // node-visible devices of usable pools, in search order
    // The devices of usable pools the scan passes, in search order: searchOrder plus those the
    // node's perDeviceNodeSelection slices list for other nodes, which upstream runs a
    // request's selectors on before it looks at their node (so a selector failing on one is
    // its error too). `forOtherNode` marks them, by position.
    std::vector<int> scanOrder;
    std::vector<bool> forOtherNode;
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
    std::optional<SimpleSelector> simple;  // selectors decided without the program, when possible
    std::vector<Verdict> verdicts;
    std::unordered_map<int, std::string> failures;    // device -> runtime error
    std::unordered_map<int, ValueSet> derivedValues;  // derived attributes only
};

// Devices of a node passing (or failing with an error in) a request's selectors, in search
// order: filled only as far as a search has looked (Search's quick attempt), to the end once a
// full search needs them all.
struct CandidateList {
    std::vector<int> devices;
    std::size_t scanned = 0;  // positions of the node's search order looked at
};

// What a device's capacities say to a request's capacity requests with no share of the device
// in use (fitCapacity without `inUse`): it depends on the two alone, so it is found out once.
enum class StaticFit : std::int8_t { Unknown, Fits, DoesNotFit, Fails };

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

    std::vector<detail::DeviceInfo> devices;  // every device of every slice
    std::vector<int> sliceDeviceStart;        // slice -> its first DeviceInfo
    detail::DeviceIdTable deviceIds;
    std::deque<std::string> foreignNames;  // what deviceIds views for devices no slice has
    std::vector<int> deviceById;           // id -> a DeviceInfo index
    // Slices by the node they name, and those that select nodes otherwise: a node's view looks
    // at its own slices only, not at every slice of the cluster.
    std::unordered_map<std::string_view, std::vector<int>> slicesByNodeName;
    std::vector<int> slicesOfOtherNodeSelection;
    std::map<std::string, detail::NodeView, std::less<>> nodes;  // gathered lazily
    detail::IdMarks nameMarks;                                   // nodeView's duplicate-name check
    // Built on first use, kept for the Allocator's life: the selectors' `device`, and the
    // derived attributes' (the same plus device.name); by DeviceInfo index.
    mutable std::unordered_map<int, Result<cel::Value>> celValues;
    mutable std::unordered_map<int, Result<cel::Value>> derivedCelValues;
    std::unordered_map<std::string, detail::ExpressionCache> expressions;
    detail::CommittedState committed;
    // (node, class, request selectors) -> devices passing or failing them, in search order.
    std::unordered_map<std::string, detail::CandidateList> candidates;
    // Capacity requests (as text) -> StaticFit by DeviceInfo index: every allocate() call plans
    // its requests against every candidate again (on every node the scheduler filters).
    std::unordered_map<std::string, std::vector<detail::StaticFit>> staticFits;
    std::vector<int> inFlightScratch;
    // attribute -> device -> value set (node-based maps: references stay valid)
    std::unordered_map<std::string, detail::ValueSetsByDevice> attributeSets;
    std::vector<std::uint64_t> stampScratch;
    std::uint64_t stampCounter = 0;

    // A device's attribute as constraints compare it (empty: the device lacks it); computed once.
    // `byDevice` is attributeSets[attribute].
    const detail::ValueSet& attributeValues(int device, const std::string& attribute,
                                            detail::ValueSetsByDevice& byDevice);
    // The id of a device of the slices (`key` views them) or of one only an allocation names.
    int internSliceDevice(const detail::DeviceKey& key, std::size_t hash);
    int internForeignDevice(const detail::DeviceKey& key);
    const detail::NodeView& nodeView(const Node& node);
    // The slices that may concern `node`, in slice order.
    std::vector<int> slicesConcerning(const Node& node) const;
    const Result<cel::Value>& celValue(int device) const;
    const Result<cel::Value>& derivedCelValue(int device) const;
    // The selector's verdict when its SimpleSelector settles it without CEL.
    std::optional<bool> decideSimply(const detail::ExpressionCache& selector, int device) const;
    // The cache entry of an expression; compile errors are returned (and not cached).
    Result<detail::ExpressionCache*> expression(const std::string& text, bool derived);
};

}  // namespace numadra::allocator
