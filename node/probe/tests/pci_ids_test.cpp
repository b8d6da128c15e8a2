#include "numadra/probe/pci_ids.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "numadra/discovery/discovery.hpp"
#include "numadra/discovery/pci_names.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::probe {
namespace {

constexpr std::uint16_t kNvidia = 0x10de;
constexpr std::uint16_t kMellanox = 0x15b3;

const char* const kSmallIds =
    "# comment\n"
    "\n"
    "10de  NVIDIA Corporation\n"
    "\t2330  GH100 [H100 SXM5 80GB]\n"
    "\t\t10de 16c1  H100 SXM5 80GB\n"
    "\t2331  GH100 [H100 PCIe]\n"
    "15b3  Mellanox Technologies\n"
    "\t1021  MT2910 Family [ConnectX-7]\n"
    "C 02  Network controller\n"
    "\t00  Ethernet controller\n"
    "\t\t01  Some prog-if\n";

std::optional<PciIdNames> scan(std::string_view text, std::vector<PciId> wanted) {
    return scanPciIds(text, wanted);
}

// "" where the scan found no name, as PciNameDatabase answers.
std::string vendorNameIn(const PciIdNames& names, std::uint16_t vendor) {
    const auto it = names.vendors.find(vendor);
    return it == names.vendors.end() ? "" : it->second;
}

std::string deviceNameIn(const PciIdNames& names, PciId id) {
    const auto it = names.devices.find(id);
    return it == names.devices.end() ? "" : it->second;
}

TEST(ScanPciIds, FindsTheWantedVendorAndDeviceNames) {
    auto names = scan(kSmallIds, {{kNvidia, 0x2331}, {kMellanox, 0x1021}});
    ASSERT_TRUE(names);
    EXPECT_EQ(names->vendors.at(kNvidia), "NVIDIA Corporation");
    EXPECT_EQ(names->vendors.at(kMellanox), "Mellanox Technologies");
    EXPECT_EQ(names->devices.at({kNvidia, 0x2331}), "GH100 [H100 PCIe]");
    EXPECT_EQ(names->devices.at({kMellanox, 0x1021}), "MT2910 Family [ConnectX-7]");
    EXPECT_FALSE(names->devices.contains({kNvidia, 0x2330})) << "not asked for";
}

TEST(ScanPciIds, IdsTheFileDoesNotHaveHaveNoName) {
    auto names = scan(kSmallIds, {{0x1234, 0x0001}, {kNvidia, 0x1021}});
    ASSERT_TRUE(names);
    EXPECT_TRUE(names->vendors.size() == 1 && names->vendors.contains(kNvidia));
    EXPECT_TRUE(names->devices.empty()) << "0x1021 is Mellanox's, not NVIDIA's";
}

// The cases where libpci's reading is easy to get wrong; each also goes through libpci below.
const char* const kOddIds =
    "1000  Two trailing blanks  \n"              // libpci drops one
    "\t0001  Device\r with a carriage return\n"  // the line ends at '\r'
    "\t0002 \t  Blanks before the name\n"
    "X 1234  An unknown block: what it holds is skipped\n"
    "\t\t\tnot even an id\n"
    "2000  After the unknown block\n"
    "S 2000\n"  // a generic subsystem block of a known vendor
    "\t0001  Generic subsystem\n"
    "3000  Lowercase and UPPERCASE hex are the same\n"
    "\tABCD  Uppercase device\n";

TEST(ScanPciIds, ReadsLinesAsLibpciDoes) {
    auto names =
        scan(kOddIds, {{0x1000, 0x0001}, {0x1000, 0x0002}, {0x2000, 0x0001}, {0x3000, 0xabcd}});
    ASSERT_TRUE(names);
    EXPECT_EQ(names->vendors.at(0x1000), "Two trailing blanks ");
    EXPECT_EQ(names->devices.at({0x1000, 0x0001}), "Device");
    EXPECT_EQ(names->devices.at({0x1000, 0x0002}), "Blanks before the name");
    EXPECT_EQ(names->vendors.at(0x2000), "After the unknown block");
    EXPECT_FALSE(names->devices.contains({0x2000, 0x0001})) << "a subsystem, not a device";
    EXPECT_EQ(names->devices.at({0x3000, 0xabcd}), "Uppercase device");
}

TEST(ScanPciIds, CutsLongNamesAsTheNameBufferDoes) {
    const std::string name(300, 'n');
    auto names = scan("10de  " + name + "\n", {{kNvidia, 0}});
    ASSERT_TRUE(names);
    EXPECT_EQ(names->vendors.at(kNvidia), name.substr(0, 252) + "...");
}

// The answers are libpci's: the odd cases through discovery::PciNameDatabase.
TEST(ScanPciIds, AgreesWithLibpciOnTheOddCases) {
    testing::TempTree tree;
    const std::string text = std::string(kOddIds) + "4000  " + std::string(300, 'n') + "\n" +
                             "5000  " + std::string(1016, 'm') + "\n";  // the longest line
    tree.file("pci.ids", text);
    const std::string file = tree.path("pci.ids");
    const discovery::PciNameDatabase libpci(file);
    const std::vector<PciId> wanted{{0x1000, 0x0001}, {0x1000, 0x0002}, {0x2000, 0x0001},
                                    {0x3000, 0xabcd}, {0x4000, 0},      {0x5000, 1}};
    auto names = scan(text, wanted);
    ASSERT_TRUE(names);
    for (const auto& id : wanted) {
        EXPECT_EQ(vendorNameIn(*names, id.vendor), libpci.vendorName(id.vendor));
        EXPECT_EQ(deviceNameIn(*names, id), libpci.deviceName(id.vendor, id.device));
    }
}

struct Refused {
    const char* why;
    std::string text;
};

void PrintTo(const Refused& refused, std::ostream* out) {
    *out << refused.why;
}

class ScanPciIdsRefuses : public ::testing::TestWithParam<Refused> {};

// Where libpci stops reading (and so answers "unknown" for what follows), the scan cannot
// vouch for its answers: libpci answers instead.
TEST_P(ScanPciIdsRefuses, WhatLibpciWouldStopAt) {
    EXPECT_FALSE(scan(GetParam().text, {{kNvidia, 0x2330}}));
}

INSTANTIATE_TEST_SUITE_P(
    Files, ScanPciIdsRefuses,
    ::testing::Values(Refused{"not_hex", "10dg  Bad\n"},
                      Refused{"no_blank_after_id", "10de_NVIDIA\n"}, Refused{"no_name", "10de  \n"},
                      Refused{"device_before_vendor", "\t2330  GH100\n"},
                      Refused{"three_tabs", "10de  NVIDIA\n\t\t\tdeep\n"},
                      Refused{"subsystem_without_device", "10de  NVIDIA\n\t\t10de 0001  S\n"},
                      Refused{"generic_subsystem_of_unknown_vendor", "S 10de\n"},
                      Refused{"vendors_out_of_order", "15b3  Mellanox\n10de  NVIDIA\n"},
                      Refused{"duplicate_vendor_before_the_wanted",
                              "1000  A\n1000  A again\n10de  NVIDIA\n"},
                      Refused{"duplicate_device", "10de  NVIDIA\n\t2330  A\n\t2330  B\n"},
                      Refused{"prog_if_straight_under_class", "C 02  Network\n\t\t01  odd\n"},
                      Refused{"nul_byte", std::string("10de  NV\0IDIA\n", 14)},
                      Refused{"line_of_1023_bytes", "10de  " + std::string(1017, 'n') + "\n"}),
    [](const auto& test) { return std::string(test.param.why); });

// What follows the last wanted block cannot change an answer (see Scanner::answered).
TEST(ScanPciIds, StopsReadingOnceTheWantedBlocksAreRead) {
    auto names = scan("10de  NVIDIA\n\t2330  GH100\n15b3  Mellanox\nnot a line libpci reads\n",
                      {{kNvidia, 0x2330}});
    ASSERT_TRUE(names);
    EXPECT_EQ(names->devices.at({kNvidia, 0x2330}), "GH100");
}

TEST(ScanPciIds, ReadsToTheEndForAVendorItDoesNotFind) {
    EXPECT_FALSE(scan("10de  NVIDIA\nnot a line libpci reads\n", {{0x8086, 0x0001}}));
}

TEST(ScanPciIds, AcceptsTheLongestLineLibpciReads) {
    EXPECT_TRUE(scan("10de  " + std::string(1016, 'n') + "\n", {{kNvidia, 0}}));
}

// Every vendor and device of the installed pci.ids, through both.
TEST(ScanPciIds, AgreesWithLibpciOnTheInstalledDatabase) {
    const std::string path = "/usr/share/misc/pci.ids";
    std::ifstream in(path);
    if (!in)
        GTEST_SKIP() << path << " is not installed";
    std::stringstream content;
    content << in.rdbuf();
    const std::string text = content.str();
    std::vector<PciId> wanted{{0xfffe, 0xfffe}};  // not in the file
    std::istringstream lines(text);
    std::uint16_t vendor = 0;
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("C "))
            break;  // the classes follow the vendors
        if (line.size() > 4 && std::isxdigit(static_cast<unsigned char>(line[0]))) {
            vendor = static_cast<std::uint16_t>(std::stoi(line.substr(0, 4), nullptr, 16));
            wanted.push_back({vendor, 0xffff});
        } else if (line.size() > 5 && line[0] == '\t' && line[1] != '\t') {
            wanted.push_back(
                {vendor, static_cast<std::uint16_t>(std::stoi(line.substr(1, 4), nullptr, 16))});
        }
    }
    ASSERT_GT(wanted.size(), 10'000u);  // 19,942 in Debian 12's
    auto names = scan(text, wanted);
    ASSERT_TRUE(names) << "the installed pci.ids would be read by libpci: slow";
    const discovery::PciNameDatabase libpci(path);
    size_t differences = 0;
    for (const auto& id : wanted) {
        differences += vendorNameIn(*names, id.vendor) != libpci.vendorName(id.vendor);
        differences += deviceNameIn(*names, id) != libpci.deviceName(id.vendor, id.device);
    }
    EXPECT_EQ(differences, 0u);
}

// What namePciFunctions leaves is what discovery with a PciNameDatabase gives.
TEST(NamePciFunctions, NamesAsDiscoveryWithTheDatabaseDoes) {
    for (const char* machineName : {"big-2s-8n", "epyc-2s-nps4", "bad-files", "laptop",
                                    "hyperv-nested", "vm-noaffinity", "sparse-gpu-mem"}) {
        const std::string root = testing::machineRoot(machineName);
        const discovery::PciNameDatabase database;
        auto withDatabase = discovery::discover({root, &database, nullptr});
        auto machine = discovery::discover({root, nullptr, nullptr});
        ASSERT_TRUE(withDatabase && machine) << machineName;
        namePciFunctions(*machine);
        ASSERT_EQ(machine->pci.size(), withDatabase->pci.size());
        for (size_t i = 0; i < machine->pci.size(); ++i) {
            EXPECT_EQ(machine->pci[i].vendorName, withDatabase->pci[i].vendorName)
                << machineName << " " << machine->pci[i].address;
            EXPECT_EQ(machine->pci[i].deviceName, withDatabase->pci[i].deviceName)
                << machineName << " " << machine->pci[i].address;
        }
    }
}

}  // namespace
}  // namespace numadra::probe
