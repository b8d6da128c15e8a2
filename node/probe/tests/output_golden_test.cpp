// numa-probe's JSON and YAML are byte for byte what the DOM-based encoding (the reference kept
// in common/api/tests/legacy) printed, on every mocked machine in every flag combination; so are
// the compact JSON the publisher sends and the table (names as libpci gives them).

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include "legacy_json.hpp"
#include "numadra/api/slice_writer.hpp"
#include "numadra/api/yaml.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/discovery/pci_names.hpp"
#include "numadra/probe/probe.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/testing/machines.hpp"

namespace numadra::probe {
namespace {

using numadra::testing::generatedMachines;

struct Flags {
    bool numaList;
    bool sharedCapacity;
    bool legacyAttributes;
};

struct Case {
    std::string machine;
    Flags flags;
};

void PrintTo(const Case& c, std::ostream* out) {
    *out << c.machine << (c.flags.numaList ? " --numa-list" : "")
         << (c.flags.sharedCapacity ? " --shared-consumable-capacity" : "")
         << (c.flags.legacyAttributes ? " --legacy-numa-attributes" : "");
}

std::vector<Case> everyMachineAndFlagCombination() {
    std::vector<Case> cases;
    for (const auto& machine : generatedMachines()) {
        for (int bits = 0; bits < 8; ++bits)
            cases.push_back({machine, {(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0}});
    }
    return cases;
}

std::vector<std::string> probeArgs(const Case& c, const std::string& output) {
    std::vector<std::string> args{"--sysfs-root", testing::machineRoot(c.machine),
                                  "--node-name",  "node-a",
                                  "--output",     output};
    if (c.flags.numaList)
        args.push_back("--numa-list");
    if (c.flags.sharedCapacity)
        args.push_back("--shared-consumable-capacity");
    if (c.flags.legacyAttributes)
        args.push_back("--legacy-numa-attributes");
    return args;
}

std::string probeOutput(const Case& c, const std::string& output) {
    std::ostringstream out, err;
    EXPECT_EQ(runNumaProbe(probeArgs(c, output), out, err), 0) << err.str();
    return out.str();
}

// The machine and slices as numa-probe built them before: discovery with libpci's names.
struct Reference {
    discovery::Machine machine;
    slices::SliceOptions options;
    std::vector<api::ResourceSlice> slices;
};

Reference reference(const Case& c) {
    Reference r;
    const discovery::PciNameDatabase names;
    auto machine = discovery::discover({testing::machineRoot(c.machine), &names, nullptr});
    EXPECT_TRUE(machine) << machine.error().message;
    r.machine = std::move(machine).value();
    r.options.nodeName = "node-a";
    r.options.numaForm = c.flags.numaList ? topology::NumaForm::List : topology::NumaForm::Scalar;
    r.options.sharedConsumableCapacity = c.flags.sharedCapacity;
    r.options.legacyNumaAttributes = c.flags.legacyAttributes;
    auto built = slices::buildResourceSlices(r.machine, r.options);
    EXPECT_TRUE(built) << built.error().message;
    r.slices = std::move(built).value();
    return r;
}

std::vector<api::ResourceSlice> referenceSlices(const Case& c) {
    return reference(c).slices;
}

// Equality of megabyte texts, reported by their first difference (gtest's own diff of two such
// strings takes minutes and gigabytes).
::testing::AssertionResult sameBytes(const std::string& actual, const std::string& expected) {
    const auto [a, e] =
        std::mismatch(actual.begin(), actual.end(), expected.begin(), expected.end());
    if (a == actual.end() && e == expected.end())
        return ::testing::AssertionSuccess();
    const auto at = static_cast<size_t>(a - actual.begin());
    const size_t line = static_cast<size_t>(std::count(actual.begin(), a, '\n')) + 1;
    const size_t from = at < 40 ? 0 : at - 40;
    return ::testing::AssertionFailure()
           << "sizes " << actual.size() << " and " << expected.size()
           << ", first difference at byte " << at << " (line " << line << ")\n  actual:   ..."
           << actual.substr(from, 80) << "\n  expected: ..." << expected.substr(from, 80);
}

class ProbeOutputMatchesDom : public ::testing::TestWithParam<Case> {};

TEST_P(ProbeOutputMatchesDom, Json) {
    const std::string expected = api::legacyToJsonList(referenceSlices(GetParam())).dump(2) + "\n";
    EXPECT_TRUE(sameBytes(probeOutput(GetParam(), "json"), expected));
}

TEST_P(ProbeOutputMatchesDom, Yaml) {
    std::vector<api::Json> documents;
    for (const auto& slice : referenceSlices(GetParam()))
        documents.push_back(api::legacyToJson(slice));
    EXPECT_TRUE(sameBytes(probeOutput(GetParam(), "yaml"), api::toYamlStream(documents)));
}

// The table's code is unchanged, but its names now come from node/probe/pci_ids.hpp.
TEST_P(ProbeOutputMatchesDom, Table) {
    const Reference r = reference(GetParam());
    EXPECT_TRUE(
        sameBytes(probeOutput(GetParam(), "table"), renderTable(r.machine, r.options, r.slices)));
}

TEST_P(ProbeOutputMatchesDom, CompactJsonOfEachSlice) {
    for (const auto& slice : referenceSlices(GetParam())) {
        std::string text;
        api::appendJson(text, slice, api::JsonLayout::Compact);
        EXPECT_TRUE(sameBytes(text, api::legacyToJson(slice).dump())) << slice.name;
    }
}

INSTANTIATE_TEST_SUITE_P(EveryMachine, ProbeOutputMatchesDom,
                         ::testing::ValuesIn(everyMachineAndFlagCombination()),
                         [](const auto& test) {
                             std::string name = test.param.machine + "_" +
                                                std::to_string(test.param.flags.numaList) +
                                                std::to_string(test.param.flags.sharedCapacity) +
                                                std::to_string(test.param.flags.legacyAttributes);
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

// The golden tests above cover whatever machines the generator wrote: at least these.
TEST(ProbeOutputGolden, CoversTheMockedMachines) {
    const auto machines = generatedMachines();
    for (const char* expected : {"big-2s-8n", "epyc-2s-nps4", "sriov-nic", "bad-files",
                                 "vm-noaffinity", "hyperv-nested", "sparse-gpu-mem"}) {
        EXPECT_NE(std::find(machines.begin(), machines.end(), expected), machines.end())
            << expected;
    }
}

}  // namespace
}  // namespace numadra::probe
