#pragma once
// The per-call state of one allocate(): the claims' requests resolved into plans (class,
// compiled selectors, candidates), the constraints, what is in flight, and the search itself.

#include <chrono>
#include <span>

#include "internal.hpp"

namespace numadra::allocator::detail {

// The value a constraint sees on one candidate of one plan.
struct ConstraintValue {
    enum class State : std::int8_t {
        NotApplicable,
        Missing,
        Failed,
        Present
    } state = State::NotApplicable;
    const ValueSet* values = nullptr;    // Present: in the allocator's caches
    const std::string* error = nullptr;  // Failed
};

// One `exactly` request or one `firstAvailable` subrequest.
struct Plan {
    std::string name;    // "req" or "req/sub"
    std::string parent;  // "req"
    const DeviceRequestSpec* spec = nullptr;
    const DeviceClass* deviceClass = nullptr;
    std::vector<ExpressionCache*> selectors;  // class selectors, then the request's
    size_t classSelectors = 0;
    std::vector<std::pair<std::string, ExpressionCache*>> derived;
    bool all = false;
    bool admin = false;
    std::size_t numDevices = 0;
    // Devices passing (or failing with an error in) the selectors; the list lives in the
    // allocator's cache.
    std::span<const int> candidates;
    std::vector<int> fitting;  // candidates that can hold the capacity request, when there is one
    std::vector<int> allSet;   // allocationMode All: the fixed devices
    bool anyFailure = false;   // a candidate's selector or derived attribute fails
    // [constraint][candidate position]
    std::vector<std::vector<ConstraintValue>> constraintValues;
};

struct RequestSlot {
    std::vector<Plan> alternatives;  // one for `exactly`, the subrequests for firstAvailable
    bool firstAvailable = false;
    int selected = 0;
    bool bound = false;  // firstAvailable: an alternative is being tried
    const Plan& plan() const { return alternatives[static_cast<size_t>(selected)]; }
};

struct ConstraintState {
    const Constraint* spec = nullptr;
    std::string attribute;
    bool match = true;               // matchAttribute; false: distinctAttribute
    std::vector<ValueSet> recorded;  // match: running intersections; distinct: values in use
    bool appliesTo(const Plan& plan) const;
};

// DRADeviceCompatibilityGroups: what the devices placed on one counter set have in common so far
// (upstream's compatibilityGroupIntersection). A device without groups pairs only with devices
// without groups, so "every member had none" is a state of its own, not an empty intersection.
struct GroupIntersection {
    bool hasMembers = false;
    bool allEmpty = false;            // every member so far declared no groups
    std::vector<std::string> groups;  // the members' common groups, sorted (when !allEmpty)
    bool admits(const std::vector<std::string>& sortedGroups) const;
    GroupIntersection add(const std::vector<std::string>& sortedGroups) const;
    std::string describe() const;  // for explanations: "{a, b}", "no groups", "no members"
};
using GroupsBySet = std::map<std::string, GroupIntersection>;  // counter set -> intersection

struct Placement {
    int device = -1;  // DeviceInfo index
    int id = -1;
    std::vector<int> constraintsPushed;
    bool inFlight = false;
    std::optional<std::map<std::string, Quantity>> sharedCapacity;
    std::optional<std::pair<PoolKey, CounterAmounts>> counters;
    // The running group intersections this device changed, as they were before (nullopt: the
    // counter set had no running entry yet), to restore on deallocation.
    std::optional<
        std::pair<PoolKey, std::vector<std::pair<std::string, std::optional<GroupIntersection>>>>>
        groups;
};

struct ClaimState {
    const Claim* claim = nullptr;
    std::vector<RequestSlot> requests;
    std::vector<ConstraintState> constraints;
    std::vector<DeviceResult> results;
    std::vector<Placement> placements;
    bool prune = true;  // counting bounds are exact for this claim (see Search::feasible)
};

enum class Step { Found, NotFound, ExceedsMax, Failed, GaveUp };

bool taintsTolerated(const Device& device, const std::vector<Toleration>& tolerations);
std::string claimName(const Claim& claim);

// --- Search ---------------------------------------------------------------------------------

class Search {
  public:
    Search(Allocator::Impl& impl, const Node& node, std::span<const Claim> claims)
        : impl_(impl),
          node_(node),
          view_(impl.nodeView(node)),
          claimsIn_(claims),
          inFlight_(impl.inFlightScratch),
          stamps_(impl.stampScratch),
          stamp_(impl.stampCounter) {}
    ~Search() { impl_.stampCounter = stamp_; }
    Search(const Search&) = delete;
    Search& operator=(const Search&) = delete;

    Result<Outcome> run();

  private:
    Status buildClaim(const Claim& claim, ClaimState& state);
    Result<Plan> buildPlan(const Claim& claim, const std::string& parent, const std::string& name,
                           const DeviceRequestSpec& spec, bool admin, ClaimState& state);
    Result<std::vector<int>*> candidatesFor(const DeviceClass& deviceClass,
                                            const std::vector<ExpressionCache*>& selectors,
                                            const DeviceRequestSpec& spec);
    Verdict selectable(const std::vector<ExpressionCache*>& selectors, int device);
    Verdict evaluate(ExpressionCache& expression, int device);
    void fillConstraintValues(ClaimState& state, Plan& plan);
    ConstraintValue constraintValue(const Plan& plan, const ConstraintState& constraint,
                                    int device);

    Step allocateOne(size_t claim, size_t request, size_t slot, size_t cursor);
    Step tryFirstAvailable(size_t claim, size_t request);
    Step scanCandidates(size_t claim, size_t request, size_t slot, size_t cursor);
    bool inUse(const ClaimState& state, const Plan& plan, int device) const;
    // allocateDevice upstream: commits one candidate for the plan or leaves no trace.
    bool allocateDevice(ClaimState& state, const Plan& plan, size_t position, int device,
                        bool must);
    void deallocate(ClaimState& state);
    bool compatible(const ClaimState& state, const Plan& plan, size_t position,
                    const ValueSet* assumed, size_t assumedConstraint) const;
    bool feasible(const ClaimState& state, size_t request, size_t slot, size_t cursor,
                  const ValueSet* assumed = nullptr, size_t assumedConstraint = 0) const;
    bool someValueFeasible(const ClaimState& state) const;
    bool enoughDistinctValues(const ClaimState& state, size_t constraint) const;
    bool countersFit(const PoolView& pool, const PoolKey& key, const CounterAmounts& demand) const;
    // The groups of the pool's allocated (committed) devices per counter set; built once per call.
    const GroupsBySet& groupBaseline(const PoolKey& key, const PoolView& pool) const;
    // Whether the device may join the devices on each counter set it consumes; on success
    // `updated` holds the new intersections in consumption order. `why` (when given) names the
    // counter set and the groups that refused it.
    bool groupsAdmit(const PoolKey& key, const PoolView& pool, const Device& device,
                     std::vector<std::pair<std::string, GroupIntersection>>* updated,
                     std::string* why) const;
    // DRAOptionalNodeOperations: a slice skipping node operations needs a node declaring it.
    bool nodeOperationsSupported(const Slice& slice) const;
    Step fail(std::string message);
    std::string explain();  // why the claims do not fit (explain.cpp)
    std::string explainPlan(const ClaimState& state, const Plan& plan);
    std::string explainConstraints(const ClaimState& state);
    std::string selectorFailure(const Plan& plan, int device) const;
    std::string deviceName(int device) const;

    Allocator::Impl& impl_;
    const Node& node_;
    const NodeView& view_;
    std::span<const Claim> claimsIn_;
    std::vector<ClaimState> claims_;
    std::vector<int>& inFlight_;  // by device id: claims holding it exclusively
    // By device id: feasible()'s "counted in this pass" marks (a pass number, so never cleared).
    std::vector<std::uint64_t>& stamps_;
    mutable std::uint64_t stamp_ = 0;
    struct SharedUse {
        int shares = 0;
        std::map<std::string, Quantity> amounts;
    };
    std::unordered_map<int, SharedUse> sharedInFlight_;
    std::map<PoolKey, CounterAmounts> countersInFlight_;
    std::map<PoolKey, GroupsBySet> groupsInFlight_;  // seeded from the baseline per counter set
    mutable std::map<PoolKey, GroupsBySet> groupBaselines_;
    std::string failure_;
    std::uint64_t steps_ = 0;
    std::chrono::steady_clock::time_point deadline_;
    bool hasDeadline_ = false;
};

}  // namespace numadra::allocator::detail
