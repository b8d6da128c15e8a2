#pragma once
// The node's current devices: the latest scan and the slices built from it, swapped atomically
// so Prepare calls read a consistent snapshot without waiting for a rescan.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/discovery/machine.hpp"

namespace numadra::daemon {

struct InventorySnapshot {
    discovery::Machine machine;
    std::vector<api::ResourceSlice> slices;
    std::map<std::string, api::Device> devices;  // the published devices, by name
};

class Inventory {
  public:
    std::shared_ptr<const InventorySnapshot> current() const;
    // Returns true when the published content changed.
    bool update(discovery::Machine machine, std::vector<api::ResourceSlice> slices);

  private:
    mutable std::mutex mutex_;
    std::shared_ptr<const InventorySnapshot> current_ = std::make_shared<InventorySnapshot>();
};

}  // namespace numadra::daemon
