#pragma once
// The node as discovered from sysfs: a plain value, built once per scan and read by topology/,
// node/slices/ and the daemon. Unknown values are explicit (std::optional, -1 for "no NUMA
// affinity").

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace numadra::discovery {

// Something that could not be read or parsed; discovery went on without it.
struct Diagnostic {
    std::string path;
    std::string message;
};

struct NumaNode {
    int id = 0;
    std::vector<int> cpus;  // nodeN/cpulist, cpumap or cpuM links; empty for CPU-less nodes
    std::optional<std::uint64_t> memoryBytes;  // MemTotal from nodeN/meminfo
    // nodeN/distance as read: one entry per ONLINE node, in ascending node-id order.
    std::vector<int> distanceRow;
};

struct Cpu {
    int id = 0;
    bool online = true;
    std::optional<int> package;  // physical_package_id; the socket
    std::optional<int> die;
    std::optional<int> core;
    std::vector<int> threadSiblings;  // core_cpus / thread_siblings, as list or mask
    std::optional<int> numaNode;      // from the cpuN/nodeM link, else from node cpulists
};

struct PciLink {
    std::optional<double> speedGTs;  // "16.0 GT/s PCIe" -> 16.0
    std::optional<int> width;        // lanes
    bool operator==(const PciLink&) const = default;
};

// For a VF's netdev only name, path and linkType (the PF's) are filled in by a scan.
struct NetInterface {
    std::string name;
    std::string path;  // relative to the sysfs root
    std::string mac;
    std::optional<std::int64_t> speedMbps;  // nullopt when unknown (-1, unreadable)
    std::string operstate;                  // up, down, unknown, ...
    std::optional<bool> carrier;
    std::optional<int> mtu;
    std::optional<int> linkType;  // ARPHRD: 1 ether, 32 InfiniBand
};

struct RdmaDevice {
    std::string name;                 // mlx5_0
    std::vector<std::string> uverbs;  // uverbs0 -> /dev/infiniband/uverbs0
    std::string nodeGuid;
};

struct SriovPhysicalFunction {
    int totalVfs = 0;
    int numVfs = 0;
    std::vector<std::string> vfAddresses;  // index K at position K (from virtfnK links)
};

struct SriovVirtualFunction {
    std::string pfAddress;
    int index = -1;  // K of the PF's virtfnK link naming this VF
};

// What a PCI function is for the driver; discovery assigns it from a rule table
// (device_kinds.hpp) so new classes can be added without touching the readers.
using DeviceKind = std::string;
inline constexpr const char* kKindGpu = "gpu";
inline constexpr const char* kKindAccelerator = "accelerator";
inline constexpr const char* kKindNic = "nic";

struct PciFunction {
    std::string address;          // DDDD:BB:DD.F, lowercase
    std::string devicePath;       // resolved, relative to the sysfs root: devices/pci0000:00/...
    std::string pcieRoot;         // pciDDDD:BB of the root complex; empty if not found
    std::uint32_t classCode = 0;  // 24 bit 0xCCSSPP
    std::uint16_t vendorId = 0;
    std::uint16_t deviceId = 0;
    std::uint16_t subsystemVendorId = 0;
    std::uint16_t subsystemDeviceId = 0;
    std::string vendorName;  // from the PCI ID database, else "0x10de"
    std::string deviceName;
    std::optional<int> numaNode;  // -1 = no affinity reported; nullopt = unreadable
    std::vector<int> localCpus;
    PciLink currentLink;  // a VF's are its PF's
    PciLink maxLink;
    std::string kernelDriver;  // bound driver, empty when unbound
    std::optional<int> iommuGroup;
    std::optional<SriovPhysicalFunction> sriovPf;
    std::optional<SriovVirtualFunction> sriovVf;
    std::vector<NetInterface> netdevs;
    std::vector<RdmaDevice> rdma;
    std::vector<std::string> drm;  // card0, renderD128
    DeviceKind kind;               // empty: not a device the driver publishes
    // PCIe Device Serial Number as lspci prints it ("b8-ce-f6-03-00-7c-d7-c4"): tells a card from
    // another of the same model in the same slot. Read only for published physical functions (a
    // VF's would be its PF's); nullopt when the card has none or its config space is not
    // readable in full (only root sees past the first 64 or 256 bytes).
    std::optional<std::string> serialNumber;

    bool isBridge() const { return (classCode >> 8) == 0x0604; }
};

// Something a scan read that the kernel can change without a uevent, with what it read then, so
// that changedWithoutUevent() (discovery.hpp) can read it again instead of scanning.
struct UnannouncedRead {
    enum class What {
        FileText,  // the whole file
        MemTotal,  // the MemTotal line of a node's meminfo (the rest moves all the time)
        Listing,   // the names in a folder
    };
    What what = What::FileText;
    std::string path;   // relative to the sysfs root
    std::string value;  // as readUnannounced() puts it
};

struct Machine {
    std::string sysfsRoot;
    // devices/system/node names at least one node (kernel with CONFIG_NUMA); when false the
    // machine is one synthesized node 0 holding every online CPU.
    bool hasNumaInfo = false;
    std::vector<int> onlineNodes;
    std::vector<NumaNode> nodes;   // sorted by id
    std::vector<Cpu> cpus;         // present CPUs, sorted by id
    std::vector<PciFunction> pci;  // sorted by address
    std::vector<Diagnostic> diagnostics;
    // Read just before the scan read them (a change in between is seen by the next check, not
    // missed): the link speed of every netdev whose speed is read (a renegotiation is an rtnetlink
    // message, not a uevent), each node's MemTotal (a balloon driver changes it without one), the
    // online CPU and node lists and the device folders (uevents announce those changes, but a
    // socket that overflowed drops them, and a tree that is not sysfs has none).
    std::vector<UnannouncedRead> unannounced;

    const NumaNode* node(int id) const;
    const Cpu* cpu(int id) const;
    const PciFunction* pciFunction(const std::string& address) const;
    // Distance from node `from` to node `to` per `from`'s SLIT row, mapping row positions to
    // the sorted list of online nodes (the kernel prints one entry per online node).
    std::optional<int> distance(int from, int to) const;
    // Socket of a NUMA node: the package of its first CPU with a known package.
    std::optional<int> socketOfNode(int id) const;
    // Distinct known packages of online CPUs, ascending.
    std::vector<int> sockets() const;
};

}  // namespace numadra::discovery
