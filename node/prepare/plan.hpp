#pragma once
// Internal: what a claim's preparation writes, computed in memory before anything touches the
// disk (so every error that can be found early is found before the first write), from stable
// device records (PCI addresses, CPU ids) plus the node as it is now. The same records always
// give the same plan, which is how a checkpoint hit or a restart re-creates lost files.

#include <set>
#include <string>
#include <vector>

#include "numadra/cdi/spec.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/state/checkpoint.hpp"

namespace numadra::prepare::detail {

struct RequestPlan {
    metadata::RequestFiles files;
    metadata::DeviceMetadata object;  // generation filled by the writer
    std::string metadataCdiSpec;      // serialized
};

struct Plan {
    std::string claimSpecPath;
    std::string claimSpec;  // serialized CDI spec with one device per allocated device
    std::vector<RequestPlan> requests;
    std::vector<state::DeviceRecord> devices;  // cdiDeviceIds filled in
    std::vector<std::string> files;            // every file the plan writes, in write order
};

// The request part of "req/sub".
std::string baseRequest(const std::string& request);

// Identifies an allocated device on this node: kind, PCI identity or NUMA node.
Result<state::DeviceRecord> identify(const AllocatedDevice& device, const NodeView& node,
                                     const Options& options);

// The identity of a PCI function in its record: kind, address, ids, serial, netdev.
void recordFunction(state::DeviceRecord& record, const discovery::PciFunction& function);
// A share of a VF pool (VfLayout::Pooled) whose VF is not chosen yet.
bool awaitsVfChoice(const state::DeviceRecord& record);
// The first VF of `pool` (in the PF's order) whose PCI address is not `taken`; an error naming
// the pool when none is free.
Result<const discovery::PciFunction*> chooseVf(const discovery::Machine& machine,
                                               const std::string& pool,
                                               const std::set<std::string>& taken);
// True when the record's device is still the one that was prepared (same PCI function at the
// address with the same serial number when both are known, CPUs still online); otherwise the
// error says what changed.
Status verifyIdentity(const state::DeviceRecord& record, const NodeView& node);

// CPUs for a share of `count` CPUs on `numaNode`, avoiding `taken`: whole cores first (lowest
// ids), then single threads. Error when fewer than `count` are free.
Result<std::vector<int>> chooseCpus(const discovery::Machine& machine, int numaNode, int count,
                                    const std::set<int>& taken);

// How many CPUs / bytes of memory a CPU-device share consumed ("cpu" or "<driver>/cpu").
// Online CPUs of a NUMA node, ascending.
std::vector<int> onlineCpus(const discovery::Machine& machine, int numaNode);

int consumedCpus(const state::DeviceRecord& record, const std::string& driverName);
std::optional<std::int64_t> consumedMemory(const state::DeviceRecord& record,
                                           const std::string& driverName);

struct ClaimIdentity {
    std::string claimNamespace, claimName, claimUid;
    std::optional<std::string> podClaimName;
};

Result<Plan> buildPlan(const ClaimIdentity& claim, std::vector<state::DeviceRecord> devices,
                       const NodeView& node, const Options& options,
                       const cdi::HostDeviceNodes& host);

std::vector<claims::PreparedDevice> preparedDevices(
    const std::vector<state::DeviceRecord>& devices);

}  // namespace numadra::prepare::detail
