#pragma once
// Which PCI functions the driver publishes, and as what. A rule table rather than a switch so a
// new class (NVMe, FPGA, ...) is one more rule here and one more publisher in slices/.

#include <functional>
#include <string>
#include <vector>

#include "numadra/discovery/machine.hpp"

namespace numadra::discovery {

struct DeviceKindRule {
    DeviceKind kind;
    std::string description;
    std::function<bool(const PciFunction&)> matches;
};

class DeviceKindRules {
  public:
    // GPUs (display/3D controllers except BMC VGA, GPU-vendor processing accelerators),
    // other processing accelerators, NICs (Ethernet/InfiniBand class, or any function
    // with a netdev or RDMA device).
    static const DeviceKindRules& defaults();

    void add(DeviceKindRule rule) { rules_.push_back(std::move(rule)); }
    // First matching rule's kind, or empty.
    DeviceKind classify(const PciFunction& function) const;
    const std::vector<DeviceKindRule>& rules() const { return rules_; }

  private:
    std::vector<DeviceKindRule> rules_;
};

}  // namespace numadra::discovery
