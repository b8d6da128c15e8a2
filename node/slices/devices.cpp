#include "devices.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>

#include "numadra/common/text.hpp"

namespace numadra::slices::detail {

using api::AttributeValue;
using api::Quantity;
using discovery::PciFunction;

namespace {

constexpr std::int64_t kMegabit = 1'000'000;

void addNumaNode(api::Device& device, const PublishContext& context, const PciFunction& f) {
    // No affinity (or unreadable): no attribute at all, never 0.
    if (!topology::numaNodeAttributeForFunction(context.machine, f, topology::NumaForm::Scalar))
        return;
    const auto& value = context.numaValue(*f.numaNode);
    if (value.form == topology::NumaForm::Scalar) {
        device.attributes[topology::kNumaNodeAttribute] = std::int64_t{value.physical()};
    } else {
        device.attributes[topology::kNumaNodeAttribute] =
            std::vector<std::int64_t>(value.nodes.begin(), value.nodes.end());
    }
    if (context.options.legacyNumaAttributes) {
        device.attributes["dra.net/numaNode"] = std::int64_t{value.physical()};
    }
    if (auto socket = context.machine.socketOfNode(value.physical())) {
        device.attributes["socket"] = std::int64_t{*socket};
    }
}

std::string linkSpeedText(double gts) {
    char buffer[32];
    // to_chars prints as printf("%.1f") does, without parsing a format at run time; printf
    // stays for what would not fit whole (it cuts at 31 characters, as it always did).
    const auto [end, error] =
        std::to_chars(buffer, buffer + sizeof buffer, gts, std::chars_format::fixed, 1);
    if (error == std::errc{} && end - buffer <= 27)
        return std::string(buffer, end) + "GT/s";
    std::snprintf(buffer, sizeof buffer, "%.1fGT/s", gts);
    return buffer;
}

// Attributes every PCI device gets.
api::Device pciDevice(const PciFunction& f, const PublishContext& context) {
    api::Device device;
    device.name = pciDeviceName(f.kind, f.address);
    auto& a = device.attributes;
    a["type"] = f.kind;
    a["vendor"] = truncateValue(f.vendorName);
    a["vendorID"] = "0x" + text::hex(f.vendorId, 4);
    a["deviceID"] = "0x" + text::hex(f.deviceId, 4);
    a["model"] = truncateValue(f.deviceName);
    if (!f.kernelDriver.empty())
        a["kernelDriver"] = truncateValue(f.kernelDriver);
    if (f.iommuGroup)
        a["iommuGroup"] = std::int64_t{*f.iommuGroup};
    if (f.maxLink.speedGTs)
        a["pcieMaxLinkSpeed"] = linkSpeedText(*f.maxLink.speedGTs);
    if (f.maxLink.width)
        a["pcieMaxLinkWidth"] = std::int64_t{*f.maxLink.width};
    if (auto busId = topology::pciBusIdAttribute(f.address))
        a[topology::kPciBusIdAttribute] = busId.value();
    if (auto root = topology::pcieRootAttribute(f))
        a[topology::kPcieRootAttribute] = root.value();
    addNumaNode(device, context, f);
    return device;
}

std::optional<std::int64_t> linkSpeedBits(const PciFunction& f) {
    std::optional<std::int64_t> best;
    for (const auto& netdev : f.netdevs) {
        if (netdev.speedMbps && (!best || *netdev.speedMbps * kMegabit > *best))
            best = *netdev.speedMbps * kMegabit;
    }
    return best;
}

// The physical function of a VF, when the VF is in its PF's list of VFs (numVfs > 0).
const PciFunction* enabledPfOf(const PciFunction& vf, const discovery::Machine& machine) {
    const auto* pf = machine.pciFunction(vf.sriovVf->pfAddress);
    return pf != nullptr && pf->sriovPf && pf->sriovPf->numVfs > 0 ? pf : nullptr;
}

bool pooledIntoVfPool(const PciFunction& vf, const PublishContext& context) {
    return context.options.vfLayout == VfLayout::Pooled &&
           enabledPfOf(vf, context.machine) != nullptr;
}

std::optional<api::Device> publishAccelerator(const PciFunction& f, const PublishContext& context) {
    return pciDevice(f, context);
}

// What every NIC publishes, whatever its SR-IOV role.
api::Device nicDevice(const PciFunction& f, const PublishContext& context) {
    api::Device device = pciDevice(f, context);
    auto& a = device.attributes;
    if (!f.netdevs.empty()) {
        a["ifName"] = truncateValue(f.netdevs.front().name);
        const auto type = f.netdevs.front().linkType;
        if (type == 1)
            a["linkType"] = std::string("ethernet");
        if (type == 32)
            a["linkType"] = std::string("infiniband");
    }
    a["rdma"] = !f.rdma.empty();
    if (!f.rdma.empty())
        a["rdmaDevice"] = truncateValue(f.rdma.front().name);
    return device;
}

std::optional<api::Device> publishNic(const PciFunction& f, const PublishContext& context) {
    if (f.sriovVf && pooledIntoVfPool(f, context))
        return std::nullopt;  // vfPoolDevices() publishes it with its siblings
    api::Device device = nicDevice(f, context);
    auto& a = device.attributes;
    const auto bandwidth = linkSpeedBits(f);
    if (f.sriovVf) {
        a["sriovRole"] = std::string("vf");
        a["pfPciBusID"] = f.sriovVf->pfAddress;
        if (f.sriovVf->index >= 0)
            a["vfIndex"] = std::int64_t{f.sriovVf->index};
        const auto* pf = context.machine.pciFunction(f.sriovVf->pfAddress);
        if (pf != nullptr && pf->sriovPf && pf->sriovPf->numVfs > 0) {
            api::DeviceCounterConsumption consumption;
            consumption.counterSet = counterSetNameForPf(pf->address);
            consumption.counters["vfs"] = api::Counter{Quantity::decimal(1), {}, {}};
            if (context.options.sharedConsumableCapacity && linkSpeedBits(*pf)) {
                consumption.counters["bandwidth"] =
                    api::Counter{{}, {}, capacityKey(context.options, "bandwidth")};
            }
            device.consumesCounters.push_back(std::move(consumption));
        }
        return device;
    }
    if (bandwidth)
        device.capacity["bandwidth"] = api::DeviceCapacity{Quantity::decimal(*bandwidth), {}};
    if (f.sriovPf) {
        a["sriovRole"] = std::string("pf");
        a["sriovTotalVFs"] = std::int64_t{f.sriovPf->totalVfs};
        a["sriovNumVFs"] = std::int64_t{f.sriovPf->numVfs};
        if (f.sriovPf->numVfs > 0) {
            // The PF as a whole uses everything its VFs share, so PF and VFs exclude each other.
            api::DeviceCounterConsumption consumption;
            consumption.counterSet = counterSetNameForPf(f.address);
            consumption.counters["vfs"] =
                api::Counter{Quantity::decimal(f.sriovPf->numVfs), {}, {}};
            if (bandwidth)
                consumption.counters["bandwidth"] =
                    api::Counter{Quantity::decimal(*bandwidth), {}, {}};
            device.consumesCounters.push_back(std::move(consumption));
        }
    }
    return device;
}

api::CapacityRequestPolicy cpuPolicy() {
    return {Quantity::decimal(1),
            {},
            api::CapacityRange{Quantity::decimal(1), {}, Quantity::decimal(1)}};
}
api::CapacityRequestPolicy memoryPolicy() {
    return {Quantity::decimal(0),
            {},
            api::CapacityRange{Quantity::decimal(0), {}, Quantity::binary(1 << 20)}};
}

std::vector<int> onlineCpusOf(const discovery::Machine& machine, const discovery::NumaNode& node) {
    std::vector<int> cpus;
    for (int c : node.cpus) {
        const auto* cpu = machine.cpu(c);
        // A cpulist can name CPUs that are not present (reduced or hot-unplugged trees).
        if (cpu != nullptr && cpu->online)
            cpus.push_back(c);
    }
    return cpus;
}

// PCIe roots with at least one function on `node`, ascending.
std::vector<std::string> rootsOnNode(const discovery::Machine& machine, int node) {
    std::set<std::string> roots;
    for (const auto& f : machine.pci) {
        if (f.numaNode == node && !f.pcieRoot.empty())
            roots.insert(f.pcieRoot);
    }
    return {roots.begin(), roots.end()};
}

api::Device cpuDeviceBase(const PublishContext& context, int node, std::string name) {
    api::Device device;
    device.name = std::move(name);
    device.allowMultipleAllocations = true;
    device.attributes["type"] = std::string("cpu");
    // CPUs are their node: always the scalar form (KEP-6072).
    device.attributes[topology::kNumaNodeAttribute] = std::int64_t{node};
    if (auto socket = context.machine.socketOfNode(node))
        device.attributes["socket"] = std::int64_t{*socket};
    if (context.options.legacyNumaAttributes) {
        device.attributes["dra.net/numaNode"] = std::int64_t{node};
        device.attributes["dra.cpu/numaNodeID"] = std::int64_t{node};
    }
    return device;
}

// Each CPU and byte of memory a claim consumes is one of the node's allocatable cpu and memory.
// Only the capacity form maps: the KEP-5941 budget devices have no capacity to name.
void mapCapacitiesToNodeResources(api::Device& device) {
    for (const char* resource : {"cpu", "memory"}) {
        if (!device.capacity.contains(resource))
            continue;
        api::NodeAllocatableMapping mapping;
        mapping.capacityKey = resource;
        mapping.capacityMultiplier = Quantity::decimal(1);
        device.nodeAllocatableResources[resource] = {mapping, std::nullopt};
    }
}

void consumeNodeBudget(api::Device& device, const PublishContext& context, int node,
                       bool hasMemory) {
    api::DeviceCounterConsumption consumption;
    consumption.counterSet = counterSetNameForNode(node);
    consumption.counters["cpu"] = api::Counter{{}, {}, capacityKey(context.options, "cpu")};
    if (hasMemory)
        consumption.counters["memory"] =
            api::Counter{{}, {}, capacityKey(context.options, "memory")};
    device.consumesCounters.push_back(std::move(consumption));
}

}  // namespace

PublishContext::PublishContext(const discovery::Machine& m, const SliceOptions& o)
    : machine(m), options(o) {}

const topology::NumaNodeValue& PublishContext::numaValue(int node) const {
    auto it = numaValues_.find(node);
    if (it == numaValues_.end()) {
        // Nodes are validated by the caller (0..1023), so this cannot fail.
        auto value = topology::numaNodeAttribute(machine, node, options.numaForm);
        it = numaValues_.emplace(node, value.value()).first;
    }
    return it->second;
}

const std::map<discovery::DeviceKind, PciPublisher>& pciPublishers() {
    static const std::map<discovery::DeviceKind, PciPublisher> publishers{
        {discovery::kKindGpu, publishAccelerator},
        {discovery::kKindAccelerator, publishAccelerator},
        {discovery::kKindNic, publishNic},
    };
    return publishers;
}

std::vector<api::Device> cpuDevices(const PublishContext& context) {
    std::vector<api::Device> devices;
    const auto& machine = context.machine;
    for (const auto& node : machine.nodes) {
        const auto cpus = onlineCpusOf(machine, node);
        if (cpus.empty())
            continue;  // memory-only nodes have no CPUs to hand out
        api::Device device = cpuDeviceBase(context, node.id, "cpu-numa-" + std::to_string(node.id));
        const std::string cpuList = text::formatRangeList(cpus);
        if (cpuList.size() <= SliceLimits::kStringValueLength)
            device.attributes["cpus"] = cpuList;
        if (context.options.numaForm == topology::NumaForm::List) {
            // CPUs are adjacent to every root on their node (KEP-5491's motivating example).
            auto roots = rootsOnNode(machine, node.id);
            if (!roots.empty() && roots.size() <= 16)
                device.attributes[topology::kPcieRootAttribute] = roots;
        }
        if (context.options.sharedConsumableCapacity) {
            consumeNodeBudget(device, context, node.id, node.memoryBytes.has_value());
        } else {
            device.capacity["cpu"] = {Quantity::decimal(static_cast<std::int64_t>(cpus.size())),
                                      cpuPolicy()};
            if (node.memoryBytes) {
                device.capacity["memory"] = {
                    Quantity::binary(static_cast<std::int64_t>(*node.memoryBytes)), memoryPolicy()};
            }
            if (context.options.nodeAllocatableResources)
                mapCapacitiesToNodeResources(device);
        }
        devices.push_back(std::move(device));
    }
    if (!context.options.sharedConsumableCapacity)
        return devices;
    // KEP-5941 story 2: one CPU device per PCIe root, drawing on its node's budget.
    for (const auto& node : machine.nodes) {
        if (onlineCpusOf(machine, node).empty())
            continue;
        for (const auto& root : rootsOnNode(machine, node.id)) {
            api::Device device = cpuDeviceBase(context, node.id, "cpu-" + root);
            std::replace(device.name.begin(), device.name.end(), ':', '-');
            device.attributes[topology::kPcieRootAttribute] = root;
            consumeNodeBudget(device, context, node.id, node.memoryBytes.has_value());
            devices.push_back(std::move(device));
        }
    }
    return devices;
}

namespace {

// Attributes a VF pool cannot carry: they name one VF, and which one is decided at Prepare.
constexpr std::array kAttributesOfOneVf{"ifName", "rdmaDevice", "vfIndex", "iommuGroup",
                                        topology::kPciBusIdAttribute};

// A DNS label fragment for a kernel driver name (mlx5_core -> mlx5-core).
std::string driverLabel(const std::string& kernelDriver) {
    std::string label;
    for (char c : kernelDriver) {
        const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        label += alnum ? c : (c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : '-');
    }
    return label;
}

// "<pf device>-vfs[-<driver>]", cut to the 63 characters of a DNS label.
std::string vfPoolName(const PciFunction& pf, const std::string& kernelDriver) {
    std::string name = pciDeviceName(pf.kind, pf.address) + "-vfs";
    if (!kernelDriver.empty())
        name += "-" + driverLabel(kernelDriver);
    name.resize(std::min<size_t>(name.size(), 63));
    while (!name.empty() && name.back() == '-')
        name.pop_back();
    return name;
}

// The VFs of `pf` that are in the machine, grouped by the kernel driver they are bound to (a
// claim may select vfio-pci VFs for DPDK, or the netdev ones).
std::map<std::string, std::vector<const PciFunction*>> vfsByDriver(
    const PciFunction& pf, const discovery::Machine& machine) {
    std::map<std::string, std::vector<const PciFunction*>> groups;
    for (const auto& address : pf.sriovPf->vfAddresses) {
        const auto* vf = machine.pciFunction(address);
        if (vf != nullptr && vf->sriovVf && vf->sriovVf->pfAddress == pf.address)
            groups[vf->kernelDriver].push_back(vf);
    }
    return groups;
}

// The pool's share of the PF's link: in proportion to its VFs, so the pools of one PF never
// promise more than the port has.
std::int64_t poolBandwidth(std::int64_t link, std::size_t poolVfs, int pfVfs) {
    const std::int64_t share = link / pfVfs * static_cast<std::int64_t>(poolVfs);
    return std::max<std::int64_t>(kMegabit, share / kMegabit * kMegabit);
}

api::CapacityRequestPolicy oneVfPerAllocation() {
    return {Quantity::decimal(1), {Quantity::decimal(1)}, std::nullopt};
}

// Bandwidth requested in 1M steps up to `max`; unrequested, an equal share of the PF's link per
// VF.
api::CapacityRequestPolicy bandwidthPolicy(std::int64_t link, int pfVfs, std::int64_t max) {
    const std::int64_t share = std::max<std::int64_t>(kMegabit, link / pfVfs / kMegabit * kMegabit);
    return {Quantity::decimal(share),
            {},
            api::CapacityRange{Quantity::decimal(kMegabit), Quantity::decimal(max),
                               Quantity::decimal(kMegabit)}};
}

api::Device vfPool(const PciFunction& pf, const std::vector<const PciFunction*>& vfs,
                   const PublishContext& context) {
    api::Device device = nicDevice(*vfs.front(), context);
    device.name = vfPoolName(pf, vfs.front()->kernelDriver);
    for (const char* name : kAttributesOfOneVf)
        device.attributes.erase(name);
    device.attributes["sriovRole"] = std::string("vf");
    device.attributes["pfPciBusID"] = pf.address;
    device.allowMultipleAllocations = true;
    const int pfVfs = pf.sriovPf->numVfs;
    device.capacity["vfs"] = {Quantity::decimal(static_cast<std::int64_t>(vfs.size())),
                              oneVfPerAllocation()};
    // The whole pool takes its VFs (and its part of the link) from the PF's counter set, once
    // however many claims share it: the PF as a whole and its pools exclude each other.
    api::DeviceCounterConsumption consumption;
    consumption.counterSet = counterSetNameForPf(pf.address);
    consumption.counters["vfs"] =
        api::Counter{Quantity::decimal(static_cast<std::int64_t>(vfs.size())), {}, {}};
    if (auto link = linkSpeedBits(pf)) {
        const std::string key = capacityKey(context.options, "bandwidth");
        if (context.options.sharedConsumableCapacity) {
            // KEP-5941: each claim draws what it asks for from the PF's link, shared by all of
            // its pools.
            consumption.counters["bandwidth"] = api::Counter{{}, {}, key};
        } else {
            const std::int64_t bandwidth = poolBandwidth(*link, vfs.size(), pfVfs);
            device.capacity[key] = {Quantity::decimal(bandwidth),
                                    bandwidthPolicy(*link, pfVfs, bandwidth)};
            consumption.counters["bandwidth"] = api::Counter{Quantity::decimal(bandwidth), {}, {}};
        }
    }
    device.consumesCounters = {std::move(consumption)};
    return device;
}

}  // namespace

std::vector<api::Device> vfPoolDevices(const PublishContext& context) {
    std::vector<api::Device> devices;
    if (context.options.vfLayout != VfLayout::Pooled)
        return devices;
    for (const auto& pf : context.machine.pci) {
        if (pf.kind != discovery::kKindNic || !pf.sriovPf || pf.sriovPf->numVfs == 0)
            continue;
        for (const auto& [driver, vfs] : vfsByDriver(pf, context.machine))
            devices.push_back(vfPool(pf, vfs, context));
    }
    return devices;
}

std::vector<api::CounterSet> counterSets(const PublishContext& context) {
    std::vector<api::CounterSet> sets;
    const bool shared = context.options.sharedConsumableCapacity;
    for (const auto& f : context.machine.pci) {
        if (f.kind != discovery::kKindNic || !f.sriovPf || f.sriovPf->numVfs == 0)
            continue;
        api::CounterSet set;
        set.name = counterSetNameForPf(f.address);
        set.counters["vfs"] = api::Counter{Quantity::decimal(f.sriovPf->numVfs), {}, {}};
        if (auto bandwidth = linkSpeedBits(f)) {
            api::Counter counter{Quantity::decimal(*bandwidth), {}, {}};
            if (shared)
                counter.requestPolicy = bandwidthPolicy(*bandwidth, f.sriovPf->numVfs, *bandwidth);
            set.counters["bandwidth"] = counter;
        }
        sets.push_back(std::move(set));
    }
    if (!shared)
        return sets;
    for (const auto& node : context.machine.nodes) {
        const auto cpus = onlineCpusOf(context.machine, node);
        if (cpus.empty())
            continue;
        api::CounterSet set;
        set.name = counterSetNameForNode(node.id);
        set.counters["cpu"] = api::Counter{
            Quantity::decimal(static_cast<std::int64_t>(cpus.size())), cpuPolicy(), {}};
        if (node.memoryBytes) {
            set.counters["memory"] = api::Counter{
                Quantity::binary(static_cast<std::int64_t>(*node.memoryBytes)), memoryPolicy(), {}};
        }
        sets.push_back(std::move(set));
    }
    return sets;
}

std::string pciDeviceName(const std::string& kind, const std::string& address) {
    std::string name = kind + "-" + address;
    std::replace(name.begin(), name.end(), ':', '-');
    std::replace(name.begin(), name.end(), '.', '-');
    return name;
}

std::string counterSetNameForPf(const std::string& pfAddress) {
    return pciDeviceName("pf", pfAddress);
}

std::string counterSetNameForNode(int node) {
    return "numa-" + std::to_string(node);
}

std::string truncateValue(const std::string& value) {
    if (value.size() <= SliceLimits::kStringValueLength)
        return value;
    // Cut on a UTF-8 character boundary.
    size_t cut = SliceLimits::kStringValueLength;
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80)
        --cut;
    return value.substr(0, cut);
}

std::string capacityKey(const SliceOptions& options, const std::string& name) {
    return options.driverName + "/" + name;
}

}  // namespace numadra::slices::detail

namespace numadra::slices {

std::vector<const discovery::PciFunction*> vfsOfPool(const discovery::Machine& machine,
                                                     const std::string& deviceName) {
    for (const auto& pf : machine.pci) {
        if (pf.kind != discovery::kKindNic || !pf.sriovPf || pf.sriovPf->numVfs == 0 ||
            !deviceName.starts_with(detail::pciDeviceName(pf.kind, pf.address) + "-vfs"))
            continue;
        for (auto& [driver, vfs] : detail::vfsByDriver(pf, machine)) {
            if (detail::vfPoolName(pf, driver) == deviceName)
                return std::move(vfs);
        }
    }
    return {};
}

}  // namespace numadra::slices
