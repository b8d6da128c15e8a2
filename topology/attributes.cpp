#include "numadra/topology/attributes.hpp"

#include <algorithm>
#include <string_view>

namespace numadra::topology {

namespace {

constexpr int kLocalDistance = 10;

// True when the row reads like a SLIT row of `node`: 10 to itself, more than 10 elsewhere.
bool isPlausibleRow(const discovery::Machine& machine, int node) {
    for (int other : machine.onlineNodes) {
        auto d = machine.distance(node, other);
        if (!d)
            return false;
        if (other == node ? *d != kLocalDistance : *d <= kLocalDistance)
            return false;
    }
    return true;
}

}  // namespace

std::vector<int> localNumaNodes(const discovery::Machine& machine, int node) {
    std::vector<int> result{node};
    if (!machine.distance(node, node) || !isPlausibleRow(machine, node))
        return result;

    int minDistance = 0;
    for (int other : machine.onlineNodes) {
        if (other == node)
            continue;
        int d = *machine.distance(node, other);
        if (minDistance == 0 || d < minDistance)
            minDistance = d;
    }
    if (minDistance == 0)
        return result;  // the only node

    const auto socket = machine.socketOfNode(node);
    for (int other : machine.onlineNodes) {  // ascending
        if (other == node || *machine.distance(node, other) != minDistance)
            continue;
        if (socket) {
            // Nodes on another socket are excluded even at equal distance; nodes whose socket
            // is unknown (CPU-less memory nodes) are kept, as upstream does.
            auto otherSocket = machine.socketOfNode(other);
            if (otherSocket && *otherSocket != *socket)
                continue;
        }
        result.push_back(other);
    }
    return result;
}

Result<NumaNodeValue> numaNodeAttribute(const discovery::Machine& machine, int node,
                                        NumaForm form) {
    if (node < 0) {
        return Error{"invalid NUMA node " + std::to_string(node) +
                     ": do not publish the numaNode attribute"};
    }
    if (node >= kMaxNumaNodes) {
        return Error{"NUMA node " + std::to_string(node) + " exceeds maximum supported (" +
                     std::to_string(kMaxNumaNodes - 1) + ")"};
    }
    if (form == NumaForm::Scalar)
        return NumaNodeValue{form, {node}};
    return NumaNodeValue{form, localNumaNodes(machine, node)};
}

Result<NumaNodeValue> numaNodeAttributeForPciBusId(const discovery::Machine& machine,
                                                   const std::string& pciBusId, NumaForm form) {
    const auto* function = machine.pciFunction(pciBusId);
    if (function == nullptr)
        return Error{"PCI device " + pciBusId + " not found"};
    return numaNodeAttributeForFunction(machine, *function, form);
}

Result<NumaNodeValue> numaNodeAttributeForFunction(const discovery::Machine& machine,
                                                   const discovery::PciFunction& function,
                                                   NumaForm form) {
    if (!function.numaNode) {
        return Error{"failed to read NUMA node for PCI Bus ID " + function.address};
    }
    if (*function.numaNode < 0) {
        return Error{"PCI device " + function.address +
                     " has no NUMA affinity (numa_node=" + std::to_string(*function.numaNode) +
                     "); do not publish the numaNode attribute for it"};
    }
    return numaNodeAttribute(machine, *function.numaNode, form);
}

Result<int> numaNodeForCpu(const discovery::Machine& machine, int cpu) {
    const auto* info = machine.cpu(cpu);
    if (info == nullptr || !info->numaNode) {
        return Error{"CPU " + std::to_string(cpu) + " not found in any NUMA node"};
    }
    return *info->numaNode;
}

Result<std::string> pciBusIdAttribute(const std::string& pciBusId) {
    if (pciBusId.empty())
        return Error{"PCI Bus ID cannot be empty"};
    // ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$, as upstream's helper validates.
    static constexpr std::string_view kShape = "hhhh:hh:hh.f";
    bool valid = pciBusId.size() == kShape.size();
    for (size_t i = 0; valid && i < kShape.size(); ++i) {
        const char c = pciBusId[i];
        switch (kShape[i]) {
            case 'h':
                valid = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
                break;
            case 'f':
                valid = c >= '0' && c <= '7';
                break;
            default:
                valid = c == kShape[i];
                break;
        }
    }
    if (!valid)
        return Error{"invalid PCI Bus ID format: " + pciBusId};
    return pciBusId;
}

Result<std::string> pcieRootAttribute(const discovery::Machine& machine,
                                      const std::string& pciBusId) {
    const auto* function = machine.pciFunction(pciBusId);
    if (function == nullptr)
        return Error{"PCI device " + pciBusId + " not found"};
    return pcieRootAttribute(*function);
}

Result<std::string> pcieRootAttribute(const discovery::PciFunction& function) {
    if (function.pcieRoot.empty()) {
        return Error{"failed to resolve PCIe Root Complex for PCI Bus ID " + function.address +
                     ": no pciDDDD:BB component in " + function.devicePath};
    }
    return function.pcieRoot;
}

}  // namespace numadra::topology
