// The daemon end to end, in-process: a fake API server over real HTTP, a test "kubelet" over
// the real unix sockets with the generated gRPC stubs, a mocked sysfs tree.
//
// Why one file of ~1,000 lines: every test here drives the same fixture (the daemon with a fake
// API server, a kubelet and a mocked tree) through one story of the daemon's life (start, publish,
// repair, prepare, health, shutdown); the load and hostile-API tests, which need other fixtures,
// have their own files.

#include "numadra/daemon/daemon.hpp"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "numadra/discovery/uevents.hpp"
#include "numadra/fakes/apiserver.hpp"
#include "numadra/state/checkpoint.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/health_stream.hpp"
#include "numadra/testing/http.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/netns.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "numadra/testing/threads.hpp"
#include "pkg/apis/dra-health/v1/api.grpc.pb.h"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/dra/v1beta1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"
#include "test_support.hpp"

namespace numadra::daemon {
namespace {

using namespace std::chrono_literals;
using Json = fakes::FakeApiServer::Json;
using numadra::testing::httpGet;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

using test_support::eventually;
using test_support::freePort;

class DaemonTest : public ::testing::Test {
  protected:
    fakes::FakeApiServer api;
    numadra::testing::TempTree dirs;
    DaemonConfig config;
    DaemonHooks hooks;
    std::stop_source stop;
    std::thread thread;
    std::atomic<int> exitCode{-1};
    int metricsPort = freePort();

    numadra::testing::MockDev dev;

    void SetUp() override {
        dev = numadra::testing::makeDevTree(numadra::testing::loadMachine("epyc-2s-nps4"), dirs,
                                            "dev");
        api.addNode("node-a", "node-uid-1");
        test_support::writeKubeconfig(dirs.path("kubeconfig"), api.url());
    }

    void TearDown() override {
        stop.request_stop();
        if (thread.joinable())
            thread.join();
    }

    // The mocked node, the test's folders and its API server: what every daemon here runs with.
    std::vector<std::string> nodeArgs() const {
        return test_support::nodeFlags(dirs.root(), "epyc-2s-nps4",
                                       numadra::testing::machineRoot("epyc-2s-nps4"), dev.root);
    }

    void configure(std::vector<std::string> extra = {}) {
        std::vector<std::string> args = nodeArgs();
        for (const auto& arg :
             {std::string("--metrics-addr"), "127.0.0.1:" + std::to_string(metricsPort),
              std::string("--resync-interval"), std::string("1s"), std::string("--log-level"),
              std::string("warn")})
            args.push_back(arg);
        args.insert(args.end(), extra.begin(), extra.end());
        auto parsed = parseDaemonFlags(args, {}, "unused");
        ASSERT_TRUE(parsed.ok()) << parsed.error().message;
        config = parsed->config;
    }

    void start(std::vector<std::string> extra = {}) {
        configure(std::move(extra));
        thread = std::thread([this] {
            exitCode = runDaemon(config, stop.get_token(), std::chrono::steady_clock::now(), hooks);
        });
    }

    std::string registrationSocket() const {
        return dirs.path("registry") + "/numa.dra.dev-reg.sock";
    }
    std::string draSocket() const { return dirs.path("plugins") + "/numa.dra.dev/dra.sock"; }

    bool published() const { return !api.resourceSlices().empty(); }

    // A device of the published slices whose name starts with `prefix`.
    std::string publishedDevice(const std::string& prefix) const {
        for (const auto& slice : api.resourceSlices()) {
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                std::string name = device["name"];
                if (name.rfind(prefix, 0) == 0)
                    return name;
            }
        }
        return {};
    }

    void putAllocatedClaim(const std::string& name, const std::string& uid,
                           const std::string& device) {
        api.putResourceClaim(test_support::allocatedClaim(name, uid, device));
    }

    static std::shared_ptr<grpc::Channel> channel(const std::string& socket) {
        return grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
    }
};

TEST_F(DaemonTest, RegisterPublishPrepareUnprepareShutdown) {
    start();
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(registrationSocket()); }));

    // The kubelet's registration handshake.
    auto registration = pluginregistration::Registration::NewStub(channel(registrationSocket()));
    pluginregistration::PluginInfo info;
    {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 1s);
        ASSERT_TRUE(registration->GetInfo(&context, pluginregistration::InfoRequest(), &info).ok());
    }
    EXPECT_EQ(info.type(), "DRAPlugin");
    EXPECT_EQ(info.name(), "numa.dra.dev");
    EXPECT_EQ(info.endpoint(), draSocket());
    ASSERT_GE(info.supported_versions_size(), 2);
    EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
    EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
    {
        grpc::ClientContext context;
        pluginregistration::RegistrationStatus status;
        status.set_plugin_registered(true);
        pluginregistration::RegistrationStatusResponse response;
        ASSERT_TRUE(registration->NotifyRegistrationStatus(&context, status, &response).ok());
    }

    // Published, owned by the Node.
    ASSERT_TRUE(eventually([&] { return published(); }));
    const auto slices = api.resourceSlices();
    for (const auto& slice : slices) {
        EXPECT_EQ(slice["spec"]["nodeName"], "node-a");
        EXPECT_EQ(slice["spec"]["pool"]["resourceSliceCount"], static_cast<int>(slices.size()));
        EXPECT_EQ(slice["metadata"]["ownerReferences"][0]["uid"], "node-uid-1");
    }
    EXPECT_TRUE(
        eventually([&] { return httpGet(metricsPort, "/readyz").rfind("HTTP/1.1 200", 0) == 0; }));

    // Prepare and unprepare a claim for the GPU.
    const std::string gpu = publishedDevice("gpu-");
    ASSERT_FALSE(gpu.empty());
    putAllocatedClaim("train", "claim-uid-1", gpu);
    auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
    drav1::NodePrepareResourcesRequest prepare;
    auto* claim = prepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("train");
    claim->set_uid("claim-uid-1");
    drav1::NodePrepareResourcesResponse prepared;
    {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 45s);
        ASSERT_TRUE(dra->NodePrepareResources(&context, prepare, &prepared).ok());
    }
    ASSERT_EQ(prepared.claims().count("claim-uid-1"), 1u);
    const auto& result = prepared.claims().at("claim-uid-1");
    EXPECT_EQ(result.error(), "");
    ASSERT_EQ(result.devices_size(), 1);
    EXPECT_EQ(result.devices(0).device_name(), gpu);
    EXPECT_EQ(result.devices(0).pool_name(), "node-a");
    EXPECT_EQ(result.devices(0).request_names(0), "gpu");
    // The GPU's own CDI device, the claim's NVIDIA control nodes, the request's metadata.
    ASSERT_EQ(result.devices(0).cdi_device_ids_size(), 3);
    EXPECT_EQ(result.devices(0).cdi_device_ids(0), "numa.dra.dev/claim=claim-uid-1-" + gpu);
    EXPECT_EQ(result.devices(0).cdi_device_ids(1), "numa.dra.dev/claim=claim-uid-1-nvidia-control");
    EXPECT_EQ(result.devices(0).cdi_device_ids(2), "numa.dra.dev/metadata=claim-uid-1_gpu");
    EXPECT_TRUE(std::filesystem::exists(dirs.path("cdi/numa.dra.dev-claim_claim-uid-1.json")));
    EXPECT_TRUE(std::filesystem::exists(
        dirs.path("plugins/numa.dra.dev/dra-device-metadata/default_train/gpu/metadata.json")));

    drav1::NodeUnprepareResourcesRequest unprepare;
    *unprepare.add_claims() = *claim;
    drav1::NodeUnprepareResourcesResponse unprepared;
    {
        grpc::ClientContext context;
        ASSERT_TRUE(dra->NodeUnprepareResources(&context, unprepare, &unprepared).ok());
    }
    EXPECT_EQ(unprepared.claims().at("claim-uid-1").error(), "");
    EXPECT_TRUE(std::filesystem::is_empty(dirs.path("cdi")));
    EXPECT_TRUE(std::filesystem::is_empty(dirs.path("plugins/numa.dra.dev/dra-device-metadata")));
    EXPECT_NE(
        httpGet(metricsPort, "/metrics").find("numadra_prepare_claims_total{result=\"ok\"} 1"),
        std::string::npos);

    // SIGTERM: sockets and slices gone.
    stop.request_stop();
    thread.join();
    EXPECT_EQ(exitCode, kExitOk);
    EXPECT_FALSE(std::filesystem::exists(registrationSocket()));
    EXPECT_FALSE(std::filesystem::exists(draSocket()));
    EXPECT_TRUE(api.resourceSlices().empty());
}

// DRAResourceClaimDeviceStatus: a prepared NIC's interface is written into its claim's
// status.devices (server-side apply under the driver's name) and removed on unprepare.
TEST_F(DaemonTest, APreparedNicsInterfaceIsInItsClaimsStatusUntilUnprepared) {
    start();
    ASSERT_TRUE(eventually([&] { return published(); }));
    const std::string nic = "nic-0000-c1-00-0";  // ConnectX-7, ens5f0np0
    putAllocatedClaim("net", "claim-uid-7", nic);
    auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
    drav1::NodePrepareResourcesRequest prepare;
    auto* claim = prepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("net");
    claim->set_uid("claim-uid-7");
    {
        drav1::NodePrepareResourcesResponse prepared;
        grpc::ClientContext context;
        ASSERT_TRUE(dra->NodePrepareResources(&context, prepare, &prepared).ok());
        ASSERT_EQ(prepared.claims().at("claim-uid-7").error(), "");
    }
    auto statusDevices = [&] {
        auto stored = api.resourceClaim("default", "net");
        return stored ? stored->value("status", Json::object()).value("devices", Json::array())
                      : Json::array();
    };
    ASSERT_TRUE(eventually([&] { return statusDevices().size() == 1; }));
    const Json entry = statusDevices()[0];
    EXPECT_EQ(entry["driver"], "numa.dra.dev");
    EXPECT_EQ(entry["pool"], "node-a");
    EXPECT_EQ(entry["device"], nic);
    EXPECT_EQ(entry["networkData"]["interfaceName"], "ens5f0np0");
    EXPECT_FALSE(entry["networkData"].value("hardwareAddress", "").empty());
    EXPECT_EQ(entry["conditions"][0]["type"], "Ready");

    drav1::NodeUnprepareResourcesRequest unprepare;
    *unprepare.add_claims() = *claim;
    {
        drav1::NodeUnprepareResourcesResponse unprepared;
        grpc::ClientContext context;
        ASSERT_TRUE(dra->NodeUnprepareResources(&context, unprepare, &unprepared).ok());
    }
    EXPECT_TRUE(eventually([&] { return statusDevices().empty(); }));
}

// 100 claims prepared, then unprepared, from 8 kubelet threads with their own connections:
// every call succeeds, nothing is lost, nothing is handed out twice, nothing is left behind.
TEST_F(DaemonTest, HundredClaimsFromEightConcurrentClients) {
    start({"--sysfs-root", numadra::testing::machineRoot("big-2s-8n"), "--vf-layout=individual"});
    std::vector<std::string> vfs;
    // The node's slices appear one by one: wait for enough VFs.
    ASSERT_TRUE(eventually([&] {
        vfs.clear();
        for (const auto& slice : api.resourceSlices()) {
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                if (device["attributes"].value("/sriovRole/string"_json_pointer, "") == "vf")
                    vfs.push_back(device["name"]);
            }
        }
        return vfs.size() >= 50u;
    }));
    constexpr int kClaims = 100;
    for (int i = 0; i < kClaims; ++i) {
        Json result{{"request", i % 2 == 0 ? "nic" : "cpu"},
                    {"driver", "numa.dra.dev"},
                    {"pool", "node-a"},
                    {"device", i % 2 == 0 ? vfs[static_cast<size_t>(i / 2)]
                                          : "cpu-numa-" + std::to_string(i % 8)}};
        if (i % 2 == 1) {
            result["shareID"] = "share-" + std::to_string(i);
            result["consumedCapacity"] = {{"cpu", "1"}};
        }
        api.putResourceClaim(Json{
            {"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata",
             {{"name", "c" + std::to_string(i)},
              {"namespace", "default"},
              {"uid", "uid-" + std::to_string(i)}}},
            {"status", {{"allocation", {{"devices", {{"results", Json::array({result})}}}}}}}});
    }
    auto claimOf = [](int i) {
        drav1::Claim claim;
        claim.set_namespace_("default");
        claim.set_name("c" + std::to_string(i));
        claim.set_uid("uid-" + std::to_string(i));
        return claim;
    };
    std::atomic<int> errors{0};
    auto fromEightClients = [&](auto&& call) {
        std::vector<std::thread> clients;
        for (int t = 0; t < 8; ++t) {
            clients.emplace_back([&, t] {
                auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
                for (int i = t; i < kClaims; i += 8) {
                    if (!call(*dra, i))
                        ++errors;
                }
            });
        }
        for (auto& client : clients)
            client.join();
    };
    fromEightClients([&](drav1::DRAPlugin::Stub& dra, int i) {
        drav1::NodePrepareResourcesRequest request;
        *request.add_claims() = claimOf(i);
        drav1::NodePrepareResourcesResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 45s);
        return dra.NodePrepareResources(&context, request, &response).ok() &&
               response.claims().at("uid-" + std::to_string(i)).error().empty();
    });
    EXPECT_EQ(errors, 0);
    const std::string stateDir = dirs.path("plugins/numa.dra.dev");
    auto loaded = state::CheckpointStore::open(stateDir).value().load();
    ASSERT_TRUE(loaded);
    ASSERT_EQ(loaded->records.size(), static_cast<size_t>(kClaims));
    std::set<int> cpus;
    size_t handedOut = 0;
    for (const auto& record : loaded->records) {
        for (const auto& device : record.devices) {
            cpus.insert(device.cpus.begin(), device.cpus.end());
            handedOut += device.cpus.size();
        }
    }
    EXPECT_EQ(handedOut, static_cast<size_t>(kClaims / 2));
    EXPECT_EQ(cpus.size(), handedOut) << "a CPU was handed to two shares";
    fromEightClients([&](drav1::DRAPlugin::Stub& dra, int i) {
        drav1::NodeUnprepareResourcesRequest request;
        *request.add_claims() = claimOf(i);
        drav1::NodeUnprepareResourcesResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 45s);
        return dra.NodeUnprepareResources(&context, request, &response).ok() &&
               response.claims().at("uid-" + std::to_string(i)).error().empty();
    });
    EXPECT_EQ(errors, 0);
    EXPECT_TRUE(std::filesystem::is_empty(dirs.path("cdi")));
    EXPECT_TRUE(std::filesystem::is_empty(stateDir + "/checkpoints"));
    EXPECT_TRUE(std::filesystem::is_empty(stateDir + "/dra-device-metadata"));
}

// --- Device health ------------------------------------------------------------------------------

// The kubelet's side of NodeWatchResources: reads snapshots until one satisfies `done`.
template <class Stub, class Response>
class HealthWatch {
  public:
    explicit HealthWatch(Stub& stub, std::chrono::seconds lifetime = 30s) {
        context_.set_deadline(std::chrono::system_clock::now() + lifetime);
        reader_ = stub.NodeWatchResources(&context_, {});
    }
    ~HealthWatch() {
        context_.TryCancel();
        Response drain;
        while (reader_->Read(&drain)) {
        }
        reader_->Finish();
    }
    template <class Predicate>
    bool readUntil(Predicate done, Response* last = nullptr) {
        Response response;
        while (reader_->Read(&response)) {
            ++messages;
            if (done(response)) {
                if (last != nullptr)
                    *last = response;
                return true;
            }
        }
        return false;
    }
    int messages = 0;

  private:
    grpc::ClientContext context_;
    std::unique_ptr<grpc::ClientReader<Response>> reader_;
};

using numadra::testing::healthOf;

class HealthDaemonTest : public DaemonTest {
  protected:
    numadra::testing::TempTree machine;

    void SetUp() override {
        DaemonTest::SetUp();
        machine.copyFrom(numadra::testing::machineRoot("epyc-2s-nps4"));
    }

    void startWithHealth(std::vector<std::string> extra = {}) {
        std::vector<std::string> args{"--sysfs-root",
                                      machine.root(),
                                      "--health-interval",
                                      "100ms",
                                      "--health-resend-interval",
                                      "400ms"};
        args.insert(args.end(), extra.begin(), extra.end());
        start(args);
    }

    void write(const std::string& relative, const std::string& content) const {
        std::ofstream(machine.path(relative), std::ios::trunc) << content;
    }

    std::optional<Json> publishedDeviceJson(const std::string& name) const {
        for (const auto& slice : api.resourceSlices()) {
            for (const auto& device : slice["spec"].value("devices", Json::array())) {
                if (device["name"] == name)
                    return device;
            }
        }
        return std::nullopt;
    }
};

constexpr const char* kEpycNic = "nic-0000-c1-00-0";

TEST_F(HealthDaemonTest, AnUnhealthyNicIsStreamedAndTaintedThenRecovers) {
    startWithHealth();
    ASSERT_TRUE(eventually([&] { return publishedDeviceJson(kEpycNic).has_value(); }));
    auto stub = ::v1::DRAResourceHealth::NewStub(channel(draSocket()));
    using Response = ::v1::NodeWatchResourcesResponse;
    HealthWatch<decltype(*stub), Response> watch(*stub);
    Response first;
    ASSERT_TRUE(watch.readUntil([](const Response&) { return true; }, &first));
    const auto* nic = healthOf(first, kEpycNic);
    ASSERT_NE(nic, nullptr);
    EXPECT_EQ(nic->health(), ::v1::HEALTHY);
    EXPECT_EQ(nic->device().pool_name(), "node-a");
    EXPECT_EQ(nic->health_check_timeout_seconds(), 30);
    EXPECT_FALSE(nic->message().empty());

    write("class/net/ens5f0np0/operstate", "down\n");
    Response down;
    ASSERT_TRUE(watch.readUntil(
        [](const Response& r) {
            const auto* d = healthOf(r, kEpycNic);
            return d && d->health() == ::v1::UNHEALTHY;
        },
        &down));
    EXPECT_NE(healthOf(down, kEpycNic)->message().find("ens5f0np0 is down"), std::string::npos);
    EXPECT_TRUE(eventually([&] {
        auto device = publishedDeviceJson(kEpycNic);
        if (!device || !device->contains("taints"))
            return false;
        const auto& taint = (*device)["taints"][0];
        return taint["key"] == "numa.dra.dev/unhealthy" && taint["value"] == "carrier-down" &&
               taint["effect"] == "NoSchedule";
    }));

    write("class/net/ens5f0np0/operstate", "up\n");
    ASSERT_TRUE(watch.readUntil([](const Response& r) {
        const auto* d = healthOf(r, kEpycNic);
        return d && d->health() == ::v1::HEALTHY;
    }));
    EXPECT_TRUE(eventually([&] {
        auto device = publishedDeviceJson(kEpycNic);
        return device && !device->contains("taints");
    }));
}

// Each way the kernel shows a fault, on disk, reaches the kubelet's stream and the slices.
TEST_F(HealthDaemonTest, AerErrorsAndADegradedLinkAreStreamedAndTainted) {
    startWithHealth();
    ASSERT_TRUE(eventually([&] { return published(); }));
    auto stub = ::v1::DRAResourceHealth::NewStub(channel(draSocket()));
    using Response = ::v1::NodeWatchResourcesResponse;
    HealthWatch<decltype(*stub), Response> watch(*stub);
    ASSERT_TRUE(watch.readUntil([](const Response& r) { return r.devices_size() > 0; }));
    struct Fault {
        std::string device, file, content, cause, message;
    };
    const std::vector<Fault> faults{
        {"gpu-0000-21-00-0", "bus/pci/devices/0000:21:00.0/aer_dev_fatal", "TOTAL_ERR_FATAL 3\n",
         "aer-fatal", "3 new fatal PCIe AER error(s)"},
        {"gpu-0000-a3-00-0", "bus/pci/devices/0000:a3:00.0/aer_dev_nonfatal",
         "TOTAL_ERR_NONFATAL 1\n", "aer-nonfatal", "1 new non-fatal PCIe AER error(s)"},
        {kEpycNic, "bus/pci/devices/0000:c1:00.0/current_link_width", "4\n", "link-degraded",
         "PCIe link degraded"},
    };
    for (const auto& fault : faults) {
        SCOPED_TRACE(fault.device);
        write(fault.file, fault.content);
        Response seen;
        ASSERT_TRUE(watch.readUntil(
            [&](const Response& r) {
                const auto* d = healthOf(r, fault.device);
                return d && d->health() == ::v1::UNHEALTHY;
            },
            &seen));
        EXPECT_NE(healthOf(seen, fault.device)->message().find(fault.message), std::string::npos)
            << healthOf(seen, fault.device)->message();
        EXPECT_TRUE(eventually([&] {
            auto device = publishedDeviceJson(fault.device);
            return device && device->contains("taints") &&
                   (*device)["taints"][0]["value"] == fault.cause;
        }));
    }
}

TEST_F(HealthDaemonTest, AClusterWithoutDeviceTaintsGetsSlicesWithoutThem) {
    api.setDropDeviceTaints(true);
    startWithHealth();
    ASSERT_TRUE(eventually([&] { return publishedDeviceJson(kEpycNic).has_value(); }));
    write("class/net/ens5f0np0/operstate", "down\n");
    // Not fatal: the daemon goes on publishing (the next change still lands), without taints.
    std::this_thread::sleep_for(1s);
    EXPECT_EQ(exitCode, -1);
    // The GPU goes away as the kernel removes a device: its folder and its bus entry.
    machine.remove("devices/pci0000:20/0000:20:01.1/0000:21:00.0");
    machine.remove("bus/pci/devices/0000:21:00.0");
    EXPECT_TRUE(eventually([&] { return !publishedDeviceJson("gpu-0000-21-00-0").has_value(); }));
    EXPECT_FALSE(publishedDeviceJson(kEpycNic)->contains("taints"));
    EXPECT_EQ(exitCode, -1);
}

TEST_F(HealthDaemonTest, V1alpha1StreamsReportARemovedGpu) {
    startWithHealth({"--health-taint-effect", "None"});
    ASSERT_TRUE(eventually([&] { return published(); }));
    auto stub = ::v1alpha1::DRAResourceHealth::NewStub(channel(draSocket()));
    using Response = ::v1alpha1::NodeWatchResourcesResponse;
    HealthWatch<decltype(*stub), Response> watch(*stub);
    ASSERT_TRUE(watch.readUntil([](const Response& r) { return r.devices_size() > 0; }));
    machine.remove("devices/pci0000:20/0000:20:01.1/0000:21:00.0");
    Response gone;
    ASSERT_TRUE(watch.readUntil(
        [](const Response& r) {
            const auto* d = healthOf(r, "gpu-0000-21-00-0");
            return d && d->health() == ::v1alpha1::UNHEALTHY;
        },
        &gone));
}

// A cable pull raises no uevent, only an rtnetlink message. With the next poll a minute away
// the stream still reports it at once: the daemon listens to link events of its NICs'
// interfaces. The daemon runs in a network namespace of the test's own, where a bridge plays the
// mocked NIC's interface, so the test changes no interface of the machine.
TEST_F(HealthDaemonTest, ACarrierLossIsSeenAtOnceThroughALinkEvent) {
    std::string why;
    auto netns = numadra::testing::PrivateNetworkNamespace::create(why);
    if (!netns)
        GTEST_SKIP() << "needs a network namespace of its own (root): " << why;
    const std::string setup = netns->run([] {
        if (auto failed = numadra::testing::setLinkUp("lo", true); !failed.empty())
            return failed;  // the metrics endpoint listens on 127.0.0.1
        return numadra::testing::addBridge("ens5f0np0");
    });
    if (!setup.empty())
        GTEST_SKIP() << "cannot create an interface in the namespace: " << setup;
    numadra::testing::TempTree claims;
    configure({"--sysfs-root", machine.root(), "--dry-run", "--claims-dir", claims.root(),
               "--health-interval", "60s", "--health-timeout", "300s", "--resync-interval", "1h"});
    thread = std::thread([this, &netns] {
        if (netns->enter().empty())
            exitCode = runDaemon(config, stop.get_token(), std::chrono::steady_clock::now());
    });
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(draSocket()); }));
    auto stub = ::v1::DRAResourceHealth::NewStub(channel(draSocket()));
    using Response = ::v1::NodeWatchResourcesResponse;
    HealthWatch<decltype(*stub), Response> watch(*stub, 20s);
    ASSERT_TRUE(watch.readUntil([](const Response& r) {
        const auto* nic = healthOf(r, kEpycNic);
        return nic && nic->health() == ::v1::HEALTHY;
    }));

    write("class/net/ens5f0np0/operstate", "down\n");
    EXPECT_EQ(netns->run([] { return numadra::testing::setLinkUp("ens5f0np0", true); }), "");
    // The stream closes after 20 s, long before the poll (60 s) could report it.
    EXPECT_TRUE(watch.readUntil([](const Response& r) {
        const auto* nic = healthOf(r, kEpycNic);
        return nic && nic->health() == ::v1::UNHEALTHY;
    }));
    stop.request_stop();
    thread.join();
    EXPECT_EQ(exitCode, kExitOk);
}

TEST_F(HealthDaemonTest, AnIdleStreamGetsPeriodicSnapshots) {
    startWithHealth();
    ASSERT_TRUE(eventually([&] { return published(); }));
    auto stub = ::v1::DRAResourceHealth::NewStub(channel(draSocket()));
    using Response = ::v1::NodeWatchResourcesResponse;
    HealthWatch<decltype(*stub), Response> watch(*stub);
    const auto begin = std::chrono::steady_clock::now();
    int seen = 0;
    ASSERT_TRUE(
        watch.readUntil([&](const Response& r) { return r.devices_size() > 0 && ++seen == 4; }));
    // Nothing changed: the resend interval (400 ms) paced them.
    EXPECT_GE(std::chrono::steady_clock::now() - begin, 1s);
}

int openFileDescriptors() {
    int count = 0;
    for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator("/proc/self/fd"))
        ++count;
    return count;
}

TEST_F(HealthDaemonTest, AKubeletReconnectingOverAndOverLeaksNothing) {
    startWithHealth();
    ASSERT_TRUE(eventually([&] { return published(); }));
    auto channelToPlugin = channel(draSocket());
    auto stub = ::v1::DRAResourceHealth::NewStub(channelToPlugin);
    using Response = ::v1::NodeWatchResourcesResponse;
    auto reconnect = [&] {
        HealthWatch<decltype(*stub), Response> watch(*stub);
        watch.readUntil([](const Response&) { return true; });
    };
    for (int i = 0; i < 10; ++i)
        reconnect();  // warm-up: gRPC's pools and threads settle
    const int before = openFileDescriptors();
    for (int i = 0; i < 100; ++i)
        reconnect();
    EXPECT_TRUE(eventually([&] { return openFileDescriptors() <= before + 2; }, 5s))
        << "before " << before << ", after " << openFileDescriptors();
}

TEST_F(DaemonTest, V1beta1ServesTheSameClaims) {
    start();
    ASSERT_TRUE(eventually([&] { return published(); }));
    const std::string nic = publishedDevice("nic-");
    putAllocatedClaim("net", "claim-uid-2", nic);
    auto dra = drav1beta1::DRAPlugin::NewStub(channel(draSocket()));
    drav1beta1::NodePrepareResourcesRequest prepare;
    auto* claim = prepare.add_claims();
    claim->set_namespace_("default");
    claim->set_name("net");
    claim->set_uid("claim-uid-2");
    drav1beta1::NodePrepareResourcesResponse prepared;
    grpc::ClientContext context;
    ASSERT_TRUE(dra->NodePrepareResources(&context, prepare, &prepared).ok());
    EXPECT_EQ(prepared.claims().at("claim-uid-2").devices(0).device_name(), nic);
}

TEST_F(DaemonTest, SlicesDeletedByOthersAreRepaired) {
    start();
    ASSERT_TRUE(eventually([&] { return published(); }));
    const auto before = api.resourceSlices();
    const std::string name = before.front()["metadata"]["name"];
    ASSERT_TRUE(api.deleteResourceSliceExternally(name));
    EXPECT_TRUE(eventually([&] { return api.resourceSlice(name).has_value(); }, 5s));
    EXPECT_EQ(api.resourceSlices().size(), before.size());
}

// The daemon's LISTs of its slices (each reconcile's, each relist of the watch), not its watches.
int sliceLists(const fakes::FakeApiServer& api) {
    int lists = 0;
    for (const auto& request : api.requests()) {
        if (request.method == "GET" && request.path == "/apis/resource.k8s.io/v1/resourceslices" &&
            request.query.find("watch=") == std::string::npos)
            ++lists;
    }
    return lists;
}

// True once `quiet` went by without a slice LIST (waiting 30 s at most for one).
bool listingStopsFor(const fakes::FakeApiServer& api, std::chrono::milliseconds quiet) {
    return eventually(
        [&] {
            const int before = sliceLists(api);
            std::this_thread::sleep_for(quiet);
            return sliceLists(api) == before;
        },
        30s);
}

// Issue 27: the resync (every second here) lists the slices only when the watch cannot vouch
// that nothing changed since the last reconcile.
TEST_F(DaemonTest, AQuietUnbrokenWatchSparesTheResyncItsList) {
    start();
    ASSERT_TRUE(eventually([&] { return published(); }));
    // Three resyncs without a LIST once the start's reconciles are over.
    EXPECT_TRUE(listingStopsFor(api, 3s));
}

TEST_F(DaemonTest, ABrokenWatchVouchesForNothingUntilTheNextReconcile) {
    start();
    ASSERT_TRUE(eventually([&] { return published(); }));
    ASSERT_TRUE(listingStopsFor(api, 3s));
    const int before = sliceLists(api);
    api.breakWatches();  // resumed from where it broke, but a broken watch is not trusted
    EXPECT_TRUE(eventually([&] { return sliceLists(api) > before; }));
    EXPECT_TRUE(listingStopsFor(api, 3s));  // the reconcile's list renewed the watch's word
}

TEST_F(DaemonTest, AnExpiredWatchRelistsAndReconcilesAtOnce) {
    start({"--resync-interval", "1h"});
    ASSERT_TRUE(eventually([&] { return published(); }));
    ASSERT_TRUE(listingStopsFor(api, 2s));
    const int before = sliceLists(api);
    api.expireWatches();  // what changed while it was behind is gone from the history
    // Long before the resync (an hour): the relist and the reconcile it calls for.
    EXPECT_TRUE(eventually([&] { return sliceLists(api) >= before + 2; }));
}

TEST_F(DaemonTest, RescanRepublishesWhenADeviceGoesAway) {
    numadra::testing::TempTree machine;
    machine.copyFrom(numadra::testing::machineRoot("epyc-2s-nps4"));
    start({"--sysfs-root", machine.root()});
    ASSERT_TRUE(eventually([&] { return !publishedDevice("nic-").empty(); }));
    // The NIC is hot-unplugged: its bus entry disappears.
    for (const auto& entry : std::filesystem::directory_iterator(machine.path("bus/pci/devices"))) {
        const std::string target = std::filesystem::read_symlink(entry.path()).string();
        if (target.find("0000:c1:00.0") != std::string::npos)
            std::filesystem::remove(entry.path());
    }
    EXPECT_TRUE(eventually([&] { return publishedDevice("nic-").empty(); }, 5s));
    EXPECT_FALSE(publishedDevice("gpu-").empty());
}

// The discovery runs so far (the count of their durations in /metrics); -1 without an answer.
int discoveryRuns(int metricsPort) {
    const std::string metrics = httpGet(metricsPort, "/metrics");
    const std::string count = "numadra_discovery_duration_seconds_count ";
    const auto at = metrics.find(count);
    return at == std::string::npos ? -1 : std::atoi(metrics.c_str() + at + count.size());
}

// Issue 27: the periodic rescan reads only what can change without a uevent when uevents come.
class RescanTest : public DaemonTest {
  protected:
    numadra::testing::TempTree machine;

    void SetUp() override {
        DaemonTest::SetUp();
        machine.copyFrom(numadra::testing::machineRoot("epyc-2s-nps4"));
    }
};

TEST_F(RescanTest, WithoutUeventsEveryResyncScansTheWholeTree) {
    hooks.withoutKernelDeviceEvents = true;
    start({"--sysfs-root", machine.root(), "--resync-interval", "100ms"});
    ASSERT_TRUE(eventually([&] { return published(); }));
    const int before = discoveryRuns(metricsPort);
    EXPECT_TRUE(eventually([&] { return discoveryRuns(metricsPort) >= before + 5; }));
}

// In a network namespace of the test's own: the events the test sends reach the daemon alone,
// and the machine's own network devices send none there (its other devices might, rarely).
TEST_F(RescanTest, WithUeventsOnlyWhatTheyDoNotAnnounceIsReadAgain) {
    std::string why;
    auto netns = numadra::testing::PrivateNetworkNamespace::create(why);
    if (!netns)
        GTEST_SKIP() << "needs a network namespace of its own (root): " << why;
    const std::string setup = netns->run([] {
        if (auto listener = discovery::UeventListener::open(); !listener)
            return listener.error().message;
        return numadra::testing::setLinkUp("lo", true);  // the metrics endpoint's 127.0.0.1
    });
    if (!setup.empty())
        GTEST_SKIP() << "no uevents or no loopback in the namespace: " << setup;
    numadra::testing::TempTree claims;
    configure({"--sysfs-root", machine.root(), "--resync-interval", "100ms", "--dry-run",
               "--claims-dir", claims.root()});
    thread = std::thread([this, &netns] {
        if (netns->enter().empty())
            exitCode = runDaemon(config, stop.get_token(), std::chrono::steady_clock::now());
    });
    auto runs = [&] {
        int count = -1;
        netns->run([&] {
            count = discoveryRuns(metricsPort);
            return std::string();
        });
        return count;
    };
    ASSERT_TRUE(eventually([&] { return runs() >= 1; }));
    const int settled = runs();
    std::this_thread::sleep_for(2s);  // twenty resyncs
    const int quiet = runs();
    EXPECT_LE(quiet, settled + 1);  // none, but for a rare event of the machine's own devices

    machine.file("class/net/ens5f0np0/speed", "100000\n");  // renegotiated: no uevent
    EXPECT_TRUE(eventually([&] { return runs() > quiet; }));

    // A driver bound: the kernel announces it, and the daemon scans when told.
    const int announced = runs();
    const std::string gpu = "bus/pci/devices/0000:21:00.0";
    const std::string devpath =
        "/" + std::filesystem::canonical(machine.path(gpu))
                  .lexically_relative(std::filesystem::canonical(machine.root()))
                  .string();
    machine.remove(gpu + "/driver");
    machine.link(gpu + "/driver", "../../../../bus/pci/drivers/vfio-pci");
    machine.file(gpu + "/uevent", "DRIVER=vfio-pci\nPCI_CLASS=30200\nPCI_ID=10DE:2330\n");
    EXPECT_EQ(netns->run([&] { return numadra::testing::sendUevent("bind", devpath, "pci"); }), "");
    EXPECT_TRUE(eventually([&] { return runs() > announced; }));
    stop.request_stop();
    thread.join();
    EXPECT_EQ(exitCode, kExitOk);
}

TEST_F(DaemonTest, PublishingRetriesThroughServerErrors) {
    api.failNext(3, 500);
    api.failNext(2, 429, 0);
    start();
    EXPECT_TRUE(eventually([&] { return published(); }, 15s));
}

// The numaNode attribute of the published GPU: "int", "ints", or "" when there is none yet.
std::string numaNodeFormOfGpu(const fakes::FakeApiServer& api) {
    for (const auto& slice : api.resourceSlices()) {
        for (const auto& device : slice["spec"].value("devices", Json::array())) {
            if (device["name"] != "gpu-0000-21-00-0")
                continue;
            const Json& numa = device["attributes"]["resource.kubernetes.io/numaNode"];
            return numa.contains("ints") ? "ints" : numa.contains("int") ? "int" : "";
        }
    }
    return "";
}

// Slice creates the daemon sent, split into dry runs and real writes.
std::pair<int, int> sliceCreates(const fakes::FakeApiServer& api) {
    int dryRuns = 0, writes = 0;
    for (const auto& request : api.requests()) {
        if (request.method == "POST" && request.path == "/apis/resource.k8s.io/v1/resourceslices")
            ++(request.query == "dryRun=All" ? dryRuns : writes);
    }
    return {dryRuns, writes};
}

TEST_F(DaemonTest, RefusedListAttributesAreFatalNotRetriedForever) {
    api.setRefuseListAttributes(true);  // kube-apiserver 1.37 by default: 422 Invalid
    start({"--numa-list"});
    ASSERT_TRUE(eventually([&] { return exitCode != -1; }, 10s));
    EXPECT_EQ(exitCode, kExitFatal);
    EXPECT_EQ(sliceCreates(api).second, 1);  // one write, besides node allocatable's dry run
    EXPECT_FALSE(published());
}

// Found against kube-apiserver 1.37.2 (no KEP-5941): a slice stored without its budgets' request
// policies would let the scheduler overcommit, so the fatal exit deletes what was stored.
TEST_F(DaemonTest, SlicesStoredWithoutTheirBudgetsAreDeletedOnTheFatalExit) {
    api.setDropCounterRequestPolicies(true);
    start({"--shared-consumable-capacity"});
    ASSERT_TRUE(eventually([&] { return exitCode != -1; }, 10s));
    EXPECT_EQ(exitCode, kExitFatal);
    EXPECT_GE(api.requestCount("POST", "/apis/resource.k8s.io/v1/resourceslices"), 1);
    EXPECT_TRUE(api.resourceSlices().empty()) << api.resourceSlices().size() << " slices left";
}

bool cpuDevicesMapNodeResources(const fakes::FakeApiServer& api) {
    for (const auto& slice : api.resourceSlices()) {
        for (const auto& device : slice["spec"].value("devices", Json::array())) {
            if (device["name"] == "cpu-numa-0")
                return device.contains("nodeAllocatableResources");
        }
    }
    return false;
}

TEST_F(DaemonTest, CpuDevicesMapToTheNodesAllocatableResourcesByDefault) {
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }));
    EXPECT_TRUE(cpuDevicesMapNodeResources(api));
    EXPECT_NE(httpGet(metricsPort, "/metrics").find("numadra_node_allocatable_resources_dropped 0"),
              std::string::npos);
}

TEST_F(DaemonTest, WhereTheApiServerDropsTheMappingsTheDaemonPublishesWithout) {
    api.setDropNodeAllocatableResources(true);
    start({});
    ASSERT_TRUE(eventually(
        [&] {
            return httpGet(metricsPort, "/metrics")
                       .find("numadra_node_allocatable_resources_dropped 1") != std::string::npos;
        },
        10s));
    ASSERT_TRUE(eventually([&] { return published(); }));
    EXPECT_FALSE(cpuDevicesMapNodeResources(api));
    EXPECT_EQ(exitCode, -1);  // still running
}

TEST_F(DaemonTest, AKubeletWithoutTheFeatureGetsSlicesWithoutMappingsFromTheStart) {
    api.setCheckDeclaredFeatures(true);
    api.addNode("node-a", "node-uid-1", std::vector<std::string>{"DRAOptionalNodeOperations"});
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }));
    EXPECT_FALSE(cpuDevicesMapNodeResources(api));
    EXPECT_EQ(api.requestCount("POST", "/apis/resource.k8s.io/v1/resourceslices"),
              static_cast<int>(api.resourceSlices().size()));  // none refused
}

// node-a declares nothing (an older kubelet): no hint in the Node, so one dry-run create asks the
// API server, whose admission refuses the mappings, before the first write.
TEST_F(DaemonTest, ANodeThatDeclaresNothingIsDecidedByADryRunBeforeTheFirstWrite) {
    api.setCheckDeclaredFeatures(true);
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }, 10s));
    EXPECT_FALSE(cpuDevicesMapNodeResources(api));
    EXPECT_NE(httpGet(metricsPort, "/metrics").find("numadra_node_allocatable_resources_dropped 1"),
              std::string::npos);
    const auto [dryRuns, writes] = sliceCreates(api);
    EXPECT_EQ(dryRuns, 1);
    EXPECT_EQ(writes, static_cast<int>(api.resourceSlices().size()));  // none refused
}

// An API server whose gate is off drops the mappings from the dry run's answer as from a write.
TEST_F(DaemonTest, MappingsTheApiServerWouldDropAreLeftOutBeforeTheFirstWrite) {
    api.setDropNodeAllocatableResources(true);
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }, 10s));
    EXPECT_FALSE(cpuDevicesMapNodeResources(api));
    const auto [dryRuns, writes] = sliceCreates(api);
    EXPECT_EQ(dryRuns, 1);
    EXPECT_EQ(writes, static_cast<int>(api.resourceSlices().size()));
}

// A node that declares the feature needs no dry run.
TEST_F(DaemonTest, ANodeDeclaringItsFeaturesIsDecidedWithoutADryRun) {
    api.setCheckDeclaredFeatures(true);
    api.addNode("node-a", "node-uid-1", std::vector<std::string>{"DRANodeAllocatableResources"});
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }));
    EXPECT_EQ(sliceCreates(api).first, 0);
}

TEST_F(DaemonTest, ANodeThatDeclaresTheFeatureGetsTheMappings) {
    api.setCheckDeclaredFeatures(true);
    api.addNode("node-a", "node-uid-1", std::vector<std::string>{"DRANodeAllocatableResources"});
    start({});
    ASSERT_TRUE(eventually([&] { return published(); }));
    EXPECT_TRUE(cpuDevicesMapNodeResources(api));
}

TEST_F(DaemonTest, DroppedMappingsTheFlagRequiresAreFatalAndLeaveNoSlice) {
    api.setDropNodeAllocatableResources(true);
    start({"--node-allocatable-resources"});
    ASSERT_TRUE(eventually([&] { return exitCode != -1; }, 10s));
    EXPECT_EQ(exitCode, kExitFatal);
    EXPECT_TRUE(api.resourceSlices().empty()) << api.resourceSlices().size() << " slices left";
}

TEST_F(DaemonTest, NumaListAutoFallsBackToScalarsWhereListsAreRefused) {
    api.setRefuseListAttributes(true);
    start({"--numa-list=auto"});
    ASSERT_TRUE(eventually([&] { return numaNodeFormOfGpu(api) == "int"; }, 10s));
    EXPECT_EQ(exitCode, -1);  // still running
    EXPECT_NE(httpGet(metricsPort, "/metrics").find("numadra_numa_list_refused 1"),
              std::string::npos);
}

TEST_F(DaemonTest, NumaListAutoPublishesListsWhereAccepted) {
    start({"--numa-list=auto"});
    ASSERT_TRUE(eventually([&] { return numaNodeFormOfGpu(api) == "ints"; }, 10s));
    EXPECT_NE(httpGet(metricsPort, "/metrics").find("numadra_numa_list_refused 0"),
              std::string::npos);
}

TEST_F(DaemonTest, KeepSlicesOnExitLeavesThemInPlace) {
    start({"--keep-slices-on-exit"});
    ASSERT_TRUE(eventually([&] { return published(); }));
    stop.request_stop();
    thread.join();
    EXPECT_EQ(exitCode, kExitOk);
    EXPECT_FALSE(api.resourceSlices().empty());
}

TEST_F(DaemonTest, UnusableSysfsRootIsAConfigurationError) {
    configure({"--sysfs-root", dirs.path("nothing")});
    EXPECT_EQ(runDaemon(config, stop.get_token(), std::chrono::steady_clock::now()),
              kExitBadConfig);
    EXPECT_FALSE(std::filesystem::exists(registrationSocket()));
}

TEST_F(DaemonTest, DryRunNeedsNoApiServer) {
    numadra::testing::TempTree claims;
    start({"--dry-run", "--claims-dir", claims.root()});
    ASSERT_TRUE(eventually([&] { return std::filesystem::exists(registrationSocket()); }));
    EXPECT_TRUE(
        eventually([&] { return httpGet(metricsPort, "/readyz").rfind("HTTP/1.1 200", 0) == 0; }));
    EXPECT_EQ(api.requestCount("GET", "/apis"), 0);
}

}  // namespace
}  // namespace numadra::daemon

namespace numadra::daemon {
namespace {

// The binary as the DaemonSet runs it: a real process, stopped with SIGTERM.
class DaemonProcessTest : public DaemonTest {
  protected:
    pid_t child = -1;

    void TearDown() override {
        if (child > 0) {
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
        }
        DaemonTest::TearDown();
    }

    // With `killAfterWrites`, the test program with fault injection runs unless `program` names
    // another.
    void spawn(std::vector<std::string> args, const std::string& killAfterWrites = "",
               std::string program = "") {
        if (program.empty())
            program = killAfterWrites.empty() ? "numa-dra-plugin" : "numa-dra-plugin-faults";
        std::string binary = std::string(NUMADRA_BIN_DIR) + "/" + program;
        child = ::fork();
        if (child == 0) {
            if (!killAfterWrites.empty())
                ::setenv("NUMADRA_TEST_KILL_AFTER_WRITES", killAfterWrites.c_str(), 1);
            std::vector<char*> argv;
            argv.push_back(binary.data());
            for (auto& a : args)
                argv.push_back(a.data());
            argv.push_back(nullptr);
            ::execv(binary.c_str(), argv.data());
            ::_exit(127);
        }
    }

    int terminateAndWait() {
        ::kill(child, SIGTERM);
        int status = 0;
        ::waitpid(child, &status, 0);
        child = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
};

TEST_F(DaemonProcessTest, SigtermRemovesSocketsAndSlices) {
    spawn({"--kubeconfig", dirs.path("kubeconfig"), "--node-name", "node-a", "--sysfs-root",
           numadra::testing::machineRoot("gpu4-nic"), "--kubelet-registry-dir",
           dirs.path("registry"), "--kubelet-plugins-dir", dirs.path("plugins"), "--nri-socket",
           dirs.path("nri.sock"), "--metrics-addr", "", "--log-format", "json"});
    ASSERT_TRUE(
        eventually([&] { return std::filesystem::exists(registrationSocket()) && published(); }));
    EXPECT_EQ(terminateAndWait(), 0);
    EXPECT_FALSE(std::filesystem::exists(registrationSocket()));
    EXPECT_FALSE(std::filesystem::exists(draSocket()));
    EXPECT_TRUE(api.resourceSlices().empty());
}

TEST_F(DaemonProcessTest, BadFlagExitsTwo) {
    spawn({"--no-such-flag"});
    int status = 0;
    ::waitpid(child, &status, 0);
    child = -1;
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), kExitBadConfig);
}

// Issue 27: the daemon as the DaemonSet runs it, every feature on (the API server, health,
// metrics, CPU pinning waiting for an NRI socket), keeps at most 8 threads while idle, as the
// peer Go drivers do; a burst of claims starts lane threads, which end after their linger.
TEST_F(DaemonProcessTest, IdleItKeepsAtMostEightThreadsAndReturnsThereAfterABurst) {
    constexpr std::size_t kIdleThreads = 8;
    constexpr int kClaims = 32;
    auto args = nodeArgs();
    for (const auto& extra :
         {std::string("--health"), std::string("--metrics-addr"),
          "127.0.0.1:" + std::to_string(metricsPort), std::string("--cpu-pinning"),
          std::string("auto"), std::string("--log-level"), std::string("warn")})
        args.push_back(extra);
    spawn(args);
    ASSERT_TRUE(
        eventually([&] { return std::filesystem::exists(draSocket()) && published(); }, 30s));
    using numadra::testing::joinedThreadNames;
    auto threads = [&] { return numadra::testing::threadNames(child).size(); };
    EXPECT_TRUE(eventually([&] { return threads() <= kIdleThreads; }, 20s))
        << "idle: " << joinedThreadNames(child);

    // Shares of the CPU devices (and a NIC, whose claim status is written), 8 claims a call
    // from 4 clients at once: both lanes get busy.
    for (int i = 0; i < kClaims; ++i) {
        auto claim =
            test_support::allocatedClaim("c" + std::to_string(i), "uid-" + std::to_string(i),
                                         "cpu-numa-" + std::to_string(i % 8));
        auto& result = claim["status"]["allocation"]["devices"]["results"][0];
        result["request"] = "cpu";
        result["shareID"] = "share-" + std::to_string(i);
        result["consumedCapacity"] = {{"cpu", "1"}};
        if (i == 0)
            claim = test_support::allocatedClaim("c0", "uid-0", "nic-0000-c1-00-0");
        api.putResourceClaim(claim);
    }
    std::atomic<int> failures{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&, c] {
            auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
            drav1::NodePrepareResourcesRequest request;
            for (int i = c * 8; i < c * 8 + 8; ++i) {
                auto* claim = request.add_claims();
                claim->set_namespace_("default");
                claim->set_name("c" + std::to_string(i));
                claim->set_uid("uid-" + std::to_string(i));
            }
            drav1::NodePrepareResourcesResponse response;
            grpc::ClientContext context;
            context.set_deadline(std::chrono::system_clock::now() + 45s);
            if (!dra->NodePrepareResources(&context, request, &response).ok())
                ++failures;
            for (const auto& [uid, result] : response.claims())
                failures += result.error().empty() ? 0 : 1;
        });
    }
    for (auto& client : clients)
        client.join();
    EXPECT_EQ(failures.load(), 0);
    // The lane threads the burst started linger (5 s) before they end.
    const std::size_t afterBurst = threads();
    EXPECT_GT(afterBurst, kIdleThreads) << joinedThreadNames(child);
    EXPECT_TRUE(eventually([&] { return threads() <= kIdleThreads; }, 30s))
        << "after the burst (" << afterBurst << " threads): " << joinedThreadNames(child);
    EXPECT_EQ(terminateAndWait(), 0);
}

// Crash safety: the process is SIGKILLed right after each file a Prepare writes (two metadata
// files, their two CDI specs, the claim's spec, the checkpoint record), then restarted. A repeated
// Prepare must give the answer an uninterrupted run gives, and Unprepare must leave every folder
// empty.
class CrashTest : public DaemonProcessTest {
  protected:
    std::vector<std::string> daemonArgs() const {
        auto args = nodeArgs();
        for (const char* arg :
             {"--metrics-addr", "", "--log-level", "warn", "--keep-slices-on-exit"})
            args.emplace_back(arg);
        return args;
    }

    void putClaim() {
        auto result = [](const char* request, const char* device) {
            return Json{{"request", request},
                        {"driver", "numa.dra.dev"},
                        {"pool", "node-a"},
                        {"device", device}};
        };
        api.putResourceClaim(
            Json{{"apiVersion", "resource.k8s.io/v1"},
                 {"kind", "ResourceClaim"},
                 {"metadata", {{"name", "job"}, {"namespace", "default"}, {"uid", "crash-uid"}}},
                 {"status",
                  {{"allocation",
                    {{"devices",
                      {{"results", Json::array({result("gpu", "gpu-0000-21-00-0"),
                                                result("nic", "nic-0000-c1-00-0")})}}}}}}}});
    }

    drav1::Claim claimRef() const {
        drav1::Claim claim;
        claim.set_namespace_("default");
        claim.set_name("job");
        claim.set_uid("crash-uid");
        return claim;
    }

    // The Prepare answer as text (devices with their CDI ids), or the gRPC error.
    std::string prepareOnce(std::chrono::seconds timeout = 5s) {
        auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
        drav1::NodePrepareResourcesRequest request;
        *request.add_claims() = claimRef();
        drav1::NodePrepareResourcesResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + timeout);
        auto status = dra->NodePrepareResources(&context, request, &response);
        if (!status.ok())
            return "rpc error: " + status.error_message();
        return response.claims().at("crash-uid").DebugString();
    }

    // Prepare against a daemon that may still be starting: retried until the socket answers.
    std::string prepareWhenServing() {
        std::string answer;
        eventually(
            [&] {
                answer = prepareOnce(2s);
                return answer.rfind("rpc error", 0) != 0;
            },
            20s);
        return answer;
    }

    // Calls Prepare until the process kills itself in the middle of one; its exit status.
    int prepareUntilKilled() {
        const auto end = std::chrono::steady_clock::now() + 20s;
        while (std::chrono::steady_clock::now() < end) {
            int status = 0;
            if (::waitpid(child, &status, WNOHANG) == child) {
                child = -1;
                return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
            }
            prepareOnce(2s);
        }
        return -1;
    }

    std::string unprepare() {
        auto dra = drav1::DRAPlugin::NewStub(channel(draSocket()));
        drav1::NodeUnprepareResourcesRequest request;
        *request.add_claims() = claimRef();
        drav1::NodeUnprepareResourcesResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 10s);
        if (!dra->NodeUnprepareResources(&context, request, &response).ok())
            return "rpc error";
        return response.claims().at("crash-uid").error();
    }

    std::vector<std::string> leftovers() const {
        std::vector<std::string> out;
        for (const auto* folder : {"cdi", "plugins/numa.dra.dev/dra-device-metadata",
                                   "plugins/numa.dra.dev/checkpoints"}) {
            if (!std::filesystem::exists(dirs.path(folder)))
                continue;
            for (const auto& entry :
                 std::filesystem::recursive_directory_iterator(dirs.path(folder)))
                out.push_back(entry.path().string());
        }
        return out;
    }
};

TEST_F(CrashTest, TheShippedProgramHasNoFaultInjection) {
    putClaim();
    spawn(daemonArgs(), "1", "numa-dra-plugin");
    EXPECT_NE(prepareWhenServing().find("numa.dra.dev/claim=crash-uid-gpu-0000-21-00-0"),
              std::string::npos);
    EXPECT_EQ(unprepare(), "");
    EXPECT_EQ(terminateAndWait(), 0);
}

TEST_F(CrashTest, KilledAfterEachWriteThenRestartedLosesAndLeaksNothing) {
    putClaim();
    // The answer of an uninterrupted run.
    spawn(daemonArgs());
    const std::string expected = prepareWhenServing();
    ASSERT_NE(expected.find("numa.dra.dev/claim=crash-uid-gpu-0000-21-00-0"), std::string::npos)
        << expected;
    ASSERT_EQ(unprepare(), "");
    ASSERT_EQ(terminateAndWait(), 0);
    ASSERT_TRUE(leftovers().empty()) << ::testing::PrintToString(leftovers());

    // 2 metadata files, their 2 CDI specs, the claim's CDI spec, then its checkpoint record.
    constexpr int kWritesPerPrepare = 6;
    for (int step = 1; step <= kWritesPerPrepare; ++step) {
        SCOPED_TRACE("killed after write " + std::to_string(step));
        spawn(daemonArgs(), std::to_string(step));
        EXPECT_EQ(prepareUntilKilled(), 128 + SIGKILL);

        const int claimGets = api.requestCount(
            "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/job");
        spawn(daemonArgs());
        EXPECT_EQ(prepareWhenServing(), expected);
        if (step == kWritesPerPrepare) {
            // Completed before the crash: answered from the checkpoint, not the API server.
            EXPECT_EQ(api.requestCount(
                          "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/job"),
                      claimGets);
        }
        EXPECT_EQ(unprepare(), "");
        EXPECT_EQ(terminateAndWait(), 0);
        EXPECT_TRUE(leftovers().empty()) << ::testing::PrintToString(leftovers());
    }
}

}  // namespace
}  // namespace numadra::daemon
