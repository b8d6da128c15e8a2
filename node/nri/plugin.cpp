#include "numadra/nri/plugin.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "github.com/containerd/nri/pkg/api/api.pb.h"
#include "github.com/containerd/ttrpc/request.pb.h"
#include "numadra/cdi/device_edits.hpp"
#include "numadra/common/errors.hpp"
#include "numadra/common/stop_fd.hpp"
#include "numadra/common/text.hpp"
#include "numadra/common/thread_name.hpp"
#include "numadra/common/unique_fd.hpp"
#include "numadra/nri/wire.hpp"

namespace numadra::nri {

namespace api = ::nri::pkg::api::v1alpha1;

namespace {

constexpr const char* kPluginService = "nri.pkg.api.v1alpha1.Plugin";
constexpr const char* kRuntimeService = "nri.pkg.api.v1alpha1.Runtime";
// NRI's version of the api.proto this plugin was built from (RegisterPluginRequest.NRI_version).
constexpr const char* kNriVersion = "v0.12.3";

// gRPC status codes a ttrpc response carries.
constexpr int kCodeUnknown = 2;
constexpr int kCodeFailedPrecondition = 9;
constexpr int kCodeUnimplemented = 12;

constexpr const char* kConnectedMetric = "numadra_nri_connected";
constexpr const char* kPinnedMetric = "numadra_nri_pinned_containers";
constexpr const char* kAdjustmentsMetric = "numadra_nri_container_adjustments_total";
constexpr const char* kUpdateFailuresMetric = "numadra_nri_update_failures_total";
constexpr const char* kRefusedMetric = "numadra_nri_containers_refused_total";
constexpr const char* kForeignCpusetMetric = "numadra_nri_foreign_cpusets_total";
constexpr const char* kConnectionsMetric = "numadra_nri_connections_total";

// The events this plugin handles (ConfigureResponse.events: bit e-1 for event e).
std::int32_t subscribedEvents() {
    auto bit = [](api::Event event) { return std::int32_t{1} << (static_cast<int>(event) - 1); };
    // Not UpdateContainer: the kubelet resizing a container changes its CPU shares and quota;
    // the runtime keeps the cpuset this plugin set. POST_START_CONTAINER: a container updated
    // while only created is checked again once it runs (Session::containerStarted).
    return bit(api::CREATE_CONTAINER) | bit(api::POST_START_CONTAINER) | bit(api::REMOVE_CONTAINER);
}

std::string containerName(const api::PodSandbox* pod, const api::Container& container) {
    if (pod == nullptr)
        return "(pod " + container.pod_sandbox_id() + ")/" + container.name();
    return pod->namespace_() + "/" + pod->name() + "/" + container.name();
}

ContainerView viewOf(const api::PodSandbox* pod, const api::Container& container) {
    ContainerView view;
    view.id = container.id();
    view.name = containerName(pod, container);
    std::vector<std::string> environment(container.env().begin(), container.env().end());
    view.claimUids = cdi::claimUidsInEnvironment(environment);
    if (container.has_linux() && container.linux().has_resources() &&
        container.linux().resources().has_cpu()) {
        view.cpus = container.linux().resources().cpu().cpus();
        view.mems = container.linux().resources().cpu().mems();
    }
    view.running = container.state() == api::CONTAINER_RUNNING;
    return view;
}

// What the container has once `cpuset` is applied ("" memory nodes are left as they are).
void applyCpuset(ContainerView& view, const Cpuset& cpuset) {
    view.cpus = cpuset.cpus;
    if (!cpuset.mems.empty())
        view.mems = cpuset.mems;
}

void fillCpuset(api::LinuxResources& resources, const Cpuset& cpuset) {
    resources.mutable_cpu()->set_cpus(cpuset.cpus);
    if (!cpuset.mems.empty())
        resources.mutable_cpu()->set_mems(cpuset.mems);
}

void fillUpdates(google::protobuf::RepeatedPtrField<api::ContainerUpdate>& out,
                 const std::vector<CpusetUpdate>& updates) {
    for (const CpusetUpdate& update : updates) {
        api::ContainerUpdate* entry = out.Add();
        entry->set_container_id(update.containerId);
        fillCpuset(*entry->mutable_linux()->mutable_resources(), update.cpuset);
    }
}

Result<UniqueFd> dial(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path)
        return Error{"NRI socket path " + path + " is too long for a unix socket"};
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd)
        return errorFromErrno(errno, "socket");
    // A unix socket connects or fails at once; EAGAIN (backlog full) is a retry later.
    if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        return errorFromErrno(errno, "connect " + path);
    return fd;
}

// An exclusive flock held while the descriptor is open; nullopt when another holds it.
Result<std::optional<UniqueFd>> tryLock(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd)
        return errorFromErrno(errno, "open " + path);
    if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EWOULDBLOCK)
            return std::optional<UniqueFd>{};
        return errorFromErrno(errno, "flock " + path);
    }
    return std::optional<UniqueFd>{std::move(fd)};
}

Status writeAll(int fd, std::string_view bytes, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!bytes.empty()) {
        const ssize_t written = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (written > 0) {
            bytes.remove_prefix(static_cast<std::size_t>(written));
            continue;
        }
        if (written < 0 && errno == EINTR)
            continue;
        if (written < 0 && errno != EAGAIN)
            return errorFromErrno(errno, "writing to the runtime");
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return Error{"the runtime read nothing for " + std::to_string(timeout.count()) + " ms"};
        pollfd entry{fd, POLLOUT, 0};
        ::poll(&entry, 1, static_cast<int>(left.count()));
    }
    return {};
}

// Why a connection ended, for the log.
struct Ended {
    std::string reason;
    bool byStop = false;
};

}  // namespace

class SocketFolderWatch;

struct Plugin::State {
    PluginOptions options;
    metrics::Registry& metrics;
    UniqueFd wake{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};
    mutable std::mutex mutex;
    mutable std::condition_variable synchronizedChanged;
    bool isSynchronized = false;
    std::jthread thread;

    State(PluginOptions o, metrics::Registry& m) : options(std::move(o)), metrics(m) {}

    void setSynchronized(bool value) {
        {
            std::lock_guard lock(mutex);
            isSynchronized = value;
        }
        synchronizedChanged.notify_all();
        metrics.gaugeSet(kConnectedMetric, {}, value ? 1 : 0);
    }

    void run(std::stop_token stop);
    // Waits `wait`, or less when the watched socket folder (if given) changes; false on stop.
    bool pause(std::stop_token stop, const StopFd& stopFd, std::chrono::milliseconds wait,
               SocketFolderWatch* socketFolder = nullptr) const;
    // After a failed connect: how long, and on what, to wait before the next one.
    bool awaitRuntime(std::stop_token stop, const StopFd& stopFd, SocketFolderWatch& socketFolder,
                      const Error& failure) const;
};

// Wakes the plugin when an entry of the NRI socket's folder is created or changed, which is how a
// runtime that starts (or restarts) shows its socket: a node whose runtime has no NRI then costs
// nothing while the plugin waits, instead of a connect attempt every retryInterval.
class SocketFolderWatch {
  public:
    explicit SocketFolderWatch(const std::string& socketPath)
        : fd_(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
        const auto slash = socketPath.rfind('/');
        const std::string folder =
            slash == std::string::npos ? "." : socketPath.substr(0, std::max<size_t>(slash, 1));
        if (fd_ && ::inotify_add_watch(fd_.get(), folder.c_str(),
                                       IN_CREATE | IN_MOVED_TO | IN_ATTRIB) < 0) {
            spdlog::warn(
                "NRI socket folder not watched folder={} error=\"{}\" action=\"the "
                "socket is looked for every retry interval instead\"",
                folder, std::strerror(errno));
            fd_.reset();
        }
    }
    // -1 when the folder is not watched (it does not exist, no inotify).
    int fd() const { return fd_ ? fd_.get() : -1; }
    // Reads the events that woke the wait, and notes when the folder changed.
    void drain() {
        alignas(inotify_event) char events[4096];
        while (::read(fd_.get(), events, sizeof events) > 0) {
        }
        changedAt_ = std::chrono::steady_clock::now();
    }
    bool changedWithin(std::chrono::milliseconds span) const {
        return std::chrono::steady_clock::now() - changedAt_ < span;
    }

  private:
    UniqueFd fd_;
    std::chrono::steady_clock::time_point changedAt_{};
};

// With the socket folder watched, a missed event (a folder replaced under the watch) still costs
// at most this long.
constexpr std::chrono::milliseconds kSocketWatchFallback{60'000};

// A runtime binds its socket (which the watch sees) a moment before it listens on it: a connect
// refused within this long of a change of the folder is tried again every kListenRetry.
constexpr std::chrono::milliseconds kListenGrace{2'000};
constexpr std::chrono::milliseconds kListenRetry{50};

// The runtime is not there (no socket, or a socket nobody listens on): it shows up by creating its
// socket again, which the folder watch sees.
bool runtimeAbsent(const Error& error) {
    return error.errnoValue == ENOENT || error.errnoValue == ECONNREFUSED;
}

namespace {

// One connection to the runtime: the ttrpc calls both ways and the containers it told about.
class Session {
  public:
    Session(UniqueFd fd, const PluginOptions& options, metrics::Registry& metrics,
            std::function<void(bool)> onSynchronized)
        : fd_(std::move(fd)),
          options_(options),
          metrics_(metrics),
          onSynchronized_(std::move(onSynchronized)) {}

    Ended serve(const StopFd& stopFd, int wakeFd);

  private:
    Status callRuntime(const std::string& method, const google::protobuf::Message& request);
    Status respond(std::uint32_t streamId, int code, const std::string& text,
                   const google::protobuf::Message* payload);
    Status handle(const Message& message);
    Status handleRequest(const Message& message);
    Status handleResponse(const Message& message);
    Status answer(std::uint32_t streamId, const std::string& method, const std::string& payload);

    api::ConfigureResponse configure(const api::ConfigureRequest& request);
    api::SynchronizeResponse synchronize(const api::SynchronizeRequest& request);
    Result<api::CreateContainerResponse> createContainer(
        const api::CreateContainerRequest& request);
    void removeContainer(const api::RemoveContainerRequest& request);
    bool containerStarted(const std::string& id);
    void bringContainersToPolicy();
    std::vector<CpusetUpdate> updatesFor(const PinningInputs& inputs, const std::string& except);
    void record(const std::vector<CpusetUpdate>& updates);
    void countPinned();

    UniqueFd fd_;
    const PluginOptions& options_;
    metrics::Registry& metrics_;
    std::function<void(bool)> onSynchronized_;
    TrunkReader reader_;
    std::uint32_t nextStreamId_ = 1;                     // a client's streams are odd
    std::map<std::uint32_t, std::string> pendingCalls_;  // stream id -> method
    std::map<std::string, ContainerView> containers_;
    std::map<std::string, api::PodSandbox> syncPods_;  // of a Synchronize split in parts
    std::vector<api::Container> syncContainers_;
    bool synchronized_ = false;
    bool unsolicitedUpdates_ = false;  // takesUnsolicitedUpdates(), from Configure
    bool shutdown_ = false;
    bool warnedForeignCpuset_ = false;
};

Ended Session::serve(const StopFd& stopFd, int wakeFd) {
    api::RegisterPluginRequest registration;
    registration.set_plugin_name(options_.name);
    registration.set_plugin_idx(options_.index);
    registration.set_nri_version(kNriVersion);
    if (Status sent = callRuntime("RegisterPlugin", registration); !sent)
        return Ended{sent.error().message};

    std::string buffer(std::size_t{64} * 1024, '\0');
    while (!shutdown_) {
        pollfd entries[3] = {{fd_.get(), POLLIN, 0}, {wakeFd, POLLIN, 0}, {stopFd.fd(), POLLIN, 0}};
        const int ready =
            ::poll(entries, 3, static_cast<int>(stopFd.limit(std::chrono::hours(1)).count()));
        if (ready < 0 && errno != EINTR)
            return Ended{"poll: " + std::string(std::strerror(errno))};
        if (entries[2].revents != 0)
            return Ended{"stopping", true};
        if (entries[1].revents != 0) {
            std::uint64_t count = 0;
            [[maybe_unused]] auto drained = ::read(wakeFd, &count, sizeof count);
            if (synchronized_ && unsolicitedUpdates_)
                bringContainersToPolicy();
        }
        if (entries[0].revents == 0)
            continue;
        const ssize_t got = ::recv(fd_.get(), buffer.data(), buffer.size(), 0);
        if (got == 0)
            return Ended{"the runtime closed the connection"};
        if (got < 0) {
            if (errno == EAGAIN || errno == EINTR)
                continue;
            return Ended{"reading from the runtime: " + std::string(std::strerror(errno))};
        }
        if (Status fed = reader_.feed({buffer.data(), static_cast<std::size_t>(got)}); !fed)
            return Ended{fed.error().message};
        while (auto message = reader_.next()) {
            if (Status handled = handle(*message); !handled)
                return Ended{handled.error().message};
        }
    }
    return Ended{"the runtime asked the plugin to shut down"};
}

Status Session::callRuntime(const std::string& method, const google::protobuf::Message& request) {
    ::ttrpc::Request call;
    call.set_service(kRuntimeService);
    call.set_method(method);
    call.set_payload(request.SerializeAsString());
    Message message;
    message.channel = Channel::RuntimeService;
    message.streamId = nextStreamId_;
    message.type = MessageType::Request;
    message.payload = call.SerializeAsString();
    nextStreamId_ += 2;
    auto bytes = encodeMessage(message);
    if (!bytes)
        return Error{"calling " + method + ": " + bytes.error().message};
    pendingCalls_[message.streamId] = method;
    return writeAll(fd_.get(), *bytes, options_.writeTimeout);
}

Status Session::respond(std::uint32_t streamId, int code, const std::string& text,
                        const google::protobuf::Message* payload) {
    ::ttrpc::Response response;
    if (code != 0) {
        response.mutable_status()->set_code(code);
        response.mutable_status()->set_message(text);
    }
    if (payload != nullptr)
        response.set_payload(payload->SerializeAsString());
    Message message;
    message.channel = Channel::PluginService;
    message.streamId = streamId;
    message.type = MessageType::Response;
    message.payload = response.SerializeAsString();
    auto bytes = encodeMessage(message);
    if (!bytes)
        return bytes.error();
    return writeAll(fd_.get(), *bytes, options_.writeTimeout);
}

Status Session::handle(const Message& message) {
    if (message.channel == Channel::PluginService && message.type == MessageType::Request)
        return handleRequest(message);
    if (message.channel == Channel::RuntimeService && message.type == MessageType::Response)
        return handleResponse(message);
    // Neither side streams in NRI: data messages, or requests on the runtime's connection, are
    // a peer this plugin does not understand.
    return Error{"unexpected ttrpc message (type " +
                 std::to_string(static_cast<int>(message.type)) + ") on NRI connection " +
                 std::to_string(static_cast<std::uint32_t>(message.channel))};
}

Status Session::handleRequest(const Message& message) {
    ::ttrpc::Request request;
    if (!request.ParseFromString(message.payload))
        return Error{"the runtime sent a ttrpc request that is not a ttrpc.Request message"};
    if (request.service() != kPluginService) {
        return respond(message.streamId, kCodeUnimplemented,
                       "service " + request.service() + " is not served here", nullptr);
    }
    return answer(message.streamId, request.method(), request.payload());
}

template <class T>
std::optional<T> parsed(const std::string& payload) {
    T value;
    if (!value.ParseFromString(payload))
        return std::nullopt;
    return value;
}

Status Session::answer(std::uint32_t streamId, const std::string& method,
                       const std::string& payload) {
    auto malformed = [&] {
        return respond(streamId, kCodeUnknown, "malformed " + method + " request", nullptr);
    };
    if (method == "Configure") {
        auto request = parsed<api::ConfigureRequest>(payload);
        if (!request)
            return malformed();
        api::ConfigureResponse response = configure(*request);
        return respond(streamId, 0, "", &response);
    }
    if (method == "Synchronize") {
        auto request = parsed<api::SynchronizeRequest>(payload);
        if (!request)
            return malformed();
        api::SynchronizeResponse response = synchronize(*request);
        return respond(streamId, 0, "", &response);
    }
    if (method == "CreateContainer") {
        auto request = parsed<api::CreateContainerRequest>(payload);
        if (!request)
            return malformed();
        auto response = createContainer(*request);
        if (!response) {
            // The runtime fails the container's creation with this message: the kubelet shows it
            // in the pod's events and retries.
            return respond(streamId, kCodeFailedPrecondition, response.error().message, nullptr);
        }
        return respond(streamId, 0, "", &*response);
    }
    if (method == "RemoveContainer") {
        auto request = parsed<api::RemoveContainerRequest>(payload);
        if (!request)
            return malformed();
        removeContainer(*request);
        api::RemoveContainerResponse response;
        return respond(streamId, 0, "", &response);
    }
    if (method == "Shutdown") {
        shutdown_ = true;
        api::Empty response;
        return respond(streamId, 0, "", &response);
    }
    if (method == "StateChange") {
        auto request = parsed<api::StateChangeEvent>(payload);
        if (!request)
            return malformed();
        const bool recheck = request->event() == api::POST_START_CONTAINER &&
                             containerStarted(request->container().id());
        api::Empty response;
        Status answered = respond(streamId, 0, "", &response);
        if (answered && recheck)
            bringContainersToPolicy();  // after the answer: the runtime is waiting for it
        return answered;
    }
    return respond(streamId, kCodeUnimplemented, "method " + method + " is not served here",
                   nullptr);
}

Status Session::handleResponse(const Message& message) {
    auto pending = pendingCalls_.find(message.streamId);
    if (pending == pendingCalls_.end()) {
        return Error{"the runtime answered stream " + std::to_string(message.streamId) +
                     ", which no call of this plugin opened"};
    }
    const std::string method = pending->second;
    pendingCalls_.erase(pending);
    ::ttrpc::Response response;
    if (!response.ParseFromString(message.payload))
        return Error{"the runtime's answer to " + method + " is not a ttrpc.Response message"};
    if (response.has_status() && response.status().code() != 0) {
        if (method == "RegisterPlugin") {
            return Error{"the runtime refused to register the plugin: " +
                         response.status().message()};
        }
        metrics_.counterAdd(kUpdateFailuresMetric);
        spdlog::error("NRI runtime refused container updates error={}",
                      response.status().message());
        return {};
    }
    if (method == "UpdateContainers") {
        api::UpdateContainersResponse answer;
        if (!answer.ParseFromString(response.payload()))
            return Error{"the runtime's UpdateContainers answer is malformed"};
        for (const api::ContainerUpdate& failed : answer.failed()) {
            metrics_.counterAdd(kUpdateFailuresMetric);
            auto it = containers_.find(failed.container_id());
            spdlog::error("NRI runtime failed to update a container's cpuset container={} id={}",
                          it == containers_.end() ? "?" : it->second.name, failed.container_id());
            if (it != containers_.end())
                it->second.cpus = it->second.mems = "?";  // unknown: the next round retries
        }
    }
    return {};
}

api::ConfigureResponse Session::configure(const api::ConfigureRequest& request) {
    unsolicitedUpdates_ =
        takesUnsolicitedUpdates(request.runtime_name(), request.runtime_version());
    spdlog::info(
        "NRI runtime configured the plugin runtime={} version={} nri={} "
        "unsolicited_updates={}",
        request.runtime_name(), request.runtime_version(), request.nri_version(),
        unsolicitedUpdates_);
    if (!unsolicitedUpdates_) {
        spdlog::warn(
            "NRI runtime not known to take container updates a plugin starts "
            "(containerd before 2.4 can deadlock, containerd/containerd#13733): other "
            "containers leave a claim's CPUs when its container is created and get them back "
            "at the next container creation or reconnection, not at prepare and unprepare "
            "runtime={} version={}",
            request.runtime_name(), request.runtime_version());
    }
    api::ConfigureResponse response;
    response.set_events(subscribedEvents());
    return response;
}

api::SynchronizeResponse Session::synchronize(const api::SynchronizeRequest& request) {
    for (const api::PodSandbox& pod : request.pods())
        syncPods_[pod.id()] = pod;
    syncContainers_.insert(syncContainers_.end(), request.containers().begin(),
                           request.containers().end());
    api::SynchronizeResponse response;
    if (request.more()) {
        response.set_more(true);  // collected; the updates go with the last part
        return response;
    }
    containers_.clear();
    for (const api::Container& container : syncContainers_) {
        auto pod = syncPods_.find(container.pod_sandbox_id());
        ContainerView view = viewOf(pod == syncPods_.end() ? nullptr : &pod->second, container);
        containers_[view.id] = std::move(view);
    }
    syncPods_.clear();
    syncContainers_.clear();
    auto inputs = options_.inputs();
    if (!inputs) {
        spdlog::error("NRI synchronize: cannot read the prepared claims error={}",
                      inputs.error().message);
    } else {
        std::vector<CpusetUpdate> updates = updatesFor(*inputs, "");
        fillUpdates(*response.mutable_update(), updates);
        record(updates);
        spdlog::info("NRI synchronized containers={} updated={}", containers_.size(),
                     updates.size());
    }
    synchronized_ = true;
    onSynchronized_(true);
    countPinned();
    return response;
}

Result<api::CreateContainerResponse> Session::createContainer(
    const api::CreateContainerRequest& request) {
    ContainerView view = viewOf(&request.pod(), request.container());
    if (!view.cpus.empty()) {
        metrics_.counterAdd(kForeignCpusetMetric);
        if (!warnedForeignCpuset_) {
            warnedForeignCpuset_ = true;
            spdlog::warn(
                "NRI container arrives with a cpuset already set: the kubelet's CPU manager "
                "(static policy) or another NRI plugin manages cpusets too, and they conflict "
                "container={} cpus={}",
                view.name, view.cpus);
        }
    }
    auto inputs = options_.inputs();
    if (!inputs) {
        metrics_.counterAdd(kRefusedMetric);
        return Error{"container " + view.name +
                     " not created: the prepared claims cannot be read: " + inputs.error().message};
    }
    auto cpuset = cpusetForNewContainer(view, *inputs);
    if (!cpuset) {
        metrics_.counterAdd(kRefusedMetric);
        spdlog::error("NRI refused a container error={}", cpuset.error().message);
        return cpuset.error();
    }
    api::CreateContainerResponse response;
    fillCpuset(*response.mutable_adjust()->mutable_linux()->mutable_resources(), *cpuset);
    std::vector<CpusetUpdate> updates = updatesFor(*inputs, view.id);
    fillUpdates(*response.mutable_update(), updates);
    record(updates);
    applyCpuset(view, *cpuset);
    if (!view.claimUids.empty()) {
        spdlog::info("NRI pinned a container container={} cpus={} mems={} claims={}", view.name,
                     cpuset->cpus, cpuset->mems, view.claimUids.size());
    }
    containers_[view.id] = std::move(view);
    metrics_.counterAdd(kAdjustmentsMetric);
    countPinned();
    return response;
}

void Session::removeContainer(const api::RemoveContainerRequest& request) {
    containers_.erase(request.container().id());
    countPinned();
}

// containerd applies an update to a container that is only created to its spec, but its start
// may already have made the cgroup from the old spec (a Synchronize racing a start, right after
// the runtime restarted): such a container would run unpinned while this plugin believes it
// pinned. Once it runs, its cpuset is unknown again and brought to the policy: at once where the
// runtime takes the plugin's own updates (returns true), else in the next answer.
bool Session::containerStarted(const std::string& id) {
    auto it = containers_.find(id);
    if (it == containers_.end())
        return false;
    ContainerView& view = it->second;
    view.running = true;
    if (!view.updatedWhileCreated)
        return false;
    view.updatedWhileCreated = false;
    view.cpus = view.mems = "?";
    return synchronized_ && unsolicitedUpdates_;
}

void Session::bringContainersToPolicy() {
    auto inputs = options_.inputs();
    if (!inputs) {
        spdlog::error("NRI cannot read the prepared claims error={}", inputs.error().message);
        return;
    }
    std::vector<CpusetUpdate> updates = updatesFor(*inputs, "");
    if (updates.empty())
        return;
    api::UpdateContainersRequest request;
    fillUpdates(*request.mutable_update(), updates);
    if (Status sent = callRuntime("UpdateContainers", request); !sent) {
        spdlog::error("NRI UpdateContainers not sent error={}", sent.error().message);
        return;
    }
    record(updates);
    spdlog::info("NRI updated containers' cpusets containers={}", updates.size());
}

std::vector<CpusetUpdate> Session::updatesFor(const PinningInputs& inputs,
                                              const std::string& except) {
    std::vector<ContainerView> others;
    for (const auto& [id, view] : containers_) {
        if (id != except)
            others.push_back(view);
    }
    auto updates = updatesForRunningContainers(others, inputs);
    if (!updates) {
        spdlog::error("NRI cannot bring containers to the policy error={}",
                      updates.error().message);
        return {};
    }
    return std::move(*updates);
}

void Session::record(const std::vector<CpusetUpdate>& updates) {
    for (const CpusetUpdate& update : updates) {
        auto it = containers_.find(update.containerId);
        if (it == containers_.end())
            continue;
        applyCpuset(it->second, update.cpuset);
        it->second.updatedWhileCreated = it->second.updatedWhileCreated || !it->second.running;
    }
}

void Session::countPinned() {
    std::size_t pinned = 0;
    for (const auto& [id, view] : containers_)
        pinned += view.claimUids.empty() ? 0 : 1;
    metrics_.gaugeSet(kPinnedMetric, {}, static_cast<double>(pinned));
}

}  // namespace

bool Plugin::State::pause(std::stop_token stop, const StopFd& stopFd,
                          std::chrono::milliseconds wait, SocketFolderWatch* socketFolder) const {
    const int watchFd = socketFolder ? socketFolder->fd() : -1;
    std::array<pollfd, 2> entries{{{stopFd.fd(), POLLIN, 0}, {watchFd, POLLIN, 0}}};
    ::poll(entries.data(), entries.size(), static_cast<int>(stopFd.limit(wait).count()));
    if (watchFd >= 0 && entries[1].revents != 0)
        socketFolder->drain();
    return !stop.stop_requested();
}

bool Plugin::State::awaitRuntime(std::stop_token stop, const StopFd& stopFd,
                                 SocketFolderWatch& socketFolder, const Error& failure) const {
    if (!runtimeAbsent(failure) || socketFolder.fd() < 0)
        return pause(stop, stopFd, options.retryInterval);
    if (socketFolder.changedWithin(kListenGrace))
        return pause(stop, stopFd, kListenRetry);
    return pause(stop, stopFd, std::max(options.retryInterval, kSocketWatchFallback),
                 &socketFolder);
}

void Plugin::State::run(std::stop_token stop) {
    const StopFd stopFd(stop);
    SocketFolderWatch socketFolder(options.socketPath);
    std::string lastProblem;
    auto report = [&](const std::string& problem) {
        if (problem != lastProblem)
            spdlog::warn("NRI plugin not connected socket={} reason={}", options.socketPath,
                         problem);
        lastProblem = problem;
    };
    while (!stop.stop_requested()) {
        auto lock = tryLock(options.lockPath);
        if (!lock || !*lock) {
            report(lock ? "another instance of the driver holds " + options.lockPath
                        : lock.error().message);
            if (!pause(stop, stopFd, options.retryInterval))
                break;
            continue;
        }
        auto fd = dial(options.socketPath);
        if (!fd) {
            report(fd.error().message);
            lock->reset();  // the other instance may take over while this one waits
            if (!awaitRuntime(stop, stopFd, socketFolder, fd.error()))
                break;
            continue;
        }
        lastProblem.clear();
        metrics.counterAdd(kConnectionsMetric);
        spdlog::info("NRI plugin connected socket={} name={} index={}", options.socketPath,
                     options.name, options.index);
        Session session(std::move(*fd), options, metrics,
                        [this](bool value) { setSynchronized(value); });
        const Ended ended = session.serve(stopFd, wake.get());
        setSynchronized(false);
        if (ended.byStop)
            break;
        spdlog::warn("NRI connection ended reason={}", ended.reason);
        if (!pause(stop, stopFd, options.retryInterval))
            break;
    }
}

void declarePluginMetrics(metrics::Registry& metrics) {
    metrics.declareGauge(kConnectedMetric,
                         "1 while the NRI plugin is registered and synchronized with the runtime");
    metrics.gaugeSet(kConnectedMetric, {}, 0);
    metrics.declareGauge(kPinnedMetric, "Containers running on the CPUs of their claims");
    metrics.gaugeSet(kPinnedMetric, {}, 0);
    metrics.declareCounter(kAdjustmentsMetric, "Containers given a cpuset at creation");
    metrics.declareCounter(kUpdateFailuresMetric,
                           "Container cpuset updates the runtime refused or failed");
    metrics.declareCounter(kRefusedMetric,
                           "Containers whose creation was refused rather than run unpinned");
    metrics.declareCounter(kForeignCpusetMetric,
                           "Containers that arrived with a cpuset set by someone else (the "
                           "kubelet's static CPU manager, another plugin)");
    metrics.declareCounter(kConnectionsMetric, "Connections made to the runtime's NRI socket");
}

Plugin::Plugin(std::unique_ptr<State> state) : state_(std::move(state)) {}

std::unique_ptr<Plugin> Plugin::start(PluginOptions options, metrics::Registry& metrics) {
    auto state = std::make_unique<State>(std::move(options), metrics);
    State* raw = state.get();
    state->thread = std::jthread([raw](std::stop_token stop) {
        nameThisThread("nri");
        raw->run(stop);
    });
    return std::unique_ptr<Plugin>(new Plugin(std::move(state)));
}

Plugin::~Plugin() {
    stop();
}

void Plugin::stop() {
    state_->thread.request_stop();
    if (state_->thread.joinable())
        state_->thread.join();
}

void Plugin::claimsChanged() {
    const std::uint64_t one = 1;
    [[maybe_unused]] auto written = ::write(state_->wake.get(), &one, sizeof one);
}

bool Plugin::synchronized() const {
    std::lock_guard lock(state_->mutex);
    return state_->isSynchronized;
}

bool Plugin::waitSynchronized(std::chrono::milliseconds timeout) const {
    std::unique_lock lock(state_->mutex);
    return state_->synchronizedChanged.wait_for(lock, timeout,
                                                [&] { return state_->isSynchronized; });
}

}  // namespace numadra::nri
