// The allocator benchmarks' inputs as model objects, and their resource.k8s.io/v1 JSON. See
// allocator_cases.hpp.

#include "allocator_cases.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>
#include <variant>

#include "numadra/allocator/allocator.hpp"
#include "numadra/allocator/decode.hpp"
#include "numadra/api/resource_slice.hpp"

namespace numadra::bench {

namespace {

constexpr std::int64_t kBandwidth = 400'000'000'000;  // 400 Gb/s per PF

na::Quantity decimal(std::int64_t value) {
    return na::Quantity::fromInt(value, na::Quantity::Format::DecimalSI);
}
na::Quantity binary(std::int64_t value) {
    return na::Quantity::fromInt(value, na::Quantity::Format::BinarySI);
}

std::string hex2(int value) {
    char text[16];
    std::snprintf(text, sizeof text, "%02x", value);
    return text;
}

std::string pciAddress(int bus, int device, int function) {
    return "0000:" + hex2(bus) + ":" + hex2(device) + "." + std::to_string(function);
}

// As node/slices/devices.cpp names devices: kind-address with ':' and '.' replaced by '-'.
std::string deviceName(const std::string& kind, const std::string& address) {
    std::string name = kind + "-" + address;
    for (char& c : name)
        if (c == ':' || c == '.')
            c = '-';
    return name;
}

void pciAttributes(na::Device& device, const Shape& shape, int root, const std::string& address,
                   int iommuGroup) {
    auto& a = device.attributes;
    const int numa = shape.numaOf(root);
    a["iommuGroup"] = std::int64_t{iommuGroup};
    a["pcieMaxLinkSpeed"] = std::string("32.0GT/s");
    a["pcieMaxLinkWidth"] = std::int64_t{16};
    a[kPciBusId] = address;
    a[kPcieRoot] = "pci0000:" + hex2(shape.rootBus(root));
    a[kNumaNode] = std::int64_t{numa};
    a["socket"] = std::int64_t{shape.socketOf(numa)};
}

na::Device gpuDevice(const Shape& shape, int root, int bus, int iommuGroup) {
    const std::string address = pciAddress(bus, 0, 0);
    na::Device device;
    device.name = deviceName("gpu", address);
    auto& a = device.attributes;
    a["type"] = std::string("gpu");
    a["vendor"] = std::string("NVIDIA Corporation");
    a["vendorID"] = std::string("0x10de");
    a["deviceID"] = std::string("0x2330");
    a["model"] = std::string("GH100 [H100 SXM5 80GB]");
    a["kernelDriver"] = std::string("nvidia");
    pciAttributes(device, shape, root, address, iommuGroup);
    return device;
}

void nicAttributes(na::Device& device, int nicIndex, int ifIndex, int rdmaIndex) {
    auto& a = device.attributes;
    a["type"] = std::string("nic");
    a["vendor"] = std::string("Mellanox Technologies");
    a["vendorID"] = std::string("0x15b3");
    a["kernelDriver"] = std::string("mlx5_core");
    a["ifName"] = "ens" + std::to_string(ifIndex) + "np0";
    a["linkType"] = std::string(Shape::linkType(nicIndex));
    a["rdma"] = true;
    a["rdmaDevice"] = "mlx5_" + std::to_string(rdmaIndex);
}

std::string counterSetName(const std::string& pfAddress) {
    return deviceName("pf", pfAddress);
}

na::Device pfDevice(const Shape& shape, int root, int nic, const std::string& address,
                    int iommuGroup, int pfIndex) {
    na::Device device;
    device.name = deviceName("nic", address);
    nicAttributes(device, nic, pfIndex, pfIndex);
    auto& a = device.attributes;
    a["deviceID"] = std::string("0x1021");
    a["model"] = std::string("MT2910 Family [ConnectX-7]");
    a["sriovRole"] = std::string("pf");
    a["sriovTotalVFs"] = std::int64_t{std::max(shape.vfsPerNic, 8)};
    a["sriovNumVFs"] = std::int64_t{shape.vfsPerNic};
    pciAttributes(device, shape, root, address, iommuGroup);
    device.capacity["bandwidth"] = na::Capacity{decimal(kBandwidth), std::nullopt};
    if (shape.counterSets && shape.vfsPerNic > 0) {
        na::CounterConsumption use;
        use.counterSet = counterSetName(address);
        use.counters["vfs"] = na::CounterUse{decimal(shape.vfsPerNic), std::nullopt};
        use.counters["bandwidth"] = na::CounterUse{decimal(kBandwidth), std::nullopt};
        device.consumesCounters.push_back(std::move(use));
    }
    return device;
}

na::Device vfDevice(const Shape& shape, int root, int nic, const std::string& pfAddress, int bus,
                    int vf, int iommuGroup, int pfIndex, int* rdmaIndex) {
    const int devfn = 2 + vf;  // VFs follow the PF at function 0 (and its sibling at 1)
    const std::string address = pciAddress(bus, devfn / 8, devfn % 8);
    na::Device device;
    device.name = deviceName("nic", address);
    nicAttributes(device, nic, 1000 + pfIndex * 100 + vf, (*rdmaIndex)++);
    auto& a = device.attributes;
    a["deviceID"] = std::string("0x101e");
    a["model"] = std::string("ConnectX Family mlx5Gen Virtual Function");
    a["sriovRole"] = std::string("vf");
    a["pfPciBusID"] = pfAddress;
    a["vfIndex"] = std::int64_t{vf};
    pciAttributes(device, shape, root, address, iommuGroup);
    if (shape.counterSets) {
        na::CounterConsumption use;
        use.counterSet = counterSetName(pfAddress);
        use.counters["vfs"] = na::CounterUse{decimal(1), std::nullopt};
        device.consumesCounters.push_back(std::move(use));
    }
    return device;
}

na::Device cpuDevice(const Shape& shape, int numa) {
    na::Device device;
    device.name = "cpu-numa-" + std::to_string(numa);
    device.allowMultipleAllocations = true;
    auto& a = device.attributes;
    a["type"] = std::string("cpu");
    a[kNumaNode] = std::int64_t{numa};
    a["socket"] = std::int64_t{shape.socketOf(numa)};
    const int first = numa * shape.cpusPerNuma;
    a["cpus"] = std::to_string(first) + "-" + std::to_string(first + shape.cpusPerNuma - 1);
    na::RequestPolicy cpuPolicy;
    cpuPolicy.defaultValue = decimal(1);
    cpuPolicy.validRange = na::CapacityRange{decimal(1), std::nullopt, decimal(1)};
    device.capacity["cpu"] = na::Capacity{decimal(shape.cpusPerNuma), cpuPolicy};
    na::RequestPolicy memoryPolicy;
    memoryPolicy.defaultValue = decimal(0);
    memoryPolicy.validRange = na::CapacityRange{decimal(0), std::nullopt, binary(1 << 20)};
    device.capacity["memory"] = na::Capacity{binary(std::int64_t{256} << 30), memoryPolicy};
    return device;
}

}  // namespace

// One node's pool: its slices, in the order the driver would name them.
std::vector<na::Slice> nodeSlices(const std::string& node, const Shape& shape) {
    std::vector<na::Device> main;
    std::vector<std::vector<na::Device>> vfSlices;
    std::vector<na::CounterSet> sets;
    int iommuGroup = 10;
    int pfIndex = 0;
    int rdmaIndex = 0;
    for (int root = 0; root < shape.roots; ++root) {
        int bus = shape.rootBus(root) + 1;
        for (int g = 0; g < shape.gpusPerRoot; ++g)
            main.push_back(gpuDevice(shape, root, bus++, iommuGroup++));
        for (int n = 0; n < shape.nicsPerRoot; ++n, ++bus, ++pfIndex) {
            const std::string pfAddress = pciAddress(bus, 0, 0);
            main.push_back(pfDevice(shape, root, n, pfAddress, iommuGroup++, rdmaIndex++));
            std::vector<na::Device> vfs;
            for (int vf = 0; vf < shape.vfsPerNic; ++vf)
                vfs.push_back(vfDevice(shape, root, n, pfAddress, bus, vf, iommuGroup++, pfIndex,
                                       &rdmaIndex));
            if (shape.vfSlicePerNic)
                vfSlices.push_back(std::move(vfs));
            else
                for (auto& vf : vfs)
                    main.push_back(std::move(vf));
            if (shape.counterSets && shape.vfsPerNic > 0) {
                na::CounterSet set;
                set.name = counterSetName(pfAddress);
                set.counters["vfs"] = na::SharedCounter{decimal(shape.vfsPerNic), std::nullopt};
                set.counters["bandwidth"] = na::SharedCounter{decimal(kBandwidth), std::nullopt};
                sets.push_back(std::move(set));
            }
        }
    }
    if (shape.cpus)
        for (int numa = 0; numa < shape.numaNodes; ++numa)
            main.push_back(cpuDevice(shape, numa));

    std::vector<na::Slice> slices;
    auto newSlice = [&](const std::string& suffix) -> na::Slice& {
        na::Slice slice;
        slice.name = node + "-" + kDriver + "-" + suffix;
        slice.driver = kDriver;
        slice.pool = na::Pool{node, 1, 0};
        slice.nodeName = node;
        slices.push_back(std::move(slice));
        return slices.back();
    };
    for (size_t i = 0; i < sets.size(); i += 8) {  // kCounterSetsPerSlice
        na::Slice& slice = newSlice("counters-" + std::to_string(i / 8));
        for (size_t k = i; k < std::min(sets.size(), i + 8); ++k)
            slice.sharedCounters.push_back(sets[k]);
    }
    auto addDevices = [&](std::vector<na::Device>& devices, int& number) {
        for (size_t i = 0; i < devices.size(); i += 64) {
            char suffix[16];
            std::snprintf(suffix, sizeof suffix, "%02d", number++);
            na::Slice& slice = newSlice(suffix);
            for (size_t k = i; k < std::min(devices.size(), i + 64); ++k)
                slice.devices.push_back(std::move(devices[k]));
        }
    };
    int number = 0;
    addDevices(main, number);
    for (auto& vfs : vfSlices)
        addDevices(vfs, number);
    for (na::Slice& slice : slices)
        slice.pool.resourceSliceCount = static_cast<std::int64_t>(slices.size());
    return slices;
}

namespace {

std::string typeSelector(const std::string& rest) {
    return std::string("device.driver == \"") + kDriver + "\" && device.attributes[\"" + kDriver +
           "\"].type == " + rest;
}

bool attribute(const na::Device& device, const char* key, const std::string& value) {
    auto it = device.attributes.find(key);
    if (it == device.attributes.end())
        return false;
    const auto* text = std::get_if<std::string>(&it->second);
    return text != nullptr && *text == value;
}

}  // namespace

// ----- classes and claims -----

std::vector<na::DeviceClass> deviceClasses() {
    const std::string attr = std::string("device.attributes[\"") + kDriver + "\"].";
    auto make = [](std::string name, std::string selector) {
        na::DeviceClass c;
        c.name = std::move(name);
        c.selectors.push_back(std::move(selector));
        return c;
    };
    return {
        make("gpu", typeSelector("\"gpu\"")),
        make("nic", typeSelector("\"nic\" && " + attr + "sriovRole == \"pf\"")),
        make("vf", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\"")),
        make("vf-ib", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\" && " + attr +
                                   "linkType == \"infiniband\"")),
        make("vf-eth", typeSelector("\"nic\" && " + attr + "sriovRole == \"vf\" && " + attr +
                                    "linkType == \"ethernet\"")),
        make("cpu", typeSelector("\"cpu\"")),
    };
}

na::Request request(std::string name, std::string deviceClass, std::int64_t count,
                    std::vector<std::string> selectors, bool derivedNuma) {
    na::DeviceRequestSpec spec;
    spec.deviceClassName = std::move(deviceClass);
    spec.count = count;
    spec.selectors = std::move(selectors);
    if (derivedNuma)
        spec.derivedAttributes.push_back(
            {"numa", "device.attributes[\"resource.kubernetes.io\"].numaNode"});
    na::Request r;
    r.name = std::move(name);
    r.exactly = std::move(spec);
    return r;
}

na::Claim claim(std::string name, std::vector<na::Request> requests,
                std::optional<std::string> matchAttribute) {
    na::Claim c;
    c.namespace_ = "default";
    c.uid = "uid-" + name;
    c.name = std::move(name);
    if (matchAttribute) {
        na::Constraint constraint;
        for (const auto& r : requests)
            constraint.requests.push_back(r.name);
        constraint.matchAttribute = std::move(matchAttribute);
        c.constraints.push_back(std::move(constraint));
    }
    c.requests = std::move(requests);
    return c;
}

na::Claim gpuNicClaim(std::int64_t gpus, bool derived) {
    return claim("gpu-nic",
                 {request("gpu", "gpu", gpus, {}, derived), request("nic", "nic", 1, {}, derived)},
                 derived ? std::string("numa") : std::string(kNumaNode));
}

// ----- fixtures -----

const std::vector<na::Slice>& bigSlices() {
    static const auto slices = nodeSlices("big", Shape{});
    return slices;
}

const std::vector<na::DeviceClass>& classes() {
    static const auto list = deviceClasses();
    return list;
}

// ----- (c), (d) -----

const Cluster& cluster() {
    static const Cluster instance = [] {
        Cluster c;
        Shape shape;
        shape.gpusPerRoot = 1;
        shape.vfsPerNic = 6;
        shape.counterSets = false;
        shape.cpus = false;
        shape.vfSlicePerNic = false;
        c.slices.reserve(kNodes);
        for (int i = 0; i < kNodes; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "node-%04d", i);
            for (auto& slice : nodeSlices(name, shape))
                c.slices.push_back(std::move(slice));
            c.nodes.push_back(na::Node{name, {}});
        }
        return c;
    }();
    return instance;
}

const std::vector<na::Slice>& manyVfSlices() {
    static const auto slices = [] {
        Shape shape;
        shape.nicsPerRoot = 2;
        return nodeSlices("many-vfs", shape);
    }();
    return slices;
}

const std::vector<na::Claim>& thousandClaims() {
    static const auto list = [] {
        std::vector<na::Claim> claims;
        for (int i = 0; i < kClaims; ++i) {
            char name[32];
            std::snprintf(name, sizeof name, "vf-%04d", i);
            claims.push_back(claim(name, {request("vf", i % 2 == 0 ? "vf-ib" : "vf-eth", 1)}));
        }
        return claims;
    }();
    return list;
}

// ----- (e) -----

na::Allocation inUse(const std::string& pool, const std::vector<std::string>& devices) {
    na::Allocation allocation;
    for (const auto& device : devices) {
        na::DeviceResult result;
        result.request = "busy";
        result.driver = kDriver;
        result.pool = pool;
        result.device = device;
        allocation.results.push_back(std::move(result));
    }
    return allocation;
}

// (1) 32 VFs of one PF where only 31 match the request's selector.
InfeasibleCase vfs32of31() {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::string pf;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices)
            if (pf.empty() && attribute(device, "sriovRole", "pf"))
                pf = std::get<std::string>(device.attributes.at(kPciBusId));
    const std::string attr = std::string("device.attributes[\"") + kDriver + "\"].";
    c.claims.push_back(claim(
        "vfs-32", {request("vf", "vf", 32,
                           {attr + "pfPciBusID == \"" + pf + "\" && " + attr + "vfIndex < 31"})}));
    return c;
}

// (2) 6 GPUs on a node where 11 of the 16 are in use: 5 free.
InfeasibleCase gpus6of5() {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::vector<std::string> busy;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices)
            if (busy.size() < 11 && attribute(device, "type", "gpu"))
                busy.push_back(device.name);
    c.committed.push_back(inUse("big", busy));
    c.claims.push_back(claim("gpus-6", {request("gpu", "gpu", 6)}));
    return c;
}

// (3) The claim of BM_GpuNicNuma (8 GPUs + 1 NIC, one NUMA node) where no NUMA node holds 8
// GPUs: 16 GPUs, 2 per NUMA node over 8 NUMA nodes.
InfeasibleCase gpusSpread() {
    Shape shape;
    shape.numaNodes = 8;
    InfeasibleCase c{{"spread", {}}, nodeSlices("spread", shape), {}, {}};
    c.claims.push_back(gpuNicClaim(8, false));
    return c;
}

// Two requests of `count` VFs each on one NUMA node where each NUMA node has 2 * count - 1
// free VFs (the others of its 256 are in use; the free ones are the last 8 of each PF in listing
// order, as many as needed).
InfeasibleCase vfsSplit(int count) {
    InfeasibleCase c{{"big", {}}, bigSlices(), {}, {}};
    std::map<std::int64_t, int> freeLeft{{0, 2 * count - 1}, {1, 2 * count - 1}};
    std::vector<std::string> busy;
    for (const auto& slice : c.slices)
        for (const auto& device : slice.devices) {
            if (!attribute(device, "sriovRole", "vf"))
                continue;
            const auto numa = std::get<std::int64_t>(device.attributes.at(kNumaNode));
            const auto index = std::get<std::int64_t>(device.attributes.at("vfIndex"));
            if (index >= 56 && freeLeft[numa] > 0)
                --freeLeft[numa];
            else
                busy.push_back(device.name);
        }
    c.committed.push_back(inUse("big", busy));
    c.claims.push_back(claim("vfs-2x" + std::to_string(count),
                             {request("vf-a", "vf", count), request("vf-b", "vf", count)},
                             std::string(kNumaNode)));
    return c;
}

// (4) Two requests of 16 VFs each on one NUMA node where each NUMA node has 31 free VFs (the
// other 225 of its 256 are in use).
InfeasibleCase vfs2x16of31() {
    return vfsSplit(16);
}

// ----- resource.k8s.io/v1 JSON -----

namespace {

constexpr const char* kResourceApi = "resource.k8s.io/v1";

Json objectOf(const char* apiVersion, const char* kind, Json metadata) {
    return {{"apiVersion", apiVersion}, {"kind", kind}, {"metadata", std::move(metadata)}};
}

Json encodePolicy(const na::RequestPolicy& policy) {
    Json out = Json::object();
    if (policy.defaultValue)
        out["default"] = policy.defaultValue->text();
    if (!policy.validValues.empty()) {
        Json values = Json::array();
        for (const na::Quantity& value : policy.validValues)
            values.push_back(value.text());
        out["validValues"] = std::move(values);
    }
    if (policy.validRange) {
        Json range = {{"min", policy.validRange->min.text()}};
        if (policy.validRange->max)
            range["max"] = policy.validRange->max->text();
        if (policy.validRange->step)
            range["step"] = policy.validRange->step->text();
        out["validRange"] = std::move(range);
    }
    return out;
}

Json encodeSelectors(const std::vector<std::string>& selectors) {
    Json out = Json::array();
    for (const std::string& expression : selectors)
        out.push_back({{"cel", {{"expression", expression}}}});
    return out;
}

// nodeName / nodeSelector / allNodes of a slice or (perDeviceNodeSelection) a device.
void encodeNodeSelection(Json& out, const std::optional<std::string>& nodeName,
                         const std::optional<na::NodeSelector>& nodeSelector, bool allNodes) {
    if (nodeName)
        out["nodeName"] = *nodeName;
    if (nodeSelector)
        out["nodeSelector"] = na::encodeNodeSelector(*nodeSelector);
    if (allNodes)
        out["allNodes"] = true;
}

Json encodeDevice(const na::Device& device) {
    Json out = {{"name", device.name}};
    if (!device.attributes.empty()) {
        Json attributes = Json::object();
        for (const auto& [name, value] : device.attributes)
            attributes[name] = api::toJson(value);
        out["attributes"] = std::move(attributes);
    }
    if (!device.capacity.empty()) {
        Json capacity = Json::object();
        for (const auto& [name, entry] : device.capacity) {
            Json item = {{"value", entry.value.text()}};
            if (entry.requestPolicy)
                item["requestPolicy"] = encodePolicy(*entry.requestPolicy);
            capacity[name] = std::move(item);
        }
        out["capacity"] = std::move(capacity);
    }
    if (!device.consumesCounters.empty()) {
        Json uses = Json::array();
        for (const na::CounterConsumption& use : device.consumesCounters) {
            Json counters = Json::object();
            for (const auto& [name, counter] : use.counters) {
                if (counter.value)
                    counters[name] = {{"value", counter.value->text()}};
                else
                    counters[name] = {{"valueFrom", {{"capacityKey", *counter.capacityKey}}}};
            }
            uses.push_back({{"counterSet", use.counterSet}, {"counters", std::move(counters)}});
        }
        out["consumesCounters"] = std::move(uses);
    }
    if (!device.taints.empty()) {
        Json taints = Json::array();
        for (const na::Taint& taint : device.taints) {
            Json item = {{"key", taint.key}};
            if (!taint.value.empty())
                item["value"] = taint.value;
            item["effect"] = taint.effect;
            taints.push_back(std::move(item));
        }
        out["taints"] = std::move(taints);
    }
    if (device.allowMultipleAllocations)
        out["allowMultipleAllocations"] = true;
    if (device.hasBindingConditions || !device.bindingConditions.empty())
        out["bindingConditions"] = device.bindingConditions;
    if (!device.bindingFailureConditions.empty())
        out["bindingFailureConditions"] = device.bindingFailureConditions;
    if (device.bindsToNode)
        out["bindsToNode"] = true;
    encodeNodeSelection(out, device.nodeName, device.nodeSelector, device.allNodes);
    return out;
}

Json encodeRequestSpec(const na::DeviceRequestSpec& spec, bool exactly) {
    Json out = {{"deviceClassName", spec.deviceClassName}};
    if (!spec.selectors.empty())
        out["selectors"] = encodeSelectors(spec.selectors);
    out["allocationMode"] = spec.allocationMode;
    if (spec.allocationMode == "ExactCount")
        out["count"] = spec.count;
    if (exactly && spec.adminAccess)
        out["adminAccess"] = *spec.adminAccess;
    if (!spec.tolerations.empty()) {
        Json tolerations = Json::array();
        for (const na::Toleration& toleration : spec.tolerations) {
            Json item = Json::object();
            if (!toleration.key.empty())
                item["key"] = toleration.key;
            if (!toleration.op.empty())
                item["operator"] = toleration.op;
            if (!toleration.value.empty())
                item["value"] = toleration.value;
            if (!toleration.effect.empty())
                item["effect"] = toleration.effect;
            if (toleration.tolerationSeconds)
                item["tolerationSeconds"] = *toleration.tolerationSeconds;
            tolerations.push_back(std::move(item));
        }
        out["tolerations"] = std::move(tolerations);
    }
    if (!spec.capacityRequests.empty()) {
        Json requests = Json::object();
        for (const auto& [name, amount] : spec.capacityRequests)
            requests[name] = amount.text();
        out["capacity"] = {{"requests", std::move(requests)}};
    }
    if (!spec.derivedAttributes.empty()) {
        Json derived = Json::array();
        for (const na::DerivedAttribute& attribute : spec.derivedAttributes)
            derived.push_back({{"name", attribute.name}, {"expression", attribute.expression}});
        out["derivedAttributes"] = std::move(derived);
    }
    return out;
}

Json encodeOpaque(const na::DeviceConfig& config) {
    return {{"driver", config.driver}, {"parameters", config.parameters}};
}

// The class of a device held by an earlier claim, from the attributes deviceClasses() selects on.
std::string classOf(const na::Device& device) {
    if (attribute(device, "type", "gpu"))
        return "gpu";
    if (attribute(device, "type", "cpu"))
        return "cpu";
    if (attribute(device, "sriovRole", "vf"))
        return "vf";
    if (attribute(device, "sriovRole", "pf"))
        return "nic";
    throw std::runtime_error("no DeviceClass selects device " + device.name);
}

}  // namespace

Json encodeSlice(const na::Slice& slice) {
    Json spec = {{"driver", slice.driver},
                 {"pool",
                  {{"name", slice.pool.name},
                   {"generation", slice.pool.generation},
                   {"resourceSliceCount", slice.pool.resourceSliceCount}}}};
    encodeNodeSelection(spec, slice.nodeName, slice.nodeSelector, slice.allNodes);
    if (slice.perDeviceNodeSelection)
        spec["perDeviceNodeSelection"] = true;
    if (!slice.devices.empty()) {
        Json devices = Json::array();
        for (const na::Device& device : slice.devices)
            devices.push_back(encodeDevice(device));
        spec["devices"] = std::move(devices);
    }
    if (!slice.sharedCounters.empty()) {
        Json sets = Json::array();
        for (const na::CounterSet& set : slice.sharedCounters) {
            Json counters = Json::object();
            for (const auto& [name, counter] : set.counters) {
                Json item = {{"value", counter.value.text()}};
                if (counter.requestPolicy)
                    item["requestPolicy"] = encodePolicy(*counter.requestPolicy);
                counters[name] = std::move(item);
            }
            sets.push_back({{"name", set.name}, {"counters", std::move(counters)}});
        }
        spec["sharedCounters"] = std::move(sets);
    }
    Json out = objectOf(kResourceApi, "ResourceSlice", {{"name", slice.name}});
    out["spec"] = std::move(spec);
    return out;
}

Json encodeClass(const na::DeviceClass& deviceClass) {
    Json metadata = {{"name", deviceClass.name}};
    if (!deviceClass.creationTimestamp.empty())
        metadata["creationTimestamp"] = deviceClass.creationTimestamp;
    Json spec = Json::object();
    if (!deviceClass.selectors.empty())
        spec["selectors"] = encodeSelectors(deviceClass.selectors);
    if (!deviceClass.config.empty()) {
        Json config = Json::array();
        for (const na::DeviceConfig& entry : deviceClass.config)
            config.push_back({{"opaque", encodeOpaque(entry)}});
        spec["config"] = std::move(config);
    }
    if (!deviceClass.extendedResourceName.empty())
        spec["extendedResourceName"] = deviceClass.extendedResourceName;
    Json out = objectOf(kResourceApi, "DeviceClass", std::move(metadata));
    out["spec"] = std::move(spec);
    return out;
}

Json encodeClaim(const na::Claim& claim) {
    Json metadata = {{"name", claim.name}};
    if (!claim.namespace_.empty())
        metadata["namespace"] = claim.namespace_;
    if (!claim.uid.empty())
        metadata["uid"] = claim.uid;
    Json requests = Json::array();
    for (const na::Request& request : claim.requests) {
        Json item = {{"name", request.name}};
        if (request.exactly) {
            item["exactly"] = encodeRequestSpec(*request.exactly, true);
        } else {
            Json subs = Json::array();
            for (const na::SubRequest& sub : request.firstAvailable) {
                Json entry = {{"name", sub.name}};
                entry.update(encodeRequestSpec(sub.spec, false));
                subs.push_back(std::move(entry));
            }
            item["firstAvailable"] = std::move(subs);
        }
        requests.push_back(std::move(item));
    }
    Json devices = {{"requests", std::move(requests)}};
    if (!claim.constraints.empty()) {
        Json constraints = Json::array();
        for (const na::Constraint& constraint : claim.constraints) {
            Json item = Json::object();
            if (!constraint.requests.empty())
                item["requests"] = constraint.requests;
            if (constraint.matchAttribute)
                item["matchAttribute"] = *constraint.matchAttribute;
            if (constraint.distinctAttribute)
                item["distinctAttribute"] = *constraint.distinctAttribute;
            constraints.push_back(std::move(item));
        }
        devices["constraints"] = std::move(constraints);
    }
    if (!claim.config.empty()) {
        Json config = Json::array();
        for (const na::ClaimConfig& entry : claim.config) {
            Json item = Json::object();
            if (!entry.requests.empty())
                item["requests"] = entry.requests;
            item["opaque"] = encodeOpaque(entry.opaque);
            config.push_back(std::move(item));
        }
        devices["config"] = std::move(config);
    }
    Json out = objectOf(kResourceApi, "ResourceClaim", std::move(metadata));
    out["spec"] = {{"devices", std::move(devices)}};
    if (claim.allocation)
        out["status"] = {{"allocation", na::encodeAllocation(*claim.allocation)}};
    return out;
}

Json encodeNode(const na::Node& node) {
    Json metadata = {{"name", node.name}};
    if (!node.labels.empty()) {
        Json labels = Json::object();
        for (const auto& [key, value] : node.labels)
            labels[key] = value;
        metadata["labels"] = std::move(labels);
    }
    return objectOf("v1", "Node", std::move(metadata));
}

std::vector<na::Claim> claimsHolding(const std::vector<na::Allocation>& allocations,
                                     const std::vector<na::Slice>& slices,
                                     const std::string& node) {
    std::map<std::pair<std::string, std::string>, const na::Device*> devices;  // (pool, name)
    for (const na::Slice& slice : slices)
        for (const na::Device& device : slice.devices)
            devices[{slice.pool.name, device.name}] = &device;
    // Grouped by class in first-seen order, so each claim's one request can name its class.
    std::vector<std::pair<std::string, std::vector<na::DeviceResult>>> byClass;
    for (const na::Allocation& allocation : allocations)
        for (const na::DeviceResult& result : allocation.results) {
            auto found = devices.find({result.pool, result.device});
            if (found == devices.end())
                throw std::runtime_error("an allocation holds device " + result.pool + "/" +
                                         result.device + ", which no slice lists");
            const std::string deviceClass = classOf(*found->second);
            auto group = std::find_if(byClass.begin(), byClass.end(), [&](const auto& entry) {
                return entry.first == deviceClass;
            });
            if (group == byClass.end())
                group = byClass.insert(byClass.end(), {deviceClass, {}});
            group->second.push_back(result);
        }
    na::NodeSelector selector;
    selector.terms.push_back({{}, {{"metadata.name", "In", {node}}}});
    std::vector<na::Claim> claims;
    for (const auto& [deviceClass, results] : byClass)
        for (size_t first = 0; first < results.size(); first += na::kMaxResults) {
            const size_t count = std::min(results.size() - first, na::kMaxResults);
            char name[32];
            std::snprintf(name, sizeof name, "busy-%03zu", claims.size());
            na::Claim held =
                claim(name, {request("busy", deviceClass, static_cast<std::int64_t>(count))});
            na::Allocation allocation;
            allocation.results.assign(results.begin() + static_cast<std::ptrdiff_t>(first),
                                      results.begin() + static_cast<std::ptrdiff_t>(first + count));
            allocation.nodeSelector = selector;
            held.allocation = std::move(allocation);
            claims.push_back(std::move(held));
        }
    return claims;
}

}  // namespace numadra::bench
