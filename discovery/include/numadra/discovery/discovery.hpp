#pragma once
// Reads a node's NUMA nodes, CPUs and PCI devices from a sysfs root.

#include <memory>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/discovery/device_kinds.hpp"
#include "numadra/discovery/machine.hpp"
#include "numadra/discovery/pci_names.hpp"

namespace numadra::discovery {

struct DiscoveryOptions {
    std::string sysfsRoot = "/sys";
    // Vendor/device names; nullptr leaves names as hex ids.
    const PciNameDatabase* names = nullptr;
    // Which PCI functions become devices; nullptr means DeviceKindRules::defaults().
    const DeviceKindRules* kinds = nullptr;
};

// Fails only when the root does not look like sysfs at all; every unreadable or malformed file
// inside it becomes a Diagnostic and an unknown value.
Result<Machine> discover(const DiscoveryOptions& options);

// True when one of machine.unannounced reads differently now: the scan that made `machine` may
// be out of date even though no uevent came. A few files and folder listings, where a scan reads
// thousands of files.
bool changedWithoutUevent(const Machine& machine);

// True when `root` has what every Linux sysfs has (devices/system/cpu or bus/pci/devices).
Status checkLooksLikeSysfs(const std::string& root);

}  // namespace numadra::discovery
