#pragma once
// The daemon's NRI plugin: connects to the container runtime's NRI socket (containerd 1.7+,
// CRI-O 1.26+), registers, and applies the pinning decisions (pinning.hpp) to every container:
// at creation (the container's own cpuset, and the shared pool of the others), after
// (re)connecting (Synchronize: every running container brought to the policy), and whenever
// claims are prepared or unprepared (UpdateContainers).
//
// One thread does all of it: it owns the connection and the table of containers, waits in
// poll() on the socket, a wake-up descriptor and the stop request, and answers the runtime's
// calls as they come (the runtime gives each call 2 s by default). A lost connection (a runtime
// restart) is retried every `retryInterval`; nothing is kept across connections, the runtime's
// Synchronize tells everything again.
//
// Two instances of the daemon on one node (a rolling update) must not both adjust containers
// (the runtime refuses a container two plugins adjust the same way): the connection is held
// under an exclusive lock on `lockPath`, which the old instance releases when it stops.

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/nri/pinning.hpp"

namespace numadra::nri {

struct PluginOptions {
    std::string socketPath = "/var/run/nri/nri.sock";
    std::string lockPath;  // required: a file only instances of this driver on this node use
    std::string name = "numa-dra-driver";
    std::string index = "50";  // NRI calls plugins in ascending index order
    std::chrono::milliseconds retryInterval{1000};
    std::chrono::milliseconds writeTimeout{5000};
    // The node's CPUs and the prepared claims, asked on the plugin's thread before each decision
    // (the checkpoint is the truth: another instance may have prepared a claim).
    std::function<Result<PinningInputs>()> inputs;
};

class Plugin {
  public:
    // Starts the plugin's thread; it connects as soon as the socket and the lock allow.
    static std::unique_ptr<Plugin> start(PluginOptions options, metrics::Registry& metrics);
    ~Plugin();  // closes the connection, releases the lock
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    // Claims were prepared or unprepared: the running containers are brought to the policy on
    // the plugin's thread. Returns at once.
    void claimsChanged();

    // True from the runtime's first Synchronize on a connection until that connection ends:
    // containers created meanwhile are pinned.
    bool synchronized() const;

    // Waits up to `timeout` for synchronized().
    bool waitSynchronized(std::chrono::milliseconds timeout) const;

    // Closes the connection and releases the lock now (the next instance takes over); the
    // plugin stays stopped. Idempotent.
    void stop();

  private:
    struct State;
    explicit Plugin(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

// Declares the plugin's metrics (the daemon does it once, whether or not pinning is on, so the
// families are always scraped).
void declarePluginMetrics(metrics::Registry& metrics);

}  // namespace numadra::nri
