// Builds one claim spec per generated machine, holding every device the driver publishes there
// (each PCI function of kind gpu/accelerator/nic, plus a CPU share per NUMA node), and writes the
// files where the ctest cdi.specs_pass_the_cdi_library judges them with the official CDI library
// (tests/cdi-check). With NUMADRA_CDI_SPEC_OUT set (that ctest sets it) the files go to that
// folder; as a plain unit test they go to a temporary one, so parallel runs never share a folder.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "numadra/cdi/device_edits.hpp"
#include "numadra/cdi/spec.hpp"
#include "numadra/common/text.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::cdi {
namespace {

using numadra::testing::generatedMachines;

constexpr const char* kVendor = "numa.dra.dev";
constexpr const char* kClass = "claim";

std::string deviceNameOf(const discovery::PciFunction& f) {
    std::string name = f.kind + "-" + f.address;
    std::replace(name.begin(), name.end(), ':', '-');
    std::replace(name.begin(), name.end(), '.', '-');
    return name;
}

// A claim UID per machine, deterministic so reruns write the same files. Starts with a digit
// like real UIDs often do, which makes the device names need cdiVersion 0.5.0.
std::string claimUid(size_t machineIndex) {
    return "1" + text::hex(machineIndex, 7) + "-5e1f-4c2a-9d3b-" + text::hex(machineIndex, 12);
}

// The devices of one machine's claim; fails the test for any device without valid edits.
Spec claimSpec(const discovery::Machine& machine, const HostDeviceNodes& host,
               const std::string& uid) {
    Spec spec;
    spec.kind = std::string(kVendor) + "/" + kClass;
    for (const auto& f : machine.pci) {
        if (f.kind != discovery::kKindGpu && f.kind != discovery::kKindAccelerator &&
            f.kind != discovery::kKindNic) {
            continue;
        }
        auto edits = pciDeviceEdits(f, deviceNameOf(f), host);
        EXPECT_TRUE(edits.ok()) << f.address << ": " << edits.error().message;
        if (edits.ok())
            spec.devices.push_back({uid + "-" + deviceNameOf(f), std::move(edits).value()});
    }
    // A CPU device per node with CPUs, with the node's memory; the first one as a share (with a
    // share id), the others whole.
    bool first = true;
    for (const auto& node : machine.nodes) {
        if (node.cpus.empty())
            continue;
        const std::string name = "cpu-numa-" + std::to_string(node.id);
        CpuShare share{name, first ? std::optional<std::string>("share-0") : std::nullopt, node.id,
                       node.cpus, std::nullopt};
        first = false;
        if (node.memoryBytes)
            share.memoryBytes = static_cast<std::int64_t>(*node.memoryBytes);
        spec.devices.push_back({uid + "-" + name, cpuShareEdits(share)});
    }
    if (machine.nodes.empty()) {  // no NUMA support: all CPUs as node 0
        std::vector<int> cpus;
        for (const auto& cpu : machine.cpus)
            cpus.push_back(cpu.id);
        spec.devices.push_back(
            {uid + "-cpu-numa-0", cpuShareEdits({"cpu-numa-0", std::nullopt, 0, cpus, {}})});
    }
    return spec;
}

// NUMADRA_CDI_SPEC_OUT (the ctest that judges the files), else a temporary folder `scratch` owns.
std::string specOutput(std::optional<numadra::testing::TempTree>& scratch) {
    if (const char* fixed = std::getenv("NUMADRA_CDI_SPEC_OUT"); fixed != nullptr && *fixed)
        return fixed;
    scratch.emplace();
    return scratch->root();
}

TEST(CdiSchemaSpecs, EveryGeneratedMachineGetsAValidClaimSpecFile) {
    std::optional<numadra::testing::TempTree> scratch;
    const std::string out = specOutput(scratch);
    const auto machines = generatedMachines();
    ASSERT_GE(machines.size(), 18u) << "no generated machines in " << NUMADRA_GENERATED_SYSFS;

    size_t written = 0;
    for (size_t i = 0; i < machines.size(); ++i) {
        const std::string& name = machines[i];
        SCOPED_TRACE(name);
        const auto machine = numadra::testing::loadMachine(name);
        numadra::testing::TempTree tree;
        const auto dev = numadra::testing::makeDevTree(machine, tree, "dev");
        const HostDeviceNodes host(
            HostRoots{dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/" + name + "/proc"});

        const std::string uid = claimUid(i);
        Spec spec = claimSpec(machine, host, uid);
        ASSERT_FALSE(spec.devices.empty());
        Status valid = validate(spec);
        ASSERT_TRUE(valid) << valid.error().message;
        EXPECT_EQ(minimumVersion(spec), "0.5.0");  // UID-first names, nothing else

        const std::string text = serialize(spec);
        const std::string folder = out + "/" + name;
        std::filesystem::create_directories(folder);
        const std::string path = folder + "/" + transientSpecFileName(kVendor, kClass, uid);
        std::ofstream(path, std::ios::binary) << text;

        // What the runtime reads back is what was meant.
        auto parsed = parse(text, path);
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        spec.cdiVersion = minimumVersion(spec);
        EXPECT_EQ(parsed.value(), spec);
        ++written;
    }
    EXPECT_EQ(written, machines.size());
}

// CDI 1.1: each machine with netdev VFs gets a second spec whose VF devices move their
// interface into the container (netDevices, --cdi-net-devices): cdiVersion 1.1.0, judged by the
// library at 1.1 (validate, and resolve into an OCI spec with linux.netDevices).
TEST(CdiSchemaSpecs, VfsWithNetdevsGetANetDevicesSpecAtOneOneZero) {
    std::optional<numadra::testing::TempTree> scratch;
    const std::string out = specOutput(scratch);
    size_t written = 0;
    for (const std::string& name : generatedMachines()) {
        SCOPED_TRACE(name);
        const auto machine = numadra::testing::loadMachine(name);
        numadra::testing::TempTree tree;
        const auto dev = numadra::testing::makeDevTree(machine, tree, "dev");
        const HostDeviceNodes host(
            HostRoots{dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/" + name + "/proc"});
        Spec spec;
        spec.kind = std::string(kVendor) + "/" + kClass;
        for (const auto& f : machine.pci) {
            auto netDevices = netDeviceEdits(f);
            if (netDevices.empty())
                continue;
            auto edits = pciDeviceEdits(f, deviceNameOf(f), host);
            ASSERT_TRUE(edits.ok()) << edits.error().message;
            edits->netDevices = std::move(netDevices);
            spec.devices.push_back({"vf-" + deviceNameOf(f), std::move(*edits)});
        }
        if (spec.devices.empty())
            continue;
        Status valid = validate(spec);
        ASSERT_TRUE(valid) << valid.error().message;
        EXPECT_EQ(minimumVersion(spec), "1.1.0");
        const std::string folder = out + "/" + name + "-netdevices";
        std::filesystem::create_directories(folder);
        std::ofstream(folder + "/" + transientSpecFileName(kVendor, kClass, "netdevices"),
                      std::ios::binary)
            << serialize(spec);
        ++written;
    }
    EXPECT_GE(written, 1u) << "no generated machine has a VF with a netdev";
}

}  // namespace
}  // namespace numadra::cdi
