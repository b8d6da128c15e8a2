#pragma once
// Structured-parameters allocation as the Kubernetes scheduler does it (the "experimental"
// allocator: every feature on), offline. The search visits candidates in the scheduler's order
// (pools by driver and name with binding-condition pools last, slices by name, devices as listed,
// combinations within a request, firstAvailable alternatives in order), so the first solution is
// the scheduler's solution. Unlike upstream it proves infeasible claims quickly: per-request and
// per-constraint counting bounds before and during the search prune branches that cannot
// succeed, and a time budget turns a search that would run for minutes into a "gave up" answer.
//
// An Allocator is built once from the cluster's slices and classes; claims are then allocated
// node by node. Allocations are not recorded until commit(), so a caller decides which answers
// count against the next claims. Not thread-safe: one Allocator per thread.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "numadra/allocator/model.hpp"
#include "numadra/common/result.hpp"

namespace numadra::allocator {

struct Options {
    // A search taking longer than this answers GaveUp (zero: no limit).
    std::chrono::nanoseconds timeBudget = std::chrono::seconds(10);
    // The caller vouches that every Version attribute of the slices is valid semver 2.0.0, as
    // allocator::decode makes sure (the API server too). A device with an invalid one fails
    // every selector (upstream's CEL evaluation refuses it), so without this promise the first
    // evaluation on each device looks through all its attributes for one: on a cold cache, half
    // of a first call's time on a cluster of a thousand nodes. Wrong when set: such a device's
    // selectors then answer instead of failing.
    bool versionsValid = false;
};

enum class OutcomeKind {
    Allocated,      // allocations holds one Allocation per claim, in order
    Unsatisfiable,  // the claims do not fit on this node; explanation says why
    GaveUp,         // the time budget ran out before the search finished
    // An error upstream's allocator raises for this node alone (ErrFailedAllocationOnNode:
    // nothing fits and the node has an invalid pool): the scheduler fails the node and goes on
    // with the others; explanation holds the error.
    FailedOnNode,
};

struct Outcome {
    OutcomeKind kind = OutcomeKind::Unsatisfiable;
    std::vector<Allocation> allocations;
    // For Unsatisfiable and GaveUp: which request failed and why, one finding per line; for
    // FailedOnNode, the error.
    std::string explanation;
    std::uint64_t searchSteps = 0;  // calls of the recursive search (upstream's allocateOne)
};

class Allocator {
  public:
    static Allocator create(std::vector<Slice> slices, std::vector<DeviceClass> classes,
                            Options options = {});
    ~Allocator();
    Allocator(Allocator&&) noexcept;
    Allocator& operator=(Allocator&&) noexcept;

    // Allocates the claims (one pod's unallocated claims) together on `node`. An Error is what
    // the scheduler treats as fatal for the pod: an unknown class, a CEL compile or runtime
    // error, a claim over the 32-device limit, a constraint broken by an "All" request, ...;
    // an error for this node only (an invalid pool) is the outcome FailedOnNode.
    Result<Outcome> allocate(const Node& node, std::span<const Claim> claims);

    // Records an allocation (an answer of allocate() or a claim's existing status.allocation):
    // its devices are in use, shared devices' consumed capacity and counters are taken
    // (request-driven counters by the consumedCapacity the results carry). Results naming
    // devices the slices do not know are kept as in use all the same.
    void commit(const Allocation& allocation);

    // The nodes the slices mention (nodeName of slices and devices), sorted.
    std::vector<std::string> nodeNames() const;

    struct Impl;  // the library's own (cluster/allocator/internal.hpp)

  private:
    explicit Allocator(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

// Whether a node selector (a slice's, or an allocation's) selects the node, as node affinity
// matches it: its labels for matchExpressions, metadata.name for matchFields.
bool nodeSelectorMatches(const NodeSelector& selector, const Node& node);

// The API's 32-device limit on an allocation's results (and on the requests of one claim).
inline constexpr std::size_t kMaxResults = 32;

}  // namespace numadra::allocator
