// The server's life cycle and the registration service, with real sockets and the generated
// client stubs playing the kubelet.

#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "plugin_test_support.hpp"

namespace numadra::plugin::testing {
namespace {

pluginregistration::PluginInfo getInfo(const std::string& registrationSocket) {
    auto stub = pluginregistration::Registration::NewStub(connect(registrationSocket));
    grpc::ClientContext context;
    context.set_deadline(in(1s));  // the kubelet's GetInfo deadline
    pluginregistration::PluginInfo info;
    auto status = stub->GetInfo(&context, pluginregistration::InfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
}

grpc::Status notify(const std::string& registrationSocket, bool registered,
                    const std::string& error = "") {
    auto stub = pluginregistration::Registration::NewStub(connect(registrationSocket));
    grpc::ClientContext context;
    context.set_deadline(in(5s));
    pluginregistration::RegistrationStatus status;
    status.set_plugin_registered(registered);
    status.set_error(error);
    pluginregistration::RegistrationStatusResponse response;
    return stub->NotifyRegistrationStatus(&context, status, &response);
}

// Leaves a socket file nobody listens on, as a crashed driver does.
void makeStaleSocket(const std::string& path) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0)
        << std::strerror(errno);
    ::close(fd);
}

mode_t modeOf(const std::string& path) {
    struct stat info {};
    EXPECT_EQ(::lstat(path.c_str(), &info), 0) << path;
    return info.st_mode & 07777;
}

bool prepareSomething(const std::string& draSocket) {
    auto stub = drav1::DRAPlugin::NewStub(connect(draSocket));
    grpc::ClientContext context;
    context.set_deadline(in(2s));
    drav1::NodePrepareResourcesRequest request;
    addClaim(request, "ns", "claim", "uid-1");
    drav1::NodePrepareResourcesResponse response;
    return stub->NodePrepareResources(&context, request, &response).ok() &&
           response.claims().contains("uid-1");
}

class RegistrationTest : public ::testing::Test {
  protected:
    PluginDirs dirs;
    ScriptedPreparer preparer;
};

TEST_F(RegistrationTest, GetInfoAnswersWithDriverEndpointAndVersionsInOrder) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    auto info = getInfo(server.registrationSocketPath());
    EXPECT_EQ(info.type(), "DRAPlugin");
    EXPECT_EQ(info.name(), "numa.dra.dev");
    EXPECT_EQ(info.endpoint(), dirs.plugin + "/dra.sock");
    EXPECT_EQ(info.endpoint(), server.draSocketPath());
    ASSERT_EQ(info.supported_versions_size(), 3);
    EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
    EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
    EXPECT_EQ(info.supported_versions(2), "v1alpha1.DRAResourceHealth");
    // The kubelet may ask again (restart, retry): the same answer every time.
    EXPECT_EQ(getInfo(server.registrationSocketPath()).SerializeAsString(),
              info.SerializeAsString());
}

TEST_F(RegistrationTest, WithoutHealthTheHealthServiceIsNeitherAdvertisedNorServed) {
    auto options = dirs.options();
    options.serveHealth = false;
    PluginServer server(options, preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    auto info = getInfo(server.registrationSocketPath());
    ASSERT_EQ(info.supported_versions_size(), 2);
    EXPECT_EQ(info.supported_versions(0), "v1.DRAPlugin");
    EXPECT_EQ(info.supported_versions(1), "v1beta1.DRAPlugin");
}

TEST_F(RegistrationTest, RegistrationSocketServesOnlyRegistration) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    auto stub = drav1::DRAPlugin::NewStub(connect(server.registrationSocketPath()));
    grpc::ClientContext context;
    drav1::NodePrepareResourcesResponse response;
    auto status = stub->NodePrepareResources(&context, {}, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

TEST_F(RegistrationTest, NotifyRegistrationStatusIsRememberedAndAnsweredOk) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    EXPECT_EQ(server.registered(), std::nullopt);

    EXPECT_TRUE(notify(server.registrationSocketPath(), true).ok());
    EXPECT_EQ(server.registered(), true);

    auto rejected = notify(server.registrationSocketPath(), false, "RegisterPlugin error -- boom");
    EXPECT_TRUE(rejected.ok()) << rejected.error_message();
    EXPECT_EQ(server.registered(), false);

    EXPECT_TRUE(notify(server.registrationSocketPath(), true).ok());
    EXPECT_EQ(server.registered(), true);
}

TEST_F(RegistrationTest, SocketsAreOwnerOnlyAndThePluginDirIs0750) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    EXPECT_TRUE(isSocket(server.registrationSocketPath()));
    EXPECT_TRUE(isSocket(server.draSocketPath()));
    EXPECT_EQ(modeOf(server.registrationSocketPath()), 0600U);
    EXPECT_EQ(modeOf(server.draSocketPath()), 0600U);
    EXPECT_EQ(modeOf(dirs.plugin), 0750U);
}

TEST_F(RegistrationTest, WithAGroupSocketsAre0660AndOwnedByIt) {
    auto options = dirs.options();
    options.socketGroup = ::getegid();  // a group we may always chgrp to
    PluginServer server(options, preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    for (const auto& path : {server.registrationSocketPath(), server.draSocketPath()}) {
        struct stat info {};
        ASSERT_EQ(::lstat(path.c_str(), &info), 0);
        EXPECT_EQ(info.st_mode & 07777, 0660U) << path;
        EXPECT_EQ(info.st_gid, ::getegid()) << path;
    }
}

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> found;
    for (const auto& entry : std::filesystem::directory_iterator(dir))
        found.push_back(entry.path().filename().string());
    std::sort(found.begin(), found.end());
    return found;
}

TEST_F(RegistrationTest, BesideEachSocketIsOnlyItsEmptyPrivateBindDirectory) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    for (const auto& dir : {dirs.registry, dirs.plugin}) {
        auto found = entries(dir);
        ASSERT_EQ(found.size(), 2U) << dir;
        const auto& hidden = found[0];  // '.' sorts first
        ASSERT_TRUE(hidden.starts_with(".")) << hidden;
        EXPECT_EQ(modeOf(dir + "/" + hidden), 0700U);
        EXPECT_TRUE(entries(dir + "/" + hidden).empty());
    }
    server.stop();
    EXPECT_TRUE(entries(dirs.registry).empty());
    EXPECT_TRUE(entries(dirs.plugin).empty());
}

TEST_F(RegistrationTest, ABindDirectoryLeftByACrashIsReused) {
    {
        PluginServer first(dirs.options(), preparer, nullptr);
        ASSERT_TRUE(first.start().ok());
        auto hidden = entries(dirs.plugin)[0];
        makeStaleSocket(dirs.plugin + "/" + hidden + "/s");  // crashed between bind and rename
        // Simulate the crash: keep the private directory when `first` goes away.
        std::filesystem::rename(dirs.plugin + "/" + hidden, dirs.tree.path("kept"));
        first.stop();
        std::filesystem::rename(dirs.tree.path("kept"), dirs.plugin + "/" + hidden);
    }
    PluginServer second(dirs.options(), preparer, nullptr);
    auto started = second.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_TRUE(prepareSomething(second.draSocketPath()));
}

TEST_F(RegistrationTest, APathTooLongForTheBindDirectoryStillWorks) {
    // <plugin>/dra.sock is exactly 107 bytes: <plugin>/.xxxxxx/s would not fit in sun_path.
    auto base = dirs.tree.root() + "/";
    auto plugin = base + std::string(kMaxSocketPathLength - base.size() - 9, 'p');
    auto options = dirs.options();
    options.pluginDir = plugin;
    PluginServer server(options, preparer, nullptr);
    auto started = server.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(server.draSocketPath().size(), kMaxSocketPathLength);
    EXPECT_EQ(modeOf(server.draSocketPath()), 0600U);
    EXPECT_EQ(entries(plugin), std::vector<std::string>{"dra.sock"});
    EXPECT_TRUE(prepareSomething(server.draSocketPath()));
}

TEST_F(RegistrationTest, StaleSocketsAreReplaced) {
    auto paths = resolveSocketPaths(dirs.options());
    ASSERT_TRUE(paths.ok());
    makeStaleSocket(paths->registration);
    makeStaleSocket(paths->dra);
    PluginServer server(dirs.options(), preparer, nullptr);
    auto started = server.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    EXPECT_EQ(getInfo(server.registrationSocketPath()).name(), "numa.dra.dev");
    EXPECT_TRUE(prepareSomething(server.draSocketPath()));
}

TEST_F(RegistrationTest, ANonSocketFileAtASocketPathIsAnError) {
    auto paths = resolveSocketPaths(dirs.options());
    ASSERT_TRUE(paths.ok());
    dirs.tree.file("plugin/dra.sock", "not a socket");
    PluginServer server(dirs.options(), preparer, nullptr);
    auto started = server.start();
    ASSERT_FALSE(started.ok());
    EXPECT_NE(started.error().message.find(paths->dra), std::string::npos)
        << started.error().message;
    EXPECT_NE(started.error().message.find("not a socket"), std::string::npos);
    // The file is left alone, and the kubelet never saw a registration socket.
    std::ifstream kept(paths->dra);
    std::string content;
    std::getline(kept, content);
    EXPECT_EQ(content, "not a socket");
    EXPECT_FALSE(exists(paths->registration));
}

TEST_F(RegistrationTest, ANonSocketAtTheRegistrationPathStopsTheDraSocketToo) {
    std::filesystem::create_directories(dirs.registry + "/numa.dra.dev-reg.sock");
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_FALSE(server.start().ok());
    EXPECT_FALSE(exists(server.draSocketPath())) << "a failed start must clean up";
}

TEST_F(RegistrationTest, DraSocketServesBeforeTheRegistrationSocketExists) {
    auto options = dirs.options();
    bool hookRan = false;
    auto paths = resolveSocketPaths(options);
    ASSERT_TRUE(paths.ok());
    options.hooks.draServingBeforeRegistration = [&] {
        hookRan = true;
        EXPECT_FALSE(exists(paths->registration));
        EXPECT_TRUE(prepareSomething(paths->dra)) << "the DRA socket must serve already";
    };
    PluginServer server(options, preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    EXPECT_TRUE(hookRan);
    EXPECT_TRUE(isSocket(server.registrationSocketPath()));
}

TEST_F(RegistrationTest, StopRemovesTheRegistrationSocketFirstThenTheDraSocket) {
    auto options = dirs.options();
    auto paths = resolveSocketPaths(options);
    ASSERT_TRUE(paths.ok());
    bool hookRan = false;
    options.hooks.registrationRemovedBeforeShutdown = [&] {
        hookRan = true;
        EXPECT_FALSE(exists(paths->registration));
        EXPECT_TRUE(prepareSomething(paths->dra)) << "still serving while the kubelet deregisters";
    };
    PluginServer server(options, preparer, nullptr);
    ASSERT_TRUE(server.start().ok());

    // Observe the deletions as the kubelet does: inotify on both folders.
    int inotify = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    ASSERT_GE(inotify, 0);
    int registryWatch = ::inotify_add_watch(inotify, dirs.registry.c_str(), IN_DELETE);
    int pluginWatch = ::inotify_add_watch(inotify, dirs.plugin.c_str(), IN_DELETE);
    server.stop();
    EXPECT_TRUE(hookRan);
    EXPECT_FALSE(exists(paths->registration));
    EXPECT_FALSE(exists(paths->dra));

    std::vector<std::string> removed;  // in the order the kubelet would see it
    alignas(inotify_event) char buffer[4096];
    ssize_t length = ::read(inotify, buffer, sizeof(buffer));
    for (ssize_t offset = 0; offset < length;) {
        auto* event = reinterpret_cast<inotify_event*>(buffer + offset);
        std::string dir = event->wd == registryWatch ? "registry" : "plugin";
        if (event->wd == registryWatch || event->wd == pluginWatch)
            removed.push_back(dir + "/" + event->name);
        offset += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
    ::close(inotify);
    auto position = [&](const std::string& entry) {
        return std::find(removed.begin(), removed.end(), entry) - removed.begin();
    };
    ASSERT_EQ(removed.size(), 4U);  // both sockets and their bind directories
    EXPECT_EQ(removed[0], "registry/numa.dra.dev-reg.sock");
    EXPECT_LT(position("registry/numa.dra.dev-reg.sock"), position("plugin/dra.sock"));
    EXPECT_EQ(removed.back().substr(0, 8), "plugin/.");

    server.stop();  // idempotent
}

TEST_F(RegistrationTest, TheDestructorStopsTheServer) {
    std::string registration, dra;
    {
        PluginServer server(dirs.options(), preparer, nullptr);
        ASSERT_TRUE(server.start().ok());
        registration = server.registrationSocketPath();
        dra = server.draSocketPath();
    }
    EXPECT_FALSE(exists(registration));
    EXPECT_FALSE(exists(dra));
}

TEST_F(RegistrationTest, StartingTwiceIsAnError) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    EXPECT_FALSE(server.start().ok());
}

TEST_F(RegistrationTest, StopLeavesASocketAnotherInstanceReplacedAlone) {
    PluginServer server(dirs.options(), preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    auto registration = server.registrationSocketPath();
    ASSERT_EQ(::unlink(registration.c_str()), 0);
    makeStaleSocket(registration);  // e.g. the next driver pod, already registered
    server.stop();
    EXPECT_TRUE(isSocket(registration));
}

TEST_F(RegistrationTest, StartStopCyclesLeakNoDescriptorsOrThreads) {
    auto cycle = [&] {
        PluginServer server(dirs.options(), preparer, nullptr);
        ASSERT_TRUE(server.start().ok());
        getInfo(server.registrationSocketPath());
        EXPECT_TRUE(prepareSomething(server.draSocketPath()));
    };
    cycle();  // warm up: gRPC creates its global pollers and pools on first use
    std::this_thread::sleep_for(200ms);
    int files = openFileCount();
    int threads = threadCount();
    for (int i = 0; i < 5; ++i)
        cycle();
    EXPECT_TRUE(eventually([&] { return openFileCount() <= files; }))
        << "descriptors before " << files << ", after " << openFileCount();
    EXPECT_TRUE(eventually([&] { return threadCount() <= threads + 2; }))
        << "threads before " << threads << ", after " << threadCount();
}

TEST_F(RegistrationTest, PodUidModeUsesPerPodSocketNames) {
    auto options = dirs.options();
    options.podUid = "pod-1";
    PluginServer server(options, preparer, nullptr);
    ASSERT_TRUE(server.start().ok());
    EXPECT_EQ(server.registrationSocketPath(), dirs.registry + "/numa.dra.dev-pod-1-reg.sock");
    EXPECT_EQ(server.draSocketPath(), dirs.plugin + "/dra-pod-1.sock");
    EXPECT_EQ(getInfo(server.registrationSocketPath()).endpoint(), server.draSocketPath());
}

TEST_F(RegistrationTest, HashedFallbackNamesWork) {
    // A deep temp folder: the per-pod registration name no longer fits in sun_path.
    auto deep = dirs.tree.path(std::string(50, 'r'));
    auto options = dirs.options();
    options.registryDir = deep;
    options.podUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    PluginServer server(options, preparer, nullptr);
    auto started = server.start();
    ASSERT_TRUE(started.ok()) << started.error().message;
    auto name = std::filesystem::path(server.registrationSocketPath()).filename().string();
    EXPECT_TRUE(name.starts_with("reg-")) << name;
    EXPECT_LE(server.registrationSocketPath().size(), kMaxSocketPathLength);
    EXPECT_EQ(getInfo(server.registrationSocketPath()).name(), "numa.dra.dev");
}

}  // namespace
}  // namespace numadra::plugin::testing
