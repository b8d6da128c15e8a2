#include "numadra/discovery/machine.hpp"

#include <algorithm>

namespace numadra::discovery {

const NumaNode* Machine::node(int id) const {
    auto it = std::lower_bound(nodes.begin(), nodes.end(), id,
                               [](const NumaNode& n, int v) { return n.id < v; });
    return it != nodes.end() && it->id == id ? &*it : nullptr;
}

const Cpu* Machine::cpu(int id) const {
    auto it = std::lower_bound(cpus.begin(), cpus.end(), id,
                               [](const Cpu& c, int v) { return c.id < v; });
    return it != cpus.end() && it->id == id ? &*it : nullptr;
}

const PciFunction* Machine::pciFunction(const std::string& address) const {
    auto it =
        std::lower_bound(pci.begin(), pci.end(), address,
                         [](const PciFunction& f, const std::string& v) { return f.address < v; });
    return it != pci.end() && it->address == address ? &*it : nullptr;
}

std::optional<int> Machine::distance(int from, int to) const {
    const NumaNode* source = node(from);
    if (source == nullptr || source->distanceRow.size() != onlineNodes.size())
        return std::nullopt;
    auto it = std::lower_bound(onlineNodes.begin(), onlineNodes.end(), to);
    if (it == onlineNodes.end() || *it != to)
        return std::nullopt;
    return source->distanceRow[static_cast<size_t>(it - onlineNodes.begin())];
}

std::optional<int> Machine::socketOfNode(int id) const {
    const NumaNode* n = node(id);
    if (n == nullptr)
        return std::nullopt;
    for (int c : n->cpus) {
        if (const Cpu* info = cpu(c); info != nullptr && info->package)
            return info->package;
    }
    return std::nullopt;
}

std::vector<int> Machine::sockets() const {
    std::vector<int> out;
    for (const auto& c : cpus) {
        if (c.online && c.package)
            out.push_back(*c.package);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

}  // namespace numadra::discovery
