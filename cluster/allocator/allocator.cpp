// The Allocator object: the cluster's devices indexed once, the caches that outlive one
// allocate() call (device CEL values, selector verdicts, candidates per node and request), and
// the committed allocations.

#include <algorithm>
#include <set>

#include "internal.hpp"

namespace numadra::allocator {

using namespace detail;

Allocator::Allocator(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Allocator::~Allocator() = default;
Allocator::Allocator(Allocator&&) noexcept = default;
Allocator& Allocator::operator=(Allocator&&) noexcept = default;

namespace {

std::size_t deviceCount(const std::vector<Slice>& slices) {
    std::size_t count = 0;
    for (const Slice& slice : slices)
        count += slice.devices.size();
    return count;
}

}  // namespace

std::size_t DeviceIdTable::poolHash(std::string_view driver, std::string_view pool) {
    return hash(std::hash<std::string_view>()(driver), pool);
}

std::size_t DeviceIdTable::hash(std::size_t poolHash, std::string_view device) {
    // boost::hash_combine's mixing
    return poolHash ^ (std::hash<std::string_view>()(device) + 0x9e3779b97f4a7c15ULL +
                       (poolHash << 6) + (poolHash >> 2));
}

void DeviceIdTable::reserve(std::size_t keys) {
    keys_.reserve(keys);
    hashes_.reserve(keys);
    std::size_t slotCount = 16;
    while (slotCount < 2 * keys)
        slotCount *= 2;
    if (slotCount > slots_.size())
        rehash(slotCount);
}

int DeviceIdTable::find(const DeviceKey& key, std::size_t hash) const {
    if (slots_.empty())
        return -1;
    const std::size_t mask = slots_.size() - 1;
    const std::uint32_t tag = tagOf(hash);
    for (std::size_t at = hash & mask; slots_[at].idPlusOne != 0; at = (at + 1) & mask) {
        const Slot& slot = slots_[at];
        if (slot.tag != tag)
            continue;
        const auto id = static_cast<std::size_t>(slot.idPlusOne - 1);
        if (hashes_[id] == hash && keys_[id] == key)
            return static_cast<int>(id);
    }
    return -1;
}

int DeviceIdTable::add(const DeviceKey& key, std::size_t hash) {
    if (2 * (keys_.size() + 1) > slots_.size())
        rehash(std::max<std::size_t>(16, 2 * slots_.size()));
    const auto id = static_cast<int>(keys_.size());
    keys_.push_back(key);
    hashes_.push_back(hash);
    place(id, hash);
    return id;
}

void DeviceIdTable::place(int id, std::size_t hash) {
    const std::size_t mask = slots_.size() - 1;
    std::size_t at = hash & mask;
    while (slots_[at].idPlusOne != 0)
        at = (at + 1) & mask;
    slots_[at] = {tagOf(hash), id + 1};
}

void DeviceIdTable::rehash(std::size_t slotCount) {
    slots_.assign(slotCount, Slot{});
    for (std::size_t id = 0; id < hashes_.size(); ++id)
        place(static_cast<int>(id), hashes_[id]);
}

Allocator Allocator::create(std::vector<Slice> slices, std::vector<DeviceClass> classes,
                            Options options) {
    auto impl = std::make_unique<Impl>();
    impl->slices = std::move(slices);
    impl->options = options;
    for (DeviceClass& deviceClass : classes) {
        std::string name = deviceClass.name;
        impl->classes.emplace(std::move(name), std::move(deviceClass));
    }
    const std::size_t count = deviceCount(impl->slices);
    impl->devices.reserve(count);
    impl->deviceIds.reserve(count);
    impl->deviceById.reserve(count);
    impl->committed.exclusive.reserve(count);
    for (size_t s = 0; s < impl->slices.size(); ++s) {
        const Slice& slice = impl->slices[s];
        if (slice.nodeName && !slice.perDeviceNodeSelection)
            impl->slicesByNodeName[*slice.nodeName].push_back(static_cast<int>(s));
        else
            impl->slicesOfOtherNodeSelection.push_back(static_cast<int>(s));
        impl->sliceDeviceStart.push_back(static_cast<int>(impl->devices.size()));
        const std::size_t poolHash = DeviceIdTable::poolHash(slice.driver, slice.pool.name);
        for (const Device& device : slice.devices) {
            DeviceInfo info;
            info.slice = &slice;
            info.device = &device;
            info.id = impl->internSliceDevice({slice.driver, slice.pool.name, device.name},
                                              DeviceIdTable::hash(poolHash, device.name));
            if (impl->deviceById[static_cast<size_t>(info.id)] < 0)
                impl->deviceById[static_cast<size_t>(info.id)] =
                    static_cast<int>(impl->devices.size());
            impl->devices.push_back(info);
        }
    }
    return Allocator(std::move(impl));
}

int Allocator::Impl::internSliceDevice(const DeviceKey& key, std::size_t hash) {
    if (const int known = deviceIds.find(key, hash); known >= 0)
        return known;
    deviceById.push_back(-1);
    committed.exclusive.push_back(false);
    return deviceIds.add(key, hash);
}

int Allocator::Impl::internForeignDevice(const DeviceKey& key) {
    const std::size_t hash =
        DeviceIdTable::hash(DeviceIdTable::poolHash(key.driver, key.pool), key.device);
    if (const int known = deviceIds.find(key, hash); known >= 0)
        return known;
    // The table views its keys: these copies live as long as the Allocator (a deque never
    // moves its elements).
    const std::string& driver = foreignNames.emplace_back(key.driver);
    const std::string& pool = foreignNames.emplace_back(key.pool);
    const std::string& device = foreignNames.emplace_back(key.device);
    return internSliceDevice({driver, pool, device}, hash);
}

const Result<cel::Value>& Allocator::Impl::celValue(int device) const {
    auto cached = celValues.find(device);
    if (cached != celValues.end())
        return cached->second;
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    std::map<std::string, Quantity> capacity;
    for (const auto& [name, entry] : info.device->capacity)
        capacity.emplace(name, entry.value);
    dracel::DeviceView view{info.slice->driver, &info.device->attributes, &capacity,
                            info.device->allowMultipleAllocations};
    return celValues.emplace(device, dracel::deviceValue(view)).first->second;
}

const Result<cel::Value>& Allocator::Impl::derivedCelValue(int device) const {
    auto cached = derivedCelValues.find(device);
    if (cached != derivedCelValues.end())
        return cached->second;
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    const Result<cel::Value>& selectorValue = celValue(device);
    Result<cel::Value> derived =
        selectorValue
            ? Result<cel::Value>(dracel::derivedDeviceValue(*selectorValue, info.device->name))
            : selectorValue;
    return derivedCelValues.emplace(device, std::move(derived)).first->second;
}

namespace {

// Reads only the values' types, not the names: on a cold cache every byte touched here costs.
bool anyVersionAttribute(const Device& device) {
    return std::any_of(device.attributes.begin(), device.attributes.end(), [](const auto& entry) {
        return std::holds_alternative<api::Version>(entry.second) ||
               std::holds_alternative<std::vector<api::Version>>(entry.second);
    });
}

// Some attribute is named "<driver>/id" (names are sorted: such names follow "<driver>/").
bool anyQualifiedName(const Device& device, const std::string& driver) {
    const std::string prefix = driver + "/";
    auto first = device.attributes.lower_bound(prefix);
    return first != device.attributes.end() && first->first.starts_with(prefix);
}

}  // namespace

std::optional<bool> Allocator::Impl::decideSimply(const ExpressionCache& selector,
                                                  int device) const {
    if (!selector.simple)
        return std::nullopt;
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    if (info.valueCheck == ValueCheck::Unknown) {
        // Only versions can make deviceValue fail; a device with none needs no CEL value.
        const bool builds =
            options.versionsValid || !anyVersionAttribute(*info.device) || celValue(device).ok();
        info.valueCheck = builds ? ValueCheck::Builds : ValueCheck::Fails;
        info.qualifiedDriverNames = anyQualifiedName(*info.device, info.slice->driver);
    }
    if (info.valueCheck == ValueCheck::Fails)
        return std::nullopt;  // every evaluation fails: the program words the error
    return selector.simple->decide(info.slice->driver, *info.device, info.qualifiedDriverNames);
}

const ValueSet& Allocator::Impl::attributeValues(int device, const std::string& attribute,
                                                 ValueSetsByDevice& byDevice) {
    auto cached = byDevice.find(device);
    if (cached != byDevice.end())
        return cached->second;
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    const AttributeValue* value = findAttribute(*info.device, info.slice->driver, attribute);
    return byDevice.emplace(device, value ? toValueSet(*value) : ValueSet{}).first->second;
}

Result<ExpressionCache*> Allocator::Impl::expression(const std::string& text, bool derived) {
    std::string key = (derived ? "derived:" : "selector:") + text;
    auto cached = expressions.find(key);
    if (cached != expressions.end())
        return &cached->second;
    auto compiled = derived ? dracel::Expression::compileDerived(text)
                            : dracel::Expression::compileSelector(text);
    if (!compiled)
        return compiled.error();  // not cached: a failed compilation is retried next time
    ExpressionCache entry;
    entry.program = std::move(*compiled);
    if (!derived)
        entry.simple = SimpleSelector::parse(text);
    entry.verdicts.assign(devices.size(), Verdict::Unknown);
    return &expressions.emplace(std::move(key), std::move(entry)).first->second;
}

void Allocator::commit(const Allocation& allocation) {
    Impl& impl = *impl_;
    for (const DeviceResult& result : allocation.results) {
        if (result.adminAccess)
            continue;  // admin access does not take the device from others
        const int id = impl.internForeignDevice({result.driver, result.pool, result.device});
        const int index = impl.deviceById[static_cast<size_t>(id)];
        const Device* device =
            index < 0 ? nullptr : impl.devices[static_cast<size_t>(index)].device;
        bool payStatic = true;
        if (result.shareID) {
            auto [shared, first] = impl.committed.sharedCapacity.try_emplace(id);
            payStatic = first;  // a shared device pays its static counters once
            for (const auto& [name, amount] : result.consumedCapacity)
                shared->second[name] = shared->second[name].add(amount).value_or(amount);
        } else {
            impl.committed.exclusive[static_cast<size_t>(id)] = true;
        }
        if (!device)
            continue;
        CounterAmounts& counters = impl.committed.counters[{result.driver, result.pool}];
        for (const CounterConsumption& use : device->consumesCounters) {
            for (const auto& [counter, amount] : use.counters) {
                std::optional<Quantity> taken;
                if (amount.capacityKey) {
                    auto consumed = result.consumedCapacity.find(*amount.capacityKey);
                    if (consumed != result.consumedCapacity.end())
                        taken = consumed->second;
                } else if (amount.value && payStatic) {
                    taken = amount.value;
                }
                if (!taken)
                    continue;
                Quantity& slot = counters[use.counterSet][counter];
                slot = slot.add(*taken).value_or(slot);
            }
        }
    }
}

std::vector<std::string> Allocator::nodeNames() const {
    std::set<std::string> names;
    for (const Slice& slice : impl_->slices) {
        if (slice.nodeName)
            names.insert(*slice.nodeName);
        for (const Device& device : slice.devices)
            if (device.nodeName)
                names.insert(*device.nodeName);
    }
    return {names.begin(), names.end()};
}

}  // namespace numadra::allocator
