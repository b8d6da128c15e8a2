#include "numadra/health/health.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <sstream>

#include "numadra/common/text.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/topology/attributes.hpp"

namespace numadra::health {

namespace {

constexpr size_t kMessageLimit = 1024;  // the kubelet cuts longer messages
constexpr auto kCorrectableWindow = std::chrono::minutes(1);

std::int64_t unixNow() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

// An AER counter file: "RxErr 12\nBadTLP 3\n...\nTOTAL_ERR_COR 15\n". The total when the kernel
// prints one, else the sum; `increased` lists the named counters that grew since `previous`.
struct AerCounts {
    std::int64_t total = 0;
    std::map<std::string, std::int64_t> counters;
};

std::optional<AerCounts> readAer(const discovery::Sysfs& sysfs, const std::string& file) {
    auto content = sysfs.read(file);
    if (!content)
        return std::nullopt;
    AerCounts counts;
    std::optional<std::int64_t> total;
    std::istringstream lines(*content);
    for (std::string line; std::getline(lines, line);) {
        const auto space = line.rfind(' ');
        if (space == std::string::npos)
            continue;
        auto value = text::parseInt(text::trim(line.substr(space + 1)));
        if (!value)
            continue;
        const std::string name(text::trim(line.substr(0, space)));
        if (name.rfind("TOTAL_", 0) == 0)
            total = *value;
        else
            counts.counters[name] = *value;
    }
    if (total) {
        counts.total = *total;
    } else {
        for (const auto& [name, value] : counts.counters)
            counts.total += value;
    }
    return counts;
}

struct Finding {
    bool unhealthy = false;
    std::string cause;
    std::string message;
};

void add(DeviceHealth& health, const Finding& finding) {
    if (finding.unhealthy && health.state != State::Unhealthy) {
        health.state = State::Unhealthy;
        health.cause = finding.cause;
    }
    if (!health.message.empty())
        health.message += "; ";
    health.message += finding.message;
}

std::string gts(double value) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1f GT/s", value);
    return buffer;
}

template <class T>
const T* attribute(const api::Device& device, const std::string& name) {
    auto it = device.attributes.find(name);
    return it == device.attributes.end() ? nullptr : std::get_if<T>(&it->second);
}

}  // namespace

std::vector<WatchedDevice> watchList(const discovery::Machine& machine,
                                     const std::vector<api::Device>& devices) {
    std::map<std::string, const discovery::PciFunction*> byName;
    for (const auto& f : machine.pci) {
        if (!f.kind.empty())
            byName.emplace(slices::deviceName(f), &f);
    }
    std::vector<WatchedDevice> out;
    for (const auto& device : devices) {
        WatchedDevice watched;
        watched.deviceName = device.name;
        const auto* type = attribute<std::string>(device, "type");
        if (type != nullptr && *type == "cpu") {
            const auto* numa = attribute<std::int64_t>(device, topology::kNumaNodeAttribute);
            if (numa == nullptr)
                continue;
            watched.kind = "cpu";
            watched.numaNode = static_cast<int>(*numa);
            if (const auto* node = machine.node(watched.numaNode)) {
                for (int id : node->cpus) {
                    const auto* cpu = machine.cpu(id);
                    if (cpu != nullptr && cpu->online)
                        watched.cpus.push_back(id);
                }
            }
            out.push_back(std::move(watched));
            continue;
        }
        auto it = byName.find(device.name);
        if (it == byName.end())
            continue;
        const auto& f = *it->second;
        watched.kind = f.kind;
        watched.pciAddress = f.address;
        watched.devicePath = f.devicePath;
        for (const auto& netdev : f.netdevs)
            watched.netdevPaths.push_back(netdev.path);
        if (f.sriovVf) {
            watched.pfAddress = f.sriovVf->pfAddress;
            if (const auto* pf = machine.pciFunction(f.sriovVf->pfAddress)) {
                for (const auto& netdev : pf->netdevs)
                    watched.pfNetdevPaths.push_back(netdev.path);
            }
        }
        out.push_back(std::move(watched));
    }
    return out;
}

// --- Checker -----------------------------------------------------------------------------------

Checker::Checker(discovery::Sysfs sysfs, Policy policy)
    : sysfs_(std::move(sysfs)), policy_(policy) {}

void Checker::forget(const std::string& deviceName) {
    aer_.erase(deviceName);
}

DeviceHealth Checker::check(const WatchedDevice& device, Clock::time_point now) {
    DeviceHealth health;
    health.deviceName = device.deviceName;
    health.state = State::Healthy;
    health.checkedUnix = unixNow();
    if (device.kind == "cpu") {
        checkCpus(device, health);
    } else if (!sysfs_.isDirectory(device.devicePath)) {
        // Hot-unplugged, removed through sysfs, or the link went down for good.
        forget(device.deviceName);
        add(health, {true, "removed",
                     "PCI device " + device.pciAddress + " is gone (" +
                         sysfs_.path(device.devicePath) + " no longer exists)"});
    } else {
        checkAer(device, now, health);
        checkLink(device, health);
        checkNetdevs(device, health);
    }
    if (health.message.empty())
        health.message = "all checks passed";
    if (health.message.size() > kMessageLimit)
        health.message = health.message.substr(0, kMessageLimit - 3) + "...";
    return health;
}

void Checker::checkAer(const WatchedDevice& device, Clock::time_point now, DeviceHealth& health) {
    auto& history = aer_[device.deviceName];
    struct Kind {
        const char* file;
        const char* what;
        const char* cause;
        std::optional<std::int64_t> AerHistory::*baseline;
    };
    for (const Kind& kind : {Kind{"aer_dev_fatal", "fatal", "aer-fatal", &AerHistory::fatalBaseline},
                             Kind{"aer_dev_nonfatal", "non-fatal", "aer-nonfatal",
                                  &AerHistory::nonFatalBaseline}}) {
        const std::string file = device.devicePath + "/" + kind.file;
        auto counts = readAer(sysfs_, file);
        if (!counts)
            continue;
        auto& baseline = history.*kind.baseline;
        // Errors counted before we first looked are history, not news; a counter that went
        // down means the device was reset.
        if (!baseline || counts->total < *baseline) {
            baseline = counts->total;
            continue;
        }
        if (counts->total == *baseline)
            continue;
        history.lastUncorrectable = now;
        history.lastUncorrectableCause = kind.cause;
        history.lastUncorrectableMessage = std::to_string(counts->total - *baseline) + " new " +
                                           kind.what + " PCIe AER error(s) (" +
                                           sysfs_.path(file) + ")";
        baseline = counts->total;
    }
    if (history.lastUncorrectable && now - *history.lastUncorrectable < policy_.aerRecovery) {
        add(health, {true, history.lastUncorrectableCause, history.lastUncorrectableMessage});
    }
    const std::string correctableFile = device.devicePath + "/aer_dev_correctable";
    if (auto counts = readAer(sysfs_, correctableFile)) {
        auto& samples = history.correctable;
        if (!samples.empty() && counts->total < samples.back().second)
            samples.clear();  // reset
        samples.emplace_back(now, counts->total);
        while (samples.size() > 1 && now - samples[1].first >= kCorrectableWindow)
            samples.erase(samples.begin());
        const std::int64_t burst = counts->total - samples.front().second;
        if (burst > policy_.correctableBurstPerMinute) {
            add(health, {false, "",
                         "warning: " + std::to_string(burst) +
                             " correctable PCIe AER errors within a minute (" +
                             sysfs_.path(correctableFile) + ")"});
        }
    }
}

void Checker::checkLink(const WatchedDevice& device, DeviceHealth& health) {
    auto number = [&](const char* name) -> std::optional<double> {
        auto content = sysfs_.read(device.devicePath + "/" + name);
        if (!content)
            return std::nullopt;
        return text::parseLeadingDouble(*content);  // "Unknown" and empty stay unknown
    };
    const auto speed = number("current_link_speed");
    const auto maxSpeed = number("max_link_speed");
    const auto width = number("current_link_width");
    const auto maxWidth = number("max_link_width");
    const bool slower = speed && maxSpeed && *speed > 0 && *speed < *maxSpeed;
    const bool narrower = width && maxWidth && *width > 0 && *width < *maxWidth;
    if (!slower && !narrower)
        return;
    std::ostringstream text;
    text << "PCIe link degraded: " << (speed ? gts(*speed) : "?") << " x"
         << (width ? static_cast<int>(*width) : 0) << ", capable of "
         << (maxSpeed ? gts(*maxSpeed) : "?") << " x" << (maxWidth ? static_cast<int>(*maxWidth) : 0)
         << " (" << sysfs_.path(device.devicePath + "/current_link_speed") << ")";
    const bool gpu = device.kind == discovery::kKindGpu || device.kind == discovery::kKindAccelerator;
    const bool unhealthy = narrower || !gpu || policy_.gpuLinkSpeedUnhealthy;
    add(health, {unhealthy, "link-degraded",
                 unhealthy ? text.str() : "warning: " + text.str() + " (GPUs slow down when idle)"});
}

void Checker::checkNetdevs(const WatchedDevice& device, DeviceHealth& health) {
    auto check = [&](const std::string& path, const char* cause, const std::string& whose) {
        // A netdev CNI moved into a pod's namespace is no longer in the host's sysfs: that is
        // not a fault, and the pod's view is not ours to judge.
        if (!sysfs_.isDirectory(path))
            return;
        const std::string name = discovery::baseName(path);
        auto operstate = sysfs_.read(path + "/operstate");
        auto carrier = sysfs_.read(path + "/carrier");  // EINVAL while administratively down
        const std::string state = operstate ? std::string(text::trim(*operstate)) : "";
        const bool down = state == "down" || state == "lowerlayerdown" ||
                          (carrier && text::trim(*carrier) == "0");
        if (!down)
            return;
        add(health, {true, cause,
                     whose + " interface " + name + " is down (operstate " +
                         (state.empty() ? "unreadable" : state) + ", " +
                         sysfs_.path(path + "/operstate") + ")"});
    };
    for (const auto& path : device.netdevPaths)
        check(path, "carrier-down", "network");
    for (const auto& path : device.pfNetdevPaths)
        check(path, "pf-carrier-down", "the PF's (" + device.pfAddress + ")");
}

void Checker::checkCpus(const WatchedDevice& device, DeviceHealth& health) {
    if (auto online = sysfs_.read("devices/system/node/online")) {
        auto nodes = text::parseRangeList(*online);
        if (nodes && std::find(nodes->begin(), nodes->end(), device.numaNode) == nodes->end()) {
            add(health, {true, "numa-node-offline",
                         "NUMA node " + std::to_string(device.numaNode) + " is offline (" +
                             sysfs_.path("devices/system/node/online") + ")"});
            return;
        }
    }
    std::vector<int> offline;
    for (int cpu : device.cpus) {
        // No "online" file (cpu0 on x86) means it cannot go offline.
        auto state = sysfs_.read("devices/system/cpu/cpu" + std::to_string(cpu) + "/online");
        if (state && text::trim(*state) == "0")
            offline.push_back(cpu);
    }
    if (!offline.empty()) {
        add(health, {true, "cpu-offline",
                     "CPU(s) " + text::formatRangeList(offline) + " of NUMA node " +
                         std::to_string(device.numaNode) + " went offline (" +
                         sysfs_.path("devices/system/cpu") + "/cpuN/online)"});
    }
}

// --- Monitor -----------------------------------------------------------------------------------

Monitor::Monitor(discovery::Sysfs sysfs, MonitorOptions options)
    : options_(std::move(options)), checker_(std::move(sysfs), options_.policy) {}

Monitor::~Monitor() {
    stop();
}

void Monitor::setDevices(std::vector<WatchedDevice> devices) {
    {
        std::lock_guard lock(mutex_);
        std::map<std::string, bool> now;
        for (const auto& device : devices)
            now[device.deviceName] = true;
        for (const auto& [name, state] : states_) {
            if (now.count(name))
                continue;
            DeviceHealth gone = state;
            gone.state = State::Unhealthy;
            gone.cause = "removed";
            if (state.cause != "removed")
                gone.message = "device " + name + " is no longer present on this node";
            gone.checkedUnix = unixNow();
            removed_[name] = gone;
        }
        std::erase_if(states_, [&now](const auto& entry) { return !now.count(entry.first); });
        std::erase_if(removed_, [&now](const auto& entry) { return now.count(entry.first) > 0; });
        devices_ = std::move(devices);
        wakeRequested_ = true;
    }
    wake_.notify_all();
}

void Monitor::start(ChangeCallback onChange) {
    onChange_ = std::move(onChange);
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Monitor::stop() {
    if (thread_.joinable()) {
        thread_.request_stop();
        wake_.notify_all();
        thread_.join();
    }
}

void Monitor::checkNow() {
    {
        std::lock_guard lock(mutex_);
        wakeRequested_ = true;
    }
    wake_.notify_all();
}

bool Monitor::checkOnce() {
    std::lock_guard checking(checkMutex_);
    std::vector<WatchedDevice> devices;
    {
        std::lock_guard lock(mutex_);
        devices = devices_;
    }
    const auto now = Clock::now();
    std::map<std::string, DeviceHealth> next;
    for (const auto& device : devices)
        next[device.deviceName] = checker_.check(device, now);
    std::lock_guard lock(mutex_);
    bool changed = next.size() != states_.size();
    for (const auto& [name, health] : next) {
        auto it = states_.find(name);
        if (it == states_.end() || it->second.state != health.state ||
            it->second.message != health.message) {
            changed = true;
            if (it == states_.end() || it->second.state != health.state) {
                spdlog::info("device health changed device={} health={} cause={} message=\"{}\"",
                             name,
                             health.state == State::Healthy     ? "healthy"
                             : health.state == State::Unhealthy ? "unhealthy"
                                                                : "unknown",
                             health.cause.empty() ? "-" : health.cause, health.message);
            }
        }
    }
    states_ = std::move(next);
    if (changed) {
        ++version_;
        changed_.notify_all();
    }
    return changed;
}

void Monitor::run(std::stop_token stop) {
    while (!stop.stop_requested()) {
        if (checkOnce() && onChange_)
            onChange_();
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, stop, options_.pollInterval, [this] { return wakeRequested_; });
        wakeRequested_ = false;
    }
}

std::map<std::string, DeviceHealth> Monitor::current() const {
    std::lock_guard lock(mutex_);
    auto all = states_;
    all.insert(removed_.begin(), removed_.end());
    return all;
}

std::vector<plugin::DeviceHealthReport> Monitor::snapshot() {
    std::vector<plugin::DeviceHealthReport> reports;
    for (const auto& [name, health] : current()) {
        plugin::DeviceHealthReport report;
        report.poolName = options_.poolName;
        report.deviceName = name;
        report.state = health.state;
        report.message = health.message;
        report.lastUpdatedUnix = health.checkedUnix;
        report.timeoutSeconds = options_.reportTimeout.count();
        reports.push_back(std::move(report));
    }
    return reports;
}

bool Monitor::waitForChange(std::chrono::milliseconds timeout, std::stop_token stop) {
    std::unique_lock lock(mutex_);
    const bool changed =
        changed_.wait_for(lock, stop, timeout, [this] { return version_ != seenVersion_; });
    seenVersion_ = version_;
    return changed;
}

std::map<std::string, api::DeviceTaint> taintsFor(const std::map<std::string, DeviceHealth>& health,
                                                  const std::string& driverName,
                                                  const std::string& effect) {
    std::map<std::string, api::DeviceTaint> taints;
    for (const auto& [name, state] : health) {
        if (state.state == State::Unhealthy)
            taints[name] = api::DeviceTaint{driverName + "/unhealthy", state.cause, effect};
    }
    return taints;
}

}  // namespace numadra::health
