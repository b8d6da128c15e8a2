#pragma once
// numa-dra-plugin: discovers the node, serves the kubelet (registration + DRA gRPC), and keeps
// the node's ResourceSlices in the cluster true (re-discovering on an interval and on kernel
// device events, repairing slices deleted by others within seconds).

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>

#include "numadra/daemon/config.hpp"

namespace numadra::daemon {

// Exit codes of run().
inline constexpr int kExitOk = 0;
inline constexpr int kExitFatal = 1;      // e.g. the API server drops fields we publish
inline constexpr int kExitBadConfig = 2;  // unusable flags, sysfs root, kubeconfig, sockets

// Seams only test programs fill (numa-dra-plugin-faults); numa-dra-plugin leaves them empty.
struct DaemonHooks {
    // Called after each file the prepare pipeline writes: the crash tests kill the process there.
    std::function<void(const std::string& path)> afterFileWrite;
    // Runs as where no kernel device event can be received (no uevent socket).
    bool withoutKernelDeviceEvents = false;
};

// Runs until `stop` is requested (SIGTERM) or a fatal error; then stops serving, deregisters
// and removes (or keeps, per --keep-slices-on-exit) this node's slices. `started` is the process
// start, for the startup time the daemon reports.
int runDaemon(const DaemonConfig& config, std::stop_token stop,
              std::chrono::steady_clock::time_point started, const DaemonHooks& hooks = {});

// numa-dra-plugin's whole main: flags from argv and the environment, logging, signals (SIGTERM
// and SIGINT stop it), runDaemon. Returns the exit code.
int daemonMain(int argc, char** argv, const DaemonHooks& hooks = {});

}  // namespace numadra::daemon
