#pragma once
// Prepare/Unprepare as the kubelet sees them: a claim prepared before is answered from the
// checkpoint (no API call); otherwise the claim is fetched (before any lock), checked (the
// claim the kubelet means, allocated, results for this driver in this node's pool) and handed
// to the device preparer, which writes the CDI specs, metadata and checkpoint.

#include <chrono>
#include <memory>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/plugin/claims.hpp"
#include "numadra/prepare/preparer.hpp"

namespace numadra::daemon {

using Deadline = std::chrono::steady_clock::time_point;

// Where ResourceClaims come from: the API server, or files in dry-run mode.
class ClaimSource {
  public:
    virtual ~ClaimSource() = default;
    // Error.code 404 when the claim does not exist.
    virtual Result<api::Json> getClaim(const std::string& ns, const std::string& name,
                                       Deadline deadline) = 0;
};

// Dry-run: <dir>/<namespace>_<name>.json or .yaml holds the claim.
std::unique_ptr<ClaimSource> makeFileClaimSource(std::string directory);

class ClaimPreparer : public plugin::ClaimPreparer {
  public:
    ClaimPreparer(ClaimSource& source, const Inventory& inventory, prepare::Preparer& devices,
                  std::string driverName, std::string poolName, metrics::Registry& metrics);
    plugin::ClaimPrepareResult prepare(const plugin::ClaimRef& ref,
                                       plugin::Deadline deadline) override;
    std::string unprepare(const plugin::ClaimRef& ref, plugin::Deadline deadline) override;

    // The allocation of `claim` (already fetched) for this driver and pool, or an error naming
    // why the claim cannot be prepared here.
    Result<prepare::ClaimAllocation> allocationFor(const plugin::ClaimRef& ref,
                                                   const api::Json& claim) const;

  private:
    ClaimSource& source_;
    const Inventory& inventory_;
    prepare::Preparer& devices_;
    std::string driverName_;
    std::string poolName_;
    metrics::Registry& metrics_;
};

}  // namespace numadra::daemon
