#pragma once
// The standard Kubernetes device attributes for topology (resource.kubernetes.io/numaNode,
// pcieRoot, pciBusID) computed from a discovered machine, with the semantics of upstream's
// deviceattribute helpers (KEP-6072) and two deliberate, documented improvements:
//  * a SLIT row is positional over ONLINE nodes, so row positions are mapped to the sorted
//    online-node list (upstream reads position i as node i, wrong on sparse node ids);
//  * a row that is not a SLIT (own entry != 10, another entry <= 10) is ignored.

#include <string>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/discovery/machine.hpp"

namespace numadra::topology {

inline constexpr const char* kNumaNodeAttribute = "resource.kubernetes.io/numaNode";
inline constexpr const char* kPcieRootAttribute = "resource.kubernetes.io/pcieRoot";
inline constexpr const char* kPciBusIdAttribute = "resource.kubernetes.io/pciBusID";
inline constexpr int kMaxNumaNodes = 1024;

// Scalar: the physical node. List (needs DRAListTypeAttributes in the cluster): the physical
// node first, then the same-socket nodes at the minimum SLIT distance, ascending.
enum class NumaForm { Scalar, List };

struct NumaNodeValue {
    NumaForm form = NumaForm::Scalar;
    std::vector<int> nodes;  // one element for Scalar
    int physical() const { return nodes.front(); }
    bool operator==(const NumaNodeValue&) const = default;
};

// The list algorithm alone: [node, same-socket nodes at minimum distance...].
std::vector<int> localNumaNodes(const discovery::Machine& machine, int node);

// For a device that knows its node (CPU, memory). Errors for node < 0 or >= 1024.
Result<NumaNodeValue> numaNodeAttribute(const discovery::Machine& machine, int node, NumaForm form);
// For a PCI function. An error (meaning: publish no numaNode) when the function reports no
// NUMA affinity (-1) or its numa_node could not be read.
Result<NumaNodeValue> numaNodeAttributeForPciBusId(const discovery::Machine& machine,
                                                   const std::string& pciBusId, NumaForm form);
Result<NumaNodeValue> numaNodeAttributeForFunction(const discovery::Machine& machine,
                                                   const discovery::PciFunction& function,
                                                   NumaForm form);
Result<int> numaNodeForCpu(const discovery::Machine& machine, int cpu);

// Validates the DDDD:BB:DD.F form Kubernetes accepts (lowercase, 4-digit domain).
Result<std::string> pciBusIdAttribute(const std::string& pciBusId);
// "pciDDDD:BB" of the root complex the function sits under.
Result<std::string> pcieRootAttribute(const discovery::Machine& machine,
                                      const std::string& pciBusId);
Result<std::string> pcieRootAttribute(const discovery::PciFunction& function);

}  // namespace numadra::topology
