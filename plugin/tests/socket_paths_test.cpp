#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "numadra/plugin/server.hpp"

namespace numadra::plugin {
namespace {

PluginServerOptions options(const std::string& registry, const std::string& plugin,
                            const std::string& podUid = "") {
    PluginServerOptions result;
    result.driverName = "numa.dra.dev";
    result.registryDir = registry;
    result.pluginDir = plugin;
    result.podUid = podUid;
    return result;
}

TEST(SocketPaths, DefaultsFollowTheKubeletLayout) {
    PluginServerOptions defaults;
    defaults.driverName = "numa.dra.dev";
    auto paths = resolveSocketPaths(defaults);
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    EXPECT_EQ(paths->registration, "/var/lib/kubelet/plugins_registry/numa.dra.dev-reg.sock");
    EXPECT_EQ(paths->dra, "/var/lib/kubelet/plugins/numa.dra.dev/dra.sock");
    EXPECT_EQ(paths->serializeLock, "/var/lib/kubelet/plugins/numa.dra.dev/serialize.lock");
}

TEST(SocketPaths, PodUidGivesPerPodNames) {
    auto paths = resolveSocketPaths(options("/reg", "/plug", "1234-abcd"));
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    EXPECT_EQ(paths->registration, "/reg/numa.dra.dev-1234-abcd-reg.sock");
    EXPECT_EQ(paths->dra, "/plug/dra-1234-abcd.sock");
}

TEST(SocketPaths, RelativeDirectoriesBecomeAbsolute) {
    auto paths = resolveSocketPaths(options("reg/", "./a/../plug"));
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    auto cwd = std::filesystem::current_path().string();
    EXPECT_EQ(paths->registration, cwd + "/reg/numa.dra.dev-reg.sock");
    EXPECT_EQ(paths->dra, cwd + "/plug/dra.sock");
}

TEST(SocketPaths, TooLongNamesFallBackToStableHashedNames) {
    std::string dir = "/" + std::string(60, 'd');
    std::string uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";  // a real pod UID is 36 bytes
    auto paths = resolveSocketPaths(options(dir, dir, uid));
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    // <dir>/numa.dra.dev-<uid>-reg.sock would be 61 + 1 + 57 bytes.
    EXPECT_LE(paths->registration.size(), kMaxSocketPathLength);
    EXPECT_LE(paths->dra.size(), kMaxSocketPathLength);
    EXPECT_TRUE(paths->registration.starts_with(dir + "/reg-")) << paths->registration;
    EXPECT_TRUE(paths->registration.ends_with(".sock"));
    EXPECT_EQ(paths->registration.size(), dir.size() + 1 + 4 + 16 + 5);
    // dra-<uid>.sock still fits here: only the name that is too long is replaced.
    EXPECT_EQ(paths->dra, dir + "/dra-" + uid + ".sock");

    auto again = resolveSocketPaths(options(dir, dir, uid));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->registration, paths->registration) << "the name must survive a restart";
    auto otherPod = resolveSocketPaths(options(dir, dir, "another-pod-uid-of-the-same-length-xx"));
    ASSERT_TRUE(otherPod.ok());
    EXPECT_NE(otherPod->registration, paths->registration);
}

TEST(SocketPaths, DraSocketFallsBackToo) {
    std::string dir = "/" + std::string(80, 'p');
    auto paths = resolveSocketPaths(options("/reg", dir, "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"));
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    EXPECT_TRUE(paths->dra.starts_with(dir + "/dra-")) << paths->dra;
    EXPECT_LE(paths->dra.size(), kMaxSocketPathLength);
}

TEST(SocketPaths, ExactlyAtTheLimitKeepsTheName) {
    std::string name = "numa.dra.dev-reg.sock";
    std::string dir = "/" + std::string(kMaxSocketPathLength - name.size() - 2, 'x');
    auto paths = resolveSocketPaths(options(dir, "/plug"));
    ASSERT_TRUE(paths.ok()) << paths.error().message;
    EXPECT_EQ(paths->registration, dir + "/" + name);
    EXPECT_EQ(paths->registration.size(), kMaxSocketPathLength);
}

TEST(SocketPaths, DirectoryTooLongEvenForTheShortNameIsAnError) {
    std::string dir = "/" + std::string(100, 'x');
    auto paths = resolveSocketPaths(options(dir, "/plug"));
    ASSERT_FALSE(paths.ok());
    EXPECT_NE(paths.error().message.find("too long"), std::string::npos);
}

TEST(SocketPaths, BadDriverNamesAreRejected) {
    for (const char* driver : {"", "a/b", ".hidden"}) {
        auto bad = options("/reg", "/plug");
        bad.driverName = driver;
        EXPECT_FALSE(resolveSocketPaths(bad).ok()) << driver;
    }
}

}  // namespace
}  // namespace numadra::plugin
