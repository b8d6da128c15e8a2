#pragma once
// Prepare/Unprepare as the kubelet sees them: a claim prepared before is answered from the
// checkpoint (no API call); otherwise the claim is fetched (before any lock; concurrent fetches
// of one claim share one GET), checked (the claim the kubelet means, allocated, results for
// this driver in this node's pool) and handed to the device preparer, which writes the CDI
// specs, metadata and checkpoint. Every claim's outcome is one log line and its metrics.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "numadra/claims/claims.hpp"
#include "numadra/common/result.hpp"
#include "numadra/common/single_flight.hpp"
#include "numadra/daemon/claim_status.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/daemon/pinning.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/prepare/preparer.hpp"

namespace numadra::daemon {

using Deadline = std::chrono::steady_clock::time_point;

// Where ResourceClaims come from: the API server, or files in dry-run mode.
class ClaimSource {
  public:
    virtual ~ClaimSource() = default;
    // An Error of kind NotFound when the claim does not exist.
    virtual Result<api::Json> getClaim(const std::string& ns, const std::string& name,
                                       Deadline deadline) = 0;
};

// Dry-run: <dir>/<namespace>_<name>.json or .yaml holds the claim.
std::unique_ptr<ClaimSource> makeFileClaimSource(std::string directory);

class ClaimPreparer : public claims::ClaimPreparer {
  public:
    // `status` (optional: none in dry-run mode) hears of every claim prepared or unprepared,
    // to write its NICs into the claim's status; `pinning` (optional) admits each claim before
    // it is prepared and hears of every change.
    ClaimPreparer(ClaimSource& source, const Inventory& inventory, prepare::Preparer& devices,
                  std::string driverName, std::string poolName, metrics::Registry& metrics,
                  ClaimStatusPublisher* status = nullptr, PinningGate* pinning = nullptr);

    std::optional<claims::ClaimPrepareResult> prepareFromRecords(
        const claims::ClaimRef& ref) override;
    Result<api::Json> fetch(const claims::ClaimRef& ref, claims::Deadline deadline) override;
    claims::ClaimPrepareResult prepareFetched(const claims::ClaimRef& ref,
                                              const api::Json& claim) override;
    std::string unprepare(const claims::ClaimRef& ref, claims::Deadline deadline) override;
    std::string syncWithOtherInstances() override;
    // One log line per claim (info, or warn for an error, a long wait or a missed deadline)
    // and the metrics of it.
    void report(const claims::ClaimOutcome& outcome,
                const claims::ClaimPrepareResult& result) override;

    // All steps in a row, on this thread, reported: what a Prepare does (for tests and tools).
    claims::ClaimPrepareResult prepare(const claims::ClaimRef& ref, claims::Deadline deadline);

    // The allocation of `claim` (already fetched) for this driver and pool, or an error naming
    // why the claim cannot be prepared here.
    Result<prepare::ClaimAllocation> allocationFor(const claims::ClaimRef& ref,
                                                   const api::Json& claim) const;

  private:
    ClaimSource& source_;
    const Inventory& inventory_;
    prepare::Preparer& devicePreparer_;
    std::string driverName_;
    std::string poolName_;
    metrics::Registry& metrics_;
    ClaimStatusPublisher* status_;
    PinningGate* pinning_;
    SingleFlight<Result<api::Json>> fetches_;
};

// A claim that waited at least this long for a worker is logged at warn level.
inline constexpr std::chrono::seconds kLongClaimWait{1};

// The metrics ClaimPreparer reports to (declared by the daemon, and by tests).
void declareClaimMetrics(metrics::Registry& registry);

}  // namespace numadra::daemon
