#include "numadra/discovery/pci_names.hpp"

extern "C" {
#include <pci/pci.h>
}

#include <cstdarg>
#include <cstdio>

namespace numadra::discovery {

namespace {
// libpci's default handlers print and exit(); name lookups must never end the process.
void ignoreMessage(char*, ...) {}
}  // namespace

struct PciNameDatabase::Impl {
    pci_access* access = nullptr;
    std::string idsFile;
};

PciNameDatabase::PciNameDatabase(std::string idsFile) : impl_(std::make_unique<Impl>()) {
    impl_->idsFile = std::move(idsFile);
    impl_->access = pci_alloc();
    if (impl_->access == nullptr)
        return;
    impl_->access->warning = ignoreMessage;
    impl_->access->debug = ignoreMessage;
    if (!impl_->idsFile.empty()) {
        pci_set_name_list_path(impl_->access, impl_->idsFile.data(), 0);
    }
    // Only the pci.ids file: no DNS, no cache file, no host-specific udev hwdb, so a mocked
    // machine gets the same names on every host.
    impl_->access->id_lookup_mode = 0;
}

PciNameDatabase::~PciNameDatabase() {
    if (impl_->access != nullptr)
        pci_cleanup(impl_->access);
}

std::string PciNameDatabase::vendorName(std::uint16_t vendor) const {
    return lookup(PCI_LOOKUP_VENDOR, vendor, 0);
}

std::string PciNameDatabase::deviceName(std::uint16_t vendor, std::uint16_t device) const {
    return lookup(PCI_LOOKUP_DEVICE, vendor, device);
}

// libpci takes the ids as varargs: a vendor lookup reads one, a device lookup two.
std::string PciNameDatabase::lookup(int what, std::uint16_t vendor, std::uint16_t device) const {
    if (impl_->access == nullptr)
        return {};
    std::lock_guard lock(mutex_);
    char buffer[256];
    const char* name = pci_lookup_name(impl_->access, buffer, sizeof buffer,
                                       what | PCI_LOOKUP_NO_NUMBERS | PCI_LOOKUP_NO_HWDB,
                                       int{vendor}, int{device});
    return name ? std::string(name) : std::string();
}

}  // namespace numadra::discovery
