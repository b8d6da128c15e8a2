#include "numadra/slices/builder.hpp"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <string_view>
#include <tuple>

#include "devices.hpp"

namespace numadra::slices {

namespace {

bool isLowerAlnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool isCIdentifier(std::string_view s) {
    if (s.empty() || s.size() > 32)
        return false;
    for (size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!(alpha || (i > 0 && c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

// Views, not copies: validateDevice checks ~10,000 names on a large machine.
bool dnsLabel(std::string_view name) {
    if (name.empty() || name.size() > 63)
        return false;
    for (char c : name) {
        if (!isLowerAlnum(c) && c != '-')
            return false;
    }
    return isLowerAlnum(name.front()) && isLowerAlnum(name.back());
}

bool dnsSubdomain(std::string_view name, size_t maxLength) {
    if (name.empty() || name.size() > maxLength)
        return false;
    size_t start = 0;
    while (start <= name.size()) {
        size_t dot = name.find('.', start);
        if (dot == std::string_view::npos)
            dot = name.size();
        if (!dnsLabel(name.substr(start, dot - start)))
            return false;
        start = dot + 1;
    }
    return true;
}

// Qualified attribute/capacity name: optional "<dns subdomain ≤ 63>/" + C identifier ≤ 32.
bool isQualifiedName(std::string_view name) {
    auto slash = name.find('/');
    if (slash == std::string_view::npos)
        return isCIdentifier(name);
    return dnsSubdomain(name.substr(0, slash), 63) && isCIdentifier(name.substr(slash + 1));
}

// Preference order for first-fit: GPUs, accelerators, NICs (VFs before whole NICs before
// PFs, so a generic NIC request does not take a PF and with it all its VFs), CPUs; then by
// NUMA node (unknown last), then by name (PCI address).
struct PreferenceKey {
    int kindRank;
    int roleRank;
    int numaNode;
    std::string name;
    auto operator<=>(const PreferenceKey&) const =
        default;  // NOLINT(modernize-use-nullptr): clang-tidy 14 misreads <=>
};

PreferenceKey preferenceOf(const api::Device& device) {
    auto stringAttr = [&](const char* key) -> std::string {
        auto it = device.attributes.find(key);
        if (it == device.attributes.end())
            return {};
        const auto* s = std::get_if<std::string>(&it->second);
        return s ? *s : std::string();
    };
    const std::string type = stringAttr("type");
    const int kindRank = type == "gpu"           ? 0
                         : type == "accelerator" ? 1
                         : type == "nic"         ? 2
                         : type == "cpu"         ? 4
                                                 : 3;
    const std::string role = stringAttr("sriovRole");
    const int roleRank = role == "vf" ? 0 : role == "pf" ? 2 : 1;
    int numa = INT_MAX;
    if (auto it = device.attributes.find(topology::kNumaNodeAttribute);
        it != device.attributes.end()) {
        if (const auto* scalar = std::get_if<std::int64_t>(&it->second))
            numa = static_cast<int>(*scalar);
        if (const auto* list = std::get_if<std::vector<std::int64_t>>(&it->second))
            numa = static_cast<int>(list->front());
    }
    return {kindRank, roleRank, numa, device.name};
}

api::ResourceSlice emptySlice(const SliceOptions& options) {
    api::ResourceSlice slice;
    slice.driver = options.driverName;
    slice.nodeName = options.nodeName;
    slice.pool.name = options.nodeName;
    slice.pool.generation = options.generation;
    return slice;
}

}  // namespace

bool isDnsLabel(const std::string& name) {
    return dnsLabel(name);
}

bool isDnsSubdomain(const std::string& name, size_t maxLength) {
    return dnsSubdomain(name, maxLength);
}

Status validateOptions(const SliceOptions& options) {
    if (!isDnsSubdomain(options.driverName, 63)) {
        return Error{"--driver-name '" + options.driverName +
                     "' is not a DNS subdomain of at most 63 characters (lowercase letters, "
                     "digits, '-', '.')"};
    }
    if (!isDnsSubdomain(options.nodeName, 253)) {
        return Error{"--node-name '" + options.nodeName +
                     "' is not a valid Kubernetes node name (DNS subdomain)"};
    }
    if (options.generation < 1)
        return Error{"pool generation must be at least 1"};
    return Status::Ok();
}

Result<VfLayout> parseVfLayout(const std::string& text) {
    if (text == "pooled")
        return VfLayout::Pooled;
    if (text == "individual")
        return VfLayout::Individual;
    return Error{"'" + text + "' is not pooled or individual"};
}

Status validateDevice(const api::Device& device) {
    const std::string where = "device '" + device.name + "': ";
    if (!isDnsLabel(device.name))
        return Error{where + "name is not a DNS label"};
    if (device.attributes.size() + device.capacity.size() >
        SliceLimits::kAttributesAndCapacitiesPerDevice) {
        return Error{where + "more than 32 attributes and capacities"};
    }
    size_t values = 0;
    for (const auto& [name, value] : device.attributes) {
        if (!isQualifiedName(name))
            return Error{where + "attribute name '" + name + "' is not a qualified name"};
        values += api::attributeValueCount(value);
        if (const auto* s = std::get_if<std::string>(&value);
            s && s->size() > SliceLimits::kStringValueLength) {
            return Error{where + "attribute '" + name + "' is longer than 64 bytes"};
        }
        if (const auto* list = std::get_if<std::vector<std::string>>(&value)) {
            for (const auto& s : *list) {
                if (s.size() > SliceLimits::kStringValueLength)
                    return Error{where + "attribute '" + name +
                                 "' has an element longer than 64 bytes"};
            }
        }
        if (api::isListAttribute(value) && api::attributeValueCount(value) == 0) {
            return Error{where + "list attribute '" + name + "' is empty"};
        }
    }
    if (values > SliceLimits::kAttributeValuesPerDevice)
        return Error{where + "more than 48 attribute values"};
    for (const auto& [name, capacity] : device.capacity) {
        if (!isQualifiedName(name))
            return Error{where + "capacity name '" + name + "' is not a qualified name"};
    }
    if (device.consumesCounters.size() > SliceLimits::kConsumptionsPerDevice) {
        return Error{where + "consumes from more than 2 counter sets"};
    }
    if (device.taints.size() > SliceLimits::kTaintsPerDevice)
        return Error{where + "more than 16 taints"};
    return Status::Ok();
}

std::string deviceName(const discovery::PciFunction& function) {
    return detail::pciDeviceName(function.kind, function.address);
}

std::string sliceName(const std::string& nodeName, const std::string& driverName, size_t index) {
    char suffix[16];
    std::snprintf(suffix, sizeof suffix, "-%05zx", index);
    std::string name = nodeName + "-" + driverName + suffix;
    if (name.size() <= 253)
        return name;
    // Very long node names: a single DNS label made of the node's first label, a hash of both
    // names (unique and stable across builds, FNV-1a) and the index.
    std::uint64_t fnv = 0xcbf29ce484222325ULL;
    for (unsigned char c : nodeName + "/" + driverName)
        fnv = (fnv ^ c) * 0x100000001b3ULL;
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(fnv));
    const std::string firstLabel = nodeName.substr(0, std::min<size_t>(nodeName.find('.'), 40));
    return firstLabel + "-" + hash + suffix;
}

PoolContent buildPoolContent(const discovery::Machine& machine, const SliceOptions& options) {
    detail::PublishContext context{machine, options};
    PoolContent content;
    const auto& publishers = detail::pciPublishers();
    for (const auto& function : machine.pci) {
        auto publisher = publishers.find(function.kind);
        if (publisher == publishers.end())
            continue;
        if (auto device = publisher->second(function, context))
            content.devices.push_back(std::move(*device));
    }
    for (auto& device : detail::vfPoolDevices(context))
        content.devices.push_back(std::move(device));
    for (auto& device : detail::cpuDevices(context))
        content.devices.push_back(std::move(device));
    // Keys once per device, then one permutation (device names are unique, so the order is total).
    std::vector<std::pair<PreferenceKey, size_t>> order;
    order.reserve(content.devices.size());
    for (size_t i = 0; i < content.devices.size(); ++i)
        order.emplace_back(preferenceOf(content.devices[i]), i);
    std::sort(order.begin(), order.end());
    std::vector<api::Device> sorted;
    sorted.reserve(order.size());
    for (const auto& [key, index] : order)
        sorted.push_back(std::move(content.devices[index]));
    content.devices = std::move(sorted);
    content.counterSets = detail::counterSets(context);
    return content;
}

Result<std::vector<api::ResourceSlice>> splitIntoSlices(PoolContent content,
                                                        const SliceOptions& options) {
    if (auto status = validateOptions(options); !status)
        return status.error();
    std::vector<api::ResourceSlice> slices;
    for (size_t i = 0; i < content.counterSets.size(); i += SliceLimits::kCounterSetsPerSlice) {
        api::ResourceSlice slice = emptySlice(options);
        const size_t end =
            std::min(content.counterSets.size(), i + SliceLimits::kCounterSetsPerSlice);
        for (size_t k = i; k < end; ++k) {
            if (content.counterSets[k].counters.size() > SliceLimits::kCountersPerSet) {
                return Error{"counter set '" + content.counterSets[k].name +
                             "' has more than 32 counters"};
            }
            slice.sharedCounters.push_back(std::move(content.counterSets[k]));
        }
        slices.push_back(std::move(slice));
    }
    api::ResourceSlice current = emptySlice(options);
    bool currentAdvanced = false;
    bool anyDeviceSlice = false;
    for (auto& device : content.devices) {
        if (auto status = validateDevice(device); !status)
            return status.error();
        const bool advanced =
            options.devicesMayBeTainted || currentAdvanced || device.usesAdvancedFeatures();
        const size_t limit =
            advanced ? SliceLimits::kDevicesPerSliceAdvanced : SliceLimits::kDevicesPerSlice;
        if (current.devices.size() + 1 > limit) {
            slices.push_back(std::move(current));
            anyDeviceSlice = true;
            current = emptySlice(options);
            currentAdvanced = device.usesAdvancedFeatures();
        } else {
            currentAdvanced = advanced;
        }
        current.devices.push_back(std::move(device));
    }
    if (!current.devices.empty() || !anyDeviceSlice)
        slices.push_back(std::move(current));

    for (size_t i = 0; i < slices.size(); ++i) {
        slices[i].name = sliceName(options.nodeName, options.driverName, i);
        slices[i].pool.resourceSliceCount = static_cast<std::int64_t>(slices.size());
    }
    return slices;
}

Result<std::vector<api::ResourceSlice>> buildResourceSlices(
    const discovery::Machine& machine, const SliceOptions& options,
    const std::map<std::string, api::DeviceTaint>& taints) {
    if (auto status = validateOptions(options); !status)
        return status.error();
    auto content = buildPoolContent(machine, options);
    if (!taints.empty()) {
        for (auto& device : content.devices) {
            if (auto it = taints.find(device.name); it != taints.end())
                device.taints.push_back(it->second);
        }
    }
    return splitIntoSlices(std::move(content), options);
}

}  // namespace numadra::slices
