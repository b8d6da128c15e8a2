// The device preparer against mocked machines: real files in temp folders, a mocked /dev whose
// nodes link to real character devices, the generated /proc with NVIDIA device minors.
//
// Why one file of ~900 lines: one fixture (a mocked machine, temp folders, a mocked /dev) and
// the preparer's one contract (all or nothing, restore after a crash or a reboot), told case by
// case.

#include "numadra/prepare/preparer.hpp"

#include <gtest/gtest.h>
#include <sched.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "numadra/cdi/spec.hpp"
#include "numadra/common/files.hpp"
#include "numadra/common/text.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::prepare {
namespace {

using numadra::testing::TempTree;

constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kPool = "node-a";

std::map<std::string, api::Device> publishedDevices(
    const discovery::Machine& machine, slices::VfLayout vfLayout = slices::VfLayout::Individual) {
    slices::SliceOptions options;
    options.nodeName = kPool;
    options.vfLayout = vfLayout;
    std::map<std::string, api::Device> devices;
    for (auto& device : slices::buildPoolContent(machine, options).devices)
        devices.emplace(device.name, device);
    return devices;
}

std::vector<std::string> filesBelow(const std::string& folder) {
    std::vector<std::string> out;
    if (!std::filesystem::exists(folder))
        return out;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder))
        out.push_back(entry.path().string());
    return out;
}

ino_t inodeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::stat(path.c_str(), &info), 0) << path;
    return info.st_ino;
}

class PreparerTest : public ::testing::Test {
  protected:
    explicit PreparerTest(std::string machineName = "epyc-2s-nps4")
        : machineName_(std::move(machineName)) {}

    void SetUp() override {
        machine = numadra::testing::loadMachine(machineName_);
        devices = publishedDevices(machine);
        dev = numadra::testing::makeDevTree(machine, tree, "dev");
        open();
    }

    Options options(const std::string& bootId = "boot-1") const {
        Options o;
        o.driverName = kDriver;
        o.poolName = kPool;
        o.cdiDir = tree.path("cdi");
        o.metadataDir = tree.path("metadata");
        o.stateDir = tree.path("state");
        o.hostRoots = {dev.root,
                       std::string(NUMADRA_GENERATED_SYSFS) + "/" + machineName_ + "/proc"};
        o.bootId = bootId;
        o.cdiNetDevices = cdiNetDevices;
        if (!metadataVersions.empty())
            o.metadataVersions = metadataVersions;
        return o;
    }

    void open(const std::string& bootId = "boot-1") {
        preparer.reset();
        metrics = std::make_unique<metrics::Registry>();
        auto opened = Preparer::open(options(bootId), *metrics);
        ASSERT_TRUE(opened) << opened.error().message;
        preparer = std::move(opened).value();
    }

    NodeView node() const { return {machine, devices}; }

    static AllocatedDevice device(const std::string& request, const std::string& name) {
        return {request, kPool, name, std::nullopt, false, {}};
    }
    static AllocatedDevice cpuShare(const std::string& request, const std::string& name,
                                    const std::string& shareId, int cpus) {
        AllocatedDevice d{request, kPool, name, shareId, false, {}};
        d.consumedCapacity.emplace("cpu", api::Quantity::decimal(cpus));
        return d;
    }
    static ClaimAllocation claim(const std::string& uid, std::vector<AllocatedDevice> devices,
                                 const std::optional<std::string>& name = std::nullopt) {
        return {{"default", name.value_or("claim-" + uid), uid}, std::nullopt, std::move(devices)};
    }

    Result<std::vector<claims::PreparedDevice>> prepare(const ClaimAllocation& allocation) {
        return preparer->prepare(allocation, node());
    }

    std::string claimSpecPath(const std::string& uid) const {
        return tree.path("cdi/numa.dra.dev-claim_" + uid + ".json");
    }

    bool foldersEmpty() const {
        return filesBelow(tree.path("cdi")).empty() && filesBelow(tree.path("metadata")).empty() &&
               filesBelow(tree.path("state/checkpoints")).empty();
    }

    std::string machineName_;
    std::vector<std::string> metadataVersions;  // empty: the default
    bool cdiNetDevices = false;
    TempTree tree;
    discovery::Machine machine;
    std::map<std::string, api::Device> devices;
    numadra::testing::MockDev dev;
    std::unique_ptr<metrics::Registry> metrics;
    std::unique_ptr<Preparer> preparer;
};

const char* kUid = "0b0e2c1a-1111-4c2d-9e0f-000000000001";
const char* kGpu = "gpu-0000-21-00-0";  // NVIDIA H100, node 1
const char* kNic = "nic-0000-c1-00-0";  // ConnectX-7 with RDMA, node 6

TEST_F(PreparerTest, WritesAValidClaimSpecAndReturnsItsQualifiedNames) {
    auto prepared = prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)}));
    ASSERT_TRUE(prepared) << prepared.error().message;
    ASSERT_EQ(prepared->size(), 2U);
    EXPECT_EQ(
        (*prepared)[0].cdiDeviceIds,
        (std::vector<std::string>{std::string("numa.dra.dev/claim=") + kUid + "-" + kGpu,
                                  std::string("numa.dra.dev/claim=") + kUid + "-nvidia-control",
                                  std::string("numa.dra.dev/metadata=") + kUid + "_gpu"}));
    EXPECT_EQ((*prepared)[1].requestNames, std::vector<std::string>{"nic"});
    auto content = files::readFile(claimSpecPath(kUid));
    ASSERT_TRUE(content) << content.error().message;
    auto spec = cdi::parse(*content, claimSpecPath(kUid));
    ASSERT_TRUE(spec) << spec.error().message;
    EXPECT_TRUE(cdi::validate(*spec));
    EXPECT_EQ(spec->kind, "numa.dra.dev/claim");
    EXPECT_EQ(spec->cdiVersion, "0.5.0");  // device names start with the UID's digit
    ASSERT_EQ(spec->devices.size(), 3U);   // the GPU, the NIC, the GPU's control nodes
    const auto& nodes = spec->devices[0].containerEdits.deviceNodes;
    EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(),
                            [](const cdi::DeviceNode& n) { return n.path == "/dev/nvidia0"; }));
}

// The spec's devices by name, and the device node paths of one of them.
std::map<std::string, std::vector<std::string>> nodePathsByDevice(const std::string& specPath) {
    auto spec = cdi::parse(files::readFile(specPath).value(), specPath);
    EXPECT_TRUE(spec) << spec.error().message;
    std::map<std::string, std::vector<std::string>> out;
    if (spec) {
        for (const auto& device : spec->devices) {
            auto& paths = out[device.name];
            for (const auto& node : device.containerEdits.deviceNodes)
                paths.push_back(node.path);
        }
    }
    return out;
}

class PreparerFourGpuTest : public PreparerTest {
  protected:
    PreparerFourGpuTest() : PreparerTest("gpu4-nic") {}
};

TEST_F(PreparerFourGpuTest, TheNvidiaControlNodesAreInTheClaimSpecOnce) {
    const std::vector<std::string> gpus{"gpu-0000-18-00-0", "gpu-0000-3a-00-0"};
    auto prepared = prepare(claim(kUid, {device("a", gpus[0]), device("b", gpus[1])}));
    ASSERT_TRUE(prepared) << prepared.error().message;
    const std::string control = std::string(kUid) + "-nvidia-control";
    const auto nodes = nodePathsByDevice(claimSpecPath(kUid));
    ASSERT_EQ(nodes.count(control), 1U);
    EXPECT_EQ(nodes.at(control), (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm",
                                                           "/dev/nvidia-uvm-tools"}));
    EXPECT_EQ(nodes.at(std::string(kUid) + "-" + gpus[0]),
              std::vector<std::string>{"/dev/nvidia0"});
    EXPECT_EQ(nodes.at(std::string(kUid) + "-" + gpus[1]),
              std::vector<std::string>{"/dev/nvidia1"});
    // Each GPU names the control device, so a container given either one gets the nodes.
    for (const auto& device : *prepared) {
        EXPECT_EQ(device.cdiDeviceIds.at(1), std::string(kDriver) + "/claim=" + control)
            << device.deviceName;
    }
}

TEST_F(PreparerTest, AClaimWithoutNvidiaGpusHasNoControlDevice) {
    ASSERT_TRUE(prepare(claim(kUid, {device("nic", kNic)})));
    EXPECT_EQ(nodePathsByDevice(claimSpecPath(kUid)).count(std::string(kUid) + "-nvidia-control"),
              0U);
}

TEST_F(PreparerTest, AGpuPreparedBeforeTheControlDeviceKeepsItsNodesInline) {
    // A checkpoint written by a version that put the control nodes into every GPU's edits: the
    // kubelet holds that GPU's CDI ids, so a re-created spec must keep giving it the nodes.
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto store = state::CheckpointStore::open(tree.path("state")).value();
    auto record = store.load()->records.at(0);
    const std::string own = std::string(kDriver) + "/claim=" + kUid + "-" + kGpu;
    const std::string metadataId = std::string(kDriver) + "/metadata=" + kUid + "_gpu";
    record.devices.at(0).cdiDeviceIds = {own, metadataId};
    ASSERT_TRUE(store.save(record));
    std::filesystem::remove_all(tree.path("cdi"));
    open("boot-2");
    ASSERT_TRUE(preparer->restore(node()));
    const auto nodes = nodePathsByDevice(claimSpecPath(kUid));
    EXPECT_EQ(nodes.count(std::string(kUid) + "-nvidia-control"), 0U);
    EXPECT_EQ(nodes.at(std::string(kUid) + "-" + kGpu),
              (std::vector<std::string>{"/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm",
                                        "/dev/nvidia-uvm-tools"}));
    auto again = preparer->preparedClaim({"default", std::string("claim-") + kUid, kUid}, node());
    ASSERT_TRUE(again.has_value() && again->ok());
    EXPECT_EQ((**again)[0].cdiDeviceIds, (std::vector<std::string>{own, metadataId}));
}

TEST_F(PreparerTest, WritesOneMetadataFileAndSpecPerRequest) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu/big", kGpu), device("nic", kNic)})));
    const std::string file = tree.path("metadata/default_claim-") + kUid + "/gpu/metadata.json";
    auto content = files::readFile(file);
    ASSERT_TRUE(content) << content.error().message;
    auto object = metadata::decodeStream(*content, file);
    ASSERT_TRUE(object) << object.error().message;
    EXPECT_EQ(object->generation, 1);
    EXPECT_EQ(object->requestName, "gpu/big");
    ASSERT_EQ(object->devices.size(), 1U);
    EXPECT_EQ(object->devices[0].attributes, devices.at(kGpu).attributes);
    EXPECT_TRUE(files::exists(tree.path("cdi/numa.dra.dev_metadata_") + kUid + "_gpu.json"));
    EXPECT_TRUE(files::exists(tree.path("cdi/numa.dra.dev_metadata_") + kUid + "_nic.json"));
}

TEST_F(PreparerTest, NicMetadataCarriesTheNetworkData) {
    ASSERT_TRUE(prepare(claim(kUid, {device("nic", kNic)})));
    const std::string file = tree.path("metadata/default_claim-") + kUid + "/nic/metadata.json";
    auto object = metadata::decodeStream(files::readFile(file).value(), file);
    ASSERT_TRUE(object) << object.error().message;
    ASSERT_TRUE(object->devices.at(0).networkData.has_value());
    EXPECT_EQ(object->devices[0].networkData->interfaceName, "ens5f0np0");
    EXPECT_EQ(object->devices[0].networkData->hardwareAddress, "b8:ce:f6:ce:7c:d7");
}

TEST_F(PreparerTest, RecordsTheClaimAsCompletedInTheCheckpoint) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto store = state::CheckpointStore::open(tree.path("state"));
    auto loaded = store->load();
    ASSERT_TRUE(loaded);
    ASSERT_EQ(loaded->records.size(), 1U);
    const auto& record = loaded->records[0];
    EXPECT_EQ(record.state, state::ClaimState::PrepareCompleted);
    EXPECT_EQ(record.bootId, "boot-1");
    EXPECT_EQ(record.devices.at(0).pciAddress, "0000:21:00.0");
    EXPECT_EQ(record.devices.at(0).vendorId, 0x10de);
    EXPECT_EQ(record.files.size(), 3U);
}

TEST_F(PreparerTest, RepeatedPrepareReturnsTheSameAnswer) {
    auto first = prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)}));
    auto second = prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)}));
    ASSERT_TRUE(first && second);
    ASSERT_EQ(first->size(), second->size());
    for (size_t i = 0; i < first->size(); ++i)
        EXPECT_EQ((*first)[i].cdiDeviceIds, (*second)[i].cdiDeviceIds);
}

TEST_F(PreparerTest, UnprepareLeavesTheFoldersEmpty) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)})));
    ASSERT_TRUE(preparer->unprepare({"default", std::string("claim-") + kUid, kUid}));
    EXPECT_TRUE(foldersEmpty()) << ::testing::PrintToString(filesBelow(tree.root()));
    EXPECT_EQ(preparer->preparedClaimCount(), 0U);
}

TEST_F(PreparerTest, UnprepareOfAnUnknownClaimSucceeds) {
    EXPECT_TRUE(preparer->unprepare({"default", "never", "1234"}));
    EXPECT_TRUE(preparer->unprepare({"default", "never", "../../etc"}));
}

TEST_F(PreparerTest, AnExclusiveDeviceIsNeverHandedToASecondClaim) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto second = prepare(claim("uid-2", {device("gpu", kGpu)}));
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("already prepared for claim default/claim-" +
                                          std::string(kUid)),
              std::string::npos)
        << second.error().message;
    EXPECT_FALSE(files::exists(claimSpecPath("uid-2")));
}

TEST_F(PreparerTest, CpuSharesGetDisjointWholeCores) {
    auto a = prepare(claim("uid-a", {cpuShare("cpu", "cpu-numa-0", "share-a", 4)}));
    auto b = prepare(claim("uid-b", {cpuShare("cpu", "cpu-numa-0", "share-b", 4)}));
    ASSERT_TRUE(a && b);
    auto spec = [&](const std::string& uid) {
        return cdi::parse(files::readFile(claimSpecPath(uid)).value(), uid).value();
    };
    auto cpusOf = [&](const std::string& uid) {
        const auto parsed = spec(uid);
        for (const auto& env : parsed.devices.at(0).containerEdits.env) {
            const auto eq = env.find('=');
            if (env.substr(0, eq).ends_with("_CPUS"))
                return env.substr(eq + 1);
        }
        return std::string();
    };
    // Node 0 holds cores {0,32} {1,33} {2,34} {3,35}: two whole cores each.
    EXPECT_EQ(cpusOf("uid-a"), "0-1,32-33");
    EXPECT_EQ(cpusOf("uid-b"), "2-3,34-35");
}

TEST_F(PreparerTest, ACpuShareLargerThanTheFreeCpusFailsAndLeavesNothing) {
    ASSERT_TRUE(prepare(claim("uid-a", {cpuShare("cpu", "cpu-numa-0", "share-a", 6)})));
    auto b = prepare(claim("uid-b", {cpuShare("cpu", "cpu-numa-0", "share-b", 4)}));
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("4 CPUs asked on NUMA node 0, 2 are free"), std::string::npos)
        << b.error().message;
    EXPECT_FALSE(files::exists(claimSpecPath("uid-b")));
}

TEST_F(PreparerTest, AMissingDeviceNodeFailsBeforeAnyFileIsWritten) {
    TempTree otherDev;
    dev = numadra::testing::makeDevTree(machine, otherDev, "dev", {"nvidia0"});
    open();
    auto prepared = prepare(claim(kUid, {device("nic", kNic), device("gpu", kGpu)}));
    ASSERT_FALSE(prepared);
    EXPECT_NE(prepared.error().message.find("/dev/nvidia0"), std::string::npos)
        << prepared.error().message;
    EXPECT_TRUE(foldersEmpty());
}

TEST_F(PreparerTest, AFailedWriteRemovesEverythingWrittenBefore) {
    // A folder where the claim's spec must go makes the last write fail.
    tree.dir(std::string("cdi/numa.dra.dev-claim_") + kUid + ".json/blocker");
    auto prepared = prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)}));
    ASSERT_FALSE(prepared);
    tree.remove(std::string("cdi/numa.dra.dev-claim_") + kUid + ".json");
    EXPECT_TRUE(foldersEmpty()) << ::testing::PrintToString(filesBelow(tree.root()));
    EXPECT_EQ(preparer->preparedClaimCount(), 0U);
    // The devices are free again.
    EXPECT_TRUE(prepare(claim("uid-2", {device("gpu", kGpu)})));
}

TEST_F(PreparerTest, UnknownDeviceIsRefused) {
    auto prepared = prepare(claim(kUid, {device("gpu", "gpu-0000-ff-00-0")}));
    ASSERT_FALSE(prepared);
    EXPECT_NE(prepared.error().message.find("not published by this node"), std::string::npos);
}

TEST_F(PreparerTest, ClaimNamesThatCouldEscapeTheMetadataFolderAreRefused) {
    for (const std::string& bad :
         std::vector<std::string>{"../x", "a/b", "", std::string(300, 'a')}) {
        auto prepared = prepare(claim(kUid, {device("gpu", kGpu)}, bad));
        EXPECT_FALSE(prepared) << bad;
    }
    EXPECT_TRUE(foldersEmpty());
}

TEST_F(PreparerTest, AfterARebootLostCdiFilesAreRecreatedIdentically) {
    auto first = prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)}));
    ASSERT_TRUE(first);
    const auto spec = files::readFile(claimSpecPath(kUid)).value();
    // /var/run/cdi is tmpfs: a reboot empties it, the checkpoint survives.
    std::filesystem::remove_all(tree.path("cdi"));
    std::filesystem::remove_all(tree.path("metadata"));
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->restored, 1U);
    EXPECT_EQ(report->fromEarlierBoot, 1U);
    EXPECT_EQ(report->filesRecreated, 5U);
    EXPECT_EQ(files::readFile(claimSpecPath(kUid)).value(), spec);
    auto again = preparer->preparedClaim({"default", std::string("claim-") + kUid, kUid}, node());
    ASSERT_TRUE(again.has_value() && again->ok());
    EXPECT_EQ((**again)[0].cdiDeviceIds, (*first)[0].cdiDeviceIds);
}

TEST_F(PreparerTest, ACheckpointHitRecreatesAMissingSpec) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    std::filesystem::remove(claimSpecPath(kUid));
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    EXPECT_TRUE(files::exists(claimSpecPath(kUid)));
}

TEST_F(PreparerTest, StaleMetadataIsRewrittenInPlaceWithTheNextGeneration) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    const std::string file = tree.path("metadata/default_claim-") + kUid + "/gpu/metadata.json";
    const auto inode = inodeOf(file);
    devices.at(kGpu).attributes["model"] = std::string("renamed by a driver upgrade");
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto object = metadata::decodeStream(files::readFile(file).value(), file);
    ASSERT_TRUE(object);
    EXPECT_EQ(object->generation, 2);
    EXPECT_EQ(inodeOf(file), inode);  // the container's bind mount still sees it
}

TEST_F(PreparerTest, AChangeOfMetadataVersionsRewritesThePreparedClaimsFile) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    const std::string file = tree.path("metadata/default_claim-") + kUid + "/gpu/metadata.json";
    const auto inode = inodeOf(file);
    metadataVersions = {metadata::kV1beta1, metadata::kV1alpha1};
    open();  // a restart with --metadata-versions v1beta1,v1alpha1
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->filesRecreated, 1U);
    const std::string content = files::readFile(file).value();
    EXPECT_NE(content.find("metadata.resource.k8s.io/v1beta1"), std::string::npos) << content;
    EXPECT_NE(content.find("metadata.resource.k8s.io/v1alpha1"), std::string::npos) << content;
    auto object = metadata::decodeStream(content, file);
    ASSERT_TRUE(object) << object.error().message;
    EXPECT_EQ(object->generation, 2);
    EXPECT_EQ(inodeOf(file), inode);  // rewritten in place: a running container sees it
    // Nothing changes a second time.
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    EXPECT_EQ(files::readFile(file).value(), content);
}

TEST_F(PreparerTest, RestartRollsBackAPrepareThatACrashInterrupted) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    // Turn the record back into "started", as if the process died before completing.
    auto store = state::CheckpointStore::open(tree.path("state")).value();
    auto record = store.load()->records.at(0);
    record.state = state::ClaimState::PrepareStarted;
    ASSERT_TRUE(store.save(record));
    // Killed in the middle of an atomic write: its temp file is still there.
    tree.file(std::string("cdi/.numa.dra.dev-claim_") + kUid + ".json.tmp.1a2b3c4d5e6f",
              "{\"cdiVer");
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report);
    EXPECT_EQ(report->rolledBack, 1U);
    EXPECT_TRUE(foldersEmpty()) << ::testing::PrintToString(filesBelow(tree.root()));
}

TEST_F(PreparerTest, AClaimWhoseDeviceIsGoneIsQuarantinedNotFatal) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    std::erase_if(machine.pci, [](const auto& f) { return f.address == "0000:21:00.0"; });
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 1U);
    EXPECT_EQ(metrics->value("numadra_checkpoint_quarantined_total", {"unusable"}), 1);
    EXPECT_EQ(preparer->preparedClaimCount(), 0U);
    // Unprepare still cleans up what the claim left.
    ASSERT_TRUE(preparer->unprepare({"default", std::string("claim-") + kUid, kUid}));
    EXPECT_TRUE(filesBelow(tree.path("cdi")).empty());
    EXPECT_TRUE(filesBelow(tree.path("state/quarantine")).empty());
}

TEST_F(PreparerTest, ADamagedCheckpointFileIsQuarantinedAndTheOthersRestored) {
    ASSERT_TRUE(prepare(claim("uid-a", {device("gpu", kGpu)})));
    ASSERT_TRUE(prepare(claim("uid-b", {device("nic", kNic)})));
    tree.file("state/checkpoints/uid-a.json", "{\"version\": 1, \"chec");
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->restored, 1U);
    EXPECT_EQ(report->quarantined, 1U);
    EXPECT_EQ(metrics->value("numadra_checkpoint_quarantined_total", {"damaged"}), 1);
    EXPECT_FALSE(filesBelow(tree.path("state/quarantine")).empty());
}

TEST_F(PreparerTest, TheRecordIsWrittenOnceAfterEveryFile) {
    std::vector<std::string> written;
    auto o = options();
    o.afterFileWrite = [&written](const std::string& path) { written.push_back(path); };
    preparer = Preparer::open(o, *metrics).value();
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)})));
    ASSERT_EQ(written.size(), 6U) << ::testing::PrintToString(written);
    EXPECT_EQ(written.back(), tree.path("state/checkpoints/") + kUid + ".json");
    for (size_t i = 0; i + 1 < written.size(); ++i)
        EXPECT_EQ(written[i].find("/state/"), std::string::npos) << written[i];
}

TEST_F(PreparerTest, AStartRemovesTheFilesOfAPrepareThatNeverGotItsRecord) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)})));
    // Killed (or the power cut) before the record: the files are there, no record.
    ASSERT_TRUE(files::removeFile(tree.path("state/checkpoints/") + kUid + ".json"));
    tree.file(std::string("cdi/.numa.dra.dev_metadata_") + kUid + "_gpu.json.tmp.1a2b3c4d5e6f",
              "{\"cdiVer");
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->leftoversRemoved, 5U);  // 3 specs, 1 temp file, 1 metadata folder
    EXPECT_TRUE(foldersEmpty()) << ::testing::PrintToString(filesBelow(tree.root()));
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)})));
}

TEST_F(PreparerTest, AStartRemovesTheTempFileOfAnInterruptedRepairAndKeepsTheClaim) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    const auto prepared = filesBelow(tree.root());
    tree.file(
        "metadata/default_claim-" + std::string(kUid) + "/gpu/.metadata.json.tmp.a1b2c3d4e5f6",
        "{\"kind");
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->leftoversRemoved, 1U);
    EXPECT_EQ(report->restored, 1U);
    EXPECT_EQ(filesBelow(tree.root()), prepared);
}

TEST_F(PreparerTest, AStartKeepsTheFilesOfPreparedAndQuarantinedClaims) {
    ASSERT_TRUE(prepare(claim("uid-a", {device("gpu", kGpu)})));
    ASSERT_TRUE(prepare(claim("uid-b", {device("nic", kNic)})));
    const auto before = filesBelow(tree.root() + "/cdi");
    tree.file("state/checkpoints/uid-a.json", "{\"version\": 1, \"chec");  // damaged
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 1U);
    EXPECT_EQ(report->leftoversRemoved, 0U);
    // uid-a's pod may still run: its files stay until the kubelet unprepares it.
    EXPECT_EQ(filesBelow(tree.root() + "/cdi"), before);
    EXPECT_TRUE(files::exists(tree.path("metadata/default_claim-uid-a/gpu/metadata.json")));
    ASSERT_TRUE(preparer->unprepare({"default", "claim-uid-a", "uid-a"}));
    EXPECT_FALSE(files::exists(tree.path("metadata/default_claim-uid-a")));
}

TEST_F(PreparerTest, AStartLeavesWhatIsNotTheDriversAlone) {
    tree.file("cdi/other.vendor-claim_" + std::string(kUid) + ".json", "{}");
    tree.file("cdi/numa.dra.dev-claim_not_a_uid!.json", "{}");
    tree.file("metadata/notes.txt", "kept");
    metadata::DeviceMetadata theirs;
    theirs.claimNamespace = "default";
    theirs.claimName = "theirs";
    theirs.claimUid = "uid-theirs";
    theirs.requestName = "gpu";
    theirs.devices.push_back({"other.vendor", "pool", "gpu-0", {}, std::nullopt});
    tree.file("metadata/default_theirs/gpu/metadata.json",
              metadata::encodeStream(theirs, {metadata::kV1alpha1}));
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->leftoversRemoved, 0U);
    EXPECT_EQ(filesBelow(tree.path("cdi")).size(), 2U);
    EXPECT_TRUE(files::exists(tree.path("metadata/notes.txt")));
    EXPECT_TRUE(files::exists(tree.path("metadata/default_theirs/gpu/metadata.json")));
}

TEST_F(PreparerTest, ANewClaimWithTheSameNameKeepsItsMetadataWhenTheOldOneIsUnprepared) {
    ASSERT_TRUE(prepare(claim("uid-old", {device("gpu", kGpu)}, "same")));
    ASSERT_TRUE(preparer->unprepare({"default", "same", "uid-old"}));
    ASSERT_TRUE(prepare(claim("uid-new", {device("gpu", kGpu)}, "same")));
    ASSERT_TRUE(preparer->unprepare({"default", "same", "uid-old"}));  // a late retry
    EXPECT_TRUE(files::exists(tree.path("metadata/default_same/gpu/metadata.json")));
}

std::string envOf(const cdi::Spec& spec, size_t device, const std::string& suffix) {
    for (const auto& env : spec.devices.at(device).containerEdits.env) {
        const auto eq = env.find('=');
        if (env.substr(0, eq).ends_with(suffix))
            return env.substr(eq + 1);
    }
    return {};
}

TEST_F(PreparerTest, ACpuDeviceWithoutAShareGetsTheWholeNode) {
    ASSERT_TRUE(prepare(claim("uid-a", {device("cpu", "cpu-numa-0")})));
    auto spec = cdi::parse(files::readFile(claimSpecPath("uid-a")).value(), "a").value();
    EXPECT_EQ(envOf(spec, 0, "_CPUS"), "0-3,32-35");
    EXPECT_FALSE(prepare(claim("uid-b", {cpuShare("cpu", "cpu-numa-0", "share-b", 1)})));
}

// cpu-numa-0 allows multiple allocations: the CPU split alone would refuse these too, so the
// message shows it is the guard that refuses a share next to a dedicated use and vice versa.
TEST_F(PreparerTest, AShareableDevicePreparedWithoutAShareIsNotSharedWithAnotherClaim) {
    ASSERT_TRUE(prepare(claim("uid-a", {device("cpu", "cpu-numa-0")})));
    auto b = prepare(claim("uid-b", {cpuShare("cpu", "cpu-numa-0", "share-b", 1)}));
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("already prepared for claim default/claim-uid-a"),
              std::string::npos)
        << b.error().message;
}

TEST_F(PreparerTest, AShareableDeviceWithASharePreparedIsNotPreparedWithoutAShare) {
    ASSERT_TRUE(prepare(claim("uid-a", {cpuShare("cpu", "cpu-numa-0", "share-a", 1)})));
    auto b = prepare(claim("uid-b", {device("cpu", "cpu-numa-0")}));
    ASSERT_FALSE(b);
    EXPECT_NE(b.error().message.find("already prepared for claim default/claim-uid-a"),
              std::string::npos)
        << b.error().message;
}

TEST_F(PreparerTest, AdminAccessSeesADeviceWithoutTakingIt) {
    ASSERT_TRUE(prepare(claim("uid-a", {device("gpu", kGpu)})));
    auto admin = device("gpu", kGpu);
    admin.adminAccess = true;
    EXPECT_TRUE(prepare(claim("uid-monitor", {admin})));
    EXPECT_FALSE(prepare(claim("uid-b", {device("gpu", kGpu)})));
}

TEST_F(PreparerTest, ASecondClaimWithTheSameNameWaitsForTheFirstToBeUnprepared) {
    ASSERT_TRUE(prepare(claim("uid-old", {device("gpu", kGpu)}, "same")));
    auto second = prepare(claim("uid-new", {device("nic", kNic)}, "same"));
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("must be unprepared first"), std::string::npos);
    ASSERT_TRUE(preparer->unprepare({"default", "same", "uid-old"}));
    EXPECT_TRUE(prepare(claim("uid-new", {device("nic", kNic)}, "same")));
}

TEST_F(PreparerTest, ReservationsSurviveARestart) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    open();
    ASSERT_TRUE(preparer->restore(node()));
    EXPECT_FALSE(prepare(claim("uid-2", {device("gpu", kGpu)})));
}

// A rolling update: the new driver pod's preparer (`next`) restored the checkpoint while the old
// one (`preparer`) kept serving; they take turns and sync before each claim.
class RollingUpdateTest : public PreparerTest {
  protected:
    void SetUp() override {
        PreparerTest::SetUp();
        nextMetrics = std::make_unique<metrics::Registry>();
        auto opened = Preparer::open(options(), *nextMetrics);
        ASSERT_TRUE(opened) << opened.error().message;
        next = std::move(opened).value();
        ASSERT_TRUE(next->restore(node()));
    }

    std::unique_ptr<metrics::Registry> nextMetrics;
    std::unique_ptr<Preparer> next;
};

TEST_F(RollingUpdateTest, TheNewInstanceUnpreparesAClaimTheOldOnePreparedAfterItStarted) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu), device("nic", kNic)})));
    auto synced = next->syncWithCheckpoint();
    ASSERT_TRUE(synced) << synced.error().message;
    EXPECT_EQ(*synced, 1U);
    ASSERT_TRUE(next->unprepare({"default", std::string("claim-") + kUid, kUid}));
    EXPECT_TRUE(foldersEmpty()) << ::testing::PrintToString(filesBelow(tree.root()));
}

TEST_F(RollingUpdateTest, TheNewInstanceNeverHandsOutADeviceTheOldOnePrepared) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    ASSERT_TRUE(next->syncWithCheckpoint());
    auto second = next->prepare(claim("uid-2", {device("gpu", kGpu)}), node());
    ASSERT_FALSE(second);
    EXPECT_NE(second.error().message.find("already prepared for claim"), std::string::npos)
        << second.error().message;
}

TEST_F(RollingUpdateTest, AClaimTheOtherInstanceUnpreparedIsForgotten) {
    ASSERT_TRUE(next->prepare(claim(kUid, {device("gpu", kGpu)}), node()));
    ASSERT_TRUE(preparer->syncWithCheckpoint());
    ASSERT_TRUE(preparer->unprepare({"default", std::string("claim-") + kUid, kUid}));
    auto synced = next->syncWithCheckpoint();
    ASSERT_TRUE(synced) << synced.error().message;
    EXPECT_EQ(*synced, 1U);
    EXPECT_EQ(next->preparedClaimCount(), 0U);
    EXPECT_TRUE(next->prepare(claim("uid-2", {device("gpu", kGpu)}), node()));
}

TEST_F(RollingUpdateTest, SyncingTwiceChangesNothing) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    ASSERT_TRUE(next->syncWithCheckpoint());
    auto again = next->syncWithCheckpoint();
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ(*again, 0U);
}

TEST_F(PreparerTest, OnlyOneOfTwoRacingClaimsGetsAnExclusiveDevice) {
    for (int round = 0; round < 20; ++round) {
        std::atomic<int> won{0};
        std::vector<std::thread> racers;
        for (int i = 0; i < 2; ++i) {
            racers.emplace_back([&, i] {
                const std::string uid = "r" + std::to_string(round) + "-" + std::to_string(i);
                if (prepare(claim(uid, {device("gpu", kGpu)})))
                    ++won;
            });
        }
        for (auto& racer : racers)
            racer.join();
        ASSERT_EQ(won, 1) << "round " << round;
        for (int i = 0; i < 2; ++i) {
            const std::string uid = "r" + std::to_string(round) + "-" + std::to_string(i);
            ASSERT_TRUE(preparer->unprepare({"default", "claim-" + uid, uid}));
        }
    }
    EXPECT_TRUE(foldersEmpty());
}

TEST_F(PreparerTest, ADeviceNodeMissingAtRestartKeepsTheClaimAndItsDevices) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    // After a reboot the GPU driver may create its nodes after we start.
    std::filesystem::remove(dev.root + "/nvidia0");
    std::filesystem::remove_all(tree.path("cdi"));
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->repairFailed, 1U);
    EXPECT_EQ(report->quarantined, 0U);
    EXPECT_EQ(preparer->preparedClaimCount(), 1U);
    EXPECT_FALSE(prepare(claim("uid-2", {device("gpu", kGpu)})));
    const claims::ClaimRef ref{"default", std::string("claim-") + kUid, kUid};
    auto early = preparer->preparedClaim(ref, node());
    ASSERT_TRUE(early.has_value());
    EXPECT_FALSE(early->ok());
    // The node appears: the next Prepare succeeds.
    std::filesystem::create_symlink(dev.targets.at("nvidia0"), dev.root + "/nvidia0");
    auto later = preparer->preparedClaim(ref, node());
    ASSERT_TRUE(later.has_value());
    EXPECT_TRUE(later->ok()) << later->error().message;
    EXPECT_TRUE(files::exists(claimSpecPath(kUid)));
}

TEST_F(PreparerTest, AQuarantinedClaimKeepsItsDevicesUntilUnprepared) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    // Another card of another model now sits at the address.
    for (auto& f : machine.pci) {
        if (f.address == "0000:21:00.0")
            f.deviceId = 0x1234;
    }
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report);
    EXPECT_EQ(report->quarantined, 1U);
    for (auto& f : machine.pci) {
        if (f.address == "0000:21:00.0")
            f.deviceId = 0x2330;
    }
    EXPECT_FALSE(prepare(claim("uid-2", {device("gpu", kGpu)})));
    ASSERT_TRUE(preparer->unprepare({"default", std::string("claim-") + kUid, kUid}));
    EXPECT_TRUE(filesBelow(tree.path("state/quarantine")).empty());
    EXPECT_TRUE(prepare(claim("uid-2", {device("gpu", kGpu)})));
}

TEST_F(PreparerTest, RecordsTheDevicesSerialNumber) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto loaded = state::CheckpointStore::open(tree.path("state"))->load();
    ASSERT_TRUE(loaded);
    ASSERT_EQ(loaded->records.size(), 1U);
    ASSERT_TRUE(machine.pciFunction("0000:21:00.0")->serialNumber.has_value());
    EXPECT_EQ(loaded->records[0].devices.at(0).serialNumber,
              *machine.pciFunction("0000:21:00.0")->serialNumber);
}

TEST_F(PreparerTest, ACardSwappedForTheSameModelIsQuarantined) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    const std::string prepared = *machine.pciFunction("0000:21:00.0")->serialNumber;
    // Another H100 now sits at the address: same vendor, device and kind, another serial.
    for (auto& f : machine.pci) {
        if (f.address == "0000:21:00.0")
            f.serialNumber = "00-11-22-33-44-55-66-77";
    }
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 1U);
    EXPECT_EQ(preparer->preparedClaimCount(), 0U);
    std::string reason;
    for (const auto& path : filesBelow(tree.path("state/quarantine"))) {
        if (path.ends_with(".reason"))
            reason = files::readFile(path).value();
    }
    EXPECT_NE(reason.find("0000:21:00.0"), std::string::npos) << reason;
    EXPECT_NE(reason.find("00-11-22-33-44-55-66-77"), std::string::npos) << reason;
    EXPECT_NE(reason.find(prepared), std::string::npos) << reason;
}

TEST_F(PreparerTest, ARepeatedPrepareOfASwappedCardFails) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    for (auto& f : machine.pci) {
        if (f.address == "0000:21:00.0")
            f.serialNumber = "00-11-22-33-44-55-66-77";
    }
    auto again = prepare(claim(kUid, {device("gpu", kGpu)}));
    ASSERT_FALSE(again);
    EXPECT_NE(again.error().message.find("00-11-22-33-44-55-66-77"), std::string::npos)
        << again.error().message;
}

// Only root reads the config space past the header: a restart without that right sees no
// serial, which says nothing about the card.
TEST_F(PreparerTest, ASerialNumberNoLongerReadableKeepsTheClaim) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    const std::string prepared = *machine.pciFunction("0000:21:00.0")->serialNumber;
    for (auto& f : machine.pci) {
        if (f.address == "0000:21:00.0")
            f.serialNumber.reset();
    }
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 0U);
    EXPECT_EQ(report->restored, 1U);
    // The record keeps the serial it was prepared with, for the next check that can read one.
    auto loaded = state::CheckpointStore::open(tree.path("state"))->load();
    ASSERT_TRUE(loaded);
    ASSERT_EQ(loaded->records.size(), 1U);
    EXPECT_EQ(loaded->records[0].devices.at(0).serialNumber, prepared);
}

// Records written before serial numbers were recorded have none: the rest of the identity holds.
TEST_F(PreparerTest, ARecordWithoutASerialNumberIsStillHonoured) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto store = state::CheckpointStore::open(tree.path("state")).value();
    auto record = store.load()->records.at(0);
    record.devices.at(0).serialNumber.clear();
    ASSERT_TRUE(store.save(record));
    open("boot-2");
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 0U);
    EXPECT_EQ(report->restored, 1U);
}

TEST_F(PreparerTest, ARollbackThatFailsIsQuarantinedNotFatal) {
    ASSERT_TRUE(prepare(claim(kUid, {device("gpu", kGpu)})));
    auto store = state::CheckpointStore::open(tree.path("state")).value();
    auto record = store.load()->records.at(0);
    record.state = state::ClaimState::PrepareStarted;
    record.files.push_back(tree.path("cdi/not-removable"));
    tree.file("cdi/not-removable/inside", "x");  // a folder: unlink fails
    ASSERT_TRUE(store.save(record));
    open();
    auto report = preparer->restore(node());
    ASSERT_TRUE(report) << report.error().message;
    EXPECT_EQ(report->quarantined, 1U);
}

// Runs `work` on a thread of its own mount namespace in which the test's folders are a
// read-only bind mount: the rest of the process (and the machine) keeps them writable.
// An empty string when that worked; else why the machine cannot do it.
std::string onReadOnlyFolders(const std::string& root, const std::function<void()>& work) {
    std::string problem;
    std::thread([&] {
        if (::unshare(CLONE_NEWNS) != 0)
            problem = std::string("unshare(CLONE_NEWNS): ") + std::strerror(errno);
        else if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                 ::mount(root.c_str(), root.c_str(), nullptr, MS_BIND, nullptr) != 0 ||
                 ::mount(nullptr, root.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY,
                         nullptr) != 0)
            problem = std::string("read-only bind mount: ") + std::strerror(errno);
        else
            work();
    }).join();
    return problem;
}

TEST_F(PreparerTest, ARollbackOnAReadOnlyFilesystemReportsNothingItNeverWrote) {
    std::ostringstream logged;
    auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(logged)));
    std::optional<Result<std::vector<claims::PreparedDevice>>> prepared;
    const std::string problem = onReadOnlyFolders(
        tree.root(), [&] { prepared = prepare(claim(kUid, {device("gpu", kGpu)})); });
    spdlog::set_default_logger(previous);
    if (!problem.empty())
        GTEST_SKIP() << "this machine cannot make a read-only mount: " << problem;
    ASSERT_TRUE(prepared.has_value());
    ASSERT_FALSE(*prepared);
    EXPECT_NE(prepared->error().message.find("Read-only file system"), std::string::npos)
        << prepared->error().message;
    // Nothing was written, so the rollback had nothing to undo and nothing to complain about.
    EXPECT_EQ(logged.str(), "");
    EXPECT_TRUE(foldersEmpty());
    EXPECT_TRUE(prepare(claim("uid-2", {device("gpu", kGpu)}))) << "the GPU was released";
}

TEST_F(PreparerTest, ANetdevMovedIntoThePodStaysInTheContainersView) {
    ASSERT_TRUE(prepare(claim(kUid, {device("nic", kNic)})));
    const auto spec = files::readFile(claimSpecPath(kUid)).value();
    for (auto& f : machine.pci) {
        if (f.address == "0000:c1:00.0")
            f.netdevs.clear();  // CNI moved it into the pod's network namespace
    }
    ASSERT_TRUE(prepare(claim(kUid, {device("nic", kNic)})));
    EXPECT_EQ(files::readFile(claimSpecPath(kUid)).value(), spec);
    const std::string file = tree.path("metadata/default_claim-") + kUid + "/nic/metadata.json";
    auto object = metadata::decodeStream(files::readFile(file).value(), file);
    ASSERT_TRUE(object);
    EXPECT_EQ(object->generation, 1);
    EXPECT_EQ(object->devices.at(0).networkData->interfaceName, "ens5f0np0");
}

// --cdi-net-devices: a netdev VF's interface is moved into the container (CDI 1.1 netDevices).
class PreparerSriovTest : public PreparerTest {
  protected:
    PreparerSriovTest() : PreparerTest("sriov-nic") {}
    static constexpr const char* kVf = "nic-0000-01-02-0";  // iavf, ens1f0v0

    cdi::Spec preparedSpec() {
        auto prepared = prepare(claim(kUid, {device("vf", kVf)}));
        EXPECT_TRUE(prepared) << (prepared ? "" : prepared.error().message);
        auto spec = cdi::parse(files::readFile(claimSpecPath(kUid)).value(), "claim spec");
        EXPECT_TRUE(spec) << (spec ? "" : spec.error().message);
        return spec ? *spec : cdi::Spec{};
    }
};

TEST_F(PreparerSriovTest, WithCdiNetDevicesAVfsInterfaceMovesAndTheSpecIsAtOneOneZero) {
    cdiNetDevices = true;
    open();
    const cdi::Spec spec = preparedSpec();
    EXPECT_EQ(spec.cdiVersion, "1.1.0");
    ASSERT_EQ(spec.devices.size(), 1u);
    EXPECT_EQ(spec.devices[0].containerEdits.netDevices,
              (std::vector<cdi::NetDevice>{{"ens1f0v0", "ens1f0v0"}}));
}

TEST_F(PreparerSriovTest, WithoutItTheSpecMovesNothingAndStaysAtItsOldVersion) {
    const cdi::Spec spec = preparedSpec();
    EXPECT_EQ(spec.cdiVersion, "0.5.0");
    ASSERT_EQ(spec.devices.size(), 1u);
    EXPECT_TRUE(spec.devices[0].containerEdits.netDevices.empty());
}

TEST_F(PreparerSriovTest, AVfWhoseInterfaceMovedStillNamesItOnTheNextPrepare) {
    cdiNetDevices = true;
    open();
    (void)preparedSpec();
    const auto first = files::readFile(claimSpecPath(kUid)).value();
    for (auto& f : machine.pci) {
        if (f.address == "0000:01:02.0")
            f.netdevs.clear();  // the runtime moved it into the pod's network namespace
    }
    ASSERT_TRUE(prepare(claim(kUid, {device("vf", kVf)})));
    EXPECT_EQ(files::readFile(claimSpecPath(kUid)).value(), first);
}

// --vf-layout=pooled: claims get shares of a PF's VF pool, the VF chosen at Prepare.
class PreparerVfPoolTest : public PreparerTest {
  protected:
    PreparerVfPoolTest() : PreparerTest("sriov-nic") {}
    void SetUp() override {
        PreparerTest::SetUp();
        devices = publishedDevices(machine, slices::VfLayout::Pooled);
    }
    static constexpr const char* kVfioPool = "nic-0000-01-00-0-vfs-vfio-pci";  // VFs 6 and 7

    static AllocatedDevice vfShare(const std::string& shareId) {
        return {"vf", kPool, kVfioPool, shareId, false, {}};
    }
    std::string preparedVf(const std::string& uid) {
        auto store = state::CheckpointStore::open(tree.path("state"));
        auto loaded = store->load();
        EXPECT_TRUE(loaded);
        for (const auto& record : loaded->records) {
            if (record.claimUid == uid)
                return record.devices.at(0).pciAddress;
        }
        return {};
    }
};

TEST_F(PreparerVfPoolTest, TwoClaimsSharingAPoolGetDifferentVfs) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    ASSERT_TRUE(prepare(claim("uid-b", {vfShare("share-b")})));
    EXPECT_EQ(preparedVf("uid-a"), "0000:01:02.6");
    EXPECT_EQ(preparedVf("uid-b"), "0000:01:02.7");
}

TEST_F(PreparerVfPoolTest, AClaimBeyondThePoolsVfsFailsNamingThePool) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    ASSERT_TRUE(prepare(claim("uid-b", {vfShare("share-b")})));
    auto third = prepare(claim("uid-c", {vfShare("share-c")}));
    ASSERT_FALSE(third);
    EXPECT_NE(third.error().message.find("all 2 VFs of " + std::string(kVfioPool)),
              std::string::npos)
        << third.error().message;
    EXPECT_FALSE(files::exists(claimSpecPath("uid-c")));
}

TEST_F(PreparerVfPoolTest, AnUnpreparedClaimsVfGoesToTheNextClaim) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    ASSERT_TRUE(prepare(claim("uid-b", {vfShare("share-b")})));
    ASSERT_TRUE(preparer->unprepare({"default", "claim-uid-a", "uid-a"}));
    ASSERT_TRUE(prepare(claim("uid-c", {vfShare("share-c")})));
    EXPECT_EQ(preparedVf("uid-c"), "0000:01:02.6");
}

TEST_F(PreparerVfPoolTest, ARestartKeepsEachClaimsVf) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    ASSERT_TRUE(prepare(claim("uid-b", {vfShare("share-b")})));
    open();
    ASSERT_TRUE(preparer->unprepare({"default", "claim-uid-a", "uid-a"}));
    open();
    ASSERT_TRUE(prepare(claim("uid-c", {vfShare("share-c")})));
    EXPECT_EQ(preparedVf("uid-b"), "0000:01:02.7");
    EXPECT_EQ(preparedVf("uid-c"), "0000:01:02.6");
}

TEST_F(PreparerVfPoolTest, TheMetadataNamesTheChosenVf) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    const std::string file = tree.path("metadata/default_claim-uid-a/vf/metadata.json");
    auto object = metadata::decodeStream(files::readFile(file).value(), file);
    ASSERT_TRUE(object) << object.error().message;
    const auto& attributes = object->devices.at(0).attributes;
    ASSERT_TRUE(attributes.contains(topology::kPciBusIdAttribute));
    EXPECT_EQ(std::get<std::string>(attributes.at(topology::kPciBusIdAttribute)), "0000:01:02.6");
}

TEST_F(PreparerVfPoolTest, TheSpecGivesTheChosenVfsDeviceNode) {
    ASSERT_TRUE(prepare(claim("uid-a", {vfShare("share-a")})));
    auto spec = cdi::parse(files::readFile(claimSpecPath("uid-a")).value(), "claim spec");
    ASSERT_TRUE(spec) << spec.error().message;
    ASSERT_EQ(spec->devices.size(), 1u);
    EXPECT_EQ(spec->devices[0].name, "uid-a-" + std::string(kVfioPool) + "-share-a");
    const auto& nodes = spec->devices[0].containerEdits.deviceNodes;
    ASSERT_FALSE(nodes.empty());
    EXPECT_TRUE(nodes.front().path.starts_with("/dev/vfio/")) << nodes.front().path;
}

// 100 claims prepared and unprepared from 8 threads: nothing lost, nothing handed out twice.
class PreparerConcurrencyTest : public PreparerTest {
  protected:
    PreparerConcurrencyTest() : PreparerTest("big-2s-8n") {}
};

TEST_F(PreparerConcurrencyTest, HundredClaimsFromEightThreads) {
    std::vector<std::string> vfs;
    for (const auto& [name, device] : devices) {
        auto it = device.attributes.find("sriovRole");
        if (it != device.attributes.end() && std::get<std::string>(it->second) == "vf")
            vfs.push_back(name);
    }
    ASSERT_GE(vfs.size(), 50U);
    constexpr int kClaims = 100;
    auto allocationOf = [&](int i) {
        const std::string uid = "uid-" + std::to_string(i);
        if (i % 2 == 0)
            return claim(uid, {device("nic", vfs[static_cast<size_t>(i / 2)])});
        return claim(uid, {cpuShare("cpu", "cpu-numa-" + std::to_string(i % 8), "s-" + uid, 1)});
    };
    std::atomic<int> failures{0};
    auto runAll = [&](auto&& body) {
        std::vector<std::thread> threads;
        for (int t = 0; t < 8; ++t) {
            threads.emplace_back([&, t] {
                for (int i = t; i < kClaims; i += 8)
                    body(i);
            });
        }
        for (auto& thread : threads)
            thread.join();
    };
    runAll([&](int i) {
        if (!prepare(allocationOf(i)))
            ++failures;
    });
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(preparer->preparedClaimCount(), static_cast<size_t>(kClaims));
    auto store = state::CheckpointStore::open(tree.path("state")).value();
    auto loaded = store.load().value();
    ASSERT_EQ(loaded.records.size(), static_cast<size_t>(kClaims));
    std::set<int> cpus;
    size_t cpuShares = 0;
    for (const auto& record : loaded.records) {
        EXPECT_EQ(record.state, state::ClaimState::PrepareCompleted);
        for (const auto& d : record.devices) {
            cpus.insert(d.cpus.begin(), d.cpus.end());
            cpuShares += d.cpus.size();
        }
    }
    EXPECT_EQ(cpus.size(), cpuShares) << "a CPU was handed to two shares";
    runAll([&](int i) {
        const std::string uid = "uid-" + std::to_string(i);
        if (!preparer->unprepare({"default", "claim-" + uid, uid}))
            ++failures;
    });
    EXPECT_EQ(failures, 0);
    EXPECT_TRUE(foldersEmpty());
}

}  // namespace
}  // namespace numadra::prepare
