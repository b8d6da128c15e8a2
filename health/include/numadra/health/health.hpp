#pragma once
// Device health from sysfs and the kernel, with no vendor library: presence of the PCI function,
// PCIe AER counters, PCIe link degradation, NIC carrier/operstate (a VF's PF too), and CPUs or
// NUMA nodes going offline. A Monitor polls (and checks at once when told of a kernel device
// event), keeps the latest state of every device, and serves it to the kubelet's health streams
// and to the slice publisher (taints).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/claims/health.hpp"
#include "numadra/common/result.hpp"
#include "numadra/common/wake_fd.hpp"
#include "numadra/discovery/link_events.hpp"
#include "numadra/discovery/machine.hpp"
#include "numadra/discovery/sysfs.hpp"

namespace numadra::health {

using State = claims::DeviceHealthReport::State;
using Clock = std::chrono::steady_clock;

// What to look at for one published device, taken from the discovered model.
struct WatchedDevice {
    std::string deviceName;
    std::string kind;                        // gpu, accelerator, nic, cpu
    std::string pciAddress;                  // PCI devices
    std::string devicePath;                  // relative to the sysfs root
    std::vector<std::string> netdevPaths;    // the device's own netdevs
    std::string pfAddress;                   // VFs: their PF...
    std::vector<std::string> pfNetdevPaths;  // ...and its netdevs
    int numaNode = -1;                       // CPU devices
    std::vector<int> cpus;                   // CPU devices: the CPUs published
    bool operator==(const WatchedDevice&) const = default;
};

// Every published device of the machine (by the names in `devices`).
std::vector<WatchedDevice> watchList(const discovery::Machine& machine,
                                     const std::vector<api::Device>& devices);

struct Policy {
    // A non-fatal AER error makes a device unhealthy until this long has passed without
    // another. A fatal one stays until the device is reset (its counters go down) or re-added:
    // a dead GPU logs nothing new because nobody uses it.
    std::chrono::seconds aerRecovery{300};
    // More correctable errors than this within a minute: a warning in the message.
    std::int64_t correctableBurstPerMinute = 100;
    // GPUs lower their link speed when idle to save power: by default a GPU's speed below what
    // its slot allows is ignored, its width below it is unhealthy (lanes do not come back by
    // themselves). NICs do not do this: for them both are unhealthy.
    bool gpuLinkSpeedUnhealthy = false;
};

struct DeviceHealth {
    std::string deviceName;
    State state = State::Unknown;
    std::string cause;    // short, for a taint value: aer-fatal, link-degraded, carrier-down, ...
    std::string message;  // for people: what, and the sysfs file that says so
    std::int64_t checkedUnix = 0;
    bool operator==(const DeviceHealth&) const = default;
};

// Reads the files and remembers what it needs between checks (AER baselines and history).
// Not thread-safe: one Monitor thread uses it.
class Checker {
  public:
    Checker(discovery::Sysfs sysfs, Policy policy);
    // Starts a round of checks: files several devices share (a PF's netdev for its 64 VFs)
    // are read once per round.
    void beginRound();
    DeviceHealth check(const WatchedDevice& device, Clock::time_point now);
    // Forget a device's history (it was removed; a new card may come in its place).
    void forget(const std::string& deviceName);

  private:
    struct AerHistory {
        std::optional<std::int64_t> fatalBaseline, nonFatalBaseline;
        std::optional<Clock::time_point> lastUncorrectable;
        bool fatal = false;      // sticky until a reset
        bool newLayout = false;  // counters in aer/err_* rather than aer_dev_*
        std::string lastUncorrectableMessage, lastUncorrectableCause;
        std::vector<std::pair<Clock::time_point, std::int64_t>> correctable;  // samples
    };
    struct LinkLimit {  // what the device and every port above it can do: fixed per boot
        std::optional<double> speed;
        std::optional<int> width;
    };
    struct NetdevState {
        bool down = false;
        std::string text;
    };
    struct NetdevRead {
        bool present = false;              // its operstate could be read
        std::optional<NetdevState> state;  // none: not ours to judge (in a pod, admin down)
    };
    void checkAer(const WatchedDevice& device, Clock::time_point now, DeviceHealth& health);
    void checkLink(const WatchedDevice& device, DeviceHealth& health);
    void checkNetdevs(const WatchedDevice& device, DeviceHealth& health);
    void checkCpus(const WatchedDevice& device, DeviceHealth& health);
    bool present(const WatchedDevice& device);
    const LinkLimit& linkLimit(const WatchedDevice& device);
    const NetdevRead& readNetdev(const std::string& path);
    const std::optional<std::vector<int>>& onlineCpus();

    discovery::Sysfs sysfs_;
    Policy policy_;
    std::map<std::string, AerHistory> aer_;
    std::map<std::string, LinkLimit> linkLimits_;
    std::map<std::string, NetdevRead> netdevsThisRound_;
    // devices/system/cpu/online, read once per round (none: unreadable, ask each CPU).
    std::optional<std::optional<std::vector<int>>> onlineCpusThisRound_;
};

struct MonitorOptions {
    std::string poolName;
    std::chrono::milliseconds pollInterval{5000};
    // With event coverage (Monitor::setEventCoverage), a poll checks only what the kernel sends no
    // event for, and everything once this long (a lost event costs at most this).
    std::chrono::milliseconds fullRoundInterval{60'000};
    std::chrono::seconds reportTimeout{30};  // health_check_timeout_seconds sent per device
    Policy policy;
};

// The daemon's health source. Thread-safe. One thread (start()) runs the rounds: it waits in
// poll() for the poll interval, a wake-up (checkNow(), setDevices(), stop()) or, with
// watchLinks(), an rtnetlink link message.
class Monitor final : public claims::HealthSource {
  public:
    using ChangeCallback = std::function<void()>;
    // Called on the Monitor's thread before each round a link message starts: how many messages
    // were for watched interfaces, and whether the kernel dropped messages.
    using LinkObserver = std::function<void(std::size_t watchedEvents, bool lost)>;
    Monitor(discovery::Sysfs sysfs, MonitorOptions options);
    ~Monitor() override;
    Monitor(const Monitor&) = delete;
    Monitor& operator=(const Monitor&) = delete;

    // The devices to watch (after every scan). A device that disappears from the list is kept
    // and reported unhealthy ("removed") until it comes back, so a pod using it hears of it.
    void setDevices(std::vector<WatchedDevice> devices);
    // Before start(): a cable pull raises no kernel uevent, only an rtnetlink link message; with
    // this, a message about a watched interface (carrier, operstate, up/down, gone), or lost
    // messages, start a round at once instead of at the next poll. The subscription belongs to
    // the network namespace of the calling thread. An error when it is refused.
    Status watchLinks(LinkObserver observer = {});
    [[nodiscard]] bool watchesLinks() const { return links_ != nullptr; }
    // Starts the polling thread; `onChange` runs on it after a check that changed a device's
    // state or cause (what the taints are made of; a new message only goes to the streams).
    void start(ChangeCallback onChange);
    void stop();
    // Checks now (a kernel device event arrived), without waiting for the next poll.
    void checkNow();
    // Whether a watched device has a network interface of this name (its own or, for a VF, its
    // PF's): a link event for it calls for checkNow().
    bool watchesInterface(std::string_view ifName) const;
    // What a round checks. Everything: every file of every device. Unannounced: only what the
    // kernel sends no event for, the AER counters and links of the PCI functions that have them
    // (GPUs, PFs, NICs without SR-IOV); a VF (presence, its netdev and its PF's) and a CPU device
    // (online CPUs) keep their last state, checked again: uevents announce a removal or a CPU
    // going offline, rtnetlink a carrier change, and both call checkNow().
    enum class Scope { Everything, Unannounced };
    // Runs one round of checks on the caller's thread; true if a state or cause changed.
    bool checkOnce(Scope scope = Scope::Everything);
    // Whether uevents and link events reach checkNow() (the daemon's listeners are up): then the
    // polls are Unannounced rounds, with an Everything round every fullRoundInterval and after
    // every checkNow().
    void setEventCoverage(bool covered);

    std::map<std::string, DeviceHealth> current() const;

    // claims::HealthSource. The listener is called after a round that changed a device's state,
    // cause or message, on the thread that ran the round.
    std::vector<claims::DeviceHealthReport> snapshot() override;
    void setChangeListener(ChangeListener listener) override;

  private:
    struct Changes {
        bool state = false;  // a device's state or cause
        bool any = false;    // that, or a message
    };
    void run(std::stop_token stop);
    // Until the poll interval passes (false) or a round is asked for (true).
    bool waitForNextRound(const std::stop_token& stop);
    bool roundRequested();
    // Whether these link messages call for a round (and tells the observer).
    bool startsARound(const discovery::LinkEvents& batch);
    // Compares a device's new health with its state (mutex_ held), logging a change of state.
    void compare(const std::string& name, const DeviceHealth& health, Changes& changes) const;
    void tellListener();

    MonitorOptions options_;
    mutable std::mutex checkMutex_;  // one round of checks at a time
    Checker checker_;                // guarded by checkMutex_
    mutable std::mutex mutex_;
    WakeFd wake_;  // rung when wakeRequested_ is set, and on stop
    std::vector<WatchedDevice> devices_;
    std::set<std::string, std::less<>> interfaces_;  // the netdev names of devices_
    std::map<std::string, DeviceHealth> states_;
    std::map<std::string, DeviceHealth> removed_;
    std::vector<std::string> toForget_;  // dropped by setDevices; their history goes next round
    std::uint64_t listVersion_ = 0;      // bumped by setDevices
    bool wakeRequested_ = false;
    bool eventCoverage_ = false;
    std::mutex listenerMutex_;  // held while the listener runs (setChangeListener's promise)
    ChangeListener listener_;
    ChangeCallback onChange_;
    std::unique_ptr<discovery::LinkEventListener> links_;  // set before start(); the thread's
    LinkObserver linkObserver_;
    std::jthread thread_;
};

// The taint an unhealthy device gets in its ResourceSlice: key "<driver>/unhealthy", value the
// cause, the configured effect (NoSchedule, NoExecute or None).
std::map<std::string, api::DeviceTaint> taintsFor(const std::map<std::string, DeviceHealth>& health,
                                                  const std::string& driverName,
                                                  const std::string& effect);

}  // namespace numadra::health
