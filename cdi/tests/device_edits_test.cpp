#include "numadra/cdi/device_edits.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <memory>

#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::cdi {
namespace {

using numadra::testing::generatedMachines;
using numadra::testing::loadMachine;
using numadra::testing::MockDev;
using numadra::testing::TempTree;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

bool isPublished(const discovery::PciFunction& f) {
    return f.kind == discovery::kKindGpu || f.kind == discovery::kKindAccelerator ||
           f.kind == discovery::kKindNic;
}

// The ResourceSlice device name (node/slices/: kind + address with ':' and '.' -> '-').
std::string deviceNameOf(const discovery::PciFunction& f) {
    std::string name = f.kind + "-" + f.address;
    std::replace(name.begin(), name.end(), ':', '-');
    std::replace(name.begin(), name.end(), '.', '-');
    return name;
}

std::string generatedProc(const std::string& machine) {
    return std::string(NUMADRA_GENERATED_SYSFS) + "/" + machine + "/proc";
}

struct RealDevice {
    std::int64_t major = -1;
    std::int64_t minor = -1;
};
RealDevice statOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return {static_cast<std::int64_t>(major(info.st_rdev)),
            static_cast<std::int64_t>(minor(info.st_rdev))};
}

// One generated machine with a mocked /dev (minus `omit`) and its generated /proc.
class Host {
  public:
    explicit Host(const std::string& machineName, const std::set<std::string>& omit = {})
        : machine_(loadMachine(machineName)),
          dev_(numadra::testing::makeDevTree(machine_, tree_, "dev", omit)),
          host_(HostRoots{dev_.root, generatedProc(machineName)}) {}

    const discovery::PciFunction& function(const std::string& address) const {
        const auto* f = machine_.pciFunction(address);
        EXPECT_NE(f, nullptr) << address;
        static const discovery::PciFunction kNone;
        return f == nullptr ? kNone : *f;
    }
    Result<ContainerEdits> edits(const std::string& address) const {
        const auto& f = function(address);
        return pciDeviceEdits(f, deviceNameOf(f), host_);
    }
    std::vector<std::string> paths(const std::string& address) const {
        auto result = edits(address);
        EXPECT_TRUE(result.ok()) << result.error().message;
        std::vector<std::string> out;
        if (result.ok()) {
            for (const auto& node : result->deviceNodes)
                out.push_back(node.path);
        }
        return out;
    }
    const discovery::Machine& machine() const { return machine_; }
    const MockDev& dev() const { return dev_; }
    const HostDeviceNodes& host() const { return host_; }
    const TempTree& tree() const { return tree_; }

  private:
    TempTree tree_;
    discovery::Machine machine_;
    MockDev dev_;
    HostDeviceNodes host_;
};

const DeviceNode* nodeAt(const ContainerEdits& edits, const std::string& path) {
    for (const auto& node : edits.deviceNodes) {
        if (node.path == path)
            return &node;
    }
    return nullptr;
}

// ---- every machine -----------------------------------------------------------------------------

TEST(CdiDeviceEdits, EveryPublishedDeviceOfEveryGeneratedMachineGetsValidEdits) {
    const auto machines = generatedMachines();
    ASSERT_GE(machines.size(), 18u);
    size_t devices = 0;
    for (const auto& name : machines) {
        SCOPED_TRACE(name);
        Host host(name);
        for (const auto& f : host.machine().pci) {
            if (!isPublished(f))
                continue;
            SCOPED_TRACE(f.address);
            auto edits = pciDeviceEdits(f, deviceNameOf(f), host.host());
            ASSERT_TRUE(edits.ok()) << edits.error().message;
            for (const auto& node : edits->deviceNodes) {
                ASSERT_TRUE(node.path.starts_with("/dev/")) << node.path;
                const auto target = host.dev().targets.find(node.path.substr(5));
                ASSERT_NE(target, host.dev().targets.end()) << node.path;
                const RealDevice real = statOf(target->second);
                EXPECT_EQ(node.type, "c") << node.path;
                EXPECT_EQ(node.major, real.major) << node.path;
                EXPECT_EQ(node.minor, real.minor) << node.path;
                EXPECT_EQ(node.hostPath, "") << node.path;
                EXPECT_EQ(node.permissions, "") << node.path;
            }
            EXPECT_EQ(edits->env.front(), envPrefix(deviceNameOf(f)) + "PCI_BUS_ID=" + f.address);
            Spec spec{"", "numa.dra.dev/claim", {{"c0ffee00-" + deviceNameOf(f), *edits}}, {}};
            Status valid = validate(spec);
            EXPECT_TRUE(valid) << valid.error().message;
            EXPECT_EQ(minimumVersion(spec), "0.3.0");  // nothing here needs more
            ++devices;
        }
    }
    EXPECT_GT(devices, 500u);  // big-2s-8n alone has 512 VFs
}

// ---- NVIDIA ------------------------------------------------------------------------------------

TEST(CdiNvidiaEdits, GetOnlyTheGpuNodeWithTheMinorFromProc) {
    Host host("epyc-2s-nps4");
    EXPECT_THAT(host.paths("0000:21:00.0"), ElementsAre("/dev/nvidia0"));
}

TEST(CdiNvidiaEdits, TheControlNodesAreTheHostsSharedNodes) {
    Host host("epyc-2s-nps4");
    auto edits = nvidiaControlEdits(host.host());
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    std::vector<std::string> paths;
    for (const auto& node : edits->deviceNodes)
        paths.push_back(node.path);
    EXPECT_THAT(paths, ElementsAre("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"));
    EXPECT_TRUE(edits->env.empty());
}

TEST(CdiNvidiaEdits, OnlyNvidiaBoundNvidiaGpusUseTheControlNodes) {
    Host host("epyc-2s-nps4");
    EXPECT_TRUE(usesNvidiaControlNodes(host.function("0000:21:00.0")));   // H100, nvidia
    EXPECT_FALSE(usesNvidiaControlNodes(host.function("0000:a3:00.0")));  // MI300X, amdgpu
}

TEST(CdiNvidiaEdits, TheMinorPicksTheNodeOfThatGpu) {
    Host host("gpu4-nic");
    auto edits = host.edits("0000:ba:00.0");  // the fourth GPU in address order
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    const DeviceNode* gpu = nodeAt(*edits, "/dev/nvidia3");
    ASSERT_NE(gpu, nullptr);
    const RealDevice real = statOf(host.dev().targets.at("nvidia3"));
    EXPECT_EQ(gpu->major, real.major);
    EXPECT_EQ(gpu->minor, real.minor);
    EXPECT_EQ(nodeAt(*edits, "/dev/nvidia0"), nullptr);
    EXPECT_THAT(edits->env, ::testing::Contains("NUMADRA_GPU_0000_BA_00_0_NVIDIA_MINOR=3"));
}

TEST(CdiNvidiaEdits, EnvNamesBusRootNodeAndMinorInOrder) {
    Host host("epyc-2s-nps4");
    auto edits = host.edits("0000:21:00.0");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_THAT(edits->env, ElementsAre("NUMADRA_GPU_0000_21_00_0_PCI_BUS_ID=0000:21:00.0",
                                        "NUMADRA_GPU_0000_21_00_0_PCIE_ROOT=pci0000:20",
                                        "NUMADRA_GPU_0000_21_00_0_NUMA_NODE=1",
                                        "NUMADRA_GPU_0000_21_00_0_NVIDIA_MINOR=0"));
}

TEST(CdiNvidiaEdits, LeaveOutTheUvmNodesWhenTheHostHasNone) {
    Host host("epyc-2s-nps4", {"nvidia-uvm", "nvidia-uvm-tools"});
    auto edits = nvidiaControlEdits(host.host());
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    ASSERT_EQ(edits->deviceNodes.size(), 1u);
    EXPECT_EQ(edits->deviceNodes[0].path, "/dev/nvidiactl");
}

TEST(CdiNvidiaEdits, NoControlNodesOnTheHostGiveEmptyEdits) {
    Host host("epyc-2s-nps4", {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"});
    auto edits = nvidiaControlEdits(host.host());
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_TRUE(edits->empty());
}

TEST(CdiNvidiaEdits, FailNamingTheMissingGpuNode) {
    Host host("xeon-6320r-2s", {"nvidia1"});
    auto edits = host.edits("0000:af:00.0");
    ASSERT_FALSE(edits.ok());
    EXPECT_EQ(edits.error().message,
              "device node /dev/nvidia1 (looked up at " + host.dev().root + "/nvidia1) is missing");
    EXPECT_EQ(edits.error().errnoValue, ENOENT);
}

TEST(CdiNvidiaEdits, FailNamingTheProcFileWhenTheDriverDoesNotListTheGpu) {
    Host generated("epyc-2s-nps4");
    TempTree proc;
    proc.dir("driver/nvidia/gpus");
    HostDeviceNodes host(HostRoots{generated.dev().root, proc.root()});
    const auto& f = generated.function("0000:21:00.0");
    auto edits = pciDeviceEdits(f, deviceNameOf(f), host);
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("cannot read " + proc.root() +
                                                 "/driver/nvidia/gpus/0000:21:00.0/information"));
    EXPECT_EQ(edits.error().errnoValue, ENOENT);
}

TEST(CdiNvidiaMinor, ReadsTheGeneratedInformationFile) {
    HostDeviceNodes host(HostRoots{"/nonexistent", generatedProc("sparse-gpu-mem")});
    auto minor = host.nvidiaMinor("0035:04:00.0");
    ASSERT_TRUE(minor.ok()) << minor.error().message;
    EXPECT_EQ(*minor, 3);
}

TEST(CdiNvidiaMinor, RejectsAFileWithoutTheLine) {
    TempTree proc;
    proc.file("driver/nvidia/gpus/0000:01:00.0/information", "Model: \t\t Tesla T4\n");
    HostDeviceNodes host(HostRoots{"/dev", proc.root()});
    auto minor = host.nvidiaMinor("0000:01:00.0");
    ASSERT_FALSE(minor.ok());
    EXPECT_EQ(minor.error().message,
              proc.root() +
                  "/driver/nvidia/gpus/0000:01:00.0/information has no \"Device "
                  "Minor:\" line");
}

TEST(CdiNvidiaMinor, RejectsAValueThatIsNotANumber) {
    TempTree proc;
    proc.file("driver/nvidia/gpus/0000:01:00.0/information", "Device Minor: \t one\n");
    HostDeviceNodes host(HostRoots{"/dev", proc.root()});
    auto minor = host.nvidiaMinor("0000:01:00.0");
    ASSERT_FALSE(minor.ok());
    EXPECT_THAT(minor.error().message, HasSubstr("information: \"Device Minor:\" has the value "
                                                 "\"one\""));
}

TEST(CdiNvidiaMinor, RejectsTheControlDevicesMinor) {
    TempTree proc;
    proc.file("driver/nvidia/gpus/0000:01:00.0/information", "Device Minor: \t 255\n");
    HostDeviceNodes host(HostRoots{"/dev", proc.root()});
    EXPECT_FALSE(host.nvidiaMinor("0000:01:00.0").ok());
}

// ---- AMD ---------------------------------------------------------------------------------------

TEST(CdiAmdEdits, Mi300xGetsKfdAndItsRenderNodeButNotTheCard) {
    Host host("epyc-2s-nps4");
    EXPECT_THAT(host.paths("0000:a3:00.0"), ElementsAre("/dev/kfd", "/dev/dri/renderD129"));
}

TEST(CdiAmdEdits, EnvNamesTheRenderNode) {
    Host host("epyc-2s-nps4");
    auto edits = host.edits("0000:a3:00.0");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_THAT(edits->env, ElementsAre("NUMADRA_GPU_0000_A3_00_0_PCI_BUS_ID=0000:a3:00.0",
                                        "NUMADRA_GPU_0000_A3_00_0_PCIE_ROOT=pci0000:a0",
                                        "NUMADRA_GPU_0000_A3_00_0_NUMA_NODE=5",
                                        "NUMADRA_GPU_0000_A3_00_0_DRM_RENDER=/dev/dri/renderD129"));
}

TEST(CdiAmdEdits, FailNamingAMissingKfd) {
    Host host("epyc-2s-nps4", {"kfd"});
    auto edits = host.edits("0000:a3:00.0");
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("device node /dev/kfd (looked up at "));
}

TEST(CdiAmdEdits, FailNamingAMissingRenderNode) {
    Host host("epyc-2s-nps4", {"dri/renderD129"});
    auto edits = host.edits("0000:a3:00.0");
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("device node /dev/dri/renderD129 "));
}

// ---- other GPUs --------------------------------------------------------------------------------

TEST(CdiDrmEdits, IntelIgpuGetsItsCardAndRenderNode) {
    Host host("laptop");
    EXPECT_THAT(host.paths("0000:00:02.0"), ElementsAre("/dev/dri/card0", "/dev/dri/renderD128"));
}

TEST(CdiDrmEdits, EnvNamesCardAndRenderNode) {
    Host host("laptop");
    auto edits = host.edits("0000:00:02.0");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_THAT(edits->env, ::testing::IsSupersetOf(
                                {"NUMADRA_GPU_0000_00_02_0_DRM_CARD=/dev/dri/card0",
                                 "NUMADRA_GPU_0000_00_02_0_DRM_RENDER=/dev/dri/renderD128"}));
}

TEST(CdiDrmEdits, FailNamingAMissingCard) {
    Host host("laptop", {"dri/card0"});
    auto edits = host.edits("0000:00:02.0");
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("device node /dev/dri/card0 "));
}

TEST(CdiDrmEdits, AGpuWithoutAnyNodeIsAnErrorNamingIt) {
    discovery::PciFunction f;
    f.address = "0000:05:00.0";
    f.kind = discovery::kKindGpu;
    f.vendorId = 0x10de;
    f.kernelDriver = "";  // unbound: neither the nvidia nor a DRM rule gives it a node
    TempTree dev;
    dev.dir("dev");
    auto edits = pciDeviceEdits(f, "gpu-0000-05-00-0", HostDeviceNodes(HostRoots{dev.path("dev")}));
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("device gpu-0000-05-00-0 (0000:05:00.0)"));
    EXPECT_THAT(edits.error().message, HasSubstr("no DRM nodes"));
}

// ---- NICs --------------------------------------------------------------------------------------

TEST(CdiNicEdits, ConnectX7GetsItsUverbsAndRdmaCm) {
    Host host("epyc-2s-nps4");
    EXPECT_THAT(host.paths("0000:c1:00.0"),
                ElementsAre("/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"));
}

TEST(CdiNicEdits, EnvNamesTheInterfaceAndRdmaDevice) {
    Host host("epyc-2s-nps4");
    auto edits = host.edits("0000:c1:00.0");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_THAT(edits->env, ElementsAre("NUMADRA_NIC_0000_C1_00_0_PCI_BUS_ID=0000:c1:00.0",
                                        "NUMADRA_NIC_0000_C1_00_0_PCIE_ROOT=pci0000:c0",
                                        "NUMADRA_NIC_0000_C1_00_0_NUMA_NODE=6",
                                        "NUMADRA_NIC_0000_C1_00_0_INTERFACE=ens5f0np0",
                                        "NUMADRA_NIC_0000_C1_00_0_RDMA_DEVICE=mlx5_0"));
}

TEST(CdiNicEdits, UverbsMajorMinorComeFromTheHostNode) {
    Host host("gpu4-nic");
    auto edits = host.edits("0000:19:00.0");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    const DeviceNode* verbs = nodeAt(*edits, "/dev/infiniband/uverbs0");
    ASSERT_NE(verbs, nullptr);
    const RealDevice real = statOf(host.dev().targets.at("infiniband/uverbs0"));
    EXPECT_EQ(verbs->type, "c");
    EXPECT_EQ(verbs->major, real.major);
    EXPECT_EQ(verbs->minor, real.minor);
}

TEST(CdiNicEdits, RdmaCmIsLeftOutWhenTheHostHasNone) {
    Host host("epyc-2s-nps4", {"infiniband/rdma_cm"});
    EXPECT_THAT(host.paths("0000:c1:00.0"), ElementsAre("/dev/infiniband/uverbs0"));
}

TEST(CdiNicEdits, FailNamingAMissingUverbsNode) {
    Host host("epyc-2s-nps4", {"infiniband/uverbs0"});
    auto edits = host.edits("0000:c1:00.0");
    ASSERT_FALSE(edits.ok());
    EXPECT_EQ(edits.error().message, "device node /dev/infiniband/uverbs0 (looked up at " +
                                         host.dev().root + "/infiniband/uverbs0) is missing");
}

TEST(CdiNicEdits, ANicWithoutRdmaGetsEnvOnly) {
    Host host("sriov-nic");
    auto edits = host.edits("0000:01:02.0");  // VF 0, iavf
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_TRUE(edits->deviceNodes.empty());
    EXPECT_THAT(edits->env, ElementsAre("NUMADRA_NIC_0000_01_02_0_PCI_BUS_ID=0000:01:02.0",
                                        "NUMADRA_NIC_0000_01_02_0_PCIE_ROOT=pci0000:00",
                                        "NUMADRA_NIC_0000_01_02_0_NUMA_NODE=0",
                                        "NUMADRA_NIC_0000_01_02_0_INTERFACE=ens1f0v0"));
}

TEST(CdiNicEdits, NoNumaNodeVariableWithoutAffinity) {
    Host host("vm-noaffinity");
    auto edits = host.edits("0000:00:03.0");  // virtio-net, numa_node -1
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    for (const auto& entry : edits->env)
        EXPECT_THAT(entry, ::testing::Not(HasSubstr("NUMA_NODE")));
    EXPECT_THAT(edits->env, ::testing::Contains("NUMADRA_NIC_0000_00_03_0_INTERFACE=eth0"));
}

// ---- netDevices (CDI 1.1)
// ------------------------------------------------------------------------

TEST(CdiNetDeviceEdits, ANetdevVfMovesItsInterfaceUnderItsOwnName) {
    Host host("sriov-nic");
    EXPECT_THAT(netDeviceEdits(host.function("0000:01:02.0")),
                ElementsAre(NetDevice{"ens1f0v0", "ens1f0v0"}));
}

TEST(CdiNetDeviceEdits, PfsAndVfioVfsMoveNothing) {
    Host host("sriov-nic");
    EXPECT_TRUE(netDeviceEdits(host.function("0000:01:00.0")).empty());  // the PF
    ASSERT_EQ(host.function("0000:01:02.6").kernelDriver, "vfio-pci");
    EXPECT_TRUE(netDeviceEdits(host.function("0000:01:02.6")).empty());
}

// ---- vfio-pci ----------------------------------------------------------------------------------

TEST(CdiVfioEdits, VfioBoundVfsGetTheirGroupAndTheContainerNode) {
    Host host("sriov-nic");
    for (const auto* address : {"0000:01:02.6", "0000:01:02.7"}) {
        SCOPED_TRACE(address);
        const auto& f = host.function(address);
        ASSERT_EQ(f.kernelDriver, "vfio-pci");
        ASSERT_TRUE(f.iommuGroup.has_value());
        const std::string group = std::to_string(*f.iommuGroup);
        EXPECT_THAT(host.paths(address), ElementsAre("/dev/vfio/" + group, "/dev/vfio/vfio"));
        auto edits = host.edits(address);
        ASSERT_TRUE(edits.ok());
        EXPECT_THAT(edits->env,
                    ::testing::Contains(envPrefix(deviceNameOf(f)) + "VFIO_GROUP=" + group));
        for (const auto& entry : edits->env)
            EXPECT_THAT(entry, ::testing::Not(HasSubstr("INTERFACE")));
    }
}

TEST(CdiVfioEdits, FailNamingAMissingGroupNode) {
    Host probe("sriov-nic");
    const std::string group = std::to_string(*probe.function("0000:01:02.6").iommuGroup);
    Host host("sriov-nic", {"vfio/" + group});
    auto edits = host.edits("0000:01:02.6");
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("device node /dev/vfio/" + group + " "));
}

TEST(CdiVfioEdits, KernelsWithoutTheVfioContainerNodeStillWork) {
    Host host("sriov-nic", {"vfio/vfio"});  // iommufd-only kernel
    const auto& f = host.function("0000:01:02.6");
    auto edits = host.edits("0000:01:02.6");
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    ASSERT_EQ(edits->deviceNodes.size(), 1U);
    EXPECT_EQ(edits->deviceNodes[0].path, "/dev/vfio/" + std::to_string(*f.iommuGroup));
}

TEST(CdiVfioEdits, ANoIommuGroupUsesItsNoiommuNode) {
    discovery::PciFunction f;
    f.address = "0000:00:06.0";
    f.kind = discovery::kKindNic;
    f.kernelDriver = "vfio-pci";
    f.iommuGroup = 7;
    TempTree dev;
    dev.link("dev/vfio/noiommu-7", "/dev/null");
    auto edits = pciDeviceEdits(f, "nic-0000-00-06-0", HostDeviceNodes(HostRoots{dev.path("dev")}));
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    ASSERT_EQ(edits->deviceNodes.size(), 1U);
    EXPECT_EQ(edits->deviceNodes[0].path, "/dev/vfio/noiommu-7");
}

TEST(CdiVfioEdits, AFunctionWithoutIommuGroupIsAnError) {
    discovery::PciFunction f;
    f.address = "0000:00:06.0";
    f.kind = discovery::kKindGpu;
    f.kernelDriver = "vfio-pci";
    TempTree dev;
    dev.dir("dev");
    auto edits = pciDeviceEdits(f, "gpu-0000-00-06-0", HostDeviceNodes(HostRoots{dev.path("dev")}));
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("gpu-0000-00-06-0 (0000:00:06.0)"));
    EXPECT_THAT(edits.error().message, HasSubstr("no IOMMU group"));
}

// ---- kinds the driver does not publish ---------------------------------------------------------

TEST(CdiDeviceEdits, RejectAFunctionOfAnotherKind) {
    Host host("laptop");
    const auto& nvme = host.function("0000:01:00.0");
    auto edits = pciDeviceEdits(nvme, "nvme", host.host());
    ASSERT_FALSE(edits.ok());
    EXPECT_THAT(edits.error().message, HasSubstr("only gpu, accelerator and nic"));
}

// ---- HostDeviceNodes ---------------------------------------------------------------------------

TEST(CdiHostDeviceNodes, FollowsSymlinksToTheRealCharDevice) {
    TempTree tree;
    tree.link("dev/dri/renderD128", "/dev/null");
    HostDeviceNodes host(HostRoots{tree.path("dev")});
    auto node = host.node("dri/renderD128");
    ASSERT_TRUE(node.ok()) << node.error().message;
    const RealDevice real = statOf("/dev/null");
    EXPECT_EQ(*node, (DeviceNode{"/dev/dri/renderD128", "", "c", real.major, real.minor, ""}));
}

TEST(CdiHostDeviceNodes, APlainFileIsNotADeviceNode) {
    TempTree tree;
    tree.file("dev/kfd", "");
    HostDeviceNodes host(HostRoots{tree.path("dev")});
    auto node = host.node("kfd");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().message, "/dev/kfd (looked up at " + tree.path("dev/kfd") +
                                        ") exists but is not a device node");
}

TEST(CdiHostDeviceNodes, ADanglingSymlinkIsMissing) {
    TempTree tree;
    tree.link("dev/nvidiactl", "/nonexistent/nvidiactl");
    HostDeviceNodes host(HostRoots{tree.path("dev")});
    EXPECT_FALSE(host.exists("nvidiactl"));
    auto node = host.node("nvidiactl");
    ASSERT_FALSE(node.ok());
    EXPECT_EQ(node.error().errnoValue, ENOENT);
    EXPECT_THAT(node.error().message, HasSubstr("device node /dev/nvidiactl (looked up at "));
}

TEST(CdiHostDeviceNodes, ExistsForAPresentNode) {
    TempTree tree;
    tree.link("dev/nvidiactl", "/dev/zero");
    HostDeviceNodes host(HostRoots{tree.path("dev")});
    EXPECT_TRUE(host.exists("nvidiactl"));
    EXPECT_FALSE(host.exists("nvidia-uvm"));
}

// ---- env names ---------------------------------------------------------------------------------

TEST(CdiEnvPrefix, UpperCasesAndReplacesEverythingOutsideLettersAndDigits) {
    EXPECT_EQ(envPrefix("gpu-0000-3b-00-0"), "NUMADRA_GPU_0000_3B_00_0_");
    EXPECT_EQ(envPrefix("cpu.numa:1/x"), "NUMADRA_CPU_NUMA_1_X_");
    EXPECT_EQ(envPrefix("Nic9"), "NUMADRA_NIC9_");
}

// ---- CPU shares --------------------------------------------------------------------------------

TEST(CdiCpuShareEdits, NameCpusAsARangeListNodeAndMemory) {
    CpuShare share{"cpu-numa-1", std::nullopt, 1, {8, 0, 1, 2, 3}, 68719476736};
    EXPECT_THAT(cpuShareEdits(share).env,
                ElementsAre("NUMADRA_CPU_NUMA_1_CPUS=0-3,8", "NUMADRA_CPU_NUMA_1_NUMA_NODE=1",
                            "NUMADRA_CPU_NUMA_1_MEMORY=68719476736"));
}

TEST(CdiCpuShareEdits, LeaveOutMemoryWhenNoneWasConsumed) {
    CpuShare share{"cpu-numa-0", std::nullopt, 0, {4, 5}, std::nullopt};
    EXPECT_THAT(cpuShareEdits(share).env,
                ElementsAre("NUMADRA_CPU_NUMA_0_CPUS=4-5", "NUMADRA_CPU_NUMA_0_NUMA_NODE=0"));
}

TEST(CdiCpuShareEdits, LeaveOutMemoryWhenZeroWasConsumed) {
    // The scheduler records the request policy's default (0) for a claim that asked for none.
    CpuShare share{"cpu-numa-0", std::nullopt, 0, {4, 5}, 0};
    EXPECT_THAT(cpuShareEdits(share).env,
                ElementsAre("NUMADRA_CPU_NUMA_0_CPUS=4-5", "NUMADRA_CPU_NUMA_0_NUMA_NODE=0"));
}

TEST(CdiCpuShareEdits, PutTheShareIdIntoThePrefix) {
    CpuShare share{"cpu-numa-0", std::string("a1b2"), 0, {0}, std::nullopt};
    EXPECT_THAT(cpuShareEdits(share).env, ElementsAre("NUMADRA_CPU_NUMA_0_A1B2_CPUS=0",
                                                      "NUMADRA_CPU_NUMA_0_A1B2_NUMA_NODE=0"));
    EXPECT_TRUE(cpuShareEdits(share).deviceNodes.empty());
}

TEST(CdiCpuShareEdits, TwoSharesOfOneDeviceDoNotCollide) {
    auto a = cpuShareEdits({"cpu-numa-0", std::string("s1"), 0, {0, 1}, std::nullopt});
    auto b = cpuShareEdits({"cpu-numa-0", std::string("s2"), 0, {2, 3}, std::nullopt});
    for (const auto& entry : a.env) {
        const auto name = entry.substr(0, entry.find('='));
        for (const auto& other : b.env)
            EXPECT_NE(name, other.substr(0, other.find('=')));
    }
}

constexpr const char* kClaimUid = "5d0c6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f";
constexpr const char* kOtherClaimUid = "11111111-2222-3333-4444-555555555555";

TEST(ClaimVariable, NamesTheClaimInUpperCaseWithUnderscores) {
    EXPECT_EQ(claimVariable(kClaimUid),
              "NUMADRA_CLAIM_5D0C6C1E_2A3B_4C5D_8E9F_0A1B2C3D4E5F=5d0c6c1e-2a3b-4c5d-8e9f-"
              "0a1b2c3d4e5f");
}

TEST(ClaimVariable, IsReadBackFromAnEnvironmentAmongOtherVariables) {
    EXPECT_THAT(claimUidsInEnvironment({"PATH=/bin", claimVariable(kClaimUid), "NUMADRA_GPU_X=1",
                                        claimVariable(kOtherClaimUid), claimVariable(kClaimUid)}),
                ElementsAre(kOtherClaimUid, kClaimUid));
}

TEST(ClaimVariable, AVariableWhoseNameDoesNotMatchItsValueNamesNoClaim) {
    EXPECT_THAT(claimUidsInEnvironment({"NUMADRA_CLAIM_X=5d0c6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f",
                                        "NUMADRA_CLAIM_=", "NUMADRA_CLAIM_A"}),
                IsEmpty());
}

}  // namespace
}  // namespace numadra::cdi
