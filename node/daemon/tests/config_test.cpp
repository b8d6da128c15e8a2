#include "numadra/daemon/config.hpp"

#include <gtest/gtest.h>

namespace numadra::daemon {
namespace {

Result<ParsedFlags> parse(const std::vector<std::string>& args,
                          const std::map<std::string, std::string>& env = {}) {
    return parseDaemonFlags(args, env, "host-1");
}

TEST(DaemonFlags, DefaultsAreTheKubeletPaths) {
    auto parsed = parse({});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    const auto& c = parsed->config;
    EXPECT_EQ(c.slices.nodeName, "host-1");
    EXPECT_EQ(c.slices.driverName, "numa.dra.dev");
    EXPECT_EQ(c.kubeletRegistryDir, "/var/lib/kubelet/plugins_registry");
    EXPECT_EQ(c.pluginDir(), "/var/lib/kubelet/plugins/numa.dra.dev");
    EXPECT_EQ(c.metadataDir, "/var/lib/kubelet/plugins/numa.dra.dev/dra-device-metadata");
    EXPECT_EQ(c.cdiDir, "/var/run/cdi");
    EXPECT_FALSE(c.keepSlicesOnExit);
}

TEST(DaemonFlags, EnvironmentSetsAndFlagsWin) {
    auto parsed = parse(
        {"--node-name", "from-flag", "--numa-list"},
        {{"NODE_NAME", "from-env"}, {"DRIVER_NAME", "gpu.example.com"}, {"RESYNC_INTERVAL", "5m"}});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->config.slices.nodeName, "from-flag");
    EXPECT_EQ(parsed->config.slices.driverName, "gpu.example.com");
    EXPECT_EQ(parsed->config.resyncInterval, std::chrono::minutes(5));
    EXPECT_EQ(parsed->config.slices.numaForm, topology::NumaForm::List);
}

TEST(DaemonFlags, CpuPinningIsAutoOnTheRuntimesNriSocketByDefault) {
    auto parsed = parse({});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->config.cpuPinning, CpuPinning::Auto);
    EXPECT_EQ(parsed->config.nriSocket, "/var/run/nri/nri.sock");
}

TEST(DaemonFlags, CpuPinningTakesNriAndOffFromFlagOrEnvironment) {
    auto parsed = parse({"--cpu-pinning", "nri", "--nri-socket", "/run/nri.sock"});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->config.cpuPinning, CpuPinning::Nri);
    EXPECT_EQ(parsed->config.nriSocket, "/run/nri.sock");
    parsed = parse({}, {{"CPU_PINNING", "off"}});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->config.cpuPinning, CpuPinning::Off);
}

TEST(DaemonFlags, AnUnknownCpuPinningModeNamesTheFlagAndTheChoices) {
    auto bad = parse({"--cpu-pinning", "static"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("--cpu-pinning"), std::string::npos) << bad.error().message;
    EXPECT_NE(bad.error().message.find("auto, nri or off"), std::string::npos);
}

TEST(DaemonFlags, BadValuesNameTheFlag) {
    auto bad = parse({"--log-format", "xml"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("--log-format"), std::string::npos) << bad.error().message;
    auto badEnv = parse({}, {{"RESYNC_INTERVAL", "soon"}});
    ASSERT_FALSE(badEnv.ok());
    EXPECT_NE(badEnv.error().message.find("RESYNC_INTERVAL"), std::string::npos);
    EXPECT_FALSE(parse({"--bogus"}).ok());
    EXPECT_FALSE(parse({"--kubeconfig"}).ok());
    EXPECT_FALSE(parse({"--cdi-dir", "relative/path"}).ok());
    EXPECT_FALSE(parse({"--node-name", "Not_A_Node"}).ok());
    EXPECT_FALSE(parse({"--numa-list=maybe"}).ok());
}

TEST(DaemonFlags, NodeAllocatableResourcesAreAutoByDefault) {
    auto defaults = parse({});
    ASSERT_TRUE(defaults.ok()) << defaults.error().message;
    EXPECT_TRUE(defaults->config.slices.nodeAllocatableResources);
    EXPECT_TRUE(defaults->config.nodeAllocatableAuto);
    auto required = parse({"--node-allocatable-resources"});
    ASSERT_TRUE(required.ok()) << required.error().message;
    EXPECT_TRUE(required->config.slices.nodeAllocatableResources);
    EXPECT_FALSE(required->config.nodeAllocatableAuto);
    auto off = parse({"--node-allocatable-resources=false"});
    ASSERT_TRUE(off.ok()) << off.error().message;
    EXPECT_FALSE(off->config.slices.nodeAllocatableResources);
    auto bad = parse({"--node-allocatable-resources=maybe"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("true, false or auto"), std::string::npos)
        << bad.error().message;
}

TEST(DaemonFlags, NumaListAutoStartsWithListsAndMayFallBack) {
    auto parsed = parse({"--numa-list=auto"});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(parsed->config.numaListAuto);
    EXPECT_EQ(parsed->config.slices.numaForm, topology::NumaForm::List);
    auto fromEnvironment = parse({}, {{"NUMA_LIST", "auto"}});
    ASSERT_TRUE(fromEnvironment.ok()) << fromEnvironment.error().message;
    EXPECT_TRUE(fromEnvironment->config.numaListAuto);
    auto plain = parse({"--numa-list"});
    ASSERT_TRUE(plain.ok());
    EXPECT_FALSE(plain->config.numaListAuto);
    auto bad = parse({"--numa-list=sometimes"});
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("true, false or auto"), std::string::npos)
        << bad.error().message;
}

TEST(DaemonFlags, BooleanFlagsTakeOptionalValues) {
    auto parsed = parse({"--dry-run", "--keep-slices-on-exit=false", "--claims-dir", "/tmp/c"});
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_TRUE(parsed->config.dryRun);
    EXPECT_FALSE(parsed->config.keepSlicesOnExit);
    EXPECT_FALSE(parse({"--claims-dir", "/tmp/c"}).ok());  // only meaningful in dry-run
}

TEST(DaemonFlags, HelpListsEveryFlag) {
    auto parsed = parse({"--help"});
    ASSERT_TRUE(parsed.ok());
    EXPECT_TRUE(parsed->helpRequested);
    for (const char* flag :
         {"--driver-name", "--node-name", "--sysfs-root", "--kubelet-registry-dir",
          "--kubelet-plugins-dir", "--kubeconfig", "--cdi-dir", "--metadata-dir", "--state-dir",
          "--dev-root", "--numa-list", "--shared-consumable-capacity", "--resync-interval",
          "--log-level", "--log-format", "--metrics-addr", "--pod-uid"}) {
        EXPECT_NE(daemonUsage().find(flag), std::string::npos) << flag;
    }
}

TEST(Duration, ParsesUnits) {
    EXPECT_EQ(parseDuration("250ms").value(), std::chrono::milliseconds(250));
    EXPECT_EQ(parseDuration("30s").value(), std::chrono::seconds(30));
    EXPECT_EQ(parseDuration("2h").value(), std::chrono::hours(2));
    EXPECT_EQ(parseDuration("7").value(), std::chrono::seconds(7));
    EXPECT_FALSE(parseDuration("-3s").ok());
    EXPECT_FALSE(parseDuration("s").ok());
}

}  // namespace
}  // namespace numadra::daemon
