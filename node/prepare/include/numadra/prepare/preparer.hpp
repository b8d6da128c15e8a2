#pragma once
// Device preparation on the node: turns a claim's allocation into what the container runtime
// and the containers need (one CDI spec per claim, KEP-5304 metadata files and their CDI specs)
// and records it in the checkpoint, all-or-nothing, so that a crash, a restart or a reboot at any
// instant loses nothing and leaks nothing.
//
// Concurrency: prepares of different claims run in parallel. A claim holds its own lock for the
// whole operation (the kubelet retries concurrently); devices are reserved in one short critical
// section (an exclusive device for one claim, CPU shares by share id), never held across I/O.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "numadra/api/quantity.hpp"
#include "numadra/api/resource_slice.hpp"
#include "numadra/cdi/device_edits.hpp"
#include "numadra/claims/claims.hpp"
#include "numadra/common/result.hpp"
#include "numadra/discovery/machine.hpp"
#include "numadra/metadata/device_metadata.hpp"
#include "numadra/metrics/registry.hpp"

namespace numadra::prepare {

// One entry of the claim's status.allocation.devices.results for this driver.
struct AllocatedDevice {
    std::string request;  // "req", or "req/sub" for firstAvailable
    std::string pool;
    std::string device;
    std::optional<std::string> shareId;
    bool adminAccess = false;
    std::map<std::string, api::Quantity> consumedCapacity;
    // A NumaPlacement configuration with memoryBinding: NumaNode applies to its request.
    bool bindMemory = false;
};

struct ClaimAllocation {
    claims::ClaimRef claim;
    std::optional<std::string> podClaimName;  // annotation resource.kubernetes.io/pod-claim-name
    std::vector<AllocatedDevice> devices;
};

// The node as the last scan saw it: the model and the devices published from it, by name.
struct NodeView {
    const discovery::Machine& machine;
    const std::map<std::string, api::Device>& devices;
};

struct Options {
    std::string driverName;
    std::string poolName;
    std::string cdiDir;
    std::string metadataDir;
    std::string stateDir;
    std::vector<std::string> metadataVersions{metadata::kV1alpha1};
    cdi::HostRoots hostRoots;
    std::string bootId;
    // CDI 1.1 netDevices for SR-IOV VFs with a kernel netdev (not vfio-pci): the runtime moves
    // the VF's interface into the pod's network namespace. Off by default: a runtime whose CDI
    // library predates 1.1 refuses the whole claim's spec (README, "NICs in containers").
    bool cdiNetDevices = false;
    // Called after every file the prepare pipeline writes (checkpoint records included); the
    // crash tests kill the process here. Empty in production.
    std::function<void(const std::string& path)> afterFileWrite;
};

// What start-up found in the checkpoint.
struct RestoreReport {
    size_t restored = 0;          // completed claims, verified (files re-created as needed)
    size_t rolledBack = 0;        // "started" records (older versions): their files were removed
    size_t leftoversRemoved = 0;  // files no record owned (an interrupted prepare/unprepare)
    size_t quarantined = 0;       // damaged records, or claims whose devices are gone
    size_t repairFailed = 0;      // kept (devices stay reserved); the next Prepare retries
    size_t filesRecreated = 0;    // CDI/metadata files that were missing or stale
    size_t fromEarlierBoot = 0;
};

class Preparer {
  public:
    // Opens (creates) the checkpoint; the driver name must be usable as a CDI vendor.
    static Result<std::unique_ptr<Preparer>> open(Options options, metrics::Registry& metrics);
    ~Preparer();
    Preparer(const Preparer&) = delete;
    Preparer& operator=(const Preparer&) = delete;

    // Once at start, before serving (and, in a rolling update, in this instance's turn):
    // loads the checkpoint, removes the files of interrupted prepares and unprepares (those no
    // record owns), verifies completed claims against the node and re-creates their missing
    // files, and quarantines what cannot be honoured (logged and counted, never fatal).
    Result<RestoreReport> restore(const NodeView& node);

    // A claim prepared earlier: verified and repaired, then answered from the checkpoint without
    // asking the API server. nullopt when the claim is not prepared.
    std::optional<Result<std::vector<claims::PreparedDevice>>> preparedClaim(
        const claims::ClaimRef& claim, const NodeView& node);

    // Prepares (or, if already prepared, returns) the claim. On error nothing of it remains.
    Result<std::vector<claims::PreparedDevice>> prepare(const ClaimAllocation& allocation,
                                                        const NodeView& node);

    // Undoes everything of the claim; an unknown claim is a success.
    Status unprepare(const claims::ClaimRef& claim);

    // Rolling updates: the old and the new driver pod of a node share this checkpoint and take
    // turns under the node-wide serialize lock. Called with that lock held, before a claim is
    // handled: adopts the claims the other instance prepared since this one last looked and
    // forgets those it unprepared, so neither leaves the other's files behind nor hands out a
    // device the other prepared. Returns how many claims changed.
    Result<size_t> syncWithCheckpoint();

    // For metrics and tests.
    size_t preparedClaimCount() const;

  private:
    struct State;
    explicit Preparer(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace numadra::prepare
