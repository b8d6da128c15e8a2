#include "numadra/probe/probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <optional>

#include "numadra/api/slice_writer.hpp"
#include "numadra/common/host.hpp"
#include "numadra/discovery/discovery.hpp"
#include "numadra/probe/pci_ids.hpp"

#ifndef NUMADRA_VERSION
#define NUMADRA_VERSION "0.0.0"
#endif

namespace numadra::probe {

namespace {

constexpr const char* kUsage =
    R"(Usage: numa-probe [OPTIONS]

Shows this machine's (or a mocked machine's) NUMA/PCIe topology and the ResourceSlices the
driver would publish for it.

Options:
  --sysfs-root DIR               directory that plays /sys (default /sys)
  --node-name NAME               node and pool name (default: the host name)
  --driver-name NAME             DRA driver name (default numa.dra.dev)
  --numa-list                    publish resource.kubernetes.io/numaNode as a list
                                 (needs DRAListTypeAttributes in the cluster)
  --shared-consumable-capacity   request-driven counters (alpha DRASharedConsumableCapacity)
  --vf-layout pooled|individual  SR-IOV VFs as one shared device per PF and VF driver, the VF
                                 chosen at Prepare (pooled, the default), or one device per VF
                                 (individual)
  --legacy-numa-attributes       also publish dra.net/numaNode and dra.cpu/numaNodeID
  --node-allocatable-resources   CPU devices map the CPUs and memory a claim consumes to the
                                 node's allocatable cpu and memory (needs
                                 DRANodeAllocatableResources; the daemon's default where the
                                 cluster accepts it)
  --output table|json|yaml       table (default): topology tree; json: a v1 List of the
                                 ResourceSlices; yaml: the slices as a multi-document stream
  --help                         show this help
  --version                      show the version
)";

struct ProbeFlags {
    std::string sysfsRoot = "/sys";
    std::string output = "table";
    slices::SliceOptions slice;
};

// Parses flags; returns an error message for bad usage, or sets `exitNow` for --help/--version.
std::optional<std::string> parseFlags(const std::vector<std::string>& args, ProbeFlags& flags,
                                      std::ostream& out, bool& exitNow) {
    flags.slice.nodeName.clear();
    for (size_t i = 0; i < args.size(); ++i) {
        std::string arg = args[i];
        std::optional<std::string> inlineValue;
        if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
            inlineValue = arg.substr(eq + 1);
            arg = arg.substr(0, eq);
        }
        auto value = [&]() -> std::optional<std::string> {
            if (inlineValue)
                return inlineValue;
            if (i + 1 >= args.size())
                return std::nullopt;
            return args[++i];
        };
        auto need = [&](std::string& target) -> std::optional<std::string> {
            auto v = value();
            if (!v)
                return "flag " + arg + " needs a value";
            target = *v;
            return std::nullopt;
        };
        auto noValue = [&]() -> std::optional<std::string> {
            if (inlineValue)
                return "flag " + arg + " takes no value";
            return std::nullopt;
        };
        std::optional<std::string> problem;
        if (arg == "--help" || arg == "-h") {
            out << kUsage;
            exitNow = true;
            return std::nullopt;
        } else if (arg == "--version") {
            out << "numa-probe " << NUMADRA_VERSION << "\n";
            exitNow = true;
            return std::nullopt;
        } else if (arg == "--sysfs-root") {
            problem = need(flags.sysfsRoot);
        } else if (arg == "--node-name") {
            problem = need(flags.slice.nodeName);
        } else if (arg == "--driver-name") {
            problem = need(flags.slice.driverName);
        } else if (arg == "--output" || arg == "-o") {
            problem = need(flags.output);
            if (!problem && flags.output != "table" && flags.output != "json" &&
                flags.output != "yaml") {
                problem = "--output must be table, json or yaml, not '" + flags.output + "'";
            }
        } else if (arg == "--numa-list") {
            problem = noValue();
            flags.slice.numaForm = topology::NumaForm::List;
        } else if (arg == "--shared-consumable-capacity") {
            problem = noValue();
            flags.slice.sharedConsumableCapacity = true;
        } else if (arg == "--vf-layout") {
            std::string text;
            problem = need(text);
            if (!problem) {
                if (auto layout = slices::parseVfLayout(text))
                    flags.slice.vfLayout = *layout;
                else
                    problem = "--vf-layout: " + layout.error().message;
            }
        } else if (arg == "--legacy-numa-attributes") {
            problem = noValue();
            flags.slice.legacyNumaAttributes = true;
        } else if (arg == "--node-allocatable-resources") {
            problem = noValue();
            flags.slice.nodeAllocatableResources = true;
        } else {
            problem = "unknown argument '" + args[i] + "'";
        }
        if (problem)
            return problem;
    }
    if (flags.slice.nodeName.empty())
        flags.slice.nodeName = defaultNodeName();
    if (auto status = slices::validateOptions(flags.slice); !status)
        return status.error().message;
    return std::nullopt;
}

// AfterOutput::KeepUntilExit: reachable from here until the process ends (so leak checkers
// do not count it as lost).
struct KeptUntilExit {
    discovery::Machine machine;
    std::vector<api::ResourceSlice> slices;
};
KeptUntilExit* keptUntilExit = nullptr;

}  // namespace

int runNumaProbe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 AfterOutput afterOutput) {
    ProbeFlags flags;
    bool exitNow = false;
    if (auto problem = parseFlags(args, flags, out, exitNow)) {
        err << "numa-probe: " << *problem << "\n\n" << kUsage;
        return 2;
    }
    if (exitNow)
        return 0;

    // Names come after discovery, for the ids the machine has (pci_ids.hpp): cheaper than the
    // whole database discovery would load.
    auto machine = discovery::discover({flags.sysfsRoot, nullptr, nullptr});
    if (!machine) {
        err << "numa-probe: " << machine.error().message << "\n";
        return 2;
    }
    namePciFunctions(*machine);
    for (const auto& diagnostic : machine->diagnostics) {
        err << "warning: path=" << diagnostic.path << " problem=\"" << diagnostic.message << "\"\n";
    }
    auto built = slices::buildResourceSlices(*machine, flags.slice);
    if (!built) {
        err << "numa-probe: " << built.error().message << "\n";
        return 1;
    }
    if (flags.output == "json") {
        api::writeJsonList(out, built.value(), api::JsonLayout::Indented);
        out << '\n';
    } else if (flags.output == "yaml") {
        api::writeYamlStream(out, built.value());
    } else {
        out << renderTable(*machine, flags.slice, built.value());
    }
    if (afterOutput == AfterOutput::KeepUntilExit) {
        delete keptUntilExit;  // a second run in one process frees the first one's
        keptUntilExit = new KeptUntilExit{std::move(*machine), std::move(built).value()};
    }
    return 0;
}

}  // namespace numadra::probe
