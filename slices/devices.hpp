#pragma once
// Internal: one publisher per device kind turns a discovered PCI function into an API device;
// a new kind (e.g. NVMe) is one more entry in pciPublishers().

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "numadra/slices/builder.hpp"

namespace numadra::slices::detail {

struct PublishContext {
    const discovery::Machine& machine;
    const SliceOptions& options;
};

using PciPublisher =
    std::function<std::optional<api::Device>(const discovery::PciFunction&, const PublishContext&)>;

const std::map<discovery::DeviceKind, PciPublisher>& pciPublishers();

std::vector<api::Device> cpuDevices(const PublishContext& context);
std::vector<api::CounterSet> counterSets(const PublishContext& context);

// Shared helpers.
std::string pciDeviceName(const std::string& kind, const std::string& address);
std::string counterSetNameForPf(const std::string& pfAddress);
std::string counterSetNameForNode(int node);
std::string truncateValue(const std::string& value);
std::string capacityKey(const SliceOptions& options, const std::string& name);

}  // namespace numadra::slices::detail
