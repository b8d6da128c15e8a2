#pragma once
// The daemon's configuration: every flag also comes from an environment variable (the flag's
// name in upper case with '_' for '-', e.g. --node-name / NODE_NAME) so a DaemonSet can set it;
// a flag on the command line wins.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/slices/builder.hpp"

namespace numadra::daemon {

inline slices::SliceOptions daemonSliceOptions() {
    slices::SliceOptions options;
    options.nodeAllocatableResources = true;
    return options;
}

// --cpu-pinning: whether the claims' CPUs and memory nodes are applied to containers through the
// runtime's NRI (node/nri/).
enum class CpuPinning {
    Auto,  // pin while the runtime offers NRI; without it, prepare as before (warned, metric)
    Nri,   // required: a claim holding CPUs is not prepared while NRI is not connected
    Off,   // describe only (environment variables), never pin
};

struct DaemonConfig {
    // Driver name, node name, numaNode form, counters, legacy names, node-allocatable mappings
    // (on by default in the daemon, where the cluster keeps them).
    slices::SliceOptions slices = daemonSliceOptions();
    // --numa-list=auto: the list form (slices.numaForm) until the API server refuses it, then
    // the scalar form for the rest of the process's life.
    bool numaListAuto = false;
    // --node-allocatable-resources=auto (the default): CPU devices map to the node's cpu and
    // memory (slices.nodeAllocatableResources) until the API server drops the field, then
    // without for the rest of the process's life.
    bool nodeAllocatableAuto = true;
    std::string sysfsRoot = "/sys";
    std::string kubeletRegistryDir = "/var/lib/kubelet/plugins_registry";
    std::string kubeletPluginsDir = "/var/lib/kubelet/plugins";
    std::string kubeconfig;  // empty: in-cluster configuration
    std::string cdiDir = "/var/run/cdi";
    std::string metadataDir;  // default <plugins dir>/<driver>/dra-device-metadata
    std::string stateDir;     // default <plugins dir>/<driver>
    std::string devRoot = "/dev";
    std::string procRoot = "/proc";
    std::vector<std::string> metadataVersions{"v1alpha1"};  // newest first
    // --cdi-net-devices: CDI 1.1 netDevices for netdev VFs (prepare::Options::cdiNetDevices).
    bool cdiNetDevices = false;
    CpuPinning cpuPinning = CpuPinning::Auto;
    std::string nriSocket = "/var/run/nri/nri.sock";
    std::chrono::milliseconds resyncInterval{std::chrono::seconds(60)};
    // Device health (health/): detection, the kubelet's streams, taints.
    bool health = true;
    std::chrono::milliseconds healthInterval{std::chrono::seconds(5)};
    std::chrono::seconds healthTimeout{30};  // health_check_timeout_seconds per device
    std::chrono::milliseconds healthResendInterval{std::chrono::seconds(10)};
    std::string healthTaintEffect = "NoSchedule";  // NoSchedule, NoExecute, None
    std::chrono::seconds healthAerRecovery{300};
    std::int64_t healthCorrectableBurst = 100;  // per minute
    bool healthGpuLinkSpeedUnhealthy = false;
    std::string logLevel = "info";
    std::string logFormat = "text";
    std::string metricsAddr = ":9287";
    std::string podUid;
    std::optional<unsigned> socketGroup;
    bool keepSlicesOnExit = false;
    bool dryRun = false;    // no API server: slices printed, claims read from --claims-dir
    std::string claimsDir;  // dry-run: <namespace>_<name>.json or .yaml ResourceClaims

    std::string pluginDir() const { return kubeletPluginsDir + "/" + slices.driverName; }
};

struct ParsedFlags {
    DaemonConfig config;
    bool helpRequested = false;
    bool versionRequested = false;
};

// Errors name the flag (or environment variable) and the bad value.
Result<ParsedFlags> parseDaemonFlags(const std::vector<std::string>& args,
                                     const std::map<std::string, std::string>& environment,
                                     const std::string& defaultNodeName);

std::string daemonUsage();

// "30s", "5m", "1h", "250ms", or plain seconds.
Result<std::chrono::milliseconds> parseDuration(const std::string& text);

}  // namespace numadra::daemon
