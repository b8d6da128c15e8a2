// The kubelet-facing gRPC handlers with random requests and random claims. In process, as the
// daemon wires them: the DRA v1 and v1beta1 services (plugin/dra_service.cpp, on its two lanes
// of workers) served by plugin/grpc on a unix socket and called by a grpc++ client, the daemon's
// ClaimPreparer (the claim checks of node/daemon/claims.cpp) and the real device preparer (CDI
// specs, metadata, checkpoint) on a mocked node (epyc-2s-nps4: GPUs, NICs, CPU devices) with a
// mocked /dev, in scratch folders.
//
// Input layout:
//   byte 0      flags: bit 0 v1beta1 (else v1); bit 1 the claim comes from the dry-run file
//               source (daemon::makeFileClaimSource, YAML) instead of the API (JSON); bit 2 the
//               claim's metadata is given the identity of the first claim of the request, so
//               the checks behind the UID comparison are reached
//   bytes 1-2   length N (little endian) of the request
//   N bytes     a NodePrepareResourcesRequest (protobuf, ParseFromArray; the same bytes are
//               then used as the NodeUnprepareResourcesRequest)
//   the rest    the ResourceClaim every GET returns (text)
//
// Every request is followed by NodeUnprepareResources of the same claims. Contracts checked:
// both calls succeed with one entry per distinct claim UID; a claim that failed to prepare left
// no file; after the unprepare, the CDI, metadata and checkpoint folders are empty again.

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dra_service.hpp"
#include "fuzz_support.hpp"
#include "numadra/common/worker_pool.hpp"
#include "numadra/daemon/claims.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/plugin/grpc/event_loop.hpp"
#include "numadra/plugin/grpc/server.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/testing/dev_tree.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/dra/v1beta1/api.grpc.pb.h"
#include "unix_listener.hpp"

namespace {

using namespace numadra;
namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

constexpr const char* kDriver = "numa.dra.dev";
constexpr const char* kPool = "fuzz-node";
constexpr const char* kMachine = "epyc-2s-nps4";

std::string generatedSysfs() {
    if (const char* dir = std::getenv("NUMADRA_FUZZ_SYSFS"))
        return dir;
    return NUMADRA_GENERATED_SYSFS;
}

// What the API server would answer: the claim text of this input, for any name.
class FuzzClaimSource : public daemon::ClaimSource {
  public:
    void set(std::string text) {
        std::lock_guard lock(mutex_);
        text_ = std::move(text);
    }
    Result<api::Json> getClaim(const std::string& ns, const std::string& name,
                               daemon::Deadline) override {
        std::lock_guard lock(mutex_);
        api::Json claim = api::Json::parse(text_, nullptr, /*allow_exceptions=*/false);
        if (claim.is_discarded())
            return Error{"GET resourceclaims " + ns + "/" + name + ": the answer is not JSON"};
        return claim;
    }

  private:
    std::mutex mutex_;
    std::string text_;
};

// The claim source by input flag: the API's (JSON) or the dry-run files (YAML).
class SwitchingSource : public daemon::ClaimSource {
  public:
    SwitchingSource(daemon::ClaimSource& api, daemon::ClaimSource& files)
        : api_(api), files_(files) {}
    void useFiles(bool files) { files_used_ = files; }
    Result<api::Json> getClaim(const std::string& ns, const std::string& name,
                               daemon::Deadline deadline) override {
        return files_used_ ? files_.getClaim(ns, name, deadline)
                           : api_.getClaim(ns, name, deadline);
    }

  private:
    daemon::ClaimSource& api_;
    daemon::ClaimSource& files_;
    bool files_used_ = false;
};

struct Daemon {
    numadra::testing::TempTree tree;  // cdi, metadata, state, dev, claims
    discovery::Machine machine;
    daemon::Inventory inventory;
    metrics::Registry metrics;
    std::unique_ptr<prepare::Preparer> devices;
    FuzzClaimSource apiSource;
    std::unique_ptr<daemon::ClaimSource> fileSource;
    std::unique_ptr<SwitchingSource> source;
    std::unique_ptr<daemon::ClaimPreparer> preparer;
    std::unique_ptr<WorkerPool> localLane;
    std::unique_ptr<WorkerPool> apiLane;
    std::unique_ptr<plugin::ClaimRunner> runner;
    std::unique_ptr<plugin::UnixListener> listener;  // the daemon's own socket setup
    std::unique_ptr<rpc::EventLoop> loop;
    std::unique_ptr<rpc::GrpcServer> server;
    std::unique_ptr<drav1::DRAPlugin::Stub> stubV1;
    std::unique_ptr<drav1beta1::DRAPlugin::Stub> stubV1beta1;

    Daemon() {
        const std::string root = generatedSysfs() + "/" + kMachine;
        auto discovered = discovery::discover({root + "/sys", nullptr, nullptr});
        if (!discovered)
            fuzz::fail("discover " + root + ": " + discovered.error().message);
        machine = std::move(discovered).value();
        slices::SliceOptions options;
        options.nodeName = kPool;
        options.numaForm = topology::NumaForm::List;
        auto built = slices::buildResourceSlices(machine, options);
        if (!built)
            fuzz::fail("slices: " + built.error().message);
        inventory.update(machine, std::move(built).value());
        auto dev = numadra::testing::makeDevTree(machine, tree, "dev");
        tree.dir("claims");

        daemon::declareClaimMetrics(metrics);

        prepare::Options prepareOptions;
        prepareOptions.driverName = kDriver;
        prepareOptions.poolName = kPool;
        prepareOptions.cdiDir = tree.path("cdi");
        prepareOptions.metadataDir = tree.path("metadata");
        prepareOptions.stateDir = tree.path("state");
        prepareOptions.hostRoots = {dev.root, root + "/proc"};
        prepareOptions.bootId = "fuzz-boot";
        auto opened = prepare::Preparer::open(prepareOptions, metrics);
        if (!opened)
            fuzz::fail("preparer: " + opened.error().message);
        devices = std::move(opened).value();
        const auto snapshot = inventory.current();
        if (auto restored = devices->restore({snapshot->machine, snapshot->devices}); !restored)
            fuzz::fail("restore: " + restored.error().message);

        fileSource = daemon::makeFileClaimSource(tree.path("claims"));
        source = std::make_unique<SwitchingSource>(apiSource, *fileSource);
        preparer = std::make_unique<daemon::ClaimPreparer>(*source, inventory, *devices, kDriver,
                                                           kPool, metrics);
        localLane = std::make_unique<WorkerPool>(2);
        apiLane = std::make_unique<WorkerPool>(4);
        runner = std::make_unique<plugin::ClaimRunner>(*preparer, *localLane, *apiLane,
                                                       plugin::ClaimRunnerSettings{});
        const std::string socketPath = tree.path("dra.sock");
        auto listening = plugin::UnixListener::open(socketPath, {});
        if (!listening)
            fuzz::fail("DRA socket: " + listening.error().message);
        listener = std::move(listening).value();
        auto created = rpc::EventLoop::create();
        if (!created)
            fuzz::fail("event loop: " + created.error().message);
        loop = std::move(created).value();
        loop->start();
        server = std::make_unique<rpc::GrpcServer>(*loop);
        plugin::addDraV1Service(*server, *runner);
        plugin::addDraV1beta1Service(*server, *runner);
        if (auto serving = server->serve(listener->fd()); !serving)
            fuzz::fail("gRPC server did not start: " + serving.error().message);
        auto channel =
            grpc::CreateChannel("unix:" + socketPath, grpc::InsecureChannelCredentials());
        stubV1 = drav1::DRAPlugin::NewStub(channel);
        stubV1beta1 = drav1beta1::DRAPlugin::NewStub(channel);
    }
};

Daemon& daemonInstance() {
    static Daemon* instance = new Daemon();  // never destroyed: threads may outlive exit
    return *instance;
}

std::vector<std::string> filesLeft(Daemon& d) {
    std::vector<std::string> out;
    for (const char* folder : {"cdi", "metadata", "state/checkpoints"}) {
        for (auto& file : fuzz::listTree(d.tree.path(folder)))
            out.push_back(std::string(folder) + "/" + file);
    }
    return out;
}

bool safeFileName(const std::string& part) {
    return !part.empty() && part.size() < 100 && part.find('/') == std::string::npos &&
           part.find('\0') == std::string::npos && part != "." && part != "..";
}

template <class Request>
std::set<std::string> expectedKeys(const Request& request) {
    std::set<std::string> keys;
    for (const auto& claim : request.claims())
        keys.insert(claim.uid());  // "" for a claim without a UID
    return keys;
}

template <class Response>
void checkKeys(const Response& response, const std::set<std::string>& keys, const char* call) {
    std::set<std::string> got;
    for (const auto& [uid, entry] : response.claims())
        got.insert(uid);
    if (got != keys)
        fuzz::fail(std::string(call) + ": the response has " + std::to_string(got.size()) +
                   " entries for " + std::to_string(keys.size()) + " claim UIDs");
}

template <class Api, class Stub>
void roundTrip(Daemon& d, Stub& stub, std::string_view requestBytes) {
    typename Api::PrepareRequest prepare;
    if (!prepare.ParseFromArray(requestBytes.data(), static_cast<int>(requestBytes.size())))
        return;
    typename Api::UnprepareRequest unprepare;
    for (const auto& claim : prepare.claims()) {
        auto* copy = unprepare.add_claims();
        copy->set_namespace_(claim.namespace_());
        copy->set_name(claim.name());
        copy->set_uid(claim.uid());
    }
    const auto keys = expectedKeys(prepare);

    typename Api::PrepareResponse prepared;
    {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        auto status = stub.NodePrepareResources(&context, prepare, &prepared);
        if (!status.ok())
            fuzz::fail("NodePrepareResources failed: " + status.error_message());
    }
    checkKeys(prepared, keys, "NodePrepareResources");
    static const bool verbose = std::getenv("NUMADRA_FUZZ_VERBOSE") != nullptr;
    bool anyPrepared = false;
    for (const auto& [uid, entry] : prepared.claims()) {
        if (verbose)
            std::fprintf(stderr, "prepare %s: %d devices %s\n", uid.c_str(), entry.devices_size(),
                         entry.error().c_str());
        if (entry.error().empty()) {
            anyPrepared = true;
        } else if (entry.devices_size() != 0) {
            fuzz::fail("a failed claim came back with devices");
        }
    }
    if (!anyPrepared) {
        if (auto left = filesLeft(d); !left.empty())
            fuzz::fail("every claim failed to prepare, yet " + left[0] + " was left behind");
    }

    typename Api::UnprepareResponse unprepared;
    {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
        auto status = stub.NodeUnprepareResources(&context, unprepare, &unprepared);
        if (!status.ok())
            fuzz::fail("NodeUnprepareResources failed: " + status.error_message());
    }
    checkKeys(unprepared, keys, "NodeUnprepareResources");
    for (const auto& [uid, entry] : unprepared.claims()) {
        if (!uid.empty() && !entry.error().empty())
            fuzz::fail("unprepare of " + uid + " failed: " + entry.error());
    }
    if (auto left = filesLeft(d); !left.empty())
        fuzz::fail("after unprepare of every claim, " + left[0] + " was left behind");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    // Requests with invalid UTF-8 in string fields are refused by the parser, which also logs.
    if (std::getenv("NUMADRA_FUZZ_VERBOSE") == nullptr)
        google::protobuf::SetLogHandler(nullptr);
    (void)daemonInstance();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 3)
        return 0;
    const std::uint8_t flags = data[0];
    const std::size_t length = std::min<std::size_t>(data[1] | (data[2] << 8), size - 3);
    const std::string_view requestBytes(reinterpret_cast<const char*>(data + 3), length);
    std::string claimText(reinterpret_cast<const char*>(data + 3 + length), size - 3 - length);

    Daemon& d = daemonInstance();
    const bool v1beta1 = (flags & 1) != 0;
    const bool fromFiles = (flags & 2) != 0;
    const bool patchIdentity = (flags & 4) != 0;

    // The first claim of the request, for the identity patch and the dry-run file name.
    drav1::NodePrepareResourcesRequest peek;
    const bool parsed =
        peek.ParseFromArray(requestBytes.data(), static_cast<int>(requestBytes.size()));
    if (!parsed)
        return 0;  // not a request: gRPC would refuse it before any handler runs
    if (patchIdentity && peek.claims_size() > 0) {
        api::Json claim = api::Json::parse(claimText, nullptr, false);
        if (claim.is_object()) {
            auto& metadata = claim["metadata"];
            if (metadata.is_null() || metadata.is_object()) {
                metadata["uid"] = peek.claims(0).uid();
                metadata["name"] = peek.claims(0).name();
                metadata["namespace"] = peek.claims(0).namespace_();
                claimText = claim.dump(-1, ' ', false, api::Json::error_handler_t::replace);
            }
        }
    }

    std::error_code ec;
    std::filesystem::remove_all(d.tree.path("claims"), ec);
    d.tree.dir("claims");
    d.source->useFiles(fromFiles);
    if (fromFiles) {
        if (peek.claims_size() > 0 && safeFileName(peek.claims(0).namespace_()) &&
            safeFileName(peek.claims(0).name())) {
            fuzz::writeFile(d.tree.path("claims/" + peek.claims(0).namespace_() + "_" +
                                        peek.claims(0).name() + ".yaml"),
                            claimText);
        }
    } else {
        d.apiSource.set(claimText);
    }

    if (v1beta1) {
        struct Api {
            using PrepareRequest = drav1beta1::NodePrepareResourcesRequest;
            using PrepareResponse = drav1beta1::NodePrepareResourcesResponse;
            using UnprepareRequest = drav1beta1::NodeUnprepareResourcesRequest;
            using UnprepareResponse = drav1beta1::NodeUnprepareResourcesResponse;
        };
        roundTrip<Api>(d, *d.stubV1beta1, requestBytes);
    } else {
        struct Api {
            using PrepareRequest = drav1::NodePrepareResourcesRequest;
            using PrepareResponse = drav1::NodePrepareResourcesResponse;
            using UnprepareRequest = drav1::NodeUnprepareResourcesRequest;
            using UnprepareResponse = drav1::NodeUnprepareResourcesResponse;
        };
        roundTrip<Api>(d, *d.stubV1, requestBytes);
    }
    return 0;
}
