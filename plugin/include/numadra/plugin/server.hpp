#pragma once
// The kubelet plugin endpoint of the daemon: the registration socket the kubelet discovers, and
// the DRA socket serving NodePrepareResources / NodeUnprepareResources (v1 and v1beta1) and
// NodeWatchResources (DRAResourceHealth v1alpha1 and v1).

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "numadra/claims/claims.hpp"
#include "numadra/claims/health.hpp"
#include "numadra/common/result.hpp"
#include "numadra/common/worker_pool.hpp"

namespace numadra::plugin {

// Test seams: called on the thread running start()/stop(). Empty in production.
struct PluginServerHooks {
    // The DRA socket accepts and serves calls; the registration socket does not exist yet.
    std::function<void()> draServingBeforeRegistration;
    // The registration socket is gone; the DRA socket still serves.
    std::function<void()> registrationRemovedBeforeShutdown;
};

struct PluginServerOptions {
    std::string driverName;
    std::string registryDir = "/var/lib/kubelet/plugins_registry";
    std::string pluginDir;  // default "/var/lib/kubelet/plugins/<driver>"
    // Rolling-update mode (two driver pods on one node): per-pod socket names, and
    // prepare/unprepare serialized across pods with a flock on <pluginDir>/serialize.lock.
    std::string podUid;
    // Sockets are 0600 by default; 0660 and owned by this group when one is given.
    std::optional<gid_t> socketGroup;
    // Advertise and serve DRAResourceHealth. Without a HealthSource the streams stay open
    // silently: a 1.36 kubelet otherwise retries every 5 s and logs an error each time.
    bool serveHealth = true;

    // Health snapshots are resent at least this often (the kubelet's default trust is 30 s).
    std::chrono::milliseconds healthResendInterval{10'000};
    // Threads running ClaimPreparer calls, shared by all calls, in two lanes (claims.hpp): the
    // local lane (records, Unprepare: quick, local I/O) and the API lane (claims that need the
    // API server, which may keep a thread until the kubelet's deadline). The most each lane
    // runs at once: its threads start when claims arrive and end after `workerLinger` without
    // one, so an idle server has none.
    std::size_t localWorkerThreads = 8;
    std::size_t apiWorkerThreads = 16;
    std::chrono::milliseconds workerLinger = WorkerPool::kDefaultLinger;
    // Claims of one call handled in parallel, on each lane.
    std::size_t maxParallelClaimsPerCall = 8;
    // How long stop() lets in-flight calls finish before cancelling them.
    std::chrono::milliseconds shutdownGrace{5'000};

    PluginServerHooks hooks;
};

// Absolute paths of the files the server creates.
struct SocketPaths {
    std::string registration;   // <registryDir>/<driver>-reg.sock (or <driver>-<podUid>-reg.sock)
    std::string dra;            // <pluginDir>/dra.sock (or dra-<podUid>.sock)
    std::string serializeLock;  // <pluginDir>/serialize.lock (used in rolling-update mode only)
};

// The longest path a unix socket can be bound to (sun_path is 108 bytes including the NUL).
inline constexpr std::size_t kMaxSocketPathLength = 107;

// Resolves the socket paths. A name whose full path would exceed kMaxSocketPathLength is
// replaced by "<kind>-<h>.sock", kind "reg" or "dra", h = 16 lower-case hex digits of the 64-bit
// FNV-1a hash of the name it replaces (e.g. of "<driver>-<podUid>-reg.sock"): stable across
// restarts of the same pod and distinct per driver and pod. The kubelet finds the plugin by the
// file's presence and learns the name from GetInfo, so it never needs to parse the file name.
// Error when even the short name does not fit, or the driver name is empty or contains a '/'.
Result<SocketPaths> resolveSocketPaths(const PluginServerOptions& options);

// RAII: the destructor calls stop().
class PluginServer {
  public:
    PluginServer(PluginServerOptions options, claims::ClaimPreparer& preparer,
                 claims::HealthSource* health /* may be nullptr */);
    ~PluginServer();
    PluginServer(const PluginServer&) = delete;
    PluginServer& operator=(const PluginServer&) = delete;

    // Creates missing directories (0750; the plugin dir also gets the socket group), starts
    // serving the DRA socket, and only then creates the registration socket. Each socket is
    // bound inside a private 0700 directory with a hidden name beside it, given its mode and
    // group, and renamed into place, so it is never reachable with the wrong mode. The hidden
    // directory stays (empty) until stop(). A stale socket at either path is replaced; any
    // other file there is an error. Call once; a failed start removes the sockets it made.
    Status start();
    // Removes the registration socket first (the kubelet deregisters), then ends the health
    // streams and shuts the server down (in-flight calls get `shutdownGrace`), then removes the
    // DRA socket. Waits for running ClaimPreparer calls to return. Idempotent.
    void stop();

    std::string registrationSocketPath() const;
    std::string draSocketPath() const;
    // The last NotifyRegistrationStatus seen (for /readyz and tests); nullopt before the first.
    std::optional<bool> registered() const;
    // Rolling-update mode: since when another instance of this driver on the node (the pod
    // that replaces this one) serves a DRA socket in the same plugin folder: the modification
    // time of a `dra-*.sock` other than this one's that accepts a connection (the oldest, if
    // several); nullopt when none does.
    std::optional<std::filesystem::file_time_type> anotherInstanceServingSince() const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace numadra::plugin
