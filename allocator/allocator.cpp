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

Allocator Allocator::create(std::vector<Slice> slices, std::vector<DeviceClass> classes,
                            Options options) {
    auto impl = std::make_unique<Impl>();
    impl->slices = std::move(slices);
    impl->options = options;
    for (DeviceClass& deviceClass : classes) {
        std::string name = deviceClass.name;
        impl->classes.emplace(std::move(name), std::move(deviceClass));
    }
    for (const Slice& slice : impl->slices) {
        impl->sliceDeviceStart.push_back(static_cast<int>(impl->devices.size()));
        for (const Device& device : slice.devices) {
            DeviceInfo info;
            info.slice = &slice;
            info.device = &device;
            info.id = impl->internDevice(slice.driver, slice.pool.name, device.name);
            if (impl->deviceById[static_cast<size_t>(info.id)] < 0)
                impl->deviceById[static_cast<size_t>(info.id)] =
                    static_cast<int>(impl->devices.size());
            impl->devices.push_back(std::move(info));
        }
    }
    return Allocator(std::move(impl));
}

int Allocator::Impl::internDevice(const std::string& driver, const std::string& pool,
                                  const std::string& device) {
    std::string key = driver;
    key += '\0';
    key += pool;
    key += '\0';
    key += device;
    auto [it, added] = deviceIds.try_emplace(std::move(key), static_cast<int>(deviceById.size()));
    if (added) {
        deviceById.push_back(-1);
        committed.exclusive.push_back(false);
    }
    return it->second;
}

const Result<cel::Value>& Allocator::Impl::celValue(int device) const {
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    if (!info.celValue) {
        std::map<std::string, Quantity> capacity;
        for (const auto& [name, entry] : info.device->capacity)
            capacity.emplace(name, entry.value);
        dracel::DeviceView view{info.slice->driver, &info.device->attributes, &capacity,
                                info.device->allowMultipleAllocations};
        info.celValue = dracel::deviceValue(view);
    }
    return *info.celValue;
}

const Result<cel::Value>& Allocator::Impl::derivedCelValue(int device) const {
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    if (!info.derivedCelValue) {
        const Result<cel::Value>& selectorValue = celValue(device);
        info.derivedCelValue =
            selectorValue
                ? Result<cel::Value>(dracel::derivedDeviceValue(*selectorValue, info.device->name))
                : selectorValue;
    }
    return *info.derivedCelValue;
}

const ValueSet& Allocator::Impl::attributeValues(int device, const std::string& attribute) {
    auto& byDevice = attributeSets[attribute];
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
    entry.verdicts.assign(devices.size(), Verdict::Unknown);
    return &expressions.emplace(std::move(key), std::move(entry)).first->second;
}

void Allocator::commit(const Allocation& allocation) {
    Impl& impl = *impl_;
    for (const DeviceResult& result : allocation.results) {
        if (result.adminAccess)
            continue;  // admin access does not take the device from others
        const int id = impl.internDevice(result.driver, result.pool, result.device);
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
