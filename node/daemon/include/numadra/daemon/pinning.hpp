#pragma once
// CPU pinning in the daemon: the NRI plugin (node/nri/) fed with the node's CPUs (the inventory's
// latest scan) and the prepared claims (the checkpoint, which is the truth: during a rolling
// update the other instance prepares too), and the gate ClaimPreparer passes before preparing a
// claim and after preparing or unpreparing one.

#include <chrono>
#include <memory>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/daemon/config.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/nri/pinning.hpp"
#include "numadra/nri/plugin.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/state/checkpoint.hpp"

namespace numadra::daemon {

class PinningGate {
  public:
    virtual ~PinningGate() = default;
    // Before a claim is prepared: an error when its containers would run unpinned although
    // pinning is required.
    virtual Status admit(const prepare::ClaimAllocation& allocation,
                         const InventorySnapshot& node) = 0;
    // After a claim was prepared or unprepared.
    virtual void claimsChanged() = 0;
};

// The pinning view of the prepared claims: each claim's CPU shares (not admin access: an admin
// watches devices others use) with their NUMA nodes, and the NUMA nodes of its devices whose
// configuration binds memory (memoryBinding: NumaNode; a device without NUMA affinity binds
// nothing).
nri::PinningInputs pinningInputs(const discovery::Machine& machine,
                                 const std::vector<state::ClaimRecord>& records);

class ContainerPinning : public PinningGate {
  public:
    // How long a Prepare waits for the runtime's NRI when pinning is required (a runtime or
    // driver restart reconnects within a few seconds); the kubelet retries after that.
    static constexpr std::chrono::milliseconds kAdmitWait{10000};

    // Mode off: nothing runs, every claim is admitted.
    static Result<std::unique_ptr<ContainerPinning>> start(
        const DaemonConfig& config, const Inventory& inventory, metrics::Registry& metrics,
        std::chrono::milliseconds admitWait = kAdmitWait);
    ~ContainerPinning() override;

    Status admit(const prepare::ClaimAllocation& allocation,
                 const InventorySnapshot& node) override;
    void claimsChanged() override;
    // Lets the next instance of the driver take the runtime's NRI connection (SIGTERM).
    void stop();

  private:
    ContainerPinning(CpuPinning mode, std::string socket, const Inventory& inventory,
                     state::CheckpointStore checkpoint, std::chrono::milliseconds admitWait);
    Result<nri::PinningInputs> currentInputs() const;

    CpuPinning mode_;
    std::string socket_;
    const Inventory& inventory_;
    state::CheckpointStore checkpoint_;
    std::chrono::milliseconds admitWait_;
    std::unique_ptr<nri::Plugin> plugin_;
};

}  // namespace numadra::daemon
