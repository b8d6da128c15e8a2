#include "numadra/discovery/device_kinds.hpp"

namespace numadra::discovery {

namespace {

constexpr std::uint16_t kVendorAmd = 0x1002;
constexpr std::uint16_t kVendorNvidia = 0x10de;
constexpr std::uint16_t kVendorAspeed = 0x1a03;
constexpr std::uint16_t kVendorMatrox = 0x102b;

std::uint32_t baseClass(const PciFunction& f) {
    return f.classCode >> 16;
}
std::uint32_t classAndSubclass(const PciFunction& f) {
    return f.classCode >> 8;
}

bool isGpu(const PciFunction& f) {
    if (baseClass(f) == 0x03) {
        // Board-management VGA (BMC) is a display controller nobody schedules.
        return !(f.vendorId == kVendorAspeed || f.vendorId == kVendorMatrox);
    }
    // AMD Instinct MI300 and NVIDIA parts that report "processing accelerator" are GPUs to users.
    return classAndSubclass(f) == 0x1200 &&
           (f.vendorId == kVendorAmd || f.vendorId == kVendorNvidia);
}

bool isAccelerator(const PciFunction& f) {
    return baseClass(f) == 0x12;
}

bool isNic(const PciFunction& f) {
    const auto cls = classAndSubclass(f);
    // Ethernet and InfiniBand controllers; ConnectX-3 reports "network, other" and QLogic HCAs
    // "serial bus: InfiniBand", so a netdev or RDMA device below the function also counts.
    if (cls == 0x0200 || cls == 0x0207)
        return true;
    return (baseClass(f) == 0x02 || cls == 0x0c06) && (!f.netdevs.empty() || !f.rdma.empty());
}

}  // namespace

const DeviceKindRules& DeviceKindRules::defaults() {
    static const DeviceKindRules rules = [] {
        DeviceKindRules r;
        r.add({kKindGpu, "display/3D controller or GPU-vendor processing accelerator", isGpu});
        r.add({kKindAccelerator, "processing accelerator", isAccelerator});
        r.add({kKindNic, "Ethernet/InfiniBand controller or function with a netdev/RDMA device",
               isNic});
        return r;
    }();
    return rules;
}

DeviceKind DeviceKindRules::classify(const PciFunction& function) const {
    for (const auto& rule : rules_) {
        if (rule.matches(function))
            return rule.kind;
    }
    return {};
}

}  // namespace numadra::discovery
