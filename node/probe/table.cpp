// The human view of a machine: sockets -> NUMA nodes -> devices, then the slices.

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "numadra/common/text.hpp"
#include "numadra/probe/probe.hpp"
#include "numadra/topology/attributes.hpp"

namespace numadra::probe {

namespace {

using discovery::Machine;
using discovery::PciFunction;

std::string bytes(std::uint64_t value) {
    char buffer[32];
    const double gib = static_cast<double>(value) / (1024.0 * 1024 * 1024);
    if (gib >= 1) {
        std::snprintf(buffer, sizeof buffer, "%.1f GiB", gib);
    } else {
        std::snprintf(buffer, sizeof buffer, "%.0f MiB",
                      static_cast<double>(value) / (1024.0 * 1024));
    }
    return buffer;
}

std::string link(const discovery::PciLink& current, const discovery::PciLink& max) {
    if (!current.speedGTs && !current.width && !max.speedGTs)
        return {};
    auto one = [](const discovery::PciLink& l) {
        std::ostringstream s;
        if (l.speedGTs)
            s << *l.speedGTs << "GT/s";
        else
            s << "?";
        s << " x" << (l.width ? std::to_string(*l.width) : "?");
        return s.str();
    };
    std::string text = "link " + one(current);
    if (!(current == max))
        text += " (max " + one(max) + ")";
    return text;
}

std::string numaText(const Machine& machine, const PciFunction& f) {
    if (!f.numaNode)
        return "numaNode unknown (unreadable)";
    if (*f.numaNode < 0)
        return "numaNode none (no affinity: attribute omitted)";
    auto list = topology::localNumaNodes(machine, *f.numaNode);
    return "numaNode " + std::to_string(*f.numaNode) + " list [" + text::joinInts(list, ",") + "]";
}

void renderFunction(const Machine& machine, const PciFunction& f, const std::string& indent,
                    std::ostream& out) {
    out << indent << f.kind << " " << f.address << "  " << f.vendorName << " " << f.deviceName
        << "\n";
    out << indent << "    pcieRoot " << (f.pcieRoot.empty() ? "unknown" : f.pcieRoot) << ", "
        << numaText(machine, f);
    if (!f.kernelDriver.empty())
        out << ", driver " << f.kernelDriver;
    if (f.iommuGroup)
        out << ", iommu group " << *f.iommuGroup;
    if (auto l = link(f.currentLink, f.maxLink); !l.empty())
        out << ", " << l;
    out << "\n";
    if (f.serialNumber)
        out << indent << "    serial number " << *f.serialNumber << "\n";
    for (const auto& netdev : f.netdevs) {
        out << indent << "    netdev " << netdev.name << " " << netdev.operstate;
        if (netdev.speedMbps)
            out << " " << *netdev.speedMbps << " Mb/s";
        if (!netdev.mac.empty())
            out << " mac " << netdev.mac;
        out << "\n";
    }
    for (const auto& rdma : f.rdma) {
        out << indent << "    rdma " << rdma.name;
        if (!rdma.uverbs.empty())
            out << " (" << text::join(rdma.uverbs, ",") << ")";
        out << "\n";
    }
    if (!f.drm.empty())
        out << indent << "    drm " << text::join(f.drm, ",") << "\n";
    if (f.sriovPf) {
        out << indent << "    SR-IOV PF: " << f.sriovPf->numVfs << " of " << f.sriovPf->totalVfs
            << " VFs enabled";
        if (!f.sriovPf->vfAddresses.empty()) {
            out << " (" << f.sriovPf->vfAddresses.front();
            if (f.sriovPf->vfAddresses.size() > 1)
                out << " .. " << f.sriovPf->vfAddresses.back();
            out << ")";
        }
        out << "\n";
    }
    if (f.sriovVf)
        out << indent << "    SR-IOV VF " << f.sriovVf->index << " of PF " << f.sriovVf->pfAddress
            << "\n";
}

// VFs are listed under their PF, not one by one.
bool isListedFunction(const PciFunction& f) {
    return !f.kind.empty() && !f.sriovVf;
}

}  // namespace

std::string renderTable(const Machine& machine, const slices::SliceOptions& options,
                        const std::vector<api::ResourceSlice>& slices) {
    std::ostringstream out;
    out << "Machine: sysfs root " << machine.sysfsRoot << "\n";
    size_t onlineCpus = 0;
    for (const auto& c : machine.cpus)
        onlineCpus += c.online ? 1 : 0;
    out << "  " << machine.sockets().size() << " socket(s), " << machine.nodes.size()
        << " NUMA node(s), " << onlineCpus << " online CPU(s) of " << machine.cpus.size()
        << " present\n";
    if (!machine.hasNumaInfo)
        out << "  (no devices/system/node: kernel without NUMA; treated as node 0)\n";

    std::map<int, std::vector<const discovery::NumaNode*>> nodesBySocket;  // -1: unknown socket
    for (const auto& node : machine.nodes)
        nodesBySocket[machine.socketOfNode(node.id).value_or(-1)].push_back(&node);

    for (const auto& [socket, nodes] : nodesBySocket) {
        out << "\n"
            << (socket < 0 ? std::string("No socket (CPU-less or unknown)")
                           : "Socket " + std::to_string(socket))
            << "\n";
        for (const auto* node : nodes) {
            out << "  NUMA node " << node->id << ": cpus "
                << (node->cpus.empty() ? std::string("none") : text::formatRangeList(node->cpus));
            out << ", memory "
                << (node->memoryBytes ? bytes(*node->memoryBytes) : std::string("unknown"));
            out << ", distances ["
                << (node->distanceRow.empty() ? std::string("unknown")
                                              : text::joinInts(node->distanceRow, " "))
                << "]";
            out << ", local nodes ["
                << text::joinInts(topology::localNumaNodes(machine, node->id), ",") << "]\n";
            for (const auto& f : machine.pci) {
                if (isListedFunction(f) && f.numaNode == node->id)
                    renderFunction(machine, f, "    ", out);
            }
        }
    }
    bool header = false;
    for (const auto& f : machine.pci) {
        if (!isListedFunction(f) || (f.numaNode && *f.numaNode >= 0 && machine.node(*f.numaNode)))
            continue;
        if (!header)
            out << "\nDevices without NUMA affinity\n";
        header = true;
        renderFunction(machine, f, "    ", out);
    }

    out << "\nResourceSlices (driver " << options.driverName << ", pool " << options.nodeName
        << ", numaNode " << (options.numaForm == topology::NumaForm::List ? "list" : "scalar")
        << " form)\n";
    for (const auto& slice : slices) {
        out << "  " << slice.name << ": ";
        if (!slice.sharedCounters.empty()) {
            std::vector<std::string> names;
            for (const auto& set : slice.sharedCounters)
                names.push_back(set.name);
            out << slice.sharedCounters.size() << " counter set(s): " << text::join(names, ", ")
                << "\n";
            continue;
        }
        out << slice.devices.size() << " device(s)";
        if (!slice.devices.empty())
            out << ": " << slice.devices.front().name
                << (slice.devices.size() > 1 ? " .. " + slice.devices.back().name : "");
        out << "\n";
    }
    if (!machine.diagnostics.empty()) {
        out << "\n"
            << machine.diagnostics.size()
            << " file(s) could not be read or parsed (see warnings on stderr)\n";
    }
    return out.str();
}

}  // namespace numadra::probe
