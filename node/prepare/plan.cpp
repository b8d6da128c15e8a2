#include "plan.hpp"

#include <algorithm>
#include <map>

#include "numadra/common/text.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/topology/attributes.hpp"

namespace numadra::prepare::detail {

namespace {

constexpr const char* kClaimSpecClass = "claim";

template <class T>
const T* attribute(const api::Device& device, const std::string& name) {
    auto it = device.attributes.find(name);
    return it == device.attributes.end() ? nullptr : std::get_if<T>(&it->second);
}

std::optional<std::int64_t> consumed(const state::DeviceRecord& record, const std::string& name,
                                     const std::string& driverName) {
    for (const auto& key : {name, driverName + "/" + name}) {
        auto it = record.consumedCapacity.find(key);
        if (it == record.consumedCapacity.end())
            continue;
        if (auto quantity = api::Quantity::parse(it->second))
            return quantity->value();
    }
    return std::nullopt;
}

// The CDI device name: the claim UID first, so no other claim can ever hit a runtime's cached
// copy, then the node-unique device name (and share, for devices handed out in shares).
std::string cdiDeviceName(const std::string& claimUid, const state::DeviceRecord& record) {
    return claimUid + "-" + record.device + (record.shareId ? "-" + *record.shareId : "");
}

// The claim's CDI device with the control nodes all its NVIDIA GPUs share: in the spec once, and
// named by each GPU's CDI ids, instead of a copy in every GPU's edits.
std::string nvidiaControlDeviceName(const std::string& claimUid) {
    return claimUid + "-nvidia-control";
}

bool usesNvidiaControlNodes(const state::DeviceRecord& record, const NodeView& node) {
    const auto* function = node.machine.pciFunction(record.pciAddress);
    return record.kind != "cpu" && function != nullptr && cdi::usesNvidiaControlNodes(*function);
}

// A record checkpointed before the control nodes had a device of their own lists CDI ids
// without it; the kubelet keeps those ids for restarting containers, so that GPU's own edits
// keep carrying the control nodes.
bool hasInlineControlNodes(const state::DeviceRecord& record, const std::string& controlId) {
    return !record.cdiDeviceIds.empty() &&
           std::find(record.cdiDeviceIds.begin(), record.cdiDeviceIds.end(), controlId) ==
               record.cdiDeviceIds.end();
}

Result<cdi::ContainerEdits> editsFor(const state::DeviceRecord& record, const NodeView& node,
                                     const Options& options, const cdi::HostDeviceNodes& host) {
    if (record.kind == "cpu") {
        cdi::CpuShare share;
        share.deviceName = record.device;
        share.shareId = record.shareId;
        share.numaNode = record.numaNode.value_or(0);
        share.cpus = record.cpus;
        share.memoryBytes = consumedMemory(record, options.driverName);
        return cdi::cpuShareEdits(share);
    }
    const auto* function = node.machine.pciFunction(record.pciAddress);
    if (function == nullptr)
        return Error{"PCI device " + record.pciAddress + " of " + record.device + " is gone"};
    discovery::PciFunction asPrepared = *function;
    if (asPrepared.netdevs.empty() && !record.interfaceName.empty()) {
        // The netdev moved into the pod's network namespace: the container still gets its name
        // (and, with netDevices, the spec still names the interface it moved).
        discovery::NetInterface netdev;
        netdev.name = record.interfaceName;
        netdev.mac = record.hardwareAddress;
        asPrepared.netdevs.push_back(netdev);
    }
    // A share of a VF pool names its variables by its share too, as a CPU share does: two
    // shares of one pool in one claim must not collide.
    const std::string name = record.shareId ? record.device + "-" + *record.shareId : record.device;
    auto edits = cdi::pciDeviceEdits(asPrepared, name, host);
    if (edits && options.cdiNetDevices)
        edits->netDevices = cdi::netDeviceEdits(asPrepared);
    return edits;
}

metadata::Device metadataDevice(const state::DeviceRecord& record, const NodeView& node,
                                const Options& options) {
    metadata::Device device;
    device.driver = options.driverName;
    device.pool = record.pool;
    device.name = record.device;
    if (auto it = node.devices.find(record.device); it != node.devices.end())
        device.attributes = it->second.attributes;
    // A VF pool's share: the pod learns which VF it got (a DPDK application opens it by its PCI
    // address).
    if (!record.pciAddress.empty() && !device.attributes.contains(topology::kPciBusIdAttribute)) {
        if (auto busId = topology::pciBusIdAttribute(record.pciAddress))
            device.attributes[topology::kPciBusIdAttribute] = busId.value();
    }
    if (record.kind == discovery::kKindNic && !record.interfaceName.empty()) {
        metadata::NetworkData network;
        network.interfaceName = record.interfaceName;
        network.hardwareAddress = record.hardwareAddress;
        device.networkData = network;
    }
    return device;
}

}  // namespace

std::string baseRequest(const std::string& request) {
    return request.substr(0, request.find('/'));
}

Result<state::DeviceRecord> identify(const AllocatedDevice& device, const NodeView& node,
                                     const Options& options) {
    if (device.pool != options.poolName) {
        return Error{"device " + device.device + " of request " + device.request + " is in pool '" +
                     device.pool + "', not this node's pool '" + options.poolName + "'"};
    }
    auto published = node.devices.find(device.device);
    if (published == node.devices.end()) {
        return Error{"device " + device.device + " of request " + device.request +
                     " is not published by this node"};
    }
    if (device.shareId && !published->second.allowMultipleAllocations) {
        return Error{"device " + device.device + " of request " + device.request +
                     " was allocated as a share (" + *device.shareId +
                     ") but does not allow multiple allocations"};
    }
    state::DeviceRecord record;
    record.request = device.request;
    record.pool = device.pool;
    record.device = device.device;
    record.shareId = device.shareId;
    record.adminAccess = device.adminAccess;
    record.bindMemory = device.bindMemory;
    for (const auto& [name, quantity] : device.consumedCapacity)
        record.consumedCapacity[name] = quantity.text();
    const auto* type = attribute<std::string>(published->second, "type");
    if (type != nullptr && *type == "cpu") {
        const auto* numa = attribute<std::int64_t>(published->second, topology::kNumaNodeAttribute);
        if (numa == nullptr)
            return Error{"CPU device " + device.device + " has no NUMA node attribute"};
        record.kind = "cpu";
        record.numaNode = static_cast<int>(*numa);
        return record;
    }
    // The pciBusID attribute finds the function at once; devices with a 5-digit PCI domain have
    // none, so they are looked up by name.
    if (published->second.allowMultipleAllocations &&
        !slices::vfsOfPool(node.machine, device.device).empty()) {
        record.kind = discovery::kKindNic;  // the VF is chosen when the claim is reserved
        return record;
    }
    const discovery::PciFunction* function = nullptr;
    if (const auto* busId =
            attribute<std::string>(published->second, topology::kPciBusIdAttribute)) {
        function = node.machine.pciFunction(*busId);
    }
    if (function == nullptr || slices::deviceName(*function) != device.device) {
        auto byName = std::find_if(node.machine.pci.begin(), node.machine.pci.end(),
                                   [&](const discovery::PciFunction& f) {
                                       return slices::deviceName(f) == device.device;
                                   });
        function = byName == node.machine.pci.end() ? nullptr : &*byName;
    }
    if (function == nullptr)
        return Error{"device " + device.device + " has no PCI function on this node"};
    recordFunction(record, *function);
    return record;
}

void recordFunction(state::DeviceRecord& record, const discovery::PciFunction& function) {
    record.kind = function.kind;
    record.pciAddress = function.address;
    record.vendorId = function.vendorId;
    record.deviceId = function.deviceId;
    record.serialNumber = function.serialNumber.value_or("");
    if (!function.netdevs.empty()) {
        record.interfaceName = function.netdevs.front().name;
        record.hardwareAddress = function.netdevs.front().mac;
    }
}

bool awaitsVfChoice(const state::DeviceRecord& record) {
    return record.kind == discovery::kKindNic && record.pciAddress.empty();
}

Result<const discovery::PciFunction*> chooseVf(const discovery::Machine& machine,
                                               const std::string& pool,
                                               const std::set<std::string>& taken) {
    const auto vfs = slices::vfsOfPool(machine, pool);
    if (vfs.empty())
        return Error{"VF pool " + pool + " has no VFs on this node"};
    for (const auto* vf : vfs) {
        if (!taken.contains(vf->address))
            return vf;
    }
    return Error{"all " + std::to_string(vfs.size()) + " VFs of " + pool +
                 " are prepared for other claims"};
}

Status verifyIdentity(const state::DeviceRecord& record, const NodeView& node) {
    if (record.kind == "cpu") {
        for (int id : record.cpus) {
            const auto* cpu = node.machine.cpu(id);
            if (cpu == nullptr || !cpu->online)
                return Error{"CPU " + std::to_string(id) + " of " + record.device + " is offline"};
        }
        return {};
    }
    const auto* function = node.machine.pciFunction(record.pciAddress);
    if (function == nullptr)
        return Error{"PCI device " + record.pciAddress + " (" + record.device + ") is gone"};
    if (function->vendorId != record.vendorId || function->deviceId != record.deviceId ||
        function->kind != record.kind) {
        return Error{"PCI device " + record.pciAddress + " is now " +
                     text::hex(function->vendorId, 4) + ":" + text::hex(function->deviceId, 4) +
                     ", not the " + text::hex(record.vendorId, 4) + ":" +
                     text::hex(record.deviceId, 4) + " that was prepared"};
    }
    // Only a different serial is a different card. None now, where one was recorded, is taken
    // as unreadable rather than as a swap: the config space past the header is root's only, and
    // a restart with other privileges must not cost a running workload its devices.
    if (!record.serialNumber.empty() && function->serialNumber &&
        *function->serialNumber != record.serialNumber) {
        return Error{"PCI device " + record.pciAddress + " now has serial number " +
                     *function->serialNumber + ", not the " + record.serialNumber +
                     " that was prepared"};
    }
    return {};
}

Result<std::vector<int>> chooseCpus(const discovery::Machine& machine, int numaNode, int count,
                                    const std::set<int>& taken) {
    const auto* node = machine.node(numaNode);
    if (node == nullptr)
        return Error{"NUMA node " + std::to_string(numaNode) + " is gone"};
    std::vector<int> free;
    for (int id : node->cpus) {
        const auto* cpu = machine.cpu(id);
        if (cpu != nullptr && cpu->online && !taken.count(id))
            free.push_back(id);
    }
    if (count < 0 || static_cast<size_t>(count) > free.size()) {
        return Error{std::to_string(count) + " CPUs asked on NUMA node " +
                     std::to_string(numaNode) + ", " + std::to_string(free.size()) + " are free"};
    }
    const std::set<int> freeSet(free.begin(), free.end());
    std::set<int> chosen;
    // Whole cores first: a share that owns both hyperthreads is not disturbed by its neighbour.
    for (int id : free) {
        if (chosen.size() == static_cast<size_t>(count))
            break;
        const auto* cpu = machine.cpu(id);
        std::vector<int> core =
            cpu->threadSiblings.empty() ? std::vector<int>{id} : cpu->threadSiblings;
        const bool wholeCoreFree = std::all_of(core.begin(), core.end(), [&](int sibling) {
            return freeSet.count(sibling) && !chosen.count(sibling);
        });
        if (wholeCoreFree && chosen.size() + core.size() <= static_cast<size_t>(count))
            chosen.insert(core.begin(), core.end());
    }
    for (int id : free) {
        if (chosen.size() == static_cast<size_t>(count))
            break;
        chosen.insert(id);
    }
    return std::vector<int>(chosen.begin(), chosen.end());
}

int consumedCpus(const state::DeviceRecord& record, const std::string& driverName) {
    // A share without a consumed amount got the request policy's default, which we publish as
    // one CPU.
    return static_cast<int>(consumed(record, "cpu", driverName).value_or(1));
}

std::vector<int> onlineCpus(const discovery::Machine& machine, int numaNode) {
    std::vector<int> cpus;
    if (const auto* node = machine.node(numaNode)) {
        for (int id : node->cpus) {
            const auto* cpu = machine.cpu(id);
            if (cpu != nullptr && cpu->online)
                cpus.push_back(id);
        }
    }
    return cpus;
}

std::optional<std::int64_t> consumedMemory(const state::DeviceRecord& record,
                                           const std::string& driverName) {
    return consumed(record, "memory", driverName);
}

Result<Plan> buildPlan(const ClaimIdentity& claim, std::vector<state::DeviceRecord> devices,
                       const NodeView& node, const Options& options,
                       const cdi::HostDeviceNodes& host) {
    Plan plan;
    const metadata::Layout layout{options.driverName, options.metadataDir, options.cdiDir};
    cdi::Spec spec;
    spec.kind = options.driverName + "/" + kClaimSpecClass;
    // Every container using any device of the claim names it: the NRI plugin pins by it.
    spec.containerEdits.env.push_back(cdi::claimVariable(claim.claimUid));
    std::map<std::string, size_t> requestIndex;  // base request -> plan.requests
    auto control = cdi::nvidiaControlEdits(host);
    if (!control)
        return control.error();
    const std::string controlName = nvidiaControlDeviceName(claim.claimUid);
    const std::string controlId = cdi::qualifiedName(spec.kind, controlName);
    bool controlUsed = false;
    for (auto& record : devices) {
        auto edits = editsFor(record, node, options, host);
        if (!edits)
            return Error{"device " + record.device + ": " + edits.error().message};
        const bool nvidia = usesNvidiaControlNodes(record, node) && !control->empty();
        const bool controlInline = nvidia && hasInlineControlNodes(record, controlId);
        if (controlInline) {
            for (const auto& controlNode : control->deviceNodes)
                edits->deviceNodes.push_back(controlNode);
        }
        const std::string name = cdiDeviceName(claim.claimUid, record);
        spec.devices.push_back({name, std::move(edits).value()});
        record.cdiDeviceIds = {cdi::qualifiedName(spec.kind, name)};
        if (nvidia && !controlInline) {
            record.cdiDeviceIds.push_back(controlId);
            controlUsed = true;
        }

        const std::string base = baseRequest(record.request);
        auto [it, isNew] = requestIndex.emplace(base, plan.requests.size());
        if (isNew) {
            auto files = metadata::requestFiles(layout, claim.claimNamespace, claim.claimName,
                                                claim.claimUid, record.request, claim.podClaimName);
            if (!files)
                return files.error();
            RequestPlan request;
            request.files = std::move(files).value();
            request.object.claimName = claim.claimName;
            request.object.claimNamespace = claim.claimNamespace;
            request.object.claimUid = claim.claimUid;
            request.object.podClaimName = claim.podClaimName;
            request.object.requestName = record.request;
            request.metadataCdiSpec = cdi::serialize(metadata::cdiSpec(request.files));
            // Like upstream, the metadata mount rides on the first device of each request.
            record.cdiDeviceIds.push_back(request.files.cdiDeviceId);
            plan.requests.push_back(std::move(request));
        }
        plan.requests[it->second].object.devices.push_back(metadataDevice(record, node, options));
    }
    if (spec.devices.empty())
        return Error{"no devices to prepare"};
    if (controlUsed)
        spec.devices.push_back({controlName, std::move(control).value()});
    if (auto valid = cdi::validate(spec); !valid)
        return Error{"CDI spec for claim " + claim.claimUid + ": " + valid.error().message};
    plan.claimSpecPath =
        options.cdiDir + "/" +
        cdi::transientSpecFileName(options.driverName, kClaimSpecClass, claim.claimUid);
    plan.claimSpec = cdi::serialize(spec);
    // Metadata before the specs that mount it; the claim's spec last.
    for (const auto& request : plan.requests)
        plan.files.push_back(request.files.hostFile);
    for (const auto& request : plan.requests)
        plan.files.push_back(request.files.cdiSpecFile);
    plan.files.push_back(plan.claimSpecPath);
    plan.devices = std::move(devices);
    return plan;
}

std::vector<claims::PreparedDevice> preparedDevices(
    const std::vector<state::DeviceRecord>& devices) {
    std::vector<claims::PreparedDevice> out;
    for (const auto& record : devices) {
        claims::PreparedDevice device;
        device.requestNames = {baseRequest(record.request)};
        device.poolName = record.pool;
        device.deviceName = record.device;
        device.cdiDeviceIds = record.cdiDeviceIds;
        device.shareId = record.shareId;
        if (record.kind == discovery::kKindNic) {
            device.interfaceName = record.interfaceName;
            device.hardwareAddress = record.hardwareAddress;
        }
        out.push_back(std::move(device));
    }
    return out;
}

}  // namespace numadra::prepare::detail
