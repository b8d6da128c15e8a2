#pragma once
// Vendor and device names for the few ids a machine has, from one pass over pci.ids, instead of
// libpci's parse of all ~36,000 entries into a hash table: that took 9 ms of a 28 ms numa-probe
// run (a third). The answers are libpci's, as discovery::PciNameDatabase asks for them; where
// that cannot be certain, libpci answers.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/discovery/machine.hpp"

namespace numadra::probe {

struct PciId {
    std::uint16_t vendor = 0;
    std::uint16_t device = 0;
    auto operator<=>(const PciId&) const = default;
};

// The names found; an id pci.ids does not name is absent.
struct PciIdNames {
    std::map<std::uint16_t, std::string> vendors;
    std::map<PciId, std::string> devices;
};

// The names of the `wanted` vendors and devices in pci.ids `text`, as libpci's pci_lookup_name
// gives them with PCI_LOOKUP_NO_NUMBERS into a 256-byte buffer (no hwdb, cache or network).
// nullopt when the text holds something after which libpci could answer differently: a line
// libpci rejects (its parse ends there), ids not in ascending order (which rules out duplicate
// entries, which also end it), a NUL byte or a line of 1,023 bytes or more.
std::optional<PciIdNames> scanPciIds(std::string_view text, const std::vector<PciId>& wanted);

// Sets vendorName/deviceName of every function as discovery does with a PciNameDatabase (the
// name, or the "0x...." discovery wrote when pci.ids has none): from a scan of libpci's pci.ids
// when scanPciIds can answer, else from libpci itself.
void namePciFunctions(discovery::Machine& machine);

}  // namespace numadra::probe
