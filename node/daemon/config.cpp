#include "numadra/daemon/config.hpp"

#include <algorithm>
#include <functional>
#include <sstream>

#include "numadra/common/text.hpp"
#include "numadra/metadata/device_metadata.hpp"

namespace numadra::daemon {

namespace {

enum class FlagKind { String, Bool, Duration, Unsigned };

struct Flag {
    std::string name;  // without leading dashes
    FlagKind kind;
    std::string help;
    std::function<Status(DaemonConfig&, const std::string&)> apply;
};

std::string environmentName(const std::string& flag) {
    std::string name = flag;
    std::transform(name.begin(), name.end(), name.begin(), [](char c) {
        return c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    });
    return name;
}

Status parseBool(const std::string& text, bool& target) {
    if (text == "true" || text == "1" || text == "yes") {
        target = true;
    } else if (text == "false" || text == "0" || text == "no") {
        target = false;
    } else {
        return Error{"'" + text + "' is not true or false"};
    }
    return Status::Ok();
}

Flag stringFlag(const std::string& name, std::string help, std::string DaemonConfig::*member) {
    return {name, FlagKind::String, std::move(help),
            [member](DaemonConfig& c, const std::string& v) {
                c.*member = v;
                return Status::Ok();
            }};
}

// A duration flag ("30s", "5m", "250ms") of at least `minimum`.
Flag durationFlag(const std::string& name, std::string help, std::chrono::milliseconds minimum,
                  std::string minimumText,
                  std::function<void(DaemonConfig&, std::chrono::milliseconds)> set) {
    return {name, FlagKind::Duration, std::move(help),
            [minimum, minimumText = std::move(minimumText), set = std::move(set)](
                DaemonConfig& c, const std::string& v) -> Status {
                auto d = parseDuration(v);
                if (!d)
                    return d.error();
                if (*d < minimum)
                    return Error{"must be at least " + minimumText};
                set(c, *d);
                return Status::Ok();
            }};
}

Flag boolFlag(const std::string& name, std::string help,
              const std::function<bool&(DaemonConfig&)>& member) {
    return {name, FlagKind::Bool, std::move(help),
            [member](DaemonConfig& c, const std::string& v) { return parseBool(v, member(c)); }};
}

// true, false or auto (a bare flag is true): set(config, on, automatic), where auto is on until
// the cluster turns out not to take it.
Flag autoBoolFlag(const std::string& name, std::string help,
                  std::function<void(DaemonConfig&, bool on, bool automatic)> set) {
    return {name, FlagKind::Bool, std::move(help),
            [set = std::move(set)](DaemonConfig& c, const std::string& v) -> Status {
                bool on = v == "auto";
                if (!on) {
                    if (auto status = parseBool(v, on); !status)
                        return Error{"'" + v + "' is not true, false or auto"};
                }
                set(c, on, v == "auto");
                return Status::Ok();
            }};
}

const std::vector<Flag>& flags() {
    static const std::vector<Flag> all = {
        {"driver-name", FlagKind::String, "DRA driver name (default numa.dra.dev)",
         [](DaemonConfig& c, const std::string& v) {
             c.slices.driverName = v;
             return Status::Ok();
         }},
        {"node-name", FlagKind::String,
         "this node's name (default: the host name; set NODE_NAME from the downward API)",
         [](DaemonConfig& c, const std::string& v) {
             c.slices.nodeName = v;
             return Status::Ok();
         }},
        stringFlag("sysfs-root", "the folder that plays /sys", &DaemonConfig::sysfsRoot),
        stringFlag("kubelet-registry-dir", "kubelet plugin registry folder",
                   &DaemonConfig::kubeletRegistryDir),
        stringFlag("kubelet-plugins-dir",
                   "kubelet plugins folder (the DRA socket goes to <dir>/<driver>)",
                   &DaemonConfig::kubeletPluginsDir),
        stringFlag("kubeconfig", "kubeconfig file (default: in-cluster configuration)",
                   &DaemonConfig::kubeconfig),
        stringFlag("cdi-dir", "where CDI specs are written", &DaemonConfig::cdiDir),
        stringFlag("metadata-dir", "where device metadata files are written",
                   &DaemonConfig::metadataDir),
        stringFlag("state-dir", "where the checkpoint lives", &DaemonConfig::stateDir),
        stringFlag("dev-root", "the folder that plays /dev", &DaemonConfig::devRoot),
        stringFlag("proc-root", "the folder that plays /proc (boot id, NVIDIA device minors)",
                   &DaemonConfig::procRoot),
        {"metadata-versions", FlagKind::String,
         "device metadata API versions written, newest first (v1alpha1; v1beta1,v1alpha1)",
         [](DaemonConfig& c, const std::string& v) -> Status {
             std::vector<std::string> versions;
             std::stringstream list(v);
             for (std::string item; std::getline(list, item, ',');)
                 versions.push_back(item);
             if (auto valid = metadata::validateVersions(versions); !valid)
                 return valid;
             c.metadataVersions = std::move(versions);
             return Status::Ok();
         }},
        boolFlag("cdi-net-devices",
                 "CDI specs move a prepared netdev VF's interface into the pod's network "
                 "namespace (CDI 1.1 netDevices; needs a runtime with CDI 1.1, see the README)",
                 [](DaemonConfig& c) -> bool& { return c.cdiNetDevices; }),
        {"cpu-pinning", FlagKind::String,
         "pin the containers of claims holding CPUs to them (cpuset.cpus, exclusive on the node) "
         "and their memory to the CPUs' NUMA nodes, through the runtime's NRI: auto (where the "
         "runtime offers NRI), nri (required: such claims are not prepared without it), off",
         [](DaemonConfig& c, const std::string& v) -> Status {
             if (v == "auto")
                 c.cpuPinning = CpuPinning::Auto;
             else if (v == "nri")
                 c.cpuPinning = CpuPinning::Nri;
             else if (v == "off")
                 c.cpuPinning = CpuPinning::Off;
             else
                 return Error{"'" + v + "' is not auto, nri or off"};
             return Status::Ok();
         }},
        stringFlag("nri-socket", "the container runtime's NRI socket (--cpu-pinning)",
                   &DaemonConfig::nriSocket),
        autoBoolFlag("numa-list",
                     "publish resource.kubernetes.io/numaNode and pcieRoot as lists (needs "
                     "DRAListTypeAttributes); =auto: lists where the API server accepts them, else "
                     "scalars",
                     [](DaemonConfig& c, bool on, bool automatic) {
                         c.numaListAuto = automatic;
                         c.slices.numaForm =
                             on ? topology::NumaForm::List : topology::NumaForm::Scalar;
                     }),
        autoBoolFlag("node-allocatable-resources",
                     "CPU devices map the CPUs and memory a claim consumes to the node's "
                     "allocatable cpu and memory (needs DRANodeAllocatableResources); =auto "
                     "(default): where the API server keeps the field",
                     [](DaemonConfig& c, bool on, bool automatic) {
                         c.nodeAllocatableAuto = automatic;
                         c.slices.nodeAllocatableResources = on;
                     }),
        boolFlag("shared-consumable-capacity",
                 "request-driven counters (DRASharedConsumableCapacity)",
                 [](DaemonConfig& c) -> bool& { return c.slices.sharedConsumableCapacity; }),
        {"vf-layout", FlagKind::String,
         "SR-IOV VFs as one shared device per PF and VF driver, the VF chosen at Prepare "
         "(pooled, default: the scheduler looks at far fewer devices), or one device per VF "
         "(individual: claims can select a VF by its own attributes)",
         [](DaemonConfig& c, const std::string& v) -> Status {
             auto layout = slices::parseVfLayout(v);
             if (!layout)
                 return layout.error();
             c.slices.vfLayout = *layout;
             return Status::Ok();
         }},
        boolFlag("legacy-numa-attributes", "also publish dra.net/numaNode and dra.cpu/numaNodeID",
                 [](DaemonConfig& c) -> bool& { return c.slices.legacyNumaAttributes; }),
        durationFlag("resync-interval", "how often to rediscover and republish (e.g. 60s)",
                     std::chrono::milliseconds(100), "100ms",
                     [](DaemonConfig& c, std::chrono::milliseconds d) { c.resyncInterval = d; }),
        boolFlag("health",
                 "detect device health, stream it to the kubelet, taint unhealthy devices",
                 [](DaemonConfig& c) -> bool& { return c.health; }),
        durationFlag("health-interval", "how often device health is checked (e.g. 5s)",
                     std::chrono::milliseconds(10), "10ms",
                     [](DaemonConfig& c, std::chrono::milliseconds d) { c.healthInterval = d; }),
        durationFlag(
            "health-timeout",
            "how long the kubelet may trust a health report (health_check_timeout_seconds)",
            std::chrono::seconds(1), "1s",
            [](DaemonConfig& c, std::chrono::milliseconds d) {
                c.healthTimeout = std::chrono::duration_cast<std::chrono::seconds>(d);
            }),
        durationFlag(
            "health-resend-interval",
            "how often the full health list is resent on idle streams (below --health-timeout)",
            std::chrono::milliseconds(10), "10ms",
            [](DaemonConfig& c, std::chrono::milliseconds d) { c.healthResendInterval = d; }),
        {"health-taint-effect", FlagKind::String,
         "effect of the taint on unhealthy devices: NoSchedule, NoExecute, None (inform only)",
         [](DaemonConfig& c, const std::string& v) -> Status {
             if (v != "NoSchedule" && v != "NoExecute" && v != "None")
                 return Error{"'" + v + "' is not NoSchedule, NoExecute or None"};
             c.healthTaintEffect = v;
             return Status::Ok();
         }},
        durationFlag("health-aer-recovery",
                     "a device with a non-fatal AER error is healthy again after this long "
                     "without another (fatal ones wait for a reset)",
                     std::chrono::seconds(1), "1s",
                     [](DaemonConfig& c, std::chrono::milliseconds d) {
                         c.healthAerRecovery = std::chrono::duration_cast<std::chrono::seconds>(d);
                     }),
        {"health-correctable-burst", FlagKind::Unsigned,
         "correctable AER errors per minute above which the message carries a warning",
         [](DaemonConfig& c, const std::string& v) -> Status {
             auto n = text::parseInt(v);
             if (!n || *n < 0)
                 return Error{"'" + v + "' is not a count"};
             c.healthCorrectableBurst = *n;
             return Status::Ok();
         }},
        boolFlag("health-gpu-link-speed-unhealthy",
                 "a GPU link below its maximum speed is unhealthy (default: a warning, GPUs slow "
                 "their link when idle)",
                 [](DaemonConfig& c) -> bool& { return c.healthGpuLinkSpeedUnhealthy; }),
        {"log-level", FlagKind::String, "trace, debug, info, warn, error",
         [](DaemonConfig& c, const std::string& v) -> Status {
             static const std::vector<std::string> levels{"trace", "debug", "info", "warn",
                                                          "error"};
             if (std::find(levels.begin(), levels.end(), v) == levels.end())
                 return Error{"'" + v + "' is not a log level"};
             c.logLevel = v;
             return Status::Ok();
         }},
        {"log-format", FlagKind::String, "text or json",
         [](DaemonConfig& c, const std::string& v) -> Status {
             if (v != "text" && v != "json")
                 return Error{"'" + v + "' is not text or json"};
             c.logFormat = v;
             return Status::Ok();
         }},
        stringFlag("metrics-addr", "host:port for /metrics, /healthz, /readyz (empty: off)",
                   &DaemonConfig::metricsAddr),
        stringFlag("pod-uid",
                   "this driver pod's UID (downward API): per-pod socket names for rolling updates",
                   &DaemonConfig::podUid),
        {"socket-group", FlagKind::Unsigned,
         "numeric group for the sockets (mode 0660); default 0600",
         [](DaemonConfig& c, const std::string& v) -> Status {
             auto g = text::parseInt(v);
             if (!g || *g < 0 || *g > 0x7fffffff)
                 return Error{"'" + v + "' is not a numeric group id"};
             c.socketGroup = static_cast<unsigned>(*g);
             return Status::Ok();
         }},
        boolFlag("keep-slices-on-exit",
                 "leave the ResourceSlices in place on SIGTERM (default: delete them)",
                 [](DaemonConfig& c) -> bool& { return c.keepSlicesOnExit; }),
        boolFlag("dry-run",
                 "run without an API server: print slices, read claims from --claims-dir",
                 [](DaemonConfig& c) -> bool& { return c.dryRun; }),
        stringFlag("claims-dir",
                   "dry-run: folder of ResourceClaims named <namespace>_<name>.json|yaml",
                   &DaemonConfig::claimsDir),
    };
    return all;
}

const Flag* findFlag(const std::string& name) {
    for (const auto& flag : flags()) {
        if (flag.name == name)
            return &flag;
    }
    return nullptr;
}

Status finish(DaemonConfig& config) {
    if (auto status = slices::validateOptions(config.slices); !status)
        return status;
    // The kubelet turns a device Unknown when no report came within the timeout.
    if (config.healthResendInterval >= config.healthTimeout) {
        return Error{"--health-resend-interval (" +
                     std::to_string(config.healthResendInterval.count()) +
                     "ms) must be shorter than --health-timeout (" +
                     std::to_string(config.healthTimeout.count()) + "s)"};
    }
    if (config.healthInterval >= config.healthTimeout) {
        return Error{"--health-interval (" + std::to_string(config.healthInterval.count()) +
                     "ms) must be shorter than --health-timeout (" +
                     std::to_string(config.healthTimeout.count()) + "s)"};
    }
    config.slices.devicesMayBeTainted = config.health;
    if (config.metadataDir.empty())
        config.metadataDir = config.pluginDir() + "/dra-device-metadata";
    if (config.stateDir.empty())
        config.stateDir = config.pluginDir();
    for (const auto* path : {&config.kubeletRegistryDir, &config.kubeletPluginsDir, &config.cdiDir,
                             &config.metadataDir, &config.stateDir}) {
        // The kubelet dials the endpoint path as given: it must be absolute.
        if (path->empty() || path->front() != '/')
            return Error{"folder '" + *path + "' must be an absolute path"};
    }
    if (!config.claimsDir.empty() && !config.dryRun)
        return Error{"--claims-dir needs --dry-run"};
    return Status::Ok();
}

}  // namespace

Result<std::chrono::milliseconds> parseDuration(const std::string& text) {
    using namespace std::chrono;
    static const std::vector<std::pair<std::string, milliseconds>> units{
        {"ms", milliseconds(1)}, {"s", seconds(1)}, {"m", minutes(1)}, {"h", hours(1)}};
    for (const auto& [suffix, unit] : units) {
        if (text.size() > suffix.size() &&
            text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
            auto number =
                text::parseInt(std::string_view(text).substr(0, text.size() - suffix.size()));
            if (number && *number >= 0)
                return milliseconds(*number * unit.count());
        }
    }
    if (auto seconds = text::parseInt(text); seconds && *seconds >= 0)
        return milliseconds(*seconds * 1000);
    return Error{"'" + text + "' is not a duration (e.g. 30s, 5m, 250ms)"};
}

std::string daemonUsage() {
    std::string out =
        "Usage: numa-dra-plugin [OPTIONS]\n\nThe DRA kubelet plugin for NUMA/PCIe "
        "devices.\n\nOptions "
        "(each also as an environment variable, e.g. NODE_NAME):\n";
    for (const auto& flag : flags()) {
        std::string left = "  --" + flag.name + (flag.kind == FlagKind::Bool ? "" : " VALUE");
        left.resize(std::max<size_t>(left.size() + 1, 36), ' ');
        out += left + flag.help + "\n";
    }
    out +=
        "  --help                            show this help\n  --version                         "
        "show the version\n";
    return out;
}

Result<ParsedFlags> parseDaemonFlags(const std::vector<std::string>& args,
                                     const std::map<std::string, std::string>& environment,
                                     const std::string& defaultNodeName) {
    ParsedFlags parsed;
    parsed.config.slices.nodeName = defaultNodeName;
    for (const auto& flag : flags()) {
        auto it = environment.find(environmentName(flag.name));
        if (it == environment.end())
            continue;
        if (auto status = flag.apply(parsed.config, it->second); !status) {
            return Error{"environment variable " + it->first + ": " + status.error().message};
        }
    }
    for (size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        if (arg == "--help" || arg == "-h") {
            parsed.helpRequested = true;
            return parsed;
        }
        if (arg == "--version") {
            parsed.versionRequested = true;
            return parsed;
        }
        if (arg.rfind("--", 0) != 0)
            return Error{"unexpected argument '" + arg + "'"};
        std::optional<std::string> value;
        if (auto eq = arg.find('='); eq != std::string::npos) {
            value = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        const Flag* flag = findFlag(arg.substr(2));
        if (flag == nullptr)
            return Error{"unknown flag '" + arg + "'"};
        if (!value) {
            if (flag->kind == FlagKind::Bool) {
                value = "true";
            } else if (i + 1 < args.size()) {
                value = args[++i];
            } else {
                return Error{"flag " + arg + " needs a value"};
            }
        }
        if (auto status = flag->apply(parsed.config, *value); !status) {
            return Error{"flag " + arg + ": " + status.error().message};
        }
    }
    if (auto status = finish(parsed.config); !status)
        return status.error();
    return parsed;
}

}  // namespace numadra::daemon
