#pragma once
// What a container needs to use a device: device nodes (with major/minor read from the host's
// /dev, never stored), environment variables naming what it got, per device type and kernel
// driver. Data comes from the discovered model (discovery::PciFunction) plus the host's /dev and
// /proc; nothing here reads sysfs.

#include <optional>
#include <string>
#include <vector>

#include "numadra/cdi/spec.hpp"
#include "numadra/common/result.hpp"
#include "numadra/discovery/machine.hpp"

namespace numadra::cdi {

// Where the host's /dev and /proc are visible to this process. Device-node paths written into a
// spec are always the host's (/dev/...); only the lookups go through these roots (in a
// DaemonSet they may be mounted elsewhere; tests point them at mocked folders).
struct HostRoots {
    std::string devRoot = "/dev";
    std::string procRoot = "/proc";
};

// Reads device nodes: stat(<devRoot>/<relative>) -> {path "/dev/<relative>", type c|b,
// major, minor}. Errors name the path and say it is missing or not a device node.
class HostDeviceNodes {
  public:
    explicit HostDeviceNodes(HostRoots roots);
    Result<DeviceNode> node(const std::string& relativePath) const;
    bool exists(const std::string& relativePath) const;
    // NVIDIA's minor for a GPU: "Device Minor:" in <procRoot>/driver/nvidia/gpus/<bdf>/information.
    Result<int> nvidiaMinor(const std::string& pciAddress) const;
    const HostRoots& roots() const { return roots_; }

  private:
    HostRoots roots_;
};

// Environment variable prefix for a device: "NUMADRA_" + the name upper-cased with every
// character outside [A-Z0-9] turned into '_' (gpu-0000-3b-00-0 -> NUMADRA_GPU_0000_3B_00_0_).
// Device names are unique per node, so variables of two devices never collide.
std::string envPrefix(const std::string& deviceName);

// Edits for a PCI function the driver publishes (kind gpu, accelerator or nic):
//  - bound to vfio-pci: /dev/vfio/<iommu group> and /dev/vfio/vfio;
//  - NVIDIA GPU: /dev/nvidia<minor> (the control nodes every GPU of the host shares are
//    nvidiaControlEdits(), one CDI device per claim instead of a copy in every GPU's edits);
//  - AMD GPU/accelerator: /dev/kfd and its /dev/dri/renderD*;
//  - other GPUs: its /dev/dri/card* and /dev/dri/renderD*;
//  - NIC with an RDMA device: /dev/infiniband/uverbsN and /dev/infiniband/rdma_cm (when present);
//  - env: <prefix>PCI_BUS_ID, <prefix>PCIE_ROOT, <prefix>NUMA_NODE (when known), plus
//    <prefix>INTERFACE / <prefix>RDMA_DEVICE for NICs, <prefix>DRM_CARD / <prefix>DRM_RENDER /
//    <prefix>NVIDIA_MINOR / <prefix>VFIO_GROUP for GPUs (VFIO_GROUP for any function bound to
//    vfio-pci, NICs too; DRM_* hold /dev/dri paths; several values are joined with ',').
// A device node the device needs that is missing on the host is an error naming it.
Result<ContainerEdits> pciDeviceEdits(const discovery::PciFunction& function,
                                      const std::string& deviceName, const HostDeviceNodes& host);

// CDI 1.1 netDevices for an SR-IOV VF bound to a kernel network driver: each of its netdevs,
// moved into the container's network namespace under its own name (the <prefix>INTERFACE
// variable names it, inside as outside). Empty for PFs (moving a PF could take the node's own
// link away), for vfio-pci and for functions without a netdev.
std::vector<NetDevice> netDeviceEdits(const discovery::PciFunction& function);

// True for an NVIDIA GPU bound to the nvidia driver: it needs the host's control nodes too.
bool usesNvidiaControlNodes(const discovery::PciFunction& function);
// The nodes every NVIDIA GPU of a host shares: /dev/nvidiactl, /dev/nvidia-uvm and
// /dev/nvidia-uvm-tools, each when present (empty edits when the host has none of them).
Result<ContainerEdits> nvidiaControlEdits(const HostDeviceNodes& host);

// A share of a CPU device: env <prefix>CPUS (range list), <prefix>NUMA_NODE, and
// <prefix>MEMORY (bytes) when memory was consumed (more than 0 bytes). The prefix includes the
// share id when there is one, so two shares of one device in one container never collide.
struct CpuShare {
    std::string deviceName;
    std::optional<std::string> shareId;
    int numaNode = 0;
    std::vector<int> cpus;
    std::optional<std::int64_t> memoryBytes;
};
ContainerEdits cpuShareEdits(const CpuShare& share);

// The variable a claim's CDI spec sets (in the spec's containerEdits) in every container that
// uses any of its devices: NUMADRA_CLAIM_<uid in upper case, '-' as '_'>=<uid>. The runtime
// applies CDI edits before it asks NRI plugins about a container, so the NRI plugin (node/nri/)
// knows a container's claims by it.
std::string claimVariable(const std::string& claimUid);
// The claim UIDs named by claimVariable entries of an environment ("NAME=value" strings),
// sorted, each once.
std::vector<std::string> claimUidsInEnvironment(const std::vector<std::string>& environment);

}  // namespace numadra::cdi
