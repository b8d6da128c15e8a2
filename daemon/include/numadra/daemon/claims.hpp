#pragma once
// Prepare/Unprepare as far as the API goes: fetch the claim (before any lock), check that it
// is the claim the kubelet means (UID), that it is allocated, and that its results for this
// driver name devices of this node's pool that this node publishes; hand back those devices.

#include <chrono>
#include <memory>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/plugin/claims.hpp"

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
    ClaimPreparer(ClaimSource& source, const Inventory& inventory, std::string driverName,
                  std::string poolName, metrics::Registry& metrics);
    plugin::ClaimPrepareResult prepare(const plugin::ClaimRef& ref,
                                       plugin::Deadline deadline) override;
    std::string unprepare(const plugin::ClaimRef& ref, plugin::Deadline deadline) override;

    // The devices of `claim` (already fetched) for this driver and pool, or an error naming why
    // the claim cannot be prepared here.
    Result<std::vector<plugin::PreparedDevice>> devicesFor(const plugin::ClaimRef& ref,
                                                           const api::Json& claim) const;

  private:
    ClaimSource& source_;
    const Inventory& inventory_;
    std::string driverName_;
    std::string poolName_;
    metrics::Registry& metrics_;
};

}  // namespace numadra::daemon
