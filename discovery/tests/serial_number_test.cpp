// The PCIe Device Serial Number read from config space: hand-made config files for the walk's
// edge cases, and the generated machines for the whole path (generator, reader, lspci's format).

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "numadra/discovery/discovery.hpp"
#include "numadra/discovery/sysfs.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::discovery {
namespace {

using numadra::testing::loadMachine;
using numadra::testing::TempTree;

constexpr std::uint16_t kAer = 0x0001;
constexpr std::uint16_t kDsn = 0x0003;
constexpr std::uint16_t kVirtualChannel = 0x0002;

// Config space bytes, little-endian as the hardware presents them.
class ConfigSpace {
  public:
    explicit ConfigSpace(size_t size = 4096) : bytes_(size, '\0') {}

    ConfigSpace& dword(size_t offset, std::uint32_t value) {
        for (size_t i = 0; i < 4; ++i)
            bytes_.at(offset + i) = static_cast<char>((value >> (8 * i)) & 0xff);
        return *this;
    }
    // An extended capability header: id, version 1, next pointer.
    ConfigSpace& capability(size_t offset, std::uint16_t id, std::uint32_t next) {
        return dword(offset, id | (1U << 16) | (next << 20));
    }
    // A DSN capability holding b8-ce-f6-03-00-7c-d7-c4 (the dword at +8 is the upper half).
    ConfigSpace& serial(size_t offset, std::uint32_t next = 0) {
        capability(offset, kDsn, next);
        dword(offset + 4, 0x007cd7c4);
        return dword(offset + 8, 0xb8cef603);
    }
    const std::string& bytes() const { return bytes_; }

  private:
    std::string bytes_;
};

constexpr const char* kSerial = "b8-ce-f6-03-00-7c-d7-c4";
constexpr const char* kAddress = "0000:01:00.0";
const std::string kFunction = std::string("devices/pci0000:00/") + kAddress;

// A function at kAddress of the given class (an NVIDIA GPU unless told otherwise).
void addFunction(const TempTree& tree, const std::string& config, const char* cls = "0x030200") {
    tree.file(kFunction + "/class", std::string(cls) + "\n");
    tree.file(kFunction + "/vendor", "0x10de\n");
    tree.file(kFunction + "/device", "0x2330\n");
    tree.file(kFunction + "/config", config);
    tree.link(std::string("bus/pci/devices/") + kAddress, "../../../" + kFunction);
}

PciFunction discoverFunction(const TempTree& tree) {
    auto machine = discover({tree.root(), nullptr, nullptr});
    EXPECT_TRUE(machine.ok()) << machine.error().message;
    if (!machine.ok() || machine->pci.size() != 1) {
        ADD_FAILURE() << "expected one PCI function";
        return {};
    }
    EXPECT_FALSE(
        std::any_of(machine->diagnostics.begin(), machine->diagnostics.end(),
                    [](const Diagnostic& d) { return d.path.find("config") != std::string::npos; }))
        << "config problems are not diagnostics";
    return machine->pci.front();
}

TEST(SerialNumber, ReadFromTheDsnCapabilityInLspciOrder) {
    TempTree tree;
    addFunction(tree, ConfigSpace().serial(0x100).bytes());
    EXPECT_EQ(discoverFunction(tree).serialNumber, kSerial);
}

TEST(SerialNumber, FoundBehindOtherCapabilities) {
    TempTree tree;
    addFunction(tree, ConfigSpace()
                          .capability(0x100, kAer, 0x148)
                          .capability(0x148, kVirtualChannel, 0x400)
                          .serial(0x400)
                          .bytes());
    EXPECT_EQ(discoverFunction(tree).serialNumber, kSerial);
}

// Next pointers may point backwards; only a loop ends the walk, not the order.
TEST(SerialNumber, FoundBehindABackwardPointer) {
    TempTree tree;
    addFunction(tree, ConfigSpace()
                          .capability(0x100, kAer, 0x600)
                          .capability(0x600, kVirtualChannel, 0x140)
                          .serial(0x140)
                          .bytes());
    EXPECT_EQ(discoverFunction(tree).serialNumber, kSerial);
}

TEST(SerialNumber, ReservedBitsOfTheNextPointerAreIgnored) {
    TempTree tree;
    addFunction(tree, ConfigSpace().capability(0x100, kAer, 0x142).serial(0x140).bytes());
    EXPECT_EQ(discoverFunction(tree).serialNumber, kSerial);
}

TEST(SerialNumber, NoneInAChainWithoutDsn) {
    TempTree tree;
    addFunction(
        tree,
        ConfigSpace().capability(0x100, kAer, 0x148).capability(0x148, kVirtualChannel, 0).bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, NoneWithoutExtendedCapabilities) {
    TempTree tree;
    addFunction(tree, ConfigSpace().bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

// What a non-root reader gets: the kernel shows only the standard header.
TEST(SerialNumber, NoneInAShortConfig) {
    for (size_t size : {64, 256}) {
        TempTree tree;
        addFunction(tree, ConfigSpace(size).bytes());
        EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value()) << size;
    }
}

TEST(SerialNumber, NoneWhenTheDsnIsCutOffByTheEndOfTheFile) {
    TempTree tree;
    addFunction(tree, ConfigSpace(0x108).capability(0x100, kDsn, 0).dword(0x104, 1).bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, ALoopingChainEnds) {
    TempTree tree;
    addFunction(tree, ConfigSpace()
                          .capability(0x100, kAer, 0x140)
                          .capability(0x140, kVirtualChannel, 0x100)
                          .bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, ACapabilityPointingAtItselfEnds) {
    TempTree tree;
    addFunction(tree, ConfigSpace().capability(0x100, kAer, 0x100).bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

// Below 0x100 is the standard header: a pointer there is garbage, whatever the bytes say.
TEST(SerialNumber, APointerIntoTheStandardHeaderEnds) {
    TempTree tree;
    addFunction(tree, ConfigSpace().capability(0x100, kAer, 0x0c0).serial(0x0c0).bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, APointerPastTheEndOfTheFileEnds) {
    TempTree tree;
    addFunction(tree, ConfigSpace(0x200).capability(0x100, kAer, 0x800).bytes());
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

// All ones is what a device that fell off the bus answers.
TEST(SerialNumber, NoneFromADeviceThatDoesNotAnswer) {
    TempTree tree;
    addFunction(tree, std::string(4096, '\xff'));
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, NoneAndNoDiagnosticWhenConfigIsMissing) {
    TempTree tree;
    addFunction(tree, "");
    tree.remove(kFunction + "/config");
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, NoneAndNoDiagnosticWhenConfigIsUnreadable) {
    if (::geteuid() == 0)
        GTEST_SKIP() << "root reads files whatever their mode";
    TempTree tree;
    addFunction(tree, ConfigSpace().serial(0x100).bytes());
    ASSERT_EQ(::chmod(tree.path(kFunction + "/config").c_str(), 0), 0);
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

// A config that opens but fails to read (EISDIR here; EIO on real hardware), also as root.
TEST(SerialNumber, NoneAndNoDiagnosticWhenReadingConfigFails) {
    TempTree tree;
    addFunction(tree, "");
    tree.remove(kFunction + "/config");
    tree.dir(kFunction + "/config");
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, NotReadForFunctionsTheDriverDoesNotPublish) {
    TempTree tree;
    addFunction(tree, ConfigSpace().serial(0x100).bytes(), "0x010802");  // NVMe
    EXPECT_FALSE(discoverFunction(tree).serialNumber.has_value());
}

TEST(SerialNumber, NotReadForVirtualFunctions) {
    TempTree tree;
    addFunction(tree, ConfigSpace().serial(0x100).bytes(), "0x020000");
    tree.file("devices/pci0000:00/0000:00:01.0/class", "0x020000\n");
    tree.link(kFunction + "/physfn", "../0000:00:01.0");
    auto machine = discover({tree.root(), nullptr, nullptr});
    ASSERT_TRUE(machine.ok());
    const auto* vf = machine->pciFunction(kAddress);
    ASSERT_NE(vf, nullptr);
    ASSERT_TRUE(vf->sriovVf.has_value());
    EXPECT_EQ(vf->kind, "nic");
    EXPECT_FALSE(vf->serialNumber.has_value());
}

// The generator writes the serial sha256("<machine>/<address>/dsn")[:8], most significant byte
// first; these are the values for epyc-2s-nps4.
TEST(SerialNumber, GeneratedGpusAndNicsCarryTheirSerials) {
    auto machine = loadMachine("epyc-2s-nps4");
    const auto* h100 = machine.pciFunction("0000:21:00.0");
    const auto* mi300 = machine.pciFunction("0000:a3:00.0");
    const auto* cx7 = machine.pciFunction("0000:c1:00.0");
    ASSERT_NE(h100, nullptr);
    ASSERT_NE(mi300, nullptr);
    ASSERT_NE(cx7, nullptr);
    EXPECT_EQ(h100->serialNumber, "82-a3-d7-5c-05-44-0c-62");
    EXPECT_EQ(mi300->serialNumber, "d8-3c-14-b3-6f-81-5f-60");
    EXPECT_EQ(cx7->serialNumber, "b5-eb-0e-24-89-ee-bd-89");
}

TEST(SerialNumber, EveryGeneratedPhysicalGpuAndNicHasOneAndNoVfDoes) {
    auto machine = loadMachine("big-2s-8n");
    int physical = 0;
    for (const auto& f : machine.pci) {
        if (f.kind.empty() || f.sriovVf) {
            EXPECT_FALSE(f.serialNumber.has_value()) << f.address;
        } else {
            ++physical;
            EXPECT_TRUE(f.serialNumber.has_value()) << f.address;
        }
    }
    EXPECT_EQ(physical, 16);
}

TEST(SysfsFile, ReadAtStopsAtTheEndOfTheFile) {
    TempTree tree;
    tree.file("config", "abcdef");
    auto file = Sysfs(tree.root()).open("config");
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->readAt(2, 3).value(), "cde");
    EXPECT_EQ(file->readAt(4, 8).value(), "ef");
    EXPECT_EQ(file->readAt(100, 4).value(), "");
}

TEST(SysfsFile, OpenErrorNamesTheFullPath) {
    TempTree tree;
    auto file = Sysfs(tree.root()).open("devices/missing/config");
    ASSERT_FALSE(file.ok());
    EXPECT_NE(file.error().message.find(tree.root() + "/devices/missing/config"),
              std::string::npos);
}

}  // namespace
}  // namespace numadra::discovery
