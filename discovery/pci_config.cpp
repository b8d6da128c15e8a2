// The PCIe Device Serial Number, from the extended capabilities in a function's config space.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "numadra/common/text.hpp"
#include "readers.hpp"

namespace numadra::discovery::detail {

namespace {

constexpr std::uint64_t kExtendedCapabilities = 0x100;  // the first one sits here, if any
constexpr std::uint64_t kConfigSpaceSize = 0x1000;
constexpr std::uint16_t kCapabilityDeviceSerialNumber = 0x0003;
// The kernel's own walk allows (4096 - 256) / 8 steps; real chains hold a dozen entries. A chain
// that loops (next pointers may legally point backwards, so order proves nothing) ends here.
constexpr int kMaxCapabilities = 64;

// `size` bytes at `offset` as a little-endian number (config space byte order); nullopt when the
// file ends before them or the read fails.
std::optional<std::uint64_t> numberAt(const SysfsFile& config, std::uint64_t offset,
                                      std::size_t size) {
    auto bytes = config.readAt(offset, size);
    if (!bytes || bytes->size() != size)
        return std::nullopt;
    // Little-endian: the last byte is the most significant.
    std::uint64_t value = 0;
    for (size_t i = bytes->size(); i > 0; --i)  // NOLINT(modernize-loop-convert): backwards
        value = (value << 8) | static_cast<unsigned char>((*bytes)[i - 1]);
    return value;
}

// Most significant byte first, as lspci prints it and the kernel's pci_get_dsn() returns it (the
// dword at +8 is the upper half, so the 8 bytes read as one little-endian number).
std::string formatSerial(std::uint64_t serial) {
    std::string out;
    for (int shift = 56; shift >= 0; shift -= 8) {
        if (!out.empty())
            out += '-';
        out += text::hex((serial >> shift) & 0xff, 2);
    }
    return out;
}

// Header dwords are read one at a time (pread), never the whole 4 KiB: on real hardware every
// dword of a config read is a config access, and most chains hold the DSN in the first few.
std::optional<std::string> readSerialNumber(const Sysfs& sysfs, const PciFunction& function) {
    // Not readable (not root) or missing: no serial, and nothing worth a diagnostic.
    auto config = sysfs.open(joinPath(function.devicePath, "config"));
    if (!config)
        return std::nullopt;
    std::uint64_t offset = kExtendedCapabilities;
    for (int step = 0; step < kMaxCapabilities; ++step) {
        // A config file shorter than 4 KiB (non-root, conventional PCI) reads short here.
        const auto header = numberAt(*config, offset, 4);
        // 0: no extended capabilities; all ones: the device no longer answers.
        if (!header || *header == 0 || *header == 0xffffffffU)
            return std::nullopt;
        if ((*header & 0xffff) == kCapabilityDeviceSerialNumber) {
            const auto serial = numberAt(*config, offset + 4, 8);
            if (!serial)
                return std::nullopt;
            return formatSerial(*serial);
        }
        // Bits 20-31; the low two are reserved (the kernel masks them too).
        offset = (*header >> 20) & 0xffc;
        if (offset < kExtendedCapabilities || offset + 4 > kConfigSpaceSize)
            return std::nullopt;
    }
    return std::nullopt;
}

}  // namespace

void readSerialNumbers(Reader& reader, Machine& machine) {
    for (auto& function : machine.pci) {
        // Only what is published, to keep scans of VF-heavy machines fast; a VF's DSN, where it
        // has one, is its PF's and identifies nothing of its own.
        if (function.kind.empty() || function.sriovVf)
            continue;
        function.serialNumber = readSerialNumber(reader.sysfs(), function);
    }
}

}  // namespace numadra::discovery::detail
