#pragma once
// The per-call state of one allocate(): the claims' requests resolved into plans (class,
// compiled selectors, candidates), the constraints, what is in flight, and the search itself.

#include <chrono>
#include <span>

#include "capacity.hpp"
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
    // allocator's cache. The quick attempt reads `list` instead, filling it as its scan goes
    // (which may move its storage: no span then).
    std::span<const int> candidates;
    CandidateList* list = nullptr;
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
    Plan& plan() { return alternatives[static_cast<size_t>(selected)]; }
};

struct ConstraintState {
    const Constraint* spec = nullptr;
    std::string attribute;
    ValueSetsByDevice* valueSets = nullptr;  // the allocator's cache of the attribute's values
    bool match = true;                       // matchAttribute; false: distinctAttribute
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
// A capacity below zero: upstream then checks capacity even without capacity requests.
bool anyNegativeCapacity(const Device& device);
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
    // Upstream's own search, without the bounds, for a few steps and visited candidates only
    // (quick.cpp): the scheduler's answer when that finds it (the bounds never cut a solution,
    // so the bounded search's first solution is this one), nullopt otherwise. `lazyPlans`:
    // builds plans whose candidates are filled as the search reaches them, so that a feasible
    // claim on a big node costs the devices the search visits, not every device's verdict;
    // otherwise searches the full plans in claims_ (left as they were when nothing is found).
    std::optional<Result<Outcome>> searchQuickly(bool lazyPlans);
    bool quickSuits() const;           // no request needs every candidate up front
    bool candidatesComplete() const;   // every request's candidate list is filled
    std::uint64_t quickSlots() const;  // what the claims ask for, as steps of a plain search
    void resetAfterQuickSearch(bool lazyPlans);
    // The counting bounds before the search (false: no solution).
    bool boundsAllow();
    // The bounded search on the full plans, with the explanation of a failure.
    Result<Outcome> searchFully(bool boundsAllow);
    Result<Outcome> found();  // the outcome of the solution in claims_
    void releaseInFlight();

    Status buildClaim(const Claim& claim, ClaimState& state);
    Result<Plan> buildPlan(const Claim& claim, const std::string& parent, const std::string& name,
                           const DeviceRequestSpec& spec, bool admin, ClaimState& state);
    std::string candidatesKey(const DeviceClass& deviceClass, const DeviceRequestSpec& spec) const;
    CandidateList& candidatesFor(const DeviceClass& deviceClass, const DeviceRequestSpec& spec);
    // Fills the list until it has a device at `position` (false: the node has no more).
    bool reachCandidate(CandidateList& list, const std::vector<ExpressionCache*>& selectors,
                        size_t position);
    // The plan's candidate at `position` exists (filled, with its constraint values, in the
    // quick attempt).
    bool hasCandidate(const ClaimState& state, Plan& plan, size_t position);
    int candidateAt(const Plan& plan, size_t position) const;
    Verdict selectable(const std::vector<ExpressionCache*>& selectors, int device);
    // The allocator's StaticFit cache for these capacity requests, and one device's entry of it.
    std::vector<StaticFit>& staticFits(const std::map<std::string, Quantity>& requests);
    StaticFit staticFit(std::vector<StaticFit>& fits, int device,
                        const std::map<std::string, Quantity>& requests);
    Verdict evaluate(ExpressionCache& expression, int device);
    void fillConstraintValues(ClaimState& state, Plan& plan);
    ConstraintValue constraintValue(const Plan& plan, const ConstraintState& constraint,
                                    int device);

    Step allocateOne(size_t claim, size_t request, size_t slot, size_t cursor);
    Step tryFirstAvailable(size_t claim, size_t request);
    Step scanCandidates(size_t claim, size_t request, size_t slot, size_t cursor);
    bool inUse(const ClaimState& state, const Plan& plan, int device) const;
    // Upstream's CmpRequestOverCapacity for the device and the request (nullopt: nothing to
    // check).
    std::optional<CapacityFit> capacityFit(const DeviceInfo& info, const Plan& plan) const;
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
    std::string selectorFailure(const Claim& claim, const Plan& plan, int device) const;
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
    bool quick_ = false;  // in searchQuickly(): no bounds, lazy candidates, the limits below
    std::uint64_t stepLimit_ = 0;
    std::uint64_t tries_ = 0;  // free, selected candidates tried (allocateDevice calls)
    std::uint64_t tryLimit_ = 0;
    std::uint64_t visits_ = 0;  // candidate positions looked at, in use or not
    std::uint64_t visitLimit_ = 0;
};

}  // namespace numadra::allocator::detail
