#include "numadra/health/health.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "numadra/common/text.hpp"
#include "numadra/common/thread_name.hpp"
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

namespace {

// A VF pool (VfLayout::Pooled) is as healthy as its PF: the PF gone, failing or without carrier
// takes every VF with it. A VF that goes only shrinks the pool at the next scan.
std::optional<WatchedDevice> watchedVfPool(const discovery::Machine& machine,
                                           const std::string& name) {
    const auto vfs = slices::vfsOfPool(machine, name);
    if (vfs.empty())
        return std::nullopt;
    const auto* pf = machine.pciFunction(vfs.front()->sriovVf->pfAddress);
    if (pf == nullptr)
        return std::nullopt;
    WatchedDevice watched;
    watched.deviceName = name;
    watched.kind = pf->kind;
    watched.pciAddress = pf->address;
    watched.devicePath = pf->devicePath;
    watched.pfAddress = pf->address;
    for (const auto& netdev : pf->netdevs)
        watched.pfNetdevPaths.push_back(netdev.path);
    return watched;
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
        if (it == byName.end()) {
            if (auto pool = watchedVfPool(machine, device.name))
                out.push_back(std::move(*pool));
            continue;
        }
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
    linkLimits_.erase(deviceName);
}

void Checker::beginRound() {
    netdevsThisRound_.clear();
    onlineCpusThisRound_.reset();
}

bool Checker::present(const WatchedDevice& device) {
    // A VF's netdev lives in its folder, and its operstate is read anyway: having read it proves
    // the folder is there, one system call less for each of hundreds of VFs.
    if (!device.pfAddress.empty()) {
        const std::string folder = device.devicePath + "/";
        for (const auto& path : device.netdevPaths) {
            if (path.rfind(folder, 0) == 0 && readNetdev(path).present)
                return true;
        }
    }
    return sysfs_.isDirectory(device.devicePath);
}

DeviceHealth Checker::check(const WatchedDevice& device, Clock::time_point now) {
    DeviceHealth health;
    health.deviceName = device.deviceName;
    health.state = State::Healthy;
    health.checkedUnix = unixNow();
    if (device.kind == "cpu") {
        checkCpus(device, health);
    } else if (!present(device)) {
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
    if (health.message.size() > kMessageLimit) {
        // Cut on a character boundary: invalid UTF-8 in a proto string breaks the kubelet's
        // decoding of the whole stream.
        size_t cut = kMessageLimit - 3;
        while (cut > 0 && (static_cast<unsigned char>(health.message[cut]) & 0xC0) == 0x80)
            --cut;
        health.message = health.message.substr(0, cut) + "...";
    }
    return health;
}

void Checker::checkAer(const WatchedDevice& device, Clock::time_point now, DeviceHealth& health) {
    // A VF has no AER capability of its own: errors on its link are logged against its PF,
    // which is checked as a device of its own.
    if (!device.pfAddress.empty())
        return;
    auto& history = aer_[device.deviceName];
    // Kernels print the counters as aer_dev_<kind>; a newer layout puts them in aer/err_<kind>.
    auto counterFile = [&](const char* kind) {
        return device.devicePath + (history.newLayout ? "/aer/err_" : "/aer_dev_") + kind;
    };
    struct Kind {
        const char* name;
        const char* what;
        const char* cause;
        bool fatal;
        std::optional<std::int64_t> AerHistory::*baseline;
    };
    for (const Kind& kind :
         {Kind{"fatal", "fatal", "aer-fatal", true, &AerHistory::fatalBaseline},
          Kind{"nonfatal", "non-fatal", "aer-nonfatal", false, &AerHistory::nonFatalBaseline}}) {
        std::string file = counterFile(kind.name);
        auto counts = readAer(sysfs_, file);
        if (!counts && !history.newLayout) {
            file = device.devicePath + "/aer/err_" + kind.name;
            counts = readAer(sysfs_, file);
            history.newLayout = counts.has_value();
        }
        if (!counts)
            continue;
        auto& baseline = history.*kind.baseline;
        if (baseline && counts->total < *baseline) {
            // The counters went down: the device was reset. What it logged before is history.
            history.lastUncorrectable.reset();
            history.fatal = false;
        }
        // Errors counted before we first looked are history, not news.
        if (!baseline || counts->total <= *baseline) {
            baseline = counts->total;
            continue;
        }
        history.lastUncorrectable = now;
        history.fatal = history.fatal || kind.fatal;
        if (kind.fatal || history.lastUncorrectableCause != "aer-fatal" || !history.fatal) {
            history.lastUncorrectableCause = kind.cause;
            history.lastUncorrectableMessage = std::to_string(counts->total - *baseline) + " new " +
                                               kind.what + " PCIe AER error(s) (" +
                                               sysfs_.path(file) + ")";
        }
        baseline = counts->total;
    }
    const bool recent =
        history.lastUncorrectable && now - *history.lastUncorrectable < policy_.aerRecovery;
    if (history.fatal || recent)
        add(health, {true, history.lastUncorrectableCause, history.lastUncorrectableMessage});
    const std::string correctableFile = counterFile("correctable");
    if (auto counts = readAer(sysfs_, correctableFile)) {
        auto& samples = history.correctable;
        if (!samples.empty() && counts->total < samples.back().second)
            samples.clear();  // reset
        samples.emplace_back(now, counts->total);
        while (samples.size() > 1 && now - samples[1].first >= kCorrectableWindow)
            samples.erase(samples.begin());
        const std::int64_t burst = counts->total - samples.front().second;
        if (burst > policy_.correctableBurstPerMinute) {
            // No count in the text: a message that changes every poll would be news every poll.
            add(health, {false, "",
                         "warning: more than " + std::to_string(policy_.correctableBurstPerMinute) +
                             " correctable PCIe AER errors within a minute (" +
                             sysfs_.path(correctableFile) + ")"});
        }
    }
}

const Checker::LinkLimit& Checker::linkLimit(const WatchedDevice& device) {
    auto it = linkLimits_.find(device.deviceName);
    if (it != linkLimits_.end())
        return it->second;
    // The device's own maximum, and that of every PCIe port above it: an x16 card in an x8
    // slot, or a Gen5 card behind a Gen4 port, is doing all it can (the kernel's
    // pcie_bandwidth_available() takes the same minimum).
    LinkLimit limit;
    std::string path = device.devicePath;
    while (!path.empty()) {
        const std::string name = discovery::baseName(path);
        if (name.find(':') != std::string::npos && name.rfind("pci", 0) != 0) {
            if (auto speed = sysfs_.read(path + "/max_link_speed")) {
                if (auto value = text::parseLeadingDouble(*speed); value && *value > 0)
                    limit.speed = limit.speed ? std::min(*limit.speed, *value) : *value;
            }
            if (auto width = sysfs_.read(path + "/max_link_width")) {
                if (auto value = text::parseInt(text::attributeText(*width)); value && *value > 0) {
                    const int lanes = static_cast<int>(*value);
                    limit.width = limit.width ? std::min(*limit.width, lanes) : lanes;
                }
            }
        }
        path = discovery::dirName(path);
        if (path == "devices" || path == "." || path.empty())
            break;
    }
    return linkLimits_.emplace(device.deviceName, limit).first->second;
}

void Checker::checkLink(const WatchedDevice& device, DeviceHealth& health) {
    if (!device.pfAddress.empty())
        return;  // a VF has no link of its own: its PF's is the one that matters
    const auto& limit = linkLimit(device);
    if (!limit.speed && !limit.width)
        return;  // conventional PCI, virtual functions of VMs: nothing to compare
    const std::string speedFile = device.devicePath + "/current_link_speed";
    auto speedText = sysfs_.read(speedFile);
    auto widthText = sysfs_.read(device.devicePath + "/current_link_width");
    std::optional<double> speed;
    std::optional<std::int64_t> width;
    if (speedText)
        speed = text::parseLeadingDouble(*speedText);
    if (widthText)
        width = text::parseInt(text::attributeText(*widthText));
    // All-ones config reads ("Unknown", width 63) mean the device no longer answers on the
    // bus, unless it is powered down on purpose.
    const bool poweredDown = [&] {
        auto state = sysfs_.read(device.devicePath + "/power_state");
        return state && text::attributeText(*state) == "D3cold";
    }();
    const bool noLink = !poweredDown && ((limit.speed && speedText && !speed) ||
                                         (limit.width && width && *width > *limit.width));
    if (noLink) {
        add(health,
            {true, "link-down",
             "PCIe link down: the device does not answer (" + sysfs_.path(speedFile) + " reads " +
                 std::string(text::attributeText(speedText.value_or("?"))) + ")"});
        return;
    }
    const bool gpu =
        device.kind == discovery::kKindGpu || device.kind == discovery::kKindAccelerator;
    const bool slower = speed && limit.speed && *speed > 0 && *speed < *limit.speed &&
                        (!gpu || policy_.gpuLinkSpeedUnhealthy);
    const bool narrower = width && limit.width && *width > 0 && *width < *limit.width;
    if (!slower && !narrower)
        return;
    std::ostringstream text;
    text << "PCIe link degraded: " << (speed ? gts(*speed) : "?") << " x" << width.value_or(0)
         << ", capable of " << (limit.speed ? gts(*limit.speed) : "?") << " x"
         << limit.width.value_or(0) << " (" << sysfs_.path(speedFile) << ")";
    add(health, {true, "link-degraded", text.str()});
}

namespace {

// A switchdev representor (phys_port_name pf0vf3, pf0sf1, pf1hpf, c1pf0vf2) stands for a VF or
// an SF, not for the uplink: its state says nothing about the PF's link.
bool isRepresentor(std::string_view portName) {
    size_t i = 0;
    auto digits = [&] {
        const size_t start = i;
        while (i < portName.size() && std::isdigit(static_cast<unsigned char>(portName[i])))
            ++i;
        return i > start;
    };
    if (i < portName.size() && portName[i] == 'c') {
        ++i;
        if (!digits())
            return false;
    }
    if (portName.substr(i, 2) != "pf")
        return false;
    i += 2;
    if (!digits())
        return false;
    const auto rest = portName.substr(i);
    return rest.rfind("vf", 0) == 0 || rest.rfind("sf", 0) == 0 || rest == "hpf";
}

constexpr unsigned long kIffUp = 0x1;

}  // namespace

const Checker::NetdevRead& Checker::readNetdev(const std::string& path) {
    if (auto cached = netdevsThisRound_.find(path); cached != netdevsThisRound_.end())
        return cached->second;
    // The common case costs one read: an interface whose operstate is "up" has its carrier.
    // A netdev CNI moved into a pod's namespace is no longer in the host's sysfs (no operstate):
    // not a fault, and the pod's view is not ours to judge. Representors and interfaces an
    // administrator keeps down (IFF_UP clear: e.g. VFs nobody configured in the host) are no
    // faults either.
    std::optional<NetdevState> result;
    const auto operstate = sysfs_.read(path + "/operstate");
    const std::string state = operstate ? std::string(text::attributeText(*operstate)) : "";
    if (operstate && state != "up") {
        const auto flags = sysfs_.read(path + "/flags");
        const auto flagBits = flags ? text::parseHex(text::attributeText(*flags)) : std::nullopt;
        const bool adminDown = flagBits && (*flagBits & kIffUp) == 0;
        const auto port = sysfs_.read(path + "/phys_port_name");
        if (!adminDown && !(port && isRepresentor(text::attributeText(*port)))) {
            const bool stateSaysDown = state == "down" || state == "lowerlayerdown";
            std::optional<std::string> carrier;
            if (!stateSaysDown) {
                if (auto value = sysfs_.read(path + "/carrier"))
                    carrier = *value;
            }
            NetdevState netdev;
            netdev.down = stateSaysDown || (carrier && text::attributeText(*carrier) == "0");
            netdev.text = "interface " + discovery::baseName(path) + " is down (operstate " +
                          state + ", " + sysfs_.path(path + "/operstate") + ")";
            result = netdev;
        }
    } else if (operstate) {
        result = NetdevState{};
    }
    return netdevsThisRound_.emplace(path, NetdevRead{operstate.ok(), result}).first->second;
}

void Checker::checkNetdevs(const WatchedDevice& device, DeviceHealth& health) {
    for (const auto& path : device.netdevPaths) {
        if (const auto& netdev = readNetdev(path).state; netdev && netdev->down)
            add(health, {true, "carrier-down", "network " + netdev->text});
    }
    for (const auto& path : device.pfNetdevPaths) {
        if (const auto& netdev = readNetdev(path).state; netdev && netdev->down)
            add(health,
                {true, "pf-carrier-down", "the PF's (" + device.pfAddress + ") " + netdev->text});
    }
}

// One range list for every CPU instead of a file per CPU (128 reads a round on a big node); the
// kernel keeps it and the cpuN/online files in step.
const std::optional<std::vector<int>>& Checker::onlineCpus() {
    if (!onlineCpusThisRound_) {
        std::optional<std::vector<int>> cpus;
        if (auto content = sysfs_.read("devices/system/cpu/online")) {
            if (auto parsed = text::parseRangeList(*content)) {
                std::sort(parsed->begin(), parsed->end());
                cpus = std::move(*parsed);
            }
        }
        onlineCpusThisRound_ = std::move(cpus);
    }
    return *onlineCpusThisRound_;
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
    if (const auto& online = onlineCpus()) {
        for (int cpu : device.cpus) {
            if (!std::binary_search(online->begin(), online->end(), cpu))
                offline.push_back(cpu);
        }
    } else {
        for (int cpu : device.cpus) {
            // No "online" file (cpu0 on x86) means it cannot go offline.
            auto state = sysfs_.read("devices/system/cpu/cpu" + std::to_string(cpu) + "/online");
            if (state && text::attributeText(*state) == "0")
                offline.push_back(cpu);
        }
    }
    if (!offline.empty()) {
        add(health, {true, "cpu-offline",
                     "CPU(s) " + text::formatRangeList(offline) + " of NUMA node " +
                         std::to_string(device.numaNode) + " went offline (" +
                         (onlineCpus() ? sysfs_.path("devices/system/cpu/online")
                                       : sysfs_.path("devices/system/cpu") + "/cpuN/online") +
                         ")"});
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
        std::map<std::string, const WatchedDevice*> previous;
        for (const auto& device : devices_)
            previous[device.deviceName] = &device;
        std::set<std::string> now;
        for (auto& device : devices) {
            now.insert(device.deviceName);
            // A rescan publishes a CPU device without the CPUs that went offline; it stays
            // unhealthy while they are offline, so the CPUs it ever had stay watched.
            auto old = previous.find(device.deviceName);
            if (device.kind == "cpu" && old != previous.end()) {
                std::set<int> cpus(device.cpus.begin(), device.cpus.end());
                cpus.insert(old->second->cpus.begin(), old->second->cpus.end());
                device.cpus.assign(cpus.begin(), cpus.end());
            }
        }
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
            toForget_.push_back(name);  // a card that comes back is a new card
        }
        std::erase_if(states_, [&now](const auto& entry) { return !now.count(entry.first); });
        std::erase_if(removed_, [&now](const auto& entry) { return now.count(entry.first) > 0; });
        devices_ = std::move(devices);
        ++listVersion_;
        interfaces_.clear();
        for (const auto& device : devices_) {
            for (const auto* paths : {&device.netdevPaths, &device.pfNetdevPaths}) {
                for (const auto& path : *paths)
                    interfaces_.insert(discovery::baseName(path));
            }
        }
        wakeRequested_ = true;
    }
    wake_.ring();
}

Status Monitor::watchLinks(LinkObserver observer) {
    auto listener = discovery::LinkEventListener::open();
    if (!listener)
        return listener.error();
    links_ = std::make_unique<discovery::LinkEventListener>(std::move(listener).value());
    linkObserver_ = std::move(observer);
    return Status::Ok();
}

void Monitor::start(ChangeCallback onChange) {
    onChange_ = std::move(onChange);
    thread_ = std::jthread([this](std::stop_token stop) { run(stop); });
}

void Monitor::stop() {
    if (thread_.joinable()) {
        thread_.request_stop();  // rings wake_ (run's stop callback)
        thread_.join();
    }
}

void Monitor::checkNow() {
    {
        std::lock_guard lock(mutex_);
        wakeRequested_ = true;
    }
    wake_.ring();
}

bool Monitor::watchesInterface(std::string_view ifName) const {
    std::lock_guard lock(mutex_);
    return interfaces_.find(ifName) != interfaces_.end();
}

const char* stateName(State state) {
    switch (state) {
        case State::Healthy:
            return "healthy";
        case State::Unhealthy:
            return "unhealthy";
        case State::Unknown:
            break;
    }
    return "unknown";
}

void Monitor::setEventCoverage(bool covered) {
    std::lock_guard lock(mutex_);
    eventCoverage_ = covered;
}

namespace {

// Whether every check of the device watches something the kernel announces (Scope).
bool announcedByEvents(const WatchedDevice& device) {
    return device.kind == "cpu" || !device.pfAddress.empty();
}

}  // namespace

bool Monitor::checkOnce(Scope scope) {
    std::lock_guard checking(checkMutex_);
    std::vector<WatchedDevice> devices;  // the devices this round checks
    std::vector<std::string> forget;
    std::uint64_t listVersion = 0;
    {
        std::lock_guard lock(mutex_);
        for (const auto& device : devices_) {
            // An Unannounced round leaves a device the kernel announces to its events once it
            // has a state (a device seen for the first time is checked whole).
            if (scope == Scope::Everything || !announcedByEvents(device) ||
                !states_.contains(device.deviceName))
                devices.push_back(device);
        }
        forget.swap(toForget_);
        listVersion = listVersion_;
    }
    for (const auto& name : forget)
        checker_.forget(name);
    checker_.beginRound();
    const auto now = Clock::now();
    std::map<std::string, DeviceHealth> next;
    for (const auto& device : devices)
        next[device.deviceName] = checker_.check(device, now);
    std::unique_lock lock(mutex_);
    Changes changes;
    if (scope == Scope::Everything) {
        // setDevices may have run meanwhile: only devices still watched count.
        std::set<std::string_view> watched;
        for (const auto& device : devices_)
            watched.insert(device.deviceName);
        std::erase_if(next, [&watched](const auto& entry) { return !watched.count(entry.first); });
        changes.any = next.size() != states_.size();
        for (const auto& [name, health] : next)
            compare(name, health, changes);
        states_ = std::move(next);
    } else if (listVersion == listVersion_) {  // else the round setDevices asked for follows
        const std::int64_t nowUnix = unixNow();
        for (auto& [name, state] : states_) {
            if (!next.contains(name))
                state.checkedUnix = nowUnix;  // unchanged, or an event would have said so
        }
        for (auto& [name, health] : next) {
            compare(name, health, changes);
            states_[name] = std::move(health);
        }
    }
    lock.unlock();
    if (changes.any)
        tellListener();  // the streams carry messages too
    return changes.state;
}

void Monitor::tellListener() {
    std::lock_guard lock(listenerMutex_);
    if (listener_)
        listener_();
}

void Monitor::setChangeListener(ChangeListener listener) {
    std::lock_guard lock(listenerMutex_);
    listener_ = std::move(listener);
}

void Monitor::compare(const std::string& name, const DeviceHealth& health, Changes& changes) const {
    auto it = states_.find(name);
    const bool firstSight = it == states_.end();
    const bool newState =
        firstSight || it->second.state != health.state || it->second.cause != health.cause;
    changes.state = changes.state || newState;
    changes.any = changes.any || newState || it->second.message != health.message;
    // One line per change of state (healthy devices seen for the first time are no news).
    if (newState && !(firstSight && health.state == State::Healthy)) {
        spdlog::info("device health changed device={} health={} cause={} message=\"{}\"", name,
                     stateName(health.state), health.cause.empty() ? "-" : health.cause,
                     health.message);
    }
}

void Monitor::run(std::stop_token stop) {
    nameThisThread("health");
    const std::stop_callback onStop(stop, [this] { wake_.ring(); });
    auto lastFullRound = Clock::now();
    bool requested = true;  // the first round checks everything
    while (!stop.stop_requested()) {
        bool covered = false;
        {
            // This round answers every request made before it starts (setDevices() before
            // start(), a burst of events); one made while it runs gets the next round.
            std::lock_guard lock(mutex_);
            wakeRequested_ = false;
            covered = eventCoverage_;
        }
        const bool full =
            requested || !covered || Clock::now() - lastFullRound >= options_.fullRoundInterval;
        if (full)
            lastFullRound = Clock::now();
        if (checkOnce(full ? Scope::Everything : Scope::Unannounced) && onChange_)
            onChange_();
        requested = waitForNextRound(stop);
    }
}

bool Monitor::waitForNextRound(const std::stop_token& stop) {
    const auto deadline = Clock::now() + options_.pollInterval;
    while (!stop.stop_requested()) {
        if (roundRequested())
            return true;
        const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (left <= std::chrono::milliseconds(0))
            return false;
        if (!links_) {
            wake_.wait(left);
        } else if (startsARound(links_->wait(wake_.limit(left), wake_.fd()))) {
            return true;
        }
    }
    return false;
}

// Drained before the flag is read: a ring after this makes the next wait return at once.
bool Monitor::roundRequested() {
    wake_.drain();
    std::lock_guard lock(mutex_);
    return wakeRequested_;
}

bool Monitor::startsARound(const discovery::LinkEvents& batch) {
    // Veth pairs of pods come and go all day: only the interfaces of watched devices count.
    const auto watched = static_cast<std::size_t>(
        std::count_if(batch.events.begin(), batch.events.end(),
                      [this](const auto& event) { return watchesInterface(event.ifName); }));
    if (watched == 0 && !batch.lost)
        return false;
    if (linkObserver_)
        linkObserver_(watched, batch.lost);
    return true;
}

std::map<std::string, DeviceHealth> Monitor::current() const {
    std::lock_guard lock(mutex_);
    auto all = states_;
    all.insert(removed_.begin(), removed_.end());
    return all;
}

std::vector<claims::DeviceHealthReport> Monitor::snapshot() {
    std::vector<claims::DeviceHealthReport> reports;
    const std::int64_t now = unixNow();
    const std::int64_t stale = std::max<std::int64_t>(options_.reportTimeout.count(), 1);
    for (const auto& [name, health] : current()) {
        claims::DeviceHealthReport report;
        report.poolName = options_.poolName;
        report.deviceName = name;
        report.state = health.state;
        report.message = health.message;
        // A check that stopped happening must not be resent as fresh news: the kubelet would
        // never time the device out.
        if (health.cause != "removed" && now - health.checkedUnix > stale) {
            report.state = State::Unknown;
            report.message = "not checked for " + std::to_string(now - health.checkedUnix) + "s";
        }
        report.lastUpdatedUnix = health.checkedUnix;
        report.timeoutSeconds = options_.reportTimeout.count();
        reports.push_back(std::move(report));
    }
    return reports;
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
