// What the preparer really writes (the claim's CDI spec and the metadata CDI specs), for every
// generated machine, in a folder that the ctest prepare.specs_pass_the_cdi_library judges with the
// official CDI library (tests/cdi-check). With NUMADRA_CDI_SPEC_OUT set (that ctest sets it) the
// files go there; as a plain unit test they go to a temporary folder.

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "numadra/prepare/preparer.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::prepare {
namespace {

using numadra::testing::generatedMachines;

// One claim holding every device the machine publishes (a share of each CPU device), one
// request per device type.
ClaimAllocation everything(const std::string& uid, const std::vector<api::Device>& devices) {
    ClaimAllocation allocation{{"default", "all-devices", uid}, std::nullopt, {}};
    for (const auto& device : devices) {
        const auto type = std::get<std::string>(device.attributes.at("type"));
        AllocatedDevice allocated{type, "node-a", device.name, std::nullopt, false, {}};
        if (device.allowMultipleAllocations) {
            allocated.shareId = "5a4e0000-0000-4000-8000-" +
                                std::to_string(100000000000 + allocation.devices.size());
            allocated.consumedCapacity.emplace("cpu", api::Quantity::decimal(1));
        }
        allocation.devices.push_back(std::move(allocated));
    }
    return allocation;
}

TEST(CdiSchemaSpecs, PreparedClaimsOfEveryMachine) {
    numadra::testing::TempTree scratch;
    const char* requested = std::getenv("NUMADRA_CDI_SPEC_OUT");
    const std::string out = requested ? requested : scratch.path("out");
    std::filesystem::create_directories(out);
    size_t written = 0;
    for (const auto& name : generatedMachines()) {
        SCOPED_TRACE(name);
        numadra::testing::TempTree tree;
        auto machine = numadra::testing::loadMachine(name);
        slices::SliceOptions sliceOptions;
        sliceOptions.nodeName = "node-a";
        const auto devices = slices::buildPoolContent(machine, sliceOptions).devices;
        std::map<std::string, api::Device> byName;
        for (const auto& device : devices)
            byName.emplace(device.name, device);
        const auto dev = numadra::testing::makeDevTree(machine, tree, "dev");
        Options options;
        options.driverName = "numa.dra.dev";
        options.poolName = "node-a";
        options.cdiDir = tree.path("cdi");
        options.metadataDir = tree.path("metadata");
        options.stateDir = tree.path("state");
        options.hostRoots = {dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/" + name + "/proc"};
        metrics::Registry registry;
        auto preparer = Preparer::open(options, registry);
        ASSERT_TRUE(preparer) << preparer.error().message;
        auto prepared =
            (*preparer)->prepare(everything("9f00aa00-" + name, devices), {machine, byName});
        ASSERT_TRUE(prepared) << prepared.error().message;
        for (const auto& entry : std::filesystem::directory_iterator(tree.path("cdi"))) {
            std::filesystem::copy_file(entry.path(),
                                       out + "/" + name + "_" + entry.path().filename().string(),
                                       std::filesystem::copy_options::overwrite_existing);
            ++written;
        }
    }
    EXPECT_GT(written, generatedMachines().size());
}

}  // namespace
}  // namespace numadra::prepare
