#pragma once
// Vendor and device names from libpci's ID database (pci.ids), loaded once and shared.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace numadra::discovery {

class PciNameDatabase {
  public:
    // Uses libpci's default database location unless `idsFile` is given.
    explicit PciNameDatabase(std::string idsFile = {});
    ~PciNameDatabase();
    PciNameDatabase(const PciNameDatabase&) = delete;
    PciNameDatabase& operator=(const PciNameDatabase&) = delete;

    // Names, or "" when the database does not know the id.
    std::string vendorName(std::uint16_t vendor) const;
    std::string deviceName(std::uint16_t vendor, std::uint16_t device) const;

  private:
    std::string lookup(int what, std::uint16_t vendor, std::uint16_t device) const;

    struct Impl;
    std::unique_ptr<Impl> impl_;
    mutable std::mutex mutex_;  // libpci's lookup cache is not thread-safe
};

}  // namespace numadra::discovery
