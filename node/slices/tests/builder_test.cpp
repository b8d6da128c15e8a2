#include "numadra/slices/builder.hpp"

#include <gtest/gtest.h>

#include <set>

#include "numadra/testing/machines.hpp"

namespace numadra::slices {
namespace {

using numadra::testing::loadMachine;

SliceOptions optionsFor(const std::string& node) {
    SliceOptions options;
    options.nodeName = node;
    return options;
}

// One device per VF: the most devices a machine publishes.
SliceOptions individualOptionsFor(const std::string& node) {
    auto options = optionsFor(node);
    options.vfLayout = VfLayout::Individual;
    return options;
}

std::vector<api::ResourceSlice> build(const discovery::Machine& machine,
                                      const SliceOptions& options) {
    auto slices = buildResourceSlices(machine, options);
    EXPECT_TRUE(slices.ok()) << slices.error().message;
    return slices.ok() ? slices.value() : std::vector<api::ResourceSlice>{};
}

std::vector<const api::Device*> allDevices(const std::vector<api::ResourceSlice>& slices) {
    std::vector<const api::Device*> out;
    for (const auto& slice : slices) {
        for (const auto& device : slice.devices)
            out.push_back(&device);
    }
    return out;
}

// Pointers into a temporary would dangle: callers must keep the slices alive.
std::vector<const api::Device*> allDevices(std::vector<api::ResourceSlice>&&) = delete;

const api::Device* deviceNamed(const std::vector<api::ResourceSlice>& slices,
                               const std::string& name) {
    for (const auto* device : allDevices(slices)) {
        if (device->name == name)
            return device;
    }
    return nullptr;
}

const api::AttributeValue* attribute(const api::Device& device, const std::string& name) {
    auto it = device.attributes.find(name);
    return it == device.attributes.end() ? nullptr : &it->second;
}

TEST(Slices, BigMachineRespectsEveryLimit) {
    auto machine = loadMachine("big-2s-8n");
    auto slices = build(machine, individualOptionsFor("big"));
    size_t devices = 0;
    std::set<std::string> names;
    for (const auto& slice : slices) {
        EXPECT_TRUE(slice.devices.empty() || slice.sharedCounters.empty()) << slice.name;
        EXPECT_LE(slice.sharedCounters.size(), SliceLimits::kCounterSetsPerSlice);
        bool advanced = false;
        for (const auto& device : slice.devices) {
            advanced = advanced || device.usesAdvancedFeatures();
            EXPECT_TRUE(validateDevice(device).ok()) << validateDevice(device).error().message;
            EXPECT_TRUE(names.insert(device.name).second) << "duplicate " << device.name;
        }
        EXPECT_LE(slice.devices.size(), advanced ? 64u : 128u) << slice.name;
        devices += slice.devices.size();
        EXPECT_EQ(slice.pool.resourceSliceCount, static_cast<std::int64_t>(slices.size()));
    }
    // 8 GPUs, 8 PFs, 512 VFs, 8 per-NUMA CPU devices.
    EXPECT_EQ(devices, 536u);
}

TEST(Slices, SliceNamesSortInPreferenceOrder) {
    auto machine = loadMachine("big-2s-8n");
    auto slices = build(machine, individualOptionsFor("big"));
    ASSERT_GT(slices.size(), 2u);
    for (size_t i = 1; i < slices.size(); ++i)
        EXPECT_LT(slices[i - 1].name, slices[i].name);
    EXPECT_EQ(slices[0].name, "big-numa.dra.dev-00000");
    EXPECT_FALSE(slices[0].sharedCounters.empty());  // counter sets come first
}

TEST(Slices, OutputIsDeterministic) {
    auto machine = loadMachine("big-2s-8n");
    auto options = optionsFor("big");
    options.numaForm = topology::NumaForm::List;
    EXPECT_EQ(api::toJsonList(build(machine, options)).dump(),
              api::toJsonList(build(loadMachine("big-2s-8n"), options)).dump());
}

TEST(Slices, VirtualFunctionsComeBeforeTheirPhysicalFunctions) {
    auto machine = loadMachine("sriov-nic");
    const auto slices = build(machine, optionsFor("n"));
    auto devices = allDevices(slices);
    int lastVf = -1, firstPf = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
        const auto* role = attribute(*devices[i], "sriovRole");
        if (role == nullptr)
            continue;
        if (std::get<std::string>(*role) == "vf")
            lastVf = static_cast<int>(i);
        if (std::get<std::string>(*role) == "pf" && firstPf < 0)
            firstPf = static_cast<int>(i);
    }
    ASSERT_GE(lastVf, 0);
    ASSERT_GE(firstPf, 0);
    EXPECT_LT(lastVf, firstPf);
}

TEST(Slices, DeviceNamesDeriveFromThePciAddress) {
    auto machine = loadMachine("epyc-2s-nps4");
    auto slices = build(machine, optionsFor("n"));
    for (const auto* device : allDevices(slices)) {
        const auto* busId = attribute(*device, topology::kPciBusIdAttribute);
        if (busId == nullptr)
            continue;
        std::string expected = std::get<std::string>(*busId);
        for (char& c : expected)
            c = (c == ':' || c == '.') ? '-' : c;
        EXPECT_NE(device->name.find(expected), std::string::npos) << device->name;
    }
}

TEST(Slices, ScalarModePublishesIntNumaNode) {
    auto machine = loadMachine("epyc-2s-nps4");
    auto slices = build(machine, optionsFor("n"));
    for (const auto* device : allDevices(slices)) {
        if (const auto* numa = attribute(*device, topology::kNumaNodeAttribute)) {
            EXPECT_TRUE(std::holds_alternative<std::int64_t>(*numa)) << device->name;
        }
        EXPECT_FALSE(device->usesAdvancedFeatures()) << device->name;
    }
}

TEST(Slices, ListModePublishesTheSlitList) {
    auto machine = loadMachine("epyc-2s-nps4");
    auto options = optionsFor("n");
    options.numaForm = topology::NumaForm::List;
    auto slices = build(machine, options);
    bool sawGpu = false;
    for (const auto* device : allDevices(slices)) {
        const auto* type = attribute(*device, "type");
        const auto* numa = attribute(*device, topology::kNumaNodeAttribute);
        ASSERT_NE(type, nullptr);
        if (std::get<std::string>(*type) == "cpu") {
            // CPUs are their own node: scalar even in list mode.
            EXPECT_TRUE(std::holds_alternative<std::int64_t>(*numa)) << device->name;
            continue;
        }
        if (std::get<std::string>(*type) == "gpu" &&
            std::get<std::string>(*attribute(*device, "vendorID")) == "0x1002") {
            sawGpu = true;
            EXPECT_EQ(std::get<std::vector<std::int64_t>>(*numa),
                      (std::vector<std::int64_t>{5, 4, 6, 7}));
        }
    }
    EXPECT_TRUE(sawGpu);
}

TEST(Slices, ListModeGivesCpuDevicesTheirLocalPcieRoots) {
    auto machine = loadMachine("xeon-6320r-2s");
    auto options = optionsFor("n");
    options.numaForm = topology::NumaForm::List;
    auto slices = build(machine, options);
    const auto* cpu0 = deviceNamed(slices, "cpu-numa-0");
    ASSERT_NE(cpu0, nullptr);
    EXPECT_EQ(std::get<std::vector<std::string>>(*attribute(*cpu0, topology::kPcieRootAttribute)),
              (std::vector<std::string>{"pci0000:00", "pci0000:17", "pci0000:3a"}));
}

TEST(Slices, NoAffinityDevicesHaveNoNumaNode) {
    auto machine = loadMachine("vm-noaffinity");
    auto slices = build(machine, optionsFor("vm"));
    size_t pciDevices = 0;
    for (const auto* device : allDevices(slices)) {
        if (std::get<std::string>(*attribute(*device, "type")) == "cpu")
            continue;
        ++pciDevices;
        EXPECT_EQ(attribute(*device, topology::kNumaNodeAttribute), nullptr) << device->name;
        EXPECT_EQ(attribute(*device, "socket"), nullptr) << device->name;
    }
    EXPECT_GE(pciDevices, 2u);
}

TEST(Slices, CpuDevicePerNodeHasConsumableCapacity) {
    auto machine = loadMachine("epyc-2s-nps4");
    auto slices = build(machine, optionsFor("n"));
    const auto* cpu = deviceNamed(slices, "cpu-numa-3");
    ASSERT_NE(cpu, nullptr);
    EXPECT_TRUE(cpu->allowMultipleAllocations);
    EXPECT_EQ(cpu->capacity.at("cpu").value.value(), 8);
    EXPECT_EQ(cpu->capacity.at("memory").value.text(), "64Gi");
    ASSERT_TRUE(cpu->capacity.at("cpu").requestPolicy.has_value());
    EXPECT_EQ(std::get<std::int64_t>(*attribute(*cpu, topology::kNumaNodeAttribute)), 3);
    EXPECT_EQ(std::get<std::int64_t>(*attribute(*cpu, "socket")), 0);
}

TEST(Slices, CpuDevicesMapTheirCapacitiesToTheNodesAllocatableResources) {
    auto options = optionsFor("n");
    options.nodeAllocatableResources = true;
    auto slices = build(loadMachine("epyc-2s-nps4"), options);
    const auto* cpu = deviceNamed(slices, "cpu-numa-3");
    ASSERT_NE(cpu, nullptr);
    for (const char* resource : {"cpu", "memory"}) {
        const auto& mapping = cpu->nodeAllocatableResources.at(resource).mapping;
        ASSERT_TRUE(mapping.has_value()) << resource;
        EXPECT_EQ(mapping->capacityKey, resource);
        EXPECT_EQ(mapping->capacityMultiplier, api::Quantity::decimal(1));
        EXPECT_FALSE(mapping->deviceMultiplier.has_value());
        EXPECT_FALSE(cpu->nodeAllocatableResources.at(resource).overhead.has_value());
    }
    // Nothing else maps: a GPU's host memory is no guess to publish.
    for (const auto* device : allDevices(slices)) {
        if (std::get<std::string>(*attribute(*device, "type")) != "cpu") {
            EXPECT_TRUE(device->nodeAllocatableResources.empty()) << device->name;
        }
    }
}

TEST(Slices, WithoutTheOptionNoDeviceMapsNodeResources) {
    const auto slices = build(loadMachine("epyc-2s-nps4"), optionsFor("n"));
    for (const auto* device : allDevices(slices))
        EXPECT_TRUE(device->nodeAllocatableResources.empty()) << device->name;
}

TEST(Slices, BudgetDevicesHaveNoCapacityToMap) {
    auto options = optionsFor("n");
    options.nodeAllocatableResources = true;
    options.sharedConsumableCapacity = true;
    const auto slices = build(loadMachine("xeon-6320r-2s"), options);
    for (const auto* device : allDevices(slices))
        EXPECT_TRUE(device->nodeAllocatableResources.empty()) << device->name;
}

TEST(Slices, OfflineCpusAreNotCounted) {
    auto machine = loadMachine("offline-cpus");
    auto slices = build(machine, optionsFor("n"));
    const auto* cpu = deviceNamed(slices, "cpu-numa-0");
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->capacity.at("cpu").value.value(), 6);
}

TEST(Slices, SriovPfCounterSetIsSharedByPfAndVfs) {
    auto machine = loadMachine("sriov-nic");
    auto slices = build(machine, individualOptionsFor("n"));
    std::vector<api::CounterSet> sets;
    for (const auto& slice : slices)
        sets.insert(sets.end(), slice.sharedCounters.begin(), slice.sharedCounters.end());
    ASSERT_EQ(sets.size(), 1u);
    EXPECT_EQ(sets[0].counters.at("vfs").value->value(), 8);
    EXPECT_EQ(sets[0].counters.at("bandwidth").value->text(), "100G");
    size_t vfs = 0;
    for (const auto* device : allDevices(slices)) {
        const auto* role = attribute(*device, "sriovRole");
        if (role == nullptr)
            continue;
        if (std::get<std::string>(*role) == "vf") {
            ++vfs;
            ASSERT_EQ(device->consumesCounters.size(), 1u);
            EXPECT_EQ(device->consumesCounters[0].counterSet, sets[0].name);
            EXPECT_EQ(device->consumesCounters[0].counters.at("vfs").value->value(), 1);
        } else if (!device->consumesCounters.empty()) {
            EXPECT_EQ(device->consumesCounters[0].counters.at("bandwidth").value->text(), "100G");
        }
    }
    EXPECT_EQ(vfs, 8u);
}

SliceOptions pooledOptionsFor(const std::string& node) {
    auto options = optionsFor(node);
    options.vfLayout = VfLayout::Pooled;
    return options;
}

std::vector<const api::Device*> devicesWithRole(const std::vector<api::ResourceSlice>& slices,
                                                const std::string& role) {
    std::vector<const api::Device*> out;
    for (const auto* device : allDevices(slices)) {
        const auto* value = attribute(*device, "sriovRole");
        if (value != nullptr && std::get<std::string>(*value) == role)
            out.push_back(device);
    }
    return out;
}

// sriov-nic: 8 VFs of one E810 PF at 100G, VFs 6 and 7 bound to vfio-pci, the others to iavf.
TEST(Slices, PooledVfsAreOneSharedDevicePerPfAndVfDriver) {
    auto machine = loadMachine("sriov-nic");
    auto slices = build(machine, pooledOptionsFor("n"));
    const auto pools = devicesWithRole(slices, "vf");
    ASSERT_EQ(pools.size(), 2u);
    const auto* iavf = deviceNamed(slices, "nic-0000-01-00-0-vfs-iavf");
    const auto* vfio = deviceNamed(slices, "nic-0000-01-00-0-vfs-vfio-pci");
    ASSERT_NE(iavf, nullptr);
    ASSERT_NE(vfio, nullptr);
    EXPECT_TRUE(iavf->allowMultipleAllocations);
    EXPECT_EQ(iavf->capacity.at("vfs").value.value(), 6);
    EXPECT_EQ(vfio->capacity.at("vfs").value.value(), 2);
    const auto& perClaim = iavf->capacity.at("vfs").requestPolicy;
    ASSERT_TRUE(perClaim.has_value());
    EXPECT_EQ(perClaim->validValues, std::vector<api::Quantity>{api::Quantity::decimal(1)});
    EXPECT_EQ(std::get<std::string>(*attribute(*vfio, "kernelDriver")), "vfio-pci");
    EXPECT_EQ(std::get<std::string>(*attribute(*vfio, "pfPciBusID")), "0000:01:00.0");
}

TEST(Slices, APooledVfCarriesNoAttributeOfOneVf) {
    auto machine = loadMachine("sriov-nic");
    auto slices = build(machine, pooledOptionsFor("n"));
    for (const auto* pool : devicesWithRole(slices, "vf")) {
        for (const char* name :
             {"ifName", "vfIndex", "iommuGroup", "rdmaDevice", topology::kPciBusIdAttribute})
            EXPECT_EQ(attribute(*pool, name), nullptr) << pool->name << " has " << name;
        EXPECT_NE(attribute(*pool, topology::kNumaNodeAttribute), nullptr) << pool->name;
        EXPECT_NE(attribute(*pool, topology::kPcieRootAttribute), nullptr) << pool->name;
    }
}

TEST(Slices, PooledVfsSplitTheLinkByVfCountAndExcludeThePfAsAWhole) {
    auto machine = loadMachine("sriov-nic");
    auto slices = build(machine, pooledOptionsFor("n"));
    const auto* iavf = deviceNamed(slices, "nic-0000-01-00-0-vfs-iavf");
    const auto* vfio = deviceNamed(slices, "nic-0000-01-00-0-vfs-vfio-pci");
    ASSERT_NE(iavf, nullptr);
    ASSERT_NE(vfio, nullptr);
    const auto& bandwidth = iavf->capacity.at("numa.dra.dev/bandwidth");
    EXPECT_EQ(bandwidth.value.text(), "75G");
    ASSERT_TRUE(bandwidth.requestPolicy.has_value());
    EXPECT_EQ(bandwidth.requestPolicy->defaultValue->text(), "12500M");  // 100G / 8 VFs
    EXPECT_EQ(vfio->capacity.at("numa.dra.dev/bandwidth").value.text(), "25G");
    // Each pool takes its VFs and its part of the link from the PF's set, as the PF takes all.
    ASSERT_EQ(iavf->consumesCounters.size(), 1u);
    EXPECT_EQ(iavf->consumesCounters[0].counterSet, "pf-0000-01-00-0");
    EXPECT_EQ(iavf->consumesCounters[0].counters.at("vfs").value->value(), 6);
    EXPECT_EQ(iavf->consumesCounters[0].counters.at("bandwidth").value->text(), "75G");
    EXPECT_EQ(vfio->consumesCounters[0].counters.at("vfs").value->value(), 2);
    const auto* pf = deviceNamed(slices, "nic-0000-01-00-0");
    ASSERT_NE(pf, nullptr);
    EXPECT_EQ(pf->consumesCounters[0].counters.at("vfs").value->value(), 8);
}

TEST(Slices, PooledVfsWithSharedConsumableCapacityDrawTheLinkPerClaim) {
    auto machine = loadMachine("sriov-nic");
    auto options = pooledOptionsFor("n");
    options.sharedConsumableCapacity = true;
    auto slices = build(machine, options);
    const auto* iavf = deviceNamed(slices, "nic-0000-01-00-0-vfs-iavf");
    ASSERT_NE(iavf, nullptr);
    EXPECT_FALSE(iavf->capacity.contains("numa.dra.dev/bandwidth"));
    const auto& drawn = iavf->consumesCounters.at(0).counters.at("bandwidth");
    EXPECT_FALSE(drawn.value.has_value());
    EXPECT_EQ(drawn.valueFromCapacityKey, "numa.dra.dev/bandwidth");
}

TEST(Slices, BigMachinePooledPublishesEightPoolsInsteadOf512Vfs) {
    auto machine = loadMachine("big-2s-8n");
    const auto individual = build(machine, individualOptionsFor("n"));
    const auto pooled = build(machine, pooledOptionsFor("n"));
    EXPECT_EQ(devicesWithRole(individual, "vf").size(), 512u);
    EXPECT_EQ(devicesWithRole(pooled, "vf").size(), 8u);
    EXPECT_EQ(allDevices(individual).size() - allDevices(pooled).size(), 504u);
}

TEST(Slices, VfsOfPoolFindsThePoolsVfsInThePfsOrder) {
    auto machine = loadMachine("sriov-nic");
    const auto vfio = vfsOfPool(machine, "nic-0000-01-00-0-vfs-vfio-pci");
    ASSERT_EQ(vfio.size(), 2u);
    EXPECT_EQ(vfio[0]->sriovVf->index, 6);
    EXPECT_EQ(vfio[1]->sriovVf->index, 7);
    EXPECT_EQ(vfsOfPool(machine, "nic-0000-01-00-0-vfs-iavf").size(), 6u);
    EXPECT_TRUE(vfsOfPool(machine, "nic-0000-01-00-0-vfs-mlx5-core").empty());
    EXPECT_TRUE(vfsOfPool(machine, "nic-0000-01-00-0").empty());
}

TEST(Slices, SharedConsumableCapacityMakesVfBandwidthRequestDriven) {
    auto machine = loadMachine("sriov-nic");
    auto options = optionsFor("n");
    options.sharedConsumableCapacity = true;
    auto slices = build(machine, options);
    std::map<std::string, api::CounterSet> sets;
    for (const auto& slice : slices) {
        for (const auto& set : slice.sharedCounters)
            sets[set.name] = set;
    }
    ASSERT_TRUE(sets.count("numa-0"));
    EXPECT_TRUE(sets["numa-0"].counters.at("cpu").requestPolicy.has_value());
    const api::CounterSet* pfSet = nullptr;
    for (const auto& [name, set] : sets) {
        if (name.rfind("pf-", 0) == 0)
            pfSet = &set;
    }
    ASSERT_NE(pfSet, nullptr);
    const auto& bandwidth = pfSet->counters.at("bandwidth");
    ASSERT_TRUE(bandwidth.requestPolicy.has_value());
    EXPECT_EQ(bandwidth.requestPolicy->validRange->max->text(), "100G");
    for (const auto* device : allDevices(slices)) {
        const auto* role = attribute(*device, "sriovRole");
        if (role == nullptr || std::get<std::string>(*role) != "vf")
            continue;
        EXPECT_EQ(device->consumesCounters[0].counters.at("bandwidth").valueFromCapacityKey,
                  "numa.dra.dev/bandwidth");
    }
}

TEST(Slices, SharedConsumableCapacityAddsPerRootCpuDevices) {
    auto machine = loadMachine("xeon-6320r-2s");
    auto options = optionsFor("n");
    options.sharedConsumableCapacity = true;
    auto slices = build(machine, options);
    const auto* root = deviceNamed(slices, "cpu-pci0000-17");
    ASSERT_NE(root, nullptr);
    EXPECT_EQ(std::get<std::string>(*attribute(*root, topology::kPcieRootAttribute)), "pci0000:17");
    EXPECT_EQ(root->consumesCounters.at(0).counterSet, "numa-0");
    EXPECT_EQ(root->consumesCounters.at(0).counters.at("cpu").valueFromCapacityKey,
              "numa.dra.dev/cpu");
    const auto* perNode = deviceNamed(slices, "cpu-numa-1");
    ASSERT_NE(perNode, nullptr);
    EXPECT_TRUE(perNode->capacity.empty());  // the node budget lives in the counter set
    EXPECT_EQ(perNode->consumesCounters.at(0).counterSet, "numa-1");
}

TEST(Slices, TaintsGoOnTheNamedDevices) {
    const auto machine = loadMachine("epyc-2s-nps4");
    const api::DeviceTaint taint{"numa.dra.dev/unhealthy", "aer-fatal", "NoSchedule"};
    auto slices = buildResourceSlices(machine, optionsFor("n"), {{"gpu-0000-21-00-0", taint}});
    ASSERT_TRUE(slices) << slices.error().message;
    EXPECT_EQ(deviceNamed(*slices, "gpu-0000-21-00-0")->taints,
              std::vector<api::DeviceTaint>{taint});
    EXPECT_TRUE(deviceNamed(*slices, "nic-0000-c1-00-0")->taints.empty());
}

TEST(Slices, WhenDevicesMayBeTaintedATaintChangesOneSliceOnly) {
    const auto machine = loadMachine("big-2s-8n");
    auto options = optionsFor("n");
    options.devicesMayBeTainted = true;
    const auto before = build(machine, options);
    for (const auto& slice : before)
        EXPECT_LE(slice.devices.size(), SliceLimits::kDevicesPerSliceAdvanced);
    const std::string victim = before.back().devices.front().name;
    auto after = buildResourceSlices(
        machine, options,
        {{victim, api::DeviceTaint{"numa.dra.dev/unhealthy", "removed", "None"}}});
    ASSERT_TRUE(after);
    ASSERT_EQ(after->size(), before.size());
    size_t changed = 0;
    for (size_t i = 0; i < before.size(); ++i)
        changed += before[i] == (*after)[i] ? 0 : 1;
    EXPECT_EQ(changed, 1U);
}

TEST(Slices, CounterSetsAreSplitEightPerSlice) {
    auto machine = loadMachine("big-2s-8n");
    auto options = optionsFor("big");
    options.sharedConsumableCapacity = true;
    auto slices = build(machine, options);
    size_t counterSlices = 0, sets = 0;
    for (const auto& slice : slices) {
        if (slice.sharedCounters.empty())
            continue;
        ++counterSlices;
        sets += slice.sharedCounters.size();
    }
    EXPECT_EQ(sets, 16u);  // 8 PFs + 8 NUMA nodes
    EXPECT_EQ(counterSlices, 2u);
}

TEST(Slices, LegacyNumaNamesOnlyWhenAskedFor) {
    auto machine = loadMachine("epyc-2s-nps4");
    auto plain = build(machine, optionsFor("n"));
    for (const auto* device : allDevices(plain)) {
        EXPECT_EQ(attribute(*device, "dra.net/numaNode"), nullptr);
    }
    auto options = optionsFor("n");
    options.legacyNumaAttributes = true;
    auto legacy = build(machine, options);
    EXPECT_NE(attribute(*deviceNamed(legacy, "cpu-numa-0"), "dra.cpu/numaNodeID"), nullptr);
    EXPECT_NE(attribute(*deviceNamed(legacy, "cpu-numa-0"), "dra.net/numaNode"), nullptr);
}

TEST(Slices, NoStandardNamesAreInvented) {
    auto machine = loadMachine("big-2s-8n");
    auto options = optionsFor("big");
    options.numaForm = topology::NumaForm::List;
    options.sharedConsumableCapacity = true;
    const std::set<std::string> standard{topology::kNumaNodeAttribute, topology::kPcieRootAttribute,
                                         topology::kPciBusIdAttribute};
    const auto slices = build(machine, options);
    for (const auto* device : allDevices(slices)) {
        for (const auto& [name, value] : device->attributes) {
            if (name.rfind("resource.kubernetes.io/", 0) == 0) {
                EXPECT_TRUE(standard.count(name)) << name;
            }
        }
    }
}

TEST(Slices, EmptyPoolStillPublishesOneSlice) {
    discovery::Machine machine;
    auto slices = build(machine, optionsFor("n"));
    ASSERT_EQ(slices.size(), 1u);
    EXPECT_TRUE(slices[0].devices.empty());
    EXPECT_EQ(slices[0].pool.resourceSliceCount, 1);
}

TEST(Slices, PlainDevicesFillSlicesOf128) {
    PoolContent content;
    for (int i = 0; i < 300; ++i) {
        api::Device device;
        device.name = "d-" + std::to_string(i);
        content.devices.push_back(device);
    }
    auto slices = splitIntoSlices(content, optionsFor("n"));
    ASSERT_TRUE(slices.ok());
    ASSERT_EQ(slices->size(), 3u);
    EXPECT_EQ((*slices)[0].devices.size(), 128u);
    EXPECT_EQ((*slices)[2].devices.size(), 44u);
}

TEST(Slices, AnAdvancedDeviceLowersItsSliceTo64) {
    PoolContent content;
    for (int i = 0; i < 100; ++i) {
        api::Device device;
        device.name = "d-" + std::to_string(i);
        if (i == 70)
            device.taints.push_back({"k", "v", "NoSchedule"});
        content.devices.push_back(device);
    }
    auto slices = splitIntoSlices(content, optionsFor("n"));
    ASSERT_TRUE(slices.ok());
    for (const auto& slice : *slices) {
        bool advanced = false;
        for (const auto& d : slice.devices)
            advanced = advanced || d.usesAdvancedFeatures();
        EXPECT_LE(slice.devices.size(), advanced ? 64u : 128u);
    }
}

TEST(Validation, RejectsBadDriverAndNodeNames) {
    SliceOptions options = optionsFor("Node_1");
    auto status = validateOptions(options);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("--node-name 'Node_1'"), std::string::npos);
    options = optionsFor("n");
    options.driverName = "not a domain";
    status = validateOptions(options);
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("--driver-name"), std::string::npos);
}

TEST(Validation, DeviceLimitsAreEnforced) {
    api::Device device;
    device.name = "d";
    for (int i = 0; i < 33; ++i)
        device.attributes["a" + std::to_string(i)] = std::int64_t{i};
    EXPECT_FALSE(validateDevice(device).ok());
    device.attributes.clear();
    device.attributes["model"] = std::string(65, 'x');
    EXPECT_FALSE(validateDevice(device).ok());
    device.attributes.clear();
    device.attributes["bad name!"] = true;
    EXPECT_FALSE(validateDevice(device).ok());
    device.attributes.clear();
    device.name = "Upper";
    EXPECT_FALSE(validateDevice(device).ok());
}

TEST(SliceName, StaysWithinTheNameLimit) {
    std::string longNode = std::string(60, 'a');
    for (int i = 0; i < 3; ++i)
        longNode += "." + std::string(60, 'b');  // 243 characters
    const std::string name = sliceName(longNode, "numa.dra.dev", 3);
    EXPECT_LE(name.size(), 253u);
    EXPECT_TRUE(isDnsSubdomain(name));
    EXPECT_NE(sliceName(longNode, "numa.dra.dev", 3), sliceName(longNode + "b", "numa.dra.dev", 3));
}

}  // namespace
}  // namespace numadra::slices
