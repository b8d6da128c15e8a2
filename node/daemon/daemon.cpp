#include "numadra/daemon/daemon.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <mutex>
#include <string_view>
#include <thread>

#include "api_adapters.hpp"
#include "daemon_metrics.hpp"
#include "numadra/common/files.hpp"
#include "numadra/common/stop_fd.hpp"
#include "numadra/common/text.hpp"
#include "numadra/common/thread_name.hpp"
#include "numadra/daemon/claims.hpp"
#include "numadra/daemon/inventory.hpp"
#include "numadra/daemon/pinning.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/discovery/uevents.hpp"
#include "numadra/health/health.hpp"
#include "numadra/kube/client.hpp"
#include "numadra/kube/config.hpp"
#include "numadra/metrics/http_server.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/plugin/file_lock.hpp"
#include "numadra/plugin/server.hpp"
#include "numadra/prepare/preparer.hpp"
#include "numadra/slices/publisher.hpp"
#include "numadra/state/checkpoint.hpp"
#include "server_capabilities.hpp"
#include "trigger.hpp"
#include "watch_coverage.hpp"

#ifndef NUMADRA_VERSION
#define NUMADRA_VERSION "0.0.0"
#endif

namespace numadra::daemon {

namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPublishRetryMin = std::chrono::milliseconds(500);
constexpr auto kPublishRetryMax = std::chrono::seconds(30);
constexpr auto kWatchRetry = std::chrono::seconds(2);
// Bursts of device events (512 VFs appearing) are one rescan.
constexpr auto kRescanDebounce = std::chrono::milliseconds(200);
constexpr auto kRestoreLockWait = std::chrono::seconds(60);
// SIGTERM in rolling-update mode: how long to wait for the pod replacing this one to serve.
constexpr auto kHandOverWait = std::chrono::seconds(8);
constexpr auto kHandOverPoll = std::chrono::milliseconds(100);
// Two passes of the kubelet's plugin manager (pkg/kubelet/pluginmanager: one a second).
constexpr auto kKubeletRegistersWithin = std::chrono::seconds(2);

std::string fieldSelector(const DaemonConfig& config) {
    return "spec.nodeName=" + config.slices.nodeName + ",spec.driver=" + config.slices.driverName;
}

// The daemon: its components, built in dependency order by assemble(), and the threads that
// keep the slices true while the kubelet is served.
class Daemon {
  public:
    Daemon(const DaemonConfig& config, Clock::time_point started, const DaemonHooks& hooks)
        : config_(config), hooks_(hooks), started_(started) {
        declareMetrics(metrics_);
    }
    // The health thread calls back into the Daemon: it stops before anything it uses goes.
    ~Daemon() {
        if (health_)
            health_->stop();
    }
    Daemon(const Daemon&) = delete;
    Daemon& operator=(const Daemon&) = delete;

    // Assembles, serves until `stop` (or a fatal error), shuts down; returns the exit code.
    int run(std::stop_token stop);

  private:
    bool assemble();
    void serve(std::stop_token stop);
    Result<bool> scan();
    bool rescan();
    Status connectApi();
    Status openCheckpoint();
    plugin::PluginServerOptions pluginServerOptions() const;
    Result<std::optional<plugin::FileLock>> takeRollingUpdateTurn() const;
    void handOverToTheNextInstance();
    slices::SliceOptions sliceOptions() const;
    std::map<std::string, api::DeviceTaint> currentTaints() const;
    void healthChanged();
    void rebuildSlices(std::string_view why);
    void decideNodeAllocatable(const api::Json* node);
    void publishWithoutNodeAllocatable(const std::string& why);
    void publishLoop(std::stop_token stop);
    void waitForNextReconcile(std::stop_token stop, WatchCoverage::Mark watched);
    void watchLoop(std::stop_token stop);
    bool listForWatch(std::stop_token stop, std::string& resourceVersion);
    void openDeviceEvents();
    void rescanLoop(std::stop_token stop);
    bool rescanOnDeviceEvents(const StopFd& waker, std::chrono::milliseconds timeout);
    bool rescanIfStale();
    void watchLinks();
    metrics::HttpResponse serveHttp(const std::string& path);
    void shutdown();

    const DaemonConfig& config_;
    const DaemonHooks& hooks_;
    Clock::time_point started_;

    // What the loops share: what the API server takes, one slice build at a time, the publish
    // loop's wake-up, what the slice watch vouches for, and how far the start got.
    NegotiatedCapabilities capabilities_;
    std::mutex buildMutex_;
    Trigger publishTrigger_;
    WatchCoverage sliceWatch_;
    std::atomic<bool> published_{false};
    std::atomic<bool> startupReported_{false};
    std::atomic<int> fatalExit_{-1};
    // The API server stored slices without fields they need (a budget's policy, ...): they
    // misstate the devices, so they go on exit even after a fatal error.
    std::atomic<bool> storedSlicesWrong_{false};
    std::stop_source fatal_;

    // The components, in the order assemble() builds them: each uses only those above it, and
    // they go in reverse order (the threads calling back into the Daemon first, see ~Daemon).
    metrics::Registry metrics_;
    metrics::HttpServer http_;                 // 1. /metrics, /healthz, /readyz
    std::unique_ptr<health::Monitor> health_;  // 2. with --health
    discovery::PciNameDatabase names_;         // 3. the first scan: the machine and its slices
    Inventory inventory_;
    // Kernel device events (uevents), read by the rescan loop alone once it runs.
    std::optional<discovery::UeventListener> uevents_;
    std::unique_ptr<kube::KubeClient> client_;  // 4. the API server (none with --dry-run)
    std::unique_ptr<slices::SliceApi> sliceApi_;
    StdoutSliceApi* dryRunApi_ = nullptr;
    std::unique_ptr<slices::Publisher> publisher_;
    std::unique_ptr<ClaimSource> claimSource_;
    std::unique_ptr<prepare::Preparer> devicePreparer_;  // 5. files and checkpoint, restored
    std::unique_ptr<ApiClaimStatusSink> statusSink_;     // 6. claims' status.devices
    std::unique_ptr<ClaimStatusPublisher> claimStatus_;
    std::unique_ptr<ContainerPinning> pinning_;     // 7. NRI
    std::unique_ptr<ClaimPreparer> claimPreparer_;  // 8. the kubelet's calls: fetch, admit, prepare
    std::unique_ptr<plugin::PluginServer> server_;  // 9. serving the kubelet
};

// Scans sysfs and rebuilds the slices; true when what is published changed.
Result<bool> Daemon::scan() {
    const auto begin = Clock::now();
    auto machine = discovery::discover({config_.sysfsRoot, &names_, nullptr});
    if (!machine)
        return machine.error();
    for (const auto& d : machine->diagnostics) {
        spdlog::warn("sysfs file unreadable path={} problem=\"{}\"", d.path, d.message);
    }
    std::lock_guard building(buildMutex_);
    auto built = slices::buildResourceSlices(*machine, sliceOptions(), currentTaints());
    if (!built)
        return built.error();
    metrics_.histogramObserve("numadra_discovery_duration_seconds", {},
                              std::chrono::duration<double>(Clock::now() - begin).count());
    if (health_) {
        std::vector<api::Device> published;
        for (const auto& slice : *built)
            published.insert(published.end(), slice.devices.begin(), slice.devices.end());
        health_->setDevices(health::watchList(*machine, published));
    }
    const bool changed = inventory_.update(std::move(machine).value(), std::move(built).value());
    if (changed)
        recordDevices(metrics_, *inventory_.current(), health_.get());
    return changed;
}

slices::SliceOptions Daemon::sliceOptions() const {
    slices::SliceOptions options = config_.slices;
    const auto taken = capabilities_.current();
    if (!taken.listAttributes)
        options.numaForm = topology::NumaForm::Scalar;
    if (!taken.nodeAllocatable)
        options.nodeAllocatableResources = false;
    return options;
}

std::map<std::string, api::DeviceTaint> Daemon::currentTaints() const {
    if (!health_ || !capabilities_.current().deviceTaints)
        return {};
    return health::taintsFor(health_->current(), config_.slices.driverName,
                             config_.healthTaintEffect);
}

// A device's health changed: the slices get (or lose) its taint; nothing is rescanned.
void Daemon::healthChanged() {
    rebuildSlices("device health");
}

// Builds the slices again from the last scan (health, or what the API server accepts, changed).
void Daemon::rebuildSlices(std::string_view why) {
    bool changed = false;
    {
        std::lock_guard building(buildMutex_);
        const auto snapshot = inventory_.current();
        auto built =
            slices::buildResourceSlices(snapshot->machine, sliceOptions(), currentTaints());
        if (!built) {
            spdlog::error("rebuilding slices failed reason=\"{}\" error=\"{}\"", why,
                          built.error().message);
            return;
        }
        changed = inventory_.update(snapshot->machine, std::move(built).value());
    }
    recordDevices(metrics_, *inventory_.current(), health_.get());
    if (changed)
        publishTrigger_.fire();
}

// True when the published content changed.
bool Daemon::rescan() {
    auto changed = scan();
    if (!changed) {
        spdlog::error("rescan failed error=\"{}\"", changed.error().message);
        return false;
    }
    return *changed;
}

Status Daemon::connectApi() {
    if (config_.dryRun) {
        auto api = std::make_unique<StdoutSliceApi>();
        dryRunApi_ = api.get();
        sliceApi_ = std::move(api);
        publisher_ = std::make_unique<slices::Publisher>(*sliceApi_, config_.slices.driverName,
                                                         config_.slices.nodeName, std::nullopt);
        claimSource_ = makeFileClaimSource(config_.claimsDir.empty() ? "." : config_.claimsDir);
        return Status::Ok();
    }
    std::map<std::string, std::string> environment;
    for (const char* name : {"KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"}) {
        if (const char* value = std::getenv(name))
            environment[name] = value;
    }
    auto cluster = config_.kubeconfig.empty() ? kube::loadInClusterConfig(environment)
                                              : kube::loadKubeconfig(config_.kubeconfig);
    if (!cluster)
        return cluster.error();
    client_ = std::make_unique<kube::KubeClient>(std::move(cluster).value());
    sliceApi_ = std::make_unique<KubeSliceApi>(*client_, fieldSelector(config_));
    // The Node owns the slices, so they go when the node goes. Without its UID (RBAC, a node
    // object not there yet) the slices are published unowned and fixed on a later pass.
    std::optional<slices::NodeOwner> owner;
    auto node = client_->getNode(config_.slices.nodeName);
    if (node) {
        owner = slices::NodeOwner{config_.slices.nodeName,
                                  node->value("/metadata/uid"_json_pointer, std::string())};
    } else {
        spdlog::warn("node lookup failed node={} error=\"{}\"; publishing without owner reference",
                     config_.slices.nodeName, node.error().message);
    }
    publisher_ = std::make_unique<slices::Publisher>(*sliceApi_, config_.slices.driverName,
                                                     config_.slices.nodeName, owner);
    claimSource_ = std::make_unique<ApiClaimSource>(*client_);
    decideNodeAllocatable(node ? &node.value() : nullptr);
    return Status::Ok();
}

// --node-allocatable-resources=auto decides before the first write, so that the node's slices are
// not refused (and written again) at start-up. A kubelet that declares its features
// (NodeDeclaredFeatures) and not DRANodeAllocatableResources would neither honour the mappings
// nor let the API server store them: left out. A node that declares nothing (an older kubelet, or
// an API server without declared features), or no Node to read: the API server is asked with a
// dry-run create of a slice carrying mappings, which meets the same admission and dropped fields
// as the real write; any other answer leaves the decision to the first publish.
void Daemon::decideNodeAllocatable(const api::Json* node) {
    if (!config_.slices.nodeAllocatableResources || !config_.nodeAllocatableAuto)
        return;
    const auto declared =
        node ? node->value("/status/declaredFeatures"_json_pointer, api::Json()) : api::Json();
    if (declared.is_array()) {
        if (std::find(declared.begin(), declared.end(), "DRANodeAllocatableResources") !=
            declared.end())
            return;
        capabilities_.withdraw(&ServerCapabilities::nodeAllocatable);
        publishWithoutNodeAllocatable(
            "the node's kubelet does not declare DRANodeAllocatableResources");
        return;
    }
    for (const auto& slice : inventory_.current()->slices) {
        const bool mapped = std::any_of(
            slice.devices.begin(), slice.devices.end(),
            [](const api::Device& device) { return !device.nodeAllocatableResources.empty(); });
        if (!mapped)
            continue;
        const Status tried = publisher_->tryPublishing(slice);
        if (!tried && slices::refusalOf(tried.error()) == slices::Refusal::NodeAllocatableRefused &&
            capabilities_.withdraw(&ServerCapabilities::nodeAllocatable))
            publishWithoutNodeAllocatable(tried.error().message);
        return;
    }
}

// --node-allocatable-resources=auto, and the cluster does not take the mappings: without them
// until the next start.
void Daemon::publishWithoutNodeAllocatable(const std::string& why) {
    spdlog::warn(
        "publishing without nodeAllocatableResources node={} reason=\"{}\" action=\"CPUs and "
        "memory of CPU claims are not taken from the node's allocatable; a restart tries again\"",
        config_.slices.nodeName, why);
    metrics_.gaugeSet(kNodeAllocatableDropped, {}, 1);
    rebuildSlices("nodeAllocatableResources left out");
}

plugin::PluginServerOptions Daemon::pluginServerOptions() const {
    plugin::PluginServerOptions options;
    options.driverName = config_.slices.driverName;
    options.registryDir = config_.kubeletRegistryDir;
    options.pluginDir = config_.pluginDir();
    options.podUid = config_.podUid;
    if (config_.socketGroup)
        options.socketGroup = static_cast<gid_t>(*config_.socketGroup);
    options.healthResendInterval = config_.healthResendInterval;
    return options;
}

// Rolling-update mode (--pod-uid): the serialize lock the DRA service takes around each claim,
// shared with the driver's other instance on this node. Nothing otherwise.
Result<std::optional<plugin::FileLock>> Daemon::takeRollingUpdateTurn() const {
    if (config_.podUid.empty())
        return std::optional<plugin::FileLock>();
    auto paths = plugin::resolveSocketPaths(pluginServerOptions());
    if (!paths)
        return paths.error();
    if (auto made = files::makeDirectories(config_.pluginDir(), 0750); !made)
        return made.error();
    // Longer than any one prepare holds it (the kubelet's 45 s deadline bounds those).
    auto lock = plugin::FileLock::acquire(paths->serializeLock,
                                          std::chrono::steady_clock::now() + kRestoreLockWait);
    if (!lock)
        return lock.error();
    return std::optional<plugin::FileLock>(std::move(lock).value());
}

// Loads the checkpoint and makes every claim prepared before this start whole again (files
// re-created after a reboot or a crash) before the kubelet can call.
Status Daemon::openCheckpoint() {
    prepare::Options options;
    options.driverName = config_.slices.driverName;
    options.poolName = config_.slices.nodeName;
    options.cdiDir = config_.cdiDir;
    options.metadataDir = config_.metadataDir;
    options.stateDir = config_.stateDir;
    options.metadataVersions = config_.metadataVersions;
    options.cdiNetDevices = config_.cdiNetDevices;
    options.hostRoots = {config_.devRoot, config_.procRoot};
    if (auto bootId = state::readBootId(config_.procRoot)) {
        options.bootId = *bootId;
    } else {
        // Without a boot id every start counts as a new boot: files are re-verified anyway.
        spdlog::warn("kernel boot id unreadable error=\"{}\"", bootId.error().message);
    }
    options.afterFileWrite = hooks_.afterFileWrite;
    auto devices = prepare::Preparer::open(std::move(options), metrics_);
    if (!devices)
        return devices.error();
    devicePreparer_ = std::move(devices).value();
    // During a rolling update the old pod may be preparing right now: its started record must
    // not be taken for a crash and rolled back, so restore takes the same node-wide turn.
    auto turn = takeRollingUpdateTurn();
    if (!turn)
        return turn.error();
    const auto snapshot = inventory_.current();
    auto report = devicePreparer_->restore({snapshot->machine, snapshot->devices});
    if (!report)
        return report.error();
    spdlog::info(
        "checkpoint loaded prepared_claims={} rolled_back={} leftovers_removed={} quarantined={} "
        "files_recreated={} from_earlier_boot={}",
        report->restored, report->rolledBack, report->leftoversRemoved, report->quarantined,
        report->filesRecreated, report->fromEarlierBoot);
    return {};
}

void Daemon::publishLoop(std::stop_token stop) {
    auto retry = kPublishRetryMin;
    while (!stop.stop_requested()) {
        // Before the reconcile lists the slices: what the watch delivers after this mark is what
        // changed after that list.
        const WatchCoverage::Mark watched = sliceWatch_.mark();
        auto stats = publisher_->reconcile(inventory_.current()->slices);
        if (!stats) {
            metrics_.counterAdd("numadra_publish_errors_total");
            const slices::Refusal refusal = slices::refusalOf(stats.error());
            if (refusal == slices::Refusal::DroppedTaints &&
                capabilities_.withdraw(&ServerCapabilities::deviceTaints)) {
                spdlog::error(
                    "publishing without device taints error=\"{}\" action=\"unhealthy "
                    "devices are reported on the kubelet's health streams only\"",
                    stats.error().message);
                healthChanged();  // rebuilds the slices without taints
                continue;
            }
            if (refusal == slices::Refusal::ListAttributesRefused && config_.numaListAuto &&
                capabilities_.withdraw(&ServerCapabilities::listAttributes)) {
                spdlog::warn(
                    "publishing numaNode and pcieRoot as scalars error=\"{}\" action=\"the "
                    "cluster runs without DRAListTypeAttributes (--numa-list=auto); a restart "
                    "tries the list form again\"",
                    stats.error().message);
                metrics_.gaugeSet(kNumaListRefused, {}, 1);
                rebuildSlices("list attributes refused");
                continue;
            }
            if (refusal == slices::Refusal::NodeAllocatableRefused && config_.nodeAllocatableAuto &&
                capabilities_.withdraw(&ServerCapabilities::nodeAllocatable)) {
                publishWithoutNodeAllocatable(stats.error().message);
                continue;
            }
            if (refusal == slices::Refusal::DroppedFields ||
                refusal == slices::Refusal::NodeAllocatableRefused ||
                refusal == slices::Refusal::ListAttributesRefused) {
                spdlog::critical("publishing refused error=\"{}\"", stats.error().message);
                // Stored without what the flags promise: gone, rather than used without it.
                storedSlicesWrong_ = refusal != slices::Refusal::ListAttributesRefused;
                fatalExit_ = kExitFatal;
                fatal_.request_stop();
                return;
            }
            spdlog::error("publishing failed retry_in_ms={} error=\"{}\"", retry.count(),
                          stats.error().message);
            publishTrigger_.wait(stop, retry);
            retry = std::min<std::chrono::milliseconds>(retry * 2, kPublishRetryMax);
            continue;
        }
        retry = kPublishRetryMin;
        if (dryRunApi_)
            dryRunApi_->flush();
        if (stats->changed()) {
            metrics_.counterAdd("numadra_publish_total");
            spdlog::info("slices published created={} updated={} deleted={} generation={}",
                         stats->created, stats->updated, stats->deleted, stats->generation);
        }
        if (!published_.exchange(true) && server_ && !startupReported_.exchange(true)) {
            const double seconds = std::chrono::duration<double>(Clock::now() - started_).count();
            metrics_.gaugeSet("numadra_startup_seconds", {}, seconds);
            spdlog::info("ready startup_ms={:.1f}", seconds * 1000);
        }
        waitForNextReconcile(stop, watched);
    }
}

// Until a change of the devices, a repair request from the watch (any event on this node's
// slices, a relist), or a periodic resync that the watch cannot vouch for: while the chain of
// watches marked before the last reconcile is unbroken and delivered nothing, the slices are as
// that reconcile left them, and listing them again would find nothing to do.
void Daemon::waitForNextReconcile(std::stop_token stop, WatchCoverage::Mark watched) {
    while (!publishTrigger_.wait(stop, config_.resyncInterval)) {
        if (stop.stop_requested() || !sliceWatch_.unbrokenSince(watched))
            return;
    }
}

void Daemon::watchLoop(std::stop_token stop) {
    // Any change to this node's slices made by someone else (the kubelet wiping them, an admin)
    // triggers a reconcile; our own writes trigger one too, which then finds nothing to do.
    std::string resourceVersion;
    bool chainBroken = true;
    while (!stop.stop_requested()) {
        const bool relisting = resourceVersion.empty();
        if (relisting && !listForWatch(stop, resourceVersion))
            continue;
        if (chainBroken) {
            // A new chain (a watch that failed and resumes from the last resourceVersion seen
            // too): it vouches for nothing until the next reconcile has listed the slices.
            sliceWatch_.begin();
            chainBroken = false;
        }
        if (relisting)
            publishTrigger_.fire();  // what changed before this list may have gone unseen
        auto status = client_->watchResourceSlices(
            fieldSelector(config_), resourceVersion,
            [&](const kube::KubeClient::WatchEvent& event) {
                if (auto rv =
                        event.object.value("/metadata/resourceVersion"_json_pointer, std::string());
                    !rv.empty()) {
                    resourceVersion = rv;
                }
                if (event.type == "DELETED" || event.type == "MODIFIED" || event.type == "ADDED")
                    publishTrigger_.fire();
            },
            stop);
        if (status)
            continue;  // the server ended the stream: resumed from where it ended, chain unbroken
        sliceWatch_.broken();
        chainBroken = true;
        if (status.error().is(ErrorKind::Expired)) {
            resourceVersion.clear();  // too old: list again
        } else {
            spdlog::warn("slice watch ended error=\"{}\"", status.error().message);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    }
}

// The resourceVersion a new chain of watches starts from; false (after a pause) when the list
// failed.
bool Daemon::listForWatch(std::stop_token stop, std::string& resourceVersion) {
    auto listed = client_->listResourceSlices(fieldSelector(config_));
    if (!listed) {
        spdlog::warn("slice list for watch failed error=\"{}\"", listed.error().message);
        Trigger sleep;
        sleep.wait(stop, kWatchRetry);
        return false;
    }
    resourceVersion = listed->resourceVersion;
    return true;
}

void Daemon::openDeviceEvents() {
    auto listener = hooks_.withoutKernelDeviceEvents
                        ? Result<discovery::UeventListener>(Error{"turned off by a test"})
                        : discovery::UeventListener::open();
    if (!listener) {
        spdlog::info("kernel device events unavailable, polling only interval_ms={} reason=\"{}\"",
                     config_.resyncInterval.count(), listener.error().message);
        return;
    }
    uevents_ = std::move(listener).value();
}

void Daemon::rescanLoop(std::stop_token stop) {
    StopFd waker(stop);
    auto nextScan = Clock::now() + config_.resyncInterval;
    while (!stop.stop_requested()) {
        const auto timeout =
            std::max(std::chrono::duration_cast<std::chrono::milliseconds>(nextScan - Clock::now()),
                     std::chrono::milliseconds(0));
        bool changed = false;
        if (uevents_) {
            changed = rescanOnDeviceEvents(waker, timeout);
        } else {
            Trigger idle;
            idle.wait(stop, timeout);
        }
        if (Clock::now() >= nextScan) {
            changed = rescanIfStale() || changed;
            nextScan = Clock::now() + config_.resyncInterval;
        }
        if (changed) {
            spdlog::info("devices changed; republishing");
            publishTrigger_.fire();
        }
    }
}

// Waits up to `timeout` for kernel device events; when some came (or the kernel dropped some),
// rescans once the burst is over. True when the published content changed.
bool Daemon::rescanOnDeviceEvents(const StopFd& waker, std::chrono::milliseconds timeout) {
    static const std::vector<std::string> kSubsystems{"pci", "net", "infiniband",
                                                      "drm", "cpu", "node"};
    auto events = uevents_->wait(waker.limit(timeout), kSubsystems, waker.fd());
    const bool lost = uevents_->lostEvents();
    if (events.empty() && !lost)
        return false;
    metrics_.counterAdd("numadra_kernel_events_total", {"uevent"},
                        static_cast<double>(events.size()));
    if (health_)
        health_->checkNow();  // a removal is unhealthy at once, not at the next poll
    if (lost) {
        // The skipped periodic scans rely on the events: the tree is scanned instead.
        spdlog::warn("kernel device events lost action=\"rescanning\"");
    } else {
        spdlog::info("device event action={} devpath={} subsystem={}", events.front().action,
                     events.front().devpath, events.front().subsystem);
    }
    std::this_thread::sleep_for(kRescanDebounce);
    uevents_->wait(std::chrono::milliseconds(0), kSubsystems);  // drain the burst
    return rescan();
}

// The periodic check. With uevents only what changes without one (Machine::unannounced) can have
// made the last scan stale: a few files are read again instead of the whole tree.
bool Daemon::rescanIfStale() {
    if (uevents_ && !discovery::changedWithoutUevent(inventory_.current()->machine))
        return false;
    return rescan();
}

// A cable pull or a switch port going down raises no uevent, only an rtnetlink message: with
// it the health round runs at once instead of at the next poll (up to --health-interval later).
// The health thread waits for the messages itself.
void Daemon::watchLinks() {
    auto watching = health_->watchLinks([this](std::size_t watched, bool lost) {
        if (watched > 0)
            metrics_.counterAdd("numadra_kernel_events_total", {"link"},
                                static_cast<double>(watched));
        if (lost)
            metrics_.counterAdd("numadra_kernel_events_total", {"link_lost"}, 1);
    });
    if (!watching) {
        spdlog::info(
            "network link events unavailable, carrier changes are seen by the health "
            "poll interval_ms={} reason=\"{}\"",
            config_.healthInterval.count(), watching.error().message);
    }
}

metrics::HttpResponse Daemon::serveHttp(const std::string& path) {
    if (path == "/metrics")
        return {200, "text/plain; version=0.0.4; charset=utf-8", metrics_.render()};
    if (path == "/healthz")
        return {200, "text/plain; charset=utf-8", "ok\n"};
    if (path == "/readyz") {
        const bool serving = server_ != nullptr;
        const bool ready = serving && published_;
        return {ready ? 200 : 503, "text/plain; charset=utf-8",
                std::string(serving ? "serving" : "not serving") + ", " +
                    (published_ ? "published" : "not published") + "\n"};
    }
    return {404, "text/plain; charset=utf-8", "not found\n"};
}

int Daemon::run(std::stop_token stop) {
    spdlog::info("starting version={} driver={} node={} sysfs_root={} dry_run={}", NUMADRA_VERSION,
                 config_.slices.driverName, config_.slices.nodeName, config_.sysfsRoot,
                 config_.dryRun);
    if (!assemble())
        return kExitBadConfig;
    serve(stop);
    shutdown();
    return fatalExit_ >= 0 ? fatalExit_.load() : kExitOk;
}

// Builds the components in the order of their members, each step logging why it failed; the
// last one starts serving the kubelet. False: the flags, the tree or the sockets are unusable.
bool Daemon::assemble() {
    if (!config_.metricsAddr.empty()) {
        // In rolling-update mode the pod that replaces this one may start beside it on a
        // host-network node, with the same port in its arguments.
        const auto port = config_.podUid.empty() ? metrics::HttpServer::Port::Exclusive
                                                 : metrics::HttpServer::Port::SharedWithSameUser;
        if (auto status = http_.start(
                config_.metricsAddr, [this](const std::string& p) { return serveHttp(p); }, port);
            !status) {
            spdlog::error("metrics endpoint failed error=\"{}\"", status.error().message);
            return false;
        }
    }
    if (config_.health) {
        health::MonitorOptions options;
        options.poolName = config_.slices.nodeName;
        options.pollInterval = config_.healthInterval;
        options.reportTimeout = config_.healthTimeout;
        options.policy.aerRecovery = config_.healthAerRecovery;
        options.policy.correctableBurstPerMinute = config_.healthCorrectableBurst;
        options.policy.gpuLinkSpeedUnhealthy = config_.healthGpuLinkSpeedUnhealthy;
        health_ = std::make_unique<health::Monitor>(discovery::Sysfs(config_.sysfsRoot), options);
    }
    if (auto scanned = scan(); !scanned) {
        spdlog::error("discovery failed error=\"{}\"", scanned.error().message);
        return false;
    }
    openDeviceEvents();
    if (health_) {
        // The first round before anything is published: unhealthy devices start tainted.
        health_->checkOnce();
        healthChanged();
        watchLinks();
        health_->start([this] { healthChanged(); });
        // Removals, CPUs going offline and carrier changes arrive as events that start a round
        // at once: the polls need only look at what has none (AER counters, links).
        health_->setEventCoverage(uevents_.has_value() && health_->watchesLinks());
    }
    if (auto status = connectApi(); !status) {
        spdlog::error("API server configuration failed error=\"{}\"", status.error().message);
        return false;
    }
    if (auto status = openCheckpoint(); !status) {
        spdlog::error("prepared-claims checkpoint unusable error=\"{}\"", status.error().message);
        return false;
    }
    if (client_) {
        statusSink_ = std::make_unique<ApiClaimStatusSink>(*client_, config_.slices.driverName);
        claimStatus_ = std::make_unique<ClaimStatusPublisher>(*statusSink_,
                                                              config_.slices.driverName, metrics_);
    }
    auto pinning = ContainerPinning::start(config_, inventory_, metrics_);
    if (!pinning) {
        spdlog::error("cpu pinning failed error=\"{}\"", pinning.error().message);
        return false;
    }
    pinning_ = std::move(pinning).value();
    claimPreparer_ = std::make_unique<ClaimPreparer>(
        *claimSource_, inventory_, *devicePreparer_, config_.slices.driverName,
        config_.slices.nodeName, metrics_, claimStatus_.get(), pinning_.get());
    auto server = std::make_unique<plugin::PluginServer>(pluginServerOptions(), *claimPreparer_,
                                                         health_.get());
    if (auto status = server->start(); !status) {
        spdlog::error("kubelet plugin sockets failed error=\"{}\"", status.error().message);
        return false;
    }
    server_ = std::move(server);
    spdlog::info("serving kubelet registration={} dra={}", server_->registrationSocketPath(),
                 server_->draSocketPath());
    return true;
}

// Rescans and watches on threads of their own and publishes on the calling thread (rather than
// on a third one while this one waits), until `stop` or a fatal error.
void Daemon::serve(std::stop_token stop) {
    std::stop_source workers;
    std::stop_callback onStop(stop, [&] { workers.request_stop(); });
    std::stop_callback onFatal(fatal_.get_token(), [&] { workers.request_stop(); });
    std::jthread rescanning([this, token = workers.get_token()] {
        nameThisThread("rescan");
        rescanLoop(token);
    });
    std::jthread watching;
    if (client_) {
        watching = std::jthread([this, token = workers.get_token()] {
            nameThisThread("slice-watch");
            watchLoop(token);
        });
    }
    publishLoop(workers.get_token());  // returns once `workers` stops: on `stop` or a fatal error
}  // the threads are joined here

// Rolling update: the DaemonSet stops this pod once the new one is Ready, but the new pod's
// readiness probe may have been answered by this one (both listen on the node's metrics port),
// and the kubelet registers a new plugin socket only on its plugin manager's next pass (once a
// second), after it has taken this one's removal: leaving before the new daemon serves and has
// been registered would leave the kubelet without a driver for a moment. Wait for both
// (bounded: an uninstall or a drain has no successor).
void Daemon::handOverToTheNextInstance() {
    if (config_.podUid.empty())
        return;
    const auto deadline = Clock::now() + kHandOverWait;
    while (Clock::now() < deadline) {
        const auto since = server_->anotherInstanceServingSince();
        if (since &&
            std::filesystem::file_time_type::clock::now() - *since >= kKubeletRegistersWithin) {
            spdlog::info("another instance of the driver serves on this node; handing over");
            return;
        }
        std::this_thread::sleep_for(kHandOverPoll);
    }
    spdlog::info("no other instance of the driver registered on this node waited_s={}",
                 std::chrono::duration_cast<std::chrono::seconds>(kHandOverWait).count());
}

void Daemon::shutdown() {
    spdlog::info("shutting down keep_slices={}", config_.keepSlicesOnExit);
    if (pinning_)
        pinning_->stop();  // first: the next instance takes the runtime's NRI connection
    if (server_) {
        handOverToTheNextInstance();
        server_->stop();  // the registration socket goes first: the kubelet deregisters
    }
    if (health_)
        health_->stop();  // after the streams: they read from it until the end
    const bool keep = config_.keepSlicesOnExit || fatalExit_ >= 0;
    if (publisher_ && (!keep || storedSlicesWrong_)) {
        if (auto removed = publisher_->removeAll()) {
            spdlog::info("slices deleted count={} stored_without_fields={}", *removed,
                         storedSlicesWrong_.load());
        } else {
            spdlog::error("deleting slices failed error=\"{}\"", removed.error().message);
        }
    }
    http_.stop();
}

}  // namespace

int runDaemon(const DaemonConfig& config, std::stop_token stop, Clock::time_point started,
              const DaemonHooks& hooks) {
    Daemon daemon(config, started, hooks);
    return daemon.run(stop);
}

}  // namespace numadra::daemon
