#include "numadra/daemon/claims.hpp"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "numadra/kube/errors.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::daemon {
namespace {

class MapClaimSource : public ClaimSource {
  public:
    std::map<std::string, api::Json> claims;
    std::function<void()> beforeAnswer = [] {};  // runs in every getClaim, unlocked
    std::atomic<int> gets{0};
    Result<api::Json> getClaim(const std::string& ns, const std::string& name, Deadline) override {
        ++gets;
        beforeAnswer();
        auto it = claims.find(ns + "/" + name);
        if (it == claims.end())
            return kube::errorFromHttp(404, "NotFound", "not found");
        return it->second;
    }
};

api::Json allocatedClaim(const std::string& uid, api::Json results) {
    return {{"metadata", {{"name", "c"}, {"namespace", "ns"}, {"uid", uid}}},
            {"status", {{"allocation", {{"devices", {{"results", std::move(results)}}}}}}}};
}

api::Json result(const std::string& request, const std::string& driver, const std::string& pool,
                 const std::string& device) {
    return {{"request", request}, {"driver", driver}, {"pool", pool}, {"device", device}};
}

constexpr const char* kGpu = "gpu-0000-21-00-0";
constexpr const char* kNic = "nic-0000-c1-00-0";

struct ClaimsTest : ::testing::Test {
    MapClaimSource source;
    Inventory inventory;
    metrics::Registry registry;
    numadra::testing::TempTree dirs;
    std::unique_ptr<prepare::Preparer> devices;
    std::unique_ptr<ClaimPreparer> preparer;
    const claims::ClaimRef ref{"ns", "c", "uid-1"};
    const claims::Deadline deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);

    void SetUp() override {
        declareClaimMetrics(registry);
        auto machine = numadra::testing::loadMachine("epyc-2s-nps4");
        slices::SliceOptions sliceOptions;
        sliceOptions.nodeName = "node-a";
        auto built = slices::buildResourceSlices(machine, sliceOptions);
        ASSERT_TRUE(built);
        const auto dev = numadra::testing::makeDevTree(machine, dirs, "dev");
        inventory.update(std::move(machine), std::move(built).value());
        prepare::Options options;
        options.driverName = "numa.dra.dev";
        options.poolName = "node-a";
        options.cdiDir = dirs.path("cdi");
        options.metadataDir = dirs.path("metadata");
        options.stateDir = dirs.path("state");
        options.hostRoots = {dev.root, std::string(NUMADRA_GENERATED_SYSFS) + "/epyc-2s-nps4/proc"};
        auto opened = prepare::Preparer::open(options, registry);
        ASSERT_TRUE(opened) << opened.error().message;
        devices = std::move(opened).value();
        preparer = std::make_unique<ClaimPreparer>(source, inventory, *devices, "numa.dra.dev",
                                                   "node-a", registry);
    }
};

TEST_F(ClaimsTest, ReturnsTheDriversDevicesWithTopLevelRequestNames) {
    auto results = api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu),
                                     result("net/fast", "numa.dra.dev", "node-a", kNic),
                                     result("cpu", "numa.dra.dev", "node-a", "cpu-numa-0"),
                                     result("other", "other.example.com", "node-a", "x")});
    results[2]["shareID"] = "share-1";
    results[2]["consumedCapacity"] = {{"cpu", "2"}};
    source.claims["ns/c"] = allocatedClaim("uid-1", results);
    auto prepared = preparer->prepare(ref, deadline);
    ASSERT_TRUE(prepared.error.empty()) << prepared.error;
    ASSERT_EQ(prepared.devices.size(), 3u);
    EXPECT_EQ(prepared.devices[0].deviceName, kGpu);
    EXPECT_EQ(prepared.devices[0].poolName, "node-a");
    EXPECT_EQ(prepared.devices[0].requestNames, (std::vector<std::string>{"gpu"}));
    EXPECT_EQ(prepared.devices[1].requestNames, (std::vector<std::string>{"net"}));
    EXPECT_EQ(prepared.devices[2].shareId, "share-1");
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"ok"}), 1);
}

TEST_F(ClaimsTest, APreparedClaimIsAnsweredWithoutTheApiServer) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    ASSERT_TRUE(preparer->prepare(ref, deadline).error.empty());
    source.claims.clear();  // the API server no longer has it
    auto again = preparer->prepare(ref, deadline);
    EXPECT_TRUE(again.error.empty()) << again.error;
    ASSERT_EQ(again.devices.size(), 1u);
}

TEST_F(ClaimsTest, TemplateClaimsCarryThePodClaimName) {
    auto claim =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    claim["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "accel"}};
    auto allocation = preparer->allocationFor(ref, claim);
    ASSERT_TRUE(allocation) << allocation.error().message;
    EXPECT_EQ(allocation->podClaimName, "accel");
}

TEST_F(ClaimsTest, MalformedConsumedCapacityNamesTheField) {
    auto results = api::Json::array({result("cpu", "numa.dra.dev", "node-a", "cpu-numa-0")});
    results[0]["consumedCapacity"] = {{"cpu", "lots"}};
    auto allocation = preparer->allocationFor(ref, allocatedClaim("uid-1", results));
    ASSERT_FALSE(allocation);
    EXPECT_NE(allocation.error().message.find(
                  "status.allocation.devices.results[0].consumedCapacity.cpu"),
              std::string::npos)
        << allocation.error().message;
}

api::Json placement(const std::string& binding, api::Json requests = api::Json::array(),
                    const std::string& driver = "numa.dra.dev") {
    api::Json entry = {{"source", "FromClaim"},
                       {"opaque",
                        {{"driver", driver},
                         {"parameters",
                          {{"apiVersion", "numa.dra.dev/v1alpha1"},
                           {"kind", "NumaPlacement"},
                           {"memoryBinding", binding}}}}}};
    if (!requests.empty())
        entry["requests"] = std::move(requests);
    return entry;
}

api::Json gpuAndNicClaim(api::Json config) {
    auto claim = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu),
                                   result("net/fast", "numa.dra.dev", "node-a", kNic)}));
    claim["status"]["allocation"]["devices"]["config"] = std::move(config);
    return claim;
}

TEST_F(ClaimsTest, MemoryBindingIsOffWithoutConfiguration) {
    auto allocation = preparer->allocationFor(ref, gpuAndNicClaim(api::Json::array()));
    ASSERT_TRUE(allocation) << allocation.error().message;
    EXPECT_FALSE(allocation->devices[0].bindMemory);
    EXPECT_FALSE(allocation->devices[1].bindMemory);
}

TEST_F(ClaimsTest, MemoryBindingAppliesToTheNamedRequestAndItsSubrequests) {
    auto allocation = preparer->allocationFor(
        ref, gpuAndNicClaim(api::Json::array({placement("NumaNode", {"net"})})));
    ASSERT_TRUE(allocation) << allocation.error().message;
    EXPECT_FALSE(allocation->devices[0].bindMemory);  // gpu: not named
    EXPECT_TRUE(allocation->devices[1].bindMemory);   // net/fast: its parent named
}

TEST_F(ClaimsTest, TheLastApplicableMemoryBindingWinsAndOtherDriversAreIgnored) {
    auto allocation = preparer->allocationFor(
        ref, gpuAndNicClaim(api::Json::array({placement("NumaNode"), placement("None", {"gpu"}),
                                              placement("bogus", {}, "other.example.com")})));
    ASSERT_TRUE(allocation) << allocation.error().message;
    EXPECT_FALSE(allocation->devices[0].bindMemory);
    EXPECT_TRUE(allocation->devices[1].bindMemory);
}

TEST_F(ClaimsTest, AMalformedPlacementNamesTheClaimAndTheField) {
    auto config = api::Json::array({placement("NumaNode"), placement("Everywhere")});
    auto allocation = preparer->allocationFor(ref, gpuAndNicClaim(config));
    ASSERT_FALSE(allocation);
    EXPECT_NE(allocation.error().message.find("ResourceClaim ns/c"), std::string::npos);
    EXPECT_NE(allocation.error().message.find(
                  "status.allocation.devices.config[1].opaque.parameters.memoryBinding"),
              std::string::npos)
        << allocation.error().message;
    config = api::Json::array({placement("NumaNode")});
    config[0]["opaque"]["parameters"]["cpuPolicy"] = "static";
    allocation = preparer->allocationFor(ref, gpuAndNicClaim(config));
    ASSERT_FALSE(allocation);
    EXPECT_NE(allocation.error().message.find("parameters.cpuPolicy is not a field"),
              std::string::npos)
        << allocation.error().message;
    config[0]["opaque"]["parameters"].erase("cpuPolicy");
    config[0]["opaque"]["parameters"]["kind"] = "GpuConfig";
    allocation = preparer->allocationFor(ref, gpuAndNicClaim(config));
    ASSERT_FALSE(allocation);
    EXPECT_NE(allocation.error().message.find("kind NumaPlacement"), std::string::npos);
}

TEST_F(ClaimsTest, APreparedDeviceRemembersItsMemoryBinding) {
    source.claims["ns/c"] = gpuAndNicClaim(api::Json::array({placement("NumaNode", {"gpu"})}));
    ASSERT_TRUE(preparer->prepare(ref, deadline).error.empty());
    auto store = state::CheckpointStore::open(dirs.path("state"));
    ASSERT_TRUE(store);
    auto record = store->read("uid-1");
    ASSERT_TRUE(record) << record.error().message;
    ASSERT_EQ(record->devices.size(), 2u);
    EXPECT_TRUE(record->devices[0].bindMemory);
    EXPECT_FALSE(record->devices[1].bindMemory);
}

TEST_F(ClaimsTest, MissingClaimIsAPerClaimError) {
    auto prepared = preparer->prepare(ref, deadline);
    EXPECT_NE(prepared.error.find("ResourceClaim ns/c not found"), std::string::npos)
        << prepared.error;
    EXPECT_EQ(registry.value("numadra_prepare_claims_total", {"error"}), 1);
}

TEST_F(ClaimsTest, ReplacedClaimIsRefused) {
    source.claims["ns/c"] =
        allocatedClaim("uid-2", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    auto prepared = preparer->prepare(ref, deadline);
    EXPECT_NE(prepared.error.find("has UID uid-2, not uid-1"), std::string::npos) << prepared.error;
}

TEST_F(ClaimsTest, UnallocatedClaimIsRefused) {
    source.claims["ns/c"] = {{"metadata", {{"uid", "uid-1"}}}, {"status", api::Json::object()}};
    EXPECT_NE(preparer->prepare(ref, deadline).error.find("is not allocated"), std::string::npos);
}

TEST_F(ClaimsTest, ClaimForAnotherDriverOnlyIsRefused) {
    source.claims["ns/c"] = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "other.example.com", "node-a", "g")}));
    EXPECT_NE(
        preparer->prepare(ref, deadline).error.find("no devices allocated by driver numa.dra.dev"),
        std::string::npos);
}

TEST_F(ClaimsTest, DeviceOfAnotherNodesPoolIsRefused) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-b", kGpu)}));
    EXPECT_NE(preparer->prepare(ref, deadline).error.find("not this node's pool 'node-a'"),
              std::string::npos);
}

TEST_F(ClaimsTest, UnknownDeviceIsRefused) {
    source.claims["ns/c"] = allocatedClaim(
        "uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", "gpu-7")}));
    EXPECT_NE(preparer->prepare(ref, deadline)
                  .error.find("gpu-7 of request gpu is not published by this node"),
              std::string::npos);
}

TEST_F(ClaimsTest, UnprepareOfAnUnknownClaimSucceeds) {
    EXPECT_EQ(preparer->unprepare(ref, deadline), "");
}

TEST_F(ClaimsTest, ConcurrentFetchesOfOneClaimMakeOneApiCall) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    std::promise<void> release;
    std::shared_future<void> released = release.get_future().share();
    source.beforeAnswer = [released] { released.wait(); };
    std::vector<std::future<Result<api::Json>>> fetches;
    std::atomic<int> entered{0};
    for (int i = 0; i < 4; ++i)
        fetches.push_back(std::async(std::launch::async, [&] {
            ++entered;
            return preparer->fetch(ref, deadline);
        }));
    for (int i = 0; i < 1000 && (source.gets.load() == 0 || entered.load() < 4); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    // The last ones in are a few instructions from joining the GET under way.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    release.set_value();
    for (auto& fetched : fetches) {
        auto claim = fetched.get();
        ASSERT_TRUE(claim.ok()) << claim.error().message;
        EXPECT_EQ((*claim)["metadata"]["uid"], "uid-1");
    }
    EXPECT_EQ(source.gets.load(), 1);
}

TEST_F(ClaimsTest, ADifferentUidOfTheSameNameIsAnotherFetch) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    ASSERT_TRUE(preparer->fetch(ref, deadline).ok());
    ASSERT_TRUE(preparer->fetch(claims::ClaimRef{"ns", "c", "uid-2"}, deadline).ok());
    EXPECT_EQ(source.gets.load(), 2);
}

// Everything the default logger writes while it lives.
class CapturedLog {
  public:
    CapturedLog() : previous_(spdlog::default_logger()) {
        auto logger = std::make_shared<spdlog::logger>(
            "capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(text_));
        logger->set_pattern("%l %v");
        logger->set_level(spdlog::level::trace);
        spdlog::set_default_logger(std::move(logger));
    }
    ~CapturedLog() { spdlog::set_default_logger(previous_); }
    CapturedLog(const CapturedLog&) = delete;
    CapturedLog& operator=(const CapturedLog&) = delete;

    std::vector<std::string> lines() const {
        std::vector<std::string> all;
        std::istringstream in(text_.str());
        for (std::string line; std::getline(in, line);)
            all.push_back(line);
        return all;
    }

  private:
    std::ostringstream text_;
    std::shared_ptr<spdlog::logger> previous_;
};

TEST_F(ClaimsTest, APrepareAndAnUnprepareAreOneLineEachWithTheirWholeContext) {
    source.claims["ns/c"] =
        allocatedClaim("uid-1", api::Json::array({result("gpu", "numa.dra.dev", "node-a", kGpu)}));
    CapturedLog log;
    ASSERT_TRUE(preparer->prepare(ref, deadline).error.empty());
    const std::string unprepared = preparer->unprepare(ref, deadline);
    ASSERT_EQ(unprepared, "");
    claims::ClaimOutcome outcome;
    outcome.operation = claims::ClaimOutcome::Operation::Unprepare;
    outcome.claim = ref;
    preparer->report(outcome, {});
    const auto lines = log.lines();
    ASSERT_EQ(lines.size(), 2U) << ::testing::PrintToString(lines);
    EXPECT_EQ(lines[0].rfind("info claim prepared claim=ns/c uid=uid-1 devices=1 source=api "
                             "seconds=",
                             0),
              0U)
        << lines[0];
    EXPECT_NE(lines[0].find("waited_seconds=0.0000 deadline_missed=false"), std::string::npos)
        << lines[0];
    EXPECT_EQ(lines[1].rfind("info claim unprepared claim=ns/c uid=uid-1 seconds=", 0), 0U)
        << lines[1];
}

TEST_F(ClaimsTest, AFailedPrepareIsOneWarningWithTheError) {
    CapturedLog log;
    ASSERT_FALSE(preparer->prepare(ref, deadline).error.empty());
    const auto lines = log.lines();
    ASSERT_EQ(lines.size(), 1U) << ::testing::PrintToString(lines);
    EXPECT_EQ(lines[0].rfind("warning claim not prepared claim=ns/c uid=uid-1 source=api", 0), 0U)
        << lines[0];
    EXPECT_NE(lines[0].find("error=\"ResourceClaim ns/c not found\""), std::string::npos)
        << lines[0];
}

TEST_F(ClaimsTest, ALongWaitAndAMissedDeadlineAreWarnedAndCounted) {
    CapturedLog log;
    claims::ClaimOutcome outcome;
    outcome.claim = ref;
    outcome.source = claims::ClaimOutcome::Source::Records;
    outcome.waited = std::chrono::milliseconds(2500);
    outcome.took = std::chrono::seconds(46);
    outcome.deadlineMissed = true;
    preparer->report(outcome, {});
    const auto lines = log.lines();
    ASSERT_EQ(lines.size(), 1U);
    EXPECT_EQ(lines[0].rfind("warning claim prepared claim=ns/c uid=uid-1 devices=0 "
                             "source=checkpoint seconds=46.0000 waited_seconds=2.5000 "
                             "deadline_missed=true",
                             0),
              0U)
        << lines[0];
    EXPECT_EQ(registry.value("numadra_claim_deadline_missed_total", {"prepare"}), 1);
    EXPECT_NE(registry.render().find("numadra_claim_wait_seconds_bucket{operation=\"prepare\","
                                     "le=\"1\"} 0"),
              std::string::npos)
        << registry.render();
}

TEST(FileClaimSource, ReadsJsonAndYamlAndReportsMissing) {
    numadra::testing::TempTree tree;
    tree.file("ns_a.json", R"({"metadata":{"uid":"u1"}})");
    tree.file("ns_b.yaml", "metadata:\n  uid: u2\n");
    tree.file("ns_bad.json", "{not json");
    auto source = makeFileClaimSource(tree.root());
    const auto deadline = std::chrono::steady_clock::now();
    EXPECT_EQ(source->getClaim("ns", "a", deadline).value()["metadata"]["uid"], "u1");
    EXPECT_EQ(source->getClaim("ns", "b", deadline).value()["metadata"]["uid"], "u2");
    EXPECT_EQ(source->getClaim("ns", "missing", deadline).error().kind, ErrorKind::NotFound);
    auto bad = source->getClaim("ns", "bad", deadline);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("ns_bad.json"), std::string::npos);
}

TEST(FileClaimSource, YamlScalarsAreTypedAsTheApiServerWouldReadThem) {
    numadra::testing::TempTree tree;
    tree.file("ns_admin.yaml",
              "metadata:\n  uid: u3\nstatus:\n  allocation:\n    devices:\n      results:\n"
              "      - {request: gpu, driver: numa.dra.dev, pool: node-1, device: gpu-0, "
              "adminAccess: true}\n");
    auto source = makeFileClaimSource(tree.root());
    auto claim = source->getClaim("ns", "admin", std::chrono::steady_clock::now());
    ASSERT_TRUE(claim.ok()) << claim.error().message;
    EXPECT_EQ((*claim)["status"]["allocation"]["devices"]["results"][0]["adminAccess"], true);
}

TEST(FileClaimSource, AFileOfSeveralObjectsIsAnErrorNamingIt) {
    numadra::testing::TempTree tree;
    tree.file("ns_two.yaml", "metadata: {uid: a}\n---\nmetadata: {uid: b}\n");
    auto source = makeFileClaimSource(tree.root());
    auto claim = source->getClaim("ns", "two", std::chrono::steady_clock::now());
    ASSERT_FALSE(claim.ok());
    EXPECT_NE(claim.error().message.find("ns_two.yaml: holds 2 objects"), std::string::npos)
        << claim.error().message;
}

}  // namespace
}  // namespace numadra::daemon
