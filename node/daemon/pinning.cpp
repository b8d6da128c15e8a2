#include "numadra/daemon/pinning.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>

namespace numadra::daemon {

namespace {

const char* modeName(CpuPinning mode) {
    switch (mode) {
        case CpuPinning::Auto:
            return "auto";
        case CpuPinning::Nri:
            return "nri";
        case CpuPinning::Off:
            break;
    }
    return "off";
}

bool isCpuDevice(const api::Device& device) {
    auto it = device.attributes.find("type");
    const auto* type =
        it == device.attributes.end() ? nullptr : std::get_if<std::string>(&it->second);
    return type != nullptr && *type == "cpu";
}

}  // namespace

nri::PinningInputs pinningInputs(const discovery::Machine& machine,
                                 const std::vector<state::ClaimRecord>& records) {
    nri::PinningInputs inputs;
    for (const auto& cpu : machine.cpus) {
        if (cpu.online)
            inputs.nodeCpus.push_back(cpu.id);
    }
    for (const auto& node : machine.nodes) {
        if (!node.memoryBytes || *node.memoryBytes > 0)
            inputs.nodeMemoryNodes.push_back(node.id);
    }
    for (const auto& record : records) {
        nri::PinnedClaim claim;
        claim.uid = record.claimUid;
        claim.name = record.claimNamespace + "/" + record.claimName;
        for (const auto& device : record.devices) {
            if (device.adminAccess)
                continue;
            if (device.kind == "cpu") {
                claim.cpus.insert(claim.cpus.end(), device.cpus.begin(), device.cpus.end());
                if (device.numaNode)
                    claim.memoryNodes.push_back(*device.numaNode);
            } else if (device.bindMemory) {
                const auto* function = machine.pciFunction(device.pciAddress);
                if (function != nullptr && function->numaNode && *function->numaNode >= 0)
                    claim.memoryNodes.push_back(*function->numaNode);
            }
        }
        std::sort(claim.cpus.begin(), claim.cpus.end());
        std::sort(claim.memoryNodes.begin(), claim.memoryNodes.end());
        claim.memoryNodes.erase(std::unique(claim.memoryNodes.begin(), claim.memoryNodes.end()),
                                claim.memoryNodes.end());
        inputs.claims.push_back(std::move(claim));
    }
    return inputs;
}

ContainerPinning::ContainerPinning(CpuPinning mode, std::string socket, const Inventory& inventory,
                                   state::CheckpointStore checkpoint,
                                   std::chrono::milliseconds admitWait)
    : mode_(mode),
      socket_(std::move(socket)),
      inventory_(inventory),
      checkpoint_(std::move(checkpoint)),
      admitWait_(admitWait) {}

ContainerPinning::~ContainerPinning() {
    stop();
}

Result<std::unique_ptr<ContainerPinning>> ContainerPinning::start(
    const DaemonConfig& config, const Inventory& inventory, metrics::Registry& metrics,
    std::chrono::milliseconds admitWait) {
    nri::declarePluginMetrics(metrics);
    auto checkpoint = state::CheckpointStore::open(config.stateDir);
    if (!checkpoint)
        return checkpoint.error();
    std::unique_ptr<ContainerPinning> pinning(new ContainerPinning(
        config.cpuPinning, config.nriSocket, inventory, std::move(checkpoint).value(), admitWait));
    spdlog::info("cpu pinning mode={} nri_socket={}", modeName(config.cpuPinning),
                 config.nriSocket);
    if (config.cpuPinning == CpuPinning::Off)
        return pinning;
    nri::PluginOptions options;
    options.socketPath = config.nriSocket;
    options.lockPath = config.stateDir + "/nri.lock";
    options.name = config.slices.driverName;
    ContainerPinning* raw = pinning.get();
    options.inputs = [raw] { return raw->currentInputs(); };
    pinning->plugin_ = nri::Plugin::start(std::move(options), metrics);
    return pinning;
}

Result<nri::PinningInputs> ContainerPinning::currentInputs() const {
    auto uids = checkpoint_.recordedUids();
    if (!uids)
        return Error{"listing the checkpoint: " + uids.error().message};
    std::vector<state::ClaimRecord> records;
    for (const auto& uid : *uids) {
        auto record = checkpoint_.read(uid);
        if (record) {
            records.push_back(std::move(record).value());
        } else if (!record.error().is(
                       ErrorKind::NotFound)) {  // ENOENT: unprepared since the listing
            return Error{"checkpoint record of claim " + uid + ": " + record.error().message};
        }
    }
    const auto snapshot = inventory_.current();
    return pinningInputs(snapshot->machine, records);
}

Status ContainerPinning::admit(const prepare::ClaimAllocation& allocation,
                               const InventorySnapshot& node) {
    if (mode_ != CpuPinning::Nri)
        return {};
    const bool pinned =
        std::any_of(allocation.devices.begin(), allocation.devices.end(), [&](const auto& device) {
            auto published = node.devices.find(device.device);
            return !device.adminAccess && (device.bindMemory || (published != node.devices.end() &&
                                                                 isCpuDevice(published->second)));
        });
    if (!pinned || plugin_->waitSynchronized(admitWait_))
        return {};
    return Error{
        "its CPUs or memory cannot be pinned: --cpu-pinning=nri requires the runtime's "
        "NRI, and the driver is not connected to " +
        socket_ + " (not prepared rather than run unpinned; the kubelet retries)"};
}

void ContainerPinning::claimsChanged() {
    if (plugin_)
        plugin_->claimsChanged();
}

void ContainerPinning::stop() {
    if (plugin_)
        plugin_->stop();
}

}  // namespace numadra::daemon
