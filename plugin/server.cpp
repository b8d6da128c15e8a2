#include "numadra/plugin/server.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "dra_service.hpp"
#include "health_service.hpp"
#include "numadra/common/errors.hpp"
#include "numadra/plugin/grpc/event_loop.hpp"
#include "numadra/plugin/grpc/server.hpp"
#include "registration_service.hpp"
#include "unix_listener.hpp"

namespace numadra::plugin {
namespace {

std::vector<std::string> supportedVersions(bool serveHealth) {
    // The 1.34-1.36 kubelet takes the first entry it knows, so v1 must come first. It skips
    // the health entry; later kubelets open the health stream only when it is advertised.
    std::vector<std::string> versions{"v1.DRAPlugin", "v1beta1.DRAPlugin"};
    if (serveHealth)
        versions.emplace_back("v1alpha1.DRAResourceHealth");
    return versions;
}

// An existing directory is left as it is: it may be a hostPath the operator set up on purpose.
Status ensureDirectory(const std::string& path, std::optional<gid_t> group) {
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        return Status::Ok();
    if (std::filesystem::exists(path, error))
        return errorWithErrno(ENOTDIR, path + " exists and is not a directory");
    std::filesystem::create_directories(std::filesystem::path(path).parent_path(), error);
    if (error)
        return errorFromErrno(error.value(), "cannot create " + path);
    if (::mkdir(path.c_str(), 0750) != 0 && errno != EEXIST)
        return errorFromErrno(errno, "cannot create " + path);
    // Set the mode explicitly: mkdir's is filtered through the umask. With a socket group the
    // group needs to traverse the directory to reach the socket.
    if (group && ::chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0)
        return errorFromErrno(errno, "cannot give " + path + " to group " + std::to_string(*group));
    if (::chmod(path.c_str(), 0750) != 0)
        return errorFromErrno(errno, "cannot chmod " + path);
    return Status::Ok();
}

// Our own socket (its mode, group and name), served by `server` on its event loop.
Result<std::unique_ptr<UnixListener>> listenAndServe(const std::string& path,
                                                     const SocketAccess& access,
                                                     rpc::GrpcServer& server) {
    auto listener = UnixListener::open(path, access);
    if (!listener)
        return listener.error();
    if (auto serving = server.serve(listener.value()->fd()); !serving)
        return serving.error();
    return std::move(listener).value();
}

}  // namespace

class PluginServer::Impl {
  public:
    Impl(PluginServerOptions options, claims::ClaimPreparer& preparer, claims::HealthSource* health)
        : options_(std::move(options)),
          preparer_(preparer),
          health_(health),
          paths_(resolveSocketPaths(options_)),
          registration_(options_.driverName, paths_ ? paths_->dra : std::string(),
                        supportedVersions(options_.serveHealth)) {}

    ~Impl() { stop(); }

    Status start() {
        std::lock_guard lock(lifecycle_);
        if (started_)
            return Error{"the plugin server was started already"};
        started_ = true;
        auto status = startServing();
        if (!status) {
            spdlog::error("plugin server failed to start driver={} error={}", options_.driverName,
                          status.error().message);
            stopServing();
        }
        return status;
    }

    void stop() {
        std::lock_guard lock(lifecycle_);
        stopServing();
    }

    std::string registrationSocketPath() const { return paths_ ? paths_->registration : ""; }
    std::string draSocketPath() const { return paths_ ? paths_->dra : ""; }
    std::optional<bool> registered() const { return registration_.registered(); }

  private:
    Status startServing() {
        if (!paths_)
            return paths_.error();
        if (auto made = ensureDirectory(std::filesystem::path(paths_->registration).parent_path(),
                                        std::nullopt);
            !made)
            return made;
        if (auto made = ensureDirectory(std::filesystem::path(paths_->dra).parent_path(),
                                        options_.socketGroup);
            !made)
            return made;

        auto loop = rpc::EventLoop::create();
        if (!loop)
            return loop.error();
        loop_ = std::move(loop).value();
        loop_->start("plugin-grpc");
        startDraServer();
        SocketAccess access{options_.socketGroup};
        auto dra = listenAndServe(paths_->dra, access, *draServer_);
        if (!dra)
            return dra.error();
        draListener_ = std::move(dra).value();
        if (options_.hooks.draServingBeforeRegistration)
            options_.hooks.draServingBeforeRegistration();

        // Only now may the kubelet find us: it calls the DRA socket right after registering.
        registrationServer_ = std::make_unique<rpc::GrpcServer>(*loop_);
        registration_.addTo(*registrationServer_);
        auto registration = listenAndServe(paths_->registration, access, *registrationServer_);
        if (!registration)
            return registration.error();
        registrationListener_ = std::move(registration).value();

        spdlog::info("plugin server started driver={} registration={} endpoint={} health={}",
                     options_.driverName, paths_->registration, paths_->dra,
                     !options_.serveHealth ? "off"
                     : health_             ? "on"
                                           : "silent");
        return Status::Ok();
    }

    void startDraServer() {
        localLane_ =
            std::make_unique<WorkerPool>(std::max<std::size_t>(1, options_.localWorkerThreads),
                                         "claims-local", options_.workerLinger);
        apiLane_ = std::make_unique<WorkerPool>(std::max<std::size_t>(1, options_.apiWorkerThreads),
                                                "claims-api", options_.workerLinger);
        ClaimRunnerSettings settings{options_.maxParallelClaimsPerCall, std::nullopt};
        if (!options_.podUid.empty())
            settings.serializeLockPath = paths_->serializeLock;
        runner_ =
            std::make_unique<ClaimRunner>(preparer_, *localLane_, *apiLane_, std::move(settings));
        draServer_ = std::make_unique<rpc::GrpcServer>(*loop_);
        addDraV1Service(*draServer_, *runner_);
        addDraV1beta1Service(*draServer_, *runner_);
        if (options_.serveHealth) {
            addHealthV1alpha1Service(*draServer_, hub_);
            addHealthV1Service(*draServer_, hub_);
        }
        if (options_.serveHealth && health_)
            broadcaster_ = std::make_unique<HealthBroadcaster>(*health_, hub_, *loop_,
                                                               options_.healthResendInterval);
    }

    // Safe on a partly started server, and idempotent.
    void stopServing() {
        bool wasServing = registrationListener_ || draListener_;
        // 1. Deregister: the kubelet reacts to the registration socket disappearing.
        if (registrationServer_) {
            registrationServer_->stop(std::chrono::milliseconds(0));
            registrationServer_.reset();
        }
        if (registrationListener_) {
            registrationListener_->closeSocket();
            registrationListener_->removeSocketFile();
            registrationListener_.reset();
            if (options_.hooks.registrationRemovedBeforeShutdown)
                options_.hooks.registrationRemovedBeforeShutdown();
        }
        // 2. End the health streams; no new connections, and in-flight calls get the grace
        //    period to finish (then they are cancelled). stop() returns once every call ended.
        broadcaster_.reset();
        hub_.closeAll();
        if (draServer_) {
            draServer_->stop(options_.shutdownGrace);
            draServer_.reset();
        }
        if (draListener_)
            draListener_->closeSocket();
        // 3. Preparer calls still running belong to cancelled calls: wait for them to return.
        //    The local lane first: its tasks hand claims on to the API lane.
        if (localLane_)
            localLane_->stop();
        if (apiLane_)
            apiLane_->stop();
        // Servers first, then their loop; answers the lanes still post are dropped safely.
        if (loop_)
            loop_->stop();
        // 4. Only now remove the DRA socket.
        if (draListener_) {
            draListener_->removeSocketFile();
            draListener_.reset();
        }
        if (wasServing)
            spdlog::info("plugin server stopped driver={}", options_.driverName);
    }

    const PluginServerOptions options_;
    claims::ClaimPreparer& preparer_;
    claims::HealthSource* const health_;
    const Result<SocketPaths> paths_;
    RegistrationService registration_;

    std::mutex lifecycle_;
    bool started_ = false;
    // Declared in dependency order: everything a gRPC server calls into outlives it, and the
    // servers go before their loop.
    std::unique_ptr<WorkerPool> localLane_;
    std::unique_ptr<WorkerPool> apiLane_;
    std::unique_ptr<ClaimRunner> runner_;
    HealthHub hub_;
    std::unique_ptr<rpc::EventLoop> loop_;
    std::unique_ptr<rpc::GrpcServer> draServer_;
    std::unique_ptr<rpc::GrpcServer> registrationServer_;
    std::unique_ptr<HealthBroadcaster> broadcaster_;
    std::unique_ptr<UnixListener> draListener_;
    std::unique_ptr<UnixListener> registrationListener_;
};

PluginServer::PluginServer(PluginServerOptions options, claims::ClaimPreparer& preparer,
                           claims::HealthSource* health)
    : impl_(std::make_unique<Impl>(std::move(options), preparer, health)) {}

PluginServer::~PluginServer() = default;

Status PluginServer::start() {
    return impl_->start();
}
void PluginServer::stop() {
    impl_->stop();
}
std::string PluginServer::registrationSocketPath() const {
    return impl_->registrationSocketPath();
}
std::string PluginServer::draSocketPath() const {
    return impl_->draSocketPath();
}
std::optional<bool> PluginServer::registered() const {
    return impl_->registered();
}

std::optional<std::filesystem::file_time_type> PluginServer::anotherInstanceServingSince() const {
    const std::filesystem::path own = impl_->draSocketPath();
    std::optional<std::filesystem::file_time_type> since;
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(own.parent_path(), error)) {
        const std::string name = entry.path().filename().string();
        if (entry.path() == own || !name.starts_with("dra-") || !name.ends_with(".sock"))
            continue;
        const auto modified = std::filesystem::last_write_time(entry.path(), error);
        if (error || !acceptsConnections(entry.path().string()))
            continue;
        if (!since || modified < *since)
            since = modified;
    }
    return since;
}

}  // namespace numadra::plugin
