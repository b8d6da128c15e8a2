#pragma once
// Internal: one publisher per device kind turns a discovered PCI function into an API device;
// a new kind (e.g. NVMe) is one more entry in pciPublishers().

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "numadra/slices/builder.hpp"

namespace numadra::slices::detail {

class PublishContext {
  public:
    PublishContext(const discovery::Machine& machine, const SliceOptions& options);
    const discovery::Machine& machine;
    const SliceOptions& options;
    // numaNode value of a node in the configured form, computed once per node.
    const topology::NumaNodeValue& numaValue(int node) const;

  private:
    mutable std::map<int, topology::NumaNodeValue> numaValues_;  // a memo, not state
};

using PciPublisher =
    std::function<std::optional<api::Device>(const discovery::PciFunction&, const PublishContext&)>;

const std::map<discovery::DeviceKind, PciPublisher>& pciPublishers();

std::vector<api::Device> cpuDevices(const PublishContext& context);
// VfLayout::Pooled: the VF pools of every PF with VFs enabled.
std::vector<api::Device> vfPoolDevices(const PublishContext& context);
std::vector<api::CounterSet> counterSets(const PublishContext& context);

// Shared helpers.
std::string pciDeviceName(const std::string& kind, const std::string& address);
std::string counterSetNameForPf(const std::string& pfAddress);
std::string counterSetNameForNode(int node);
std::string truncateValue(const std::string& value);
std::string capacityKey(const SliceOptions& options, const std::string& name);

}  // namespace numadra::slices::detail
