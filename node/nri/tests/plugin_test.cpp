// The NRI plugin against a runtime played by the test over a real unix socket, with the frames of
// upstream's mux and ttrpc (wire.hpp) and NRI's protobuf messages.

#include "numadra/nri/plugin.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>

#include "github.com/containerd/nri/pkg/api/api.pb.h"
#include "github.com/containerd/ttrpc/request.pb.h"
#include "numadra/cdi/device_edits.hpp"
#include "numadra/common/unique_fd.hpp"
#include "numadra/nri/wire.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::nri {
namespace {

namespace api = ::nri::pkg::api::v1alpha1;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr const char* kUid = "5d0c6c1e-2a3b-4c5d-8e9f-0a1b2c3d4e5f";
constexpr auto kWait = 10s;

// The runtime's side of one NRI socket: accepts the plugin, answers its calls, makes calls.
class FakeRuntime {
  public:
    explicit FakeRuntime(const std::string& path) : path_(path) {
        listener_ = UniqueFd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
        sockaddr_un address{};
        address.sun_family = AF_UNIX;
        std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
        if (::bind(listener_.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
            ::listen(listener_.get(), 4) != 0)
            throw std::runtime_error("cannot listen on " + path);
    }

    // Waits for the plugin to connect; false after kWait.
    bool accept() {
        pollfd entry{listener_.get(), POLLIN, 0};
        if (::poll(&entry, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())) != 1)
            return false;
        connection_ = UniqueFd(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
        reader_ = TrunkReader();
        return connection_.valid();
    }

    bool acceptWithin(std::chrono::milliseconds timeout) {
        pollfd entry{listener_.get(), POLLIN, 0};
        if (::poll(&entry, 1, static_cast<int>(timeout.count())) != 1)
            return false;
        return accept();
    }

    void hangUp() { connection_.reset(); }

    // The next message the plugin sends; throws after kWait or when the plugin hangs up.
    Message receive() {
        const auto deadline = std::chrono::steady_clock::now() + kWait;
        while (true) {
            if (auto message = reader_.next())
                return *message;
            const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            pollfd entry{connection_.get(), POLLIN, 0};
            if (left.count() <= 0 || ::poll(&entry, 1, static_cast<int>(left.count())) != 1)
                throw std::runtime_error("the plugin sent nothing");
            char buffer[65536];
            const ssize_t got = ::recv(connection_.get(), buffer, sizeof buffer, 0);
            if (got <= 0)
                throw std::runtime_error("the plugin hung up");
            if (!reader_.feed({buffer, static_cast<std::size_t>(got)}))
                throw std::runtime_error("the plugin sent a malformed frame");
        }
    }

    // A call of the plugin to the runtime (RegisterPlugin, UpdateContainers), answered with
    // `answer`.
    ::ttrpc::Request expectCall(const std::string& method,
                                const google::protobuf::Message& answer) {
        Message message = receive();
        EXPECT_EQ(message.channel, Channel::RuntimeService);
        EXPECT_EQ(message.type, MessageType::Request);
        ::ttrpc::Request request;
        EXPECT_TRUE(request.ParseFromString(message.payload));
        EXPECT_EQ(request.service(), "nri.pkg.api.v1alpha1.Runtime");
        EXPECT_EQ(request.method(), method);
        ::ttrpc::Response response;
        response.set_payload(answer.SerializeAsString());
        send(Channel::RuntimeService, message.streamId, MessageType::Response,
             response.SerializeAsString());
        return request;
    }

    // Calls the plugin (as the runtime does on connection 1) and returns its answer.
    ::ttrpc::Response call(const std::string& method, const google::protobuf::Message& request) {
        return callRaw(method, request.SerializeAsString());
    }

    ::ttrpc::Response callRaw(const std::string& method, const std::string& payload,
                              const std::string& service = "nri.pkg.api.v1alpha1.Plugin") {
        ::ttrpc::Request request;
        request.set_service(service);
        request.set_method(method);
        request.set_payload(payload);
        const std::uint32_t stream = nextStream_;
        nextStream_ += 2;
        send(Channel::PluginService, stream, MessageType::Request, request.SerializeAsString());
        Message message = receive();
        EXPECT_EQ(message.channel, Channel::PluginService);
        EXPECT_EQ(message.type, MessageType::Response);
        EXPECT_EQ(message.streamId, stream);
        ::ttrpc::Response response;
        EXPECT_TRUE(response.ParseFromString(message.payload));
        return response;
    }

    void sendRaw(const std::string& bytes) {
        ASSERT_EQ(::send(connection_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL),
                  static_cast<ssize_t>(bytes.size()));
    }

    // Registration and configuration as containerd does them, then a Synchronize with
    // `containers` (in one pod). Returns the plugin's Synchronize answer.
    // The runtime says it is `runtime` `version` (containerd 2.4 takes unsolicited updates).
    api::SynchronizeResponse handshake(const std::vector<api::Container>& containers = {},
                                       const std::string& runtime = "containerd",
                                       const std::string& version = "v2.4.2") {
        if (!accept())
            throw std::runtime_error("the plugin did not connect");
        expectCall("RegisterPlugin", api::Empty());
        api::ConfigureRequest configure;
        configure.set_runtime_name(runtime);
        configure.set_runtime_version(version);
        configured = parse<api::ConfigureResponse>(call("Configure", configure));
        api::SynchronizeRequest sync;
        *sync.add_pods() = pod();
        for (const auto& c : containers)
            *sync.add_containers() = c;
        return parse<api::SynchronizeResponse>(call("Synchronize", sync));
    }

    template <class T>
    static T parse(const ::ttrpc::Response& response) {
        EXPECT_FALSE(response.has_status() && response.status().code() != 0)
            << response.status().message();
        T value;
        EXPECT_TRUE(value.ParseFromString(response.payload()));
        return value;
    }

    static api::PodSandbox pod() {
        api::PodSandbox pod;
        pod.set_id("sandbox-1");
        pod.set_name("workload");
        pod.set_namespace_("default");
        pod.set_uid("pod-uid-1");
        return pod;
    }

    static api::Container container(const std::string& id, const std::vector<std::string>& env,
                                    const std::string& cpus = "") {
        api::Container container;
        container.set_id(id);
        container.set_pod_sandbox_id("sandbox-1");
        container.set_name(id);
        for (const auto& e : env)
            container.add_env(e);
        if (!cpus.empty())
            container.mutable_linux()->mutable_resources()->mutable_cpu()->set_cpus(cpus);
        return container;
    }

    api::ConfigureResponse configured;

  private:
    void send(Channel channel, std::uint32_t stream, MessageType type, std::string payload) {
        Message message;
        message.channel = channel;
        message.streamId = stream;
        message.type = type;
        message.payload = std::move(payload);
        auto bytes = encodeMessage(message);
        ASSERT_TRUE(bytes);
        sendRaw(*bytes);
    }

    std::string path_;
    UniqueFd listener_;
    UniqueFd connection_;
    TrunkReader reader_;
    std::uint32_t nextStream_ = 1;
};

// What the checkpoint would say, changed by the test while the plugin runs.
class Claims {
  public:
    Claims() { inputs_.nodeCpus = {0, 1, 2, 3, 4, 5, 6, 7}, inputs_.nodeMemoryNodes = {0, 1}; }
    void set(std::vector<PinnedClaim> claims) {
        std::lock_guard lock(mutex_);
        inputs_.claims = std::move(claims);
    }
    void fail(std::string message) {
        std::lock_guard lock(mutex_);
        failure_ = std::move(message);
    }
    Result<PinningInputs> get() const {
        std::lock_guard lock(mutex_);
        if (!failure_.empty())
            return Error{failure_};
        return inputs_;
    }

  private:
    mutable std::mutex mutex_;
    PinningInputs inputs_;
    std::string failure_;
};

class NriPluginTest : public ::testing::Test {
  protected:
    PluginOptions options() {
        PluginOptions o;
        o.socketPath = tree_.path("nri.sock");
        o.lockPath = tree_.path("nri.lock");
        o.retryInterval = 20ms;
        o.inputs = [this] { return claims_.get(); };
        return o;
    }
    // Options for a runtime whose socket will be at <folder>/nri.sock (the folder exists), with a
    // retry interval of an hour: only the folder watch can bring the plugin to it in time.
    PluginOptions optionsAwaiting(const std::string& folder) {
        PluginOptions o = options();
        o.socketPath = tree_.path(folder + "/nri.sock");
        o.retryInterval = 1h;
        std::filesystem::create_directories(tree_.path(folder));
        return o;
    }
    std::unique_ptr<Plugin> startPlugin() {
        declarePluginMetrics(metrics_);
        return Plugin::start(options(), metrics_);
    }

    testing::TempTree tree_;
    FakeRuntime runtime_{tree_.path("nri.sock")};
    Claims claims_;
    metrics::Registry metrics_;
};

std::vector<std::string> updatedCpus(
    const google::protobuf::RepeatedPtrField<api::ContainerUpdate>& updates) {
    std::vector<std::string> out;
    for (const auto& u : updates)
        out.push_back(u.container_id() + ":" + u.linux().resources().cpu().cpus() + "/" +
                      u.linux().resources().cpu().mems());
    return out;
}

TEST_F(NriPluginTest, RegistersWithItsNameIndexAndNriVersion) {
    auto plugin = startPlugin();
    ASSERT_TRUE(runtime_.accept());
    ::ttrpc::Request registration = runtime_.expectCall("RegisterPlugin", api::Empty());
    api::RegisterPluginRequest request;
    ASSERT_TRUE(request.ParseFromString(registration.payload()));
    EXPECT_EQ(request.plugin_name(), "numa-dra-driver");
    EXPECT_EQ(request.plugin_idx(), "50");
    EXPECT_EQ(request.nri_version(), "v0.12.3");
}

TEST_F(NriPluginTest, SubscribesToContainerCreationStartAndRemovalOnly) {
    auto plugin = startPlugin();
    runtime_.handshake();
    EXPECT_EQ(runtime_.configured.events(), (1 << (api::CREATE_CONTAINER - 1)) |
                                                (1 << (api::POST_START_CONTAINER - 1)) |
                                                (1 << (api::REMOVE_CONTAINER - 1)));
}

// containerd applies an update of a container that is only created to its spec, while its
// start may have made the cgroup already: once it runs, the plugin updates it again.
TEST_F(NriPluginTest, AContainerUpdatedWhileOnlyCreatedIsUpdatedAgainOnceItRuns) {
    claims_.set({PinnedClaim{kUid, "default/cpus", {6, 7}, {1}}});
    auto plugin = startPlugin();
    api::Container starting = FakeRuntime::container("starting", {});
    starting.set_state(api::CONTAINER_CREATED);
    auto synced = runtime_.handshake({starting});
    EXPECT_THAT(updatedCpus(synced.update()), ::testing::ElementsAre("starting:0-5/"));
    api::StateChangeEvent started;
    started.set_event(api::POST_START_CONTAINER);
    *started.mutable_pod() = FakeRuntime::pod();
    *started.mutable_container() = starting;
    runtime_.call("StateChange", started);
    api::UpdateContainersRequest update;
    ASSERT_TRUE(update.ParseFromString(
        runtime_.expectCall("UpdateContainers", api::UpdateContainersResponse()).payload()));
    EXPECT_THAT(updatedCpus(update.update()), ::testing::ElementsAre("starting:0-5/0-1"));
}

TEST_F(NriPluginTest, ARunningContainerUpdatedIsNotUpdatedAgainAtAStart) {
    claims_.set({PinnedClaim{kUid, "default/cpus", {6, 7}, {1}}});
    auto plugin = startPlugin();
    api::Container web = FakeRuntime::container("web", {});
    web.set_state(api::CONTAINER_RUNNING);
    runtime_.handshake({web});
    api::StateChangeEvent started;
    started.set_event(api::POST_START_CONTAINER);
    *started.mutable_pod() = FakeRuntime::pod();
    *started.mutable_container() = web;
    runtime_.call("StateChange", started);
    // The next message is the answer to this call, not an UpdateContainers.
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("late", {});
    auto created =
        FakeRuntime::parse<api::CreateContainerResponse>(runtime_.call("CreateContainer", create));
    EXPECT_EQ(created.adjust().linux().resources().cpu().cpus(), "0-5");
}

TEST_F(NriPluginTest, SynchronizeBringsRunningContainersToThePolicy) {
    claims_.set({PinnedClaim{kUid, "default/cpus", {4, 5}, {1}}});
    auto plugin = startPlugin();
    api::SynchronizeResponse answer =
        runtime_.handshake({FakeRuntime::container("shared", {}),
                            FakeRuntime::container("pinned", {cdi::claimVariable(kUid)}, "0-7")});
    EXPECT_THAT(updatedCpus(answer.update()),
                ::testing::UnorderedElementsAre("shared:0-3,6-7/", "pinned:4-5/1"));
    EXPECT_TRUE(plugin->waitSynchronized(kWait));
    EXPECT_EQ(metrics_.value("numadra_nri_connected"), 1);
    EXPECT_EQ(metrics_.value("numadra_nri_pinned_containers"), 1);
}

TEST_F(NriPluginTest, ASynchronizeInPartsIsAnsweredAfterTheLast) {
    claims_.set({PinnedClaim{kUid, "default/cpus", {4, 5}, {1}}});
    auto plugin = startPlugin();
    ASSERT_TRUE(runtime_.accept());
    runtime_.expectCall("RegisterPlugin", api::Empty());
    runtime_.call("Configure", api::ConfigureRequest());
    api::SynchronizeRequest first;
    *first.add_pods() = FakeRuntime::pod();
    *first.add_containers() = FakeRuntime::container("a", {});
    first.set_more(true);
    auto partial =
        FakeRuntime::parse<api::SynchronizeResponse>(runtime_.call("Synchronize", first));
    EXPECT_TRUE(partial.more());
    EXPECT_EQ(partial.update_size(), 0);
    EXPECT_FALSE(plugin->synchronized());
    api::SynchronizeRequest last;
    *last.add_containers() = FakeRuntime::container("b", {});
    auto answer = FakeRuntime::parse<api::SynchronizeResponse>(runtime_.call("Synchronize", last));
    EXPECT_THAT(updatedCpus(answer.update()),
                ::testing::UnorderedElementsAre("a:0-3,6-7/", "b:0-3,6-7/"));
}

TEST_F(NriPluginTest, CreateContainerPinsTheClaimsContainerAndTakesItsCpusFromTheOthers) {
    auto plugin = startPlugin();
    runtime_.handshake({FakeRuntime::container("older", {})});
    claims_.set({PinnedClaim{kUid, "default/cpus", {6, 7}, {1}}});
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("gpu-job", {cdi::claimVariable(kUid)});
    auto answer =
        FakeRuntime::parse<api::CreateContainerResponse>(runtime_.call("CreateContainer", create));
    EXPECT_EQ(answer.adjust().linux().resources().cpu().cpus(), "6-7");
    EXPECT_EQ(answer.adjust().linux().resources().cpu().mems(), "1");
    EXPECT_THAT(updatedCpus(answer.update()), ::testing::ElementsAre("older:0-5/"));
    EXPECT_EQ(metrics_.value("numadra_nri_container_adjustments_total"), 1);
}

TEST_F(NriPluginTest, AContainerWithoutClaimsIsCreatedOnTheSharedPool) {
    claims_.set({PinnedClaim{kUid, "default/cpus", {6, 7}, {1}}});
    auto plugin = startPlugin();
    runtime_.handshake();
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("web", {"PATH=/bin"});
    auto answer =
        FakeRuntime::parse<api::CreateContainerResponse>(runtime_.call("CreateContainer", create));
    EXPECT_EQ(answer.adjust().linux().resources().cpu().cpus(), "0-5");
    EXPECT_TRUE(answer.adjust().linux().resources().cpu().mems().empty());
}

TEST_F(NriPluginTest, AContainerOfAClaimNotPreparedIsRefusedNamingClaimAndContainer) {
    auto plugin = startPlugin();
    runtime_.handshake();
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("gpu-job", {cdi::claimVariable(kUid)});
    ::ttrpc::Response answer = runtime_.call("CreateContainer", create);
    ASSERT_TRUE(answer.has_status());
    EXPECT_EQ(answer.status().code(), 9);  // FAILED_PRECONDITION: the runtime fails the create
    EXPECT_THAT(answer.status().message(), HasSubstr("default/workload/gpu-job"));
    EXPECT_THAT(answer.status().message(), HasSubstr(kUid));
    EXPECT_EQ(metrics_.value("numadra_nri_containers_refused_total"), 1);
}

TEST_F(NriPluginTest, UnreadableClaimsRefuseTheContainerInsteadOfStartingItUnpinned) {
    auto plugin = startPlugin();
    runtime_.handshake();
    claims_.fail("checkpoint record x.json: bad CRC");
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("web", {});
    ::ttrpc::Response answer = runtime_.call("CreateContainer", create);
    ASSERT_TRUE(answer.has_status());
    EXPECT_THAT(answer.status().message(), HasSubstr("bad CRC"));
}

TEST_F(NriPluginTest, AContainerArrivingWithACpusetIsCountedAsAConflict) {
    auto plugin = startPlugin();
    runtime_.handshake();
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("static", {}, "2-3");
    runtime_.call("CreateContainer", create);
    EXPECT_EQ(metrics_.value("numadra_nri_foreign_cpusets_total"), 1);
}

TEST_F(NriPluginTest, PreparedAndUnpreparedClaimsMoveRunningContainersThroughUpdateContainers) {
    auto plugin = startPlugin();
    runtime_.handshake({FakeRuntime::container("web", {})});
    claims_.set({PinnedClaim{kUid, "default/cpus", {0, 1}, {0}}});
    plugin->claimsChanged();
    api::UpdateContainersRequest update;
    ASSERT_TRUE(update.ParseFromString(
        runtime_.expectCall("UpdateContainers", api::UpdateContainersResponse()).payload()));
    EXPECT_THAT(updatedCpus(update.update()), ::testing::ElementsAre("web:2-7/"));

    claims_.set({});
    plugin->claimsChanged();
    ASSERT_TRUE(update.ParseFromString(
        runtime_.expectCall("UpdateContainers", api::UpdateContainersResponse()).payload()));
    EXPECT_THAT(updatedCpus(update.update()), ::testing::ElementsAre("web:0-7/"));
}

TEST_F(NriPluginTest, ARuntimeThatMayDeadlockOnUpdatesGetsThemOnlyInItsOwnCalls) {
    auto plugin = startPlugin();
    runtime_.handshake({FakeRuntime::container("web", {})}, "containerd", "v2.3.7");
    claims_.set({PinnedClaim{kUid, "default/cpus", {0, 1}, {0}}});
    plugin->claimsChanged();  // handled before the next call: no UpdateContainers comes first
    api::CreateContainerRequest create;
    *create.mutable_pod() = FakeRuntime::pod();
    *create.mutable_container() = FakeRuntime::container("worker", {cdi::claimVariable(kUid)});
    auto created =
        FakeRuntime::parse<api::CreateContainerResponse>(runtime_.call("CreateContainer", create));
    EXPECT_THAT(updatedCpus(created.update()), ::testing::ElementsAre("web:2-7/"));
}

TEST_F(NriPluginTest, ARemovedContainerIsNoLongerUpdated) {
    auto plugin = startPlugin();
    runtime_.handshake({FakeRuntime::container("gone", {}), FakeRuntime::container("web", {})});
    api::RemoveContainerRequest remove;
    *remove.mutable_pod() = FakeRuntime::pod();
    *remove.mutable_container() = FakeRuntime::container("gone", {});
    runtime_.call("RemoveContainer", remove);
    claims_.set({PinnedClaim{kUid, "default/cpus", {7}, {1}}});
    plugin->claimsChanged();
    api::UpdateContainersRequest update;
    ASSERT_TRUE(update.ParseFromString(
        runtime_.expectCall("UpdateContainers", api::UpdateContainersResponse()).payload()));
    EXPECT_THAT(updatedCpus(update.update()), ::testing::ElementsAre("web:0-6/"));
}

TEST_F(NriPluginTest, AnUnknownMethodIsAnsweredUnimplemented) {
    auto plugin = startPlugin();
    runtime_.handshake();
    ::ttrpc::Response answer = runtime_.callRaw("PostStartContainer", "");
    ASSERT_TRUE(answer.has_status());
    EXPECT_EQ(answer.status().code(), 12);
    answer = runtime_.callRaw("Configure", "", "some.other.Service");
    EXPECT_EQ(answer.status().code(), 12);
}

TEST_F(NriPluginTest, AMalformedRequestIsAnsweredWithAnErrorAndTheConnectionKept) {
    auto plugin = startPlugin();
    runtime_.handshake();
    ::ttrpc::Response answer = runtime_.callRaw("CreateContainer", "\xff\xff\xff");
    ASSERT_TRUE(answer.has_status());
    EXPECT_THAT(answer.status().message(), HasSubstr("malformed CreateContainer"));
    answer = runtime_.callRaw("StateChange", "");
    EXPECT_FALSE(answer.has_status() && answer.status().code() != 0);
}

TEST_F(NriPluginTest, ReconnectsAndSynchronizesAgainAfterTheRuntimeRestarts) {
    auto plugin = startPlugin();
    runtime_.handshake();
    ASSERT_TRUE(plugin->waitSynchronized(kWait));
    runtime_.hangUp();
    claims_.set({PinnedClaim{kUid, "default/cpus", {3}, {0}}});
    auto answer = runtime_.handshake({FakeRuntime::container("web", {})});
    EXPECT_THAT(updatedCpus(answer.update()), ::testing::ElementsAre("web:0-2,4-7/"));
    EXPECT_EQ(metrics_.value("numadra_nri_connections_total"), 2);
}

TEST_F(NriPluginTest, GarbageOnTheSocketDropsTheConnectionAndTheNextOneWorks) {
    auto plugin = startPlugin();
    runtime_.handshake();
    runtime_.sendRaw(std::string("\0\0\0\x09\0\0\0\0", 8));  // a frame for connection 9
    auto answer = runtime_.handshake({FakeRuntime::container("web", {})});
    EXPECT_EQ(answer.update_size(), 0);
}

TEST_F(NriPluginTest, ShutdownFromTheRuntimeEndsTheConnection) {
    auto plugin = startPlugin();
    runtime_.handshake();
    runtime_.call("Shutdown", api::Empty());
    // It connects again: a runtime shutting its plugins down is restarting.
    EXPECT_TRUE(runtime_.accept());
}

TEST_F(NriPluginTest, ASecondInstanceWaitsForTheFirstToStop) {
    auto first = startPlugin();
    runtime_.handshake();
    auto second = Plugin::start(options(), metrics_);
    EXPECT_FALSE(runtime_.acceptWithin(300ms));  // it holds back while the first holds the lock
    first->stop();
    auto answer = runtime_.handshake();
    EXPECT_TRUE(second->waitSynchronized(kWait));
}

// Waiting for a runtime costs nothing: no connect attempt per retry interval (here an hour), the
// socket's appearance in its folder wakes the plugin.
TEST_F(NriPluginTest, ConnectsWhenTheRuntimeCreatesItsSocketWithoutPolling) {
    const PluginOptions o = optionsAwaiting("later");
    declarePluginMetrics(metrics_);
    auto plugin = Plugin::start(o, metrics_);
    std::this_thread::sleep_for(100ms);  // the plugin has found no socket and waits
    FakeRuntime started(o.socketPath);
    EXPECT_TRUE(started.accept());
}

// A socket left by a runtime that died refuses connections; the restarted runtime's new socket
// (unlink and bind again) wakes the plugin.
TEST_F(NriPluginTest, ConnectsWhenARestartedRuntimeReplacesItsStaleSocket) {
    const PluginOptions o = optionsAwaiting("stale");
    std::optional<FakeRuntime> died(std::in_place, o.socketPath);
    died.reset();  // the file stays; nobody listens on it
    declarePluginMetrics(metrics_);
    auto plugin = Plugin::start(o, metrics_);
    std::this_thread::sleep_for(100ms);
    std::filesystem::remove(o.socketPath);
    FakeRuntime restarted(o.socketPath);
    EXPECT_TRUE(restarted.accept());
}

// A runtime binds its socket (the folder watch fires) a moment before it listens: the connect
// refused in between is tried again shortly, not left for the next change of the folder.
TEST_F(NriPluginTest, ConnectsWhenTheRuntimeListensAMomentAfterBinding) {
    const PluginOptions o = optionsAwaiting("slow");
    declarePluginMetrics(metrics_);
    auto plugin = Plugin::start(o, metrics_);
    std::this_thread::sleep_for(100ms);  // the plugin has found no socket and waits
    UniqueFd listener(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, o.socketPath.c_str(), sizeof address.sun_path - 1);
    ASSERT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    std::this_thread::sleep_for(300ms);  // bound, not listening: connects are refused
    ASSERT_EQ(::listen(listener.get(), 4), 0);
    pollfd entry{listener.get(), POLLIN, 0};
    EXPECT_EQ(::poll(&entry, 1, static_cast<int>(std::chrono::milliseconds(kWait).count())), 1);
}

TEST_F(NriPluginTest, StopsPromptlyWhileTheSocketIsMissing) {
    PluginOptions o = options();
    o.socketPath = tree_.path("missing.sock");
    o.retryInterval = 1h;
    declarePluginMetrics(metrics_);
    auto plugin = Plugin::start(o, metrics_);
    std::this_thread::sleep_for(50ms);
    const auto before = std::chrono::steady_clock::now();
    plugin->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - before, 5s);
    EXPECT_FALSE(plugin->synchronized());
}

}  // namespace
}  // namespace numadra::nri
