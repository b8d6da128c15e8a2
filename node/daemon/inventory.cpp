#include "numadra/daemon/inventory.hpp"

namespace numadra::daemon {

std::shared_ptr<const InventorySnapshot> Inventory::current() const {
    std::lock_guard lock(mutex_);
    return current_;
}

bool Inventory::update(discovery::Machine machine, std::vector<api::ResourceSlice> slices) {
    auto next = std::make_shared<InventorySnapshot>();
    for (const auto& slice : slices) {
        for (const auto& device : slice.devices)
            next->devices.emplace(device.name, device);
    }
    next->machine = std::move(machine);
    next->slices = std::move(slices);
    std::lock_guard lock(mutex_);
    const bool changed = next->slices != current_->slices;
    current_ = std::move(next);
    return changed;
}

}  // namespace numadra::daemon
