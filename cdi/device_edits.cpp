#include "numadra/cdi/device_edits.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>

#include "numadra/common/errors.hpp"
#include "numadra/common/text.hpp"

namespace numadra::cdi {

namespace {

constexpr std::string_view kClaimVariablePrefix = "NUMADRA_CLAIM_";
constexpr std::uint16_t kVendorNvidia = 0x10de;
constexpr std::uint16_t kVendorAmd = 0x1002;

bool isGpuOrAccelerator(const discovery::PciFunction& f) {
    return f.kind == discovery::kKindGpu || f.kind == discovery::kKindAccelerator;
}

std::string describe(const discovery::PciFunction& f, const std::string& deviceName) {
    return "device " + deviceName + " (" + f.address + ")";
}

// Accumulates the edits of one device; the first missing required node stops the build.
class EditsBuilder {
  public:
    EditsBuilder(const HostDeviceNodes& host, std::string prefix)
        : host_(host), prefix_(std::move(prefix)) {}

    Status required(const std::string& relative) {
        auto node = host_.node(relative);
        if (!node)
            return node.error();
        edits_.deviceNodes.push_back(std::move(node).value());
        return Status::Ok();
    }

    // A node the device works without (e.g. the UVM nodes of an NVIDIA GPU): added when the host
    // has it. One that is there but not a device node is still an error: the host is broken.
    Status optional(const std::string& relative) {
        if (!host_.exists(relative))
            return Status::Ok();
        return required(relative);
    }

    bool exists(const std::string& relative) const { return host_.exists(relative); }

    void env(const std::string& name, const std::string& value) {
        edits_.env.push_back(prefix_ + name + "=" + value);
    }

    ContainerEdits take() { return std::move(edits_); }

  private:
    const HostDeviceNodes& host_;
    std::string prefix_;
    ContainerEdits edits_;
};

Result<std::string> readWholeFile(const std::string& path) {
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "re"),
                                                         &std::fclose);
    if (!file) {
        return errorFromErrno(errno, "");
    }
    std::string content;
    char buffer[4096];
    for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file.get())) > 0;)
        content.append(buffer, n);
    if (std::ferror(file.get()))
        return errorWithErrno(EIO, "read error");
    return content;
}

std::vector<std::string> drmNodes(const discovery::PciFunction& f, const std::string& prefix) {
    std::vector<std::string> out;
    for (const auto& name : f.drm) {
        if (text::startsWith(name, prefix))
            out.push_back(name);
    }
    return out;
}

std::vector<std::string> devicePaths(const std::string& folder,
                                     const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& name : names)
        out.push_back("/dev/" + folder + "/" + name);
    return out;
}

Status addDrmNodes(EditsBuilder& builder, const std::vector<std::string>& names) {
    for (const auto& name : names) {
        if (Status s = builder.required("dri/" + name); !s)
            return s;
    }
    return Status::Ok();
}

Status vfioEdits(const discovery::PciFunction& f, const std::string& deviceName,
                 EditsBuilder& builder) {
    if (!f.iommuGroup) {
        return Error{describe(f, deviceName) +
                     " is bound to vfio-pci but has no IOMMU group, so there is no "
                     "/dev/vfio/<group> to give a container"};
    }
    const std::string group = std::to_string(*f.iommuGroup);
    // A group without an IOMMU (vfio's no-IOMMU mode) is /dev/vfio/noiommu-<group>.
    const std::string node =
        builder.exists("vfio/noiommu-" + group) && !builder.exists("vfio/" + group)
            ? "vfio/noiommu-" + group
            : "vfio/" + group;
    if (Status s = builder.required(node); !s)
        return s;
    // The legacy container node; kernels with iommufd only (no VFIO container) lack it.
    if (Status s = builder.optional("vfio/vfio"); !s)
        return s;
    builder.env("VFIO_GROUP", group);
    return Status::Ok();
}

Status nvidiaEdits(const discovery::PciFunction& f, const HostDeviceNodes& host,
                   EditsBuilder& builder) {
    auto gpuMinor = host.nvidiaMinor(f.address);
    if (!gpuMinor)
        return gpuMinor.error();
    if (Status s = builder.required("nvidia" + std::to_string(*gpuMinor)); !s)
        return s;
    builder.env("NVIDIA_MINOR", std::to_string(*gpuMinor));
    return Status::Ok();
}

Status amdEdits(const discovery::PciFunction& f, const std::string& deviceName,
                EditsBuilder& builder) {
    // ROCm opens /dev/kfd for compute and the render node to address this GPU; the card node
    // is for display and is left out.
    const auto render = drmNodes(f, "renderD");
    if (render.empty()) {
        return Error{describe(f, deviceName) +
                     " is an amdgpu device without a DRM render node (no renderD* below it in "
                     "sysfs)"};
    }
    if (Status s = builder.required("kfd"); !s)
        return s;
    if (Status s = addDrmNodes(builder, render); !s)
        return s;
    builder.env("DRM_RENDER", text::join(devicePaths("dri", render), ","));
    return Status::Ok();
}

Status drmEdits(const discovery::PciFunction& f, const std::string& deviceName,
                EditsBuilder& builder) {
    const auto cards = drmNodes(f, "card");
    const auto render = drmNodes(f, "renderD");
    if (cards.empty() && render.empty()) {
        // A container would get the device's name in its environment and nothing to open.
        return Error{describe(f, deviceName) + " (driver " +
                     (f.kernelDriver.empty() ? std::string("none") : f.kernelDriver) +
                     ") has no DRM nodes and no other device nodes are known for it"};
    }
    if (Status s = addDrmNodes(builder, cards); !s)
        return s;
    if (Status s = addDrmNodes(builder, render); !s)
        return s;
    if (!cards.empty())
        builder.env("DRM_CARD", text::join(devicePaths("dri", cards), ","));
    if (!render.empty())
        builder.env("DRM_RENDER", text::join(devicePaths("dri", render), ","));
    return Status::Ok();
}

Status nicEdits(const discovery::PciFunction& f, EditsBuilder& builder) {
    std::vector<std::string> interfaces;
    for (const auto& netdev : f.netdevs)
        interfaces.push_back(netdev.name);
    std::vector<std::string> rdmaNames;
    for (const auto& rdma : f.rdma) {
        rdmaNames.push_back(rdma.name);
        for (const auto& verbs : rdma.uverbs) {
            if (Status s = builder.required("infiniband/" + verbs); !s)
                return s;
        }
    }
    // rdma_cm is shared by every RDMA device; verbs work without it, librdmacm does not.
    if (!f.rdma.empty()) {
        if (Status s = builder.optional("infiniband/rdma_cm"); !s)
            return s;
    }
    if (!interfaces.empty())
        builder.env("INTERFACE", text::join(interfaces, ","));
    if (!rdmaNames.empty())
        builder.env("RDMA_DEVICE", text::join(rdmaNames, ","));
    return Status::Ok();
}

}  // namespace

HostDeviceNodes::HostDeviceNodes(HostRoots roots) : roots_(std::move(roots)) {}

Result<DeviceNode> HostDeviceNodes::node(const std::string& relativePath) const {
    const std::string containerPath = "/dev/" + relativePath;
    const std::string lookup = roots_.devRoot + "/" + relativePath;
    struct stat info {};
    // stat, not lstat: /dev/dri/by-path and udev symlinks must resolve to the device itself.
    if (::stat(lookup.c_str(), &info) != 0) {
        const int err = errno;
        if (err == ENOENT) {
            return errorFromErrno(err, "").withMessage("device node " + containerPath +
                                                       " (looked up at " + lookup + ") is missing");
        }
        return errorFromErrno(
            err, "cannot stat device node " + containerPath + " (looked up at " + lookup + ")");
    }
    DeviceNode node;
    node.path = containerPath;  // hostPath stays empty: it equals path, and setting it needs 0.5.0
    if (S_ISCHR(info.st_mode)) {
        node.type = "c";
    } else if (S_ISBLK(info.st_mode)) {
        node.type = "b";
    } else {
        return Error{containerPath + " (looked up at " + lookup +
                     ") exists but is not a device node"};
    }
    node.major = static_cast<std::int64_t>(major(info.st_rdev));
    node.minor = static_cast<std::int64_t>(minor(info.st_rdev));
    return node;
}

bool HostDeviceNodes::exists(const std::string& relativePath) const {
    struct stat info {};
    return ::stat((roots_.devRoot + "/" + relativePath).c_str(), &info) == 0;
}

Result<int> HostDeviceNodes::nvidiaMinor(const std::string& pciAddress) const {
    const std::string path = roots_.procRoot + "/driver/nvidia/gpus/" + pciAddress + "/information";
    auto content = readWholeFile(path);
    if (!content) {
        return content.error().withMessage("cannot read " + path +
                                           " (is the nvidia driver bound to " + pciAddress +
                                           "?): " + content.error().message);
    }
    constexpr std::string_view kKey = "Device Minor:";
    for (auto line : text::split(content.value(), '\n')) {
        if (!text::startsWith(line, kKey))
            continue;
        const auto value = text::trim(line.substr(kKey.size()));
        auto number = text::parseInt(value);
        // 255 is nvidiactl's minor; GPUs count up from 0.
        if (!number || *number < 0 || *number > 254) {
            return Error{path + ": \"Device Minor:\" has the value \"" + std::string(value) +
                         "\", not a GPU minor number (0-254)"};
        }
        return static_cast<int>(*number);
    }
    return Error{path + " has no \"Device Minor:\" line"};
}

std::vector<NetDevice> netDeviceEdits(const discovery::PciFunction& function) {
    std::vector<NetDevice> out;
    if (function.kind != discovery::kKindNic || !function.sriovVf ||
        function.kernelDriver == "vfio-pci")
        return out;
    for (const auto& netdev : function.netdevs)
        out.push_back({netdev.name, netdev.name});
    return out;
}

bool usesNvidiaControlNodes(const discovery::PciFunction& function) {
    return function.vendorId == kVendorNvidia && function.kernelDriver == "nvidia";
}

Result<ContainerEdits> nvidiaControlEdits(const HostDeviceNodes& host) {
    EditsBuilder builder(host, "");
    for (const char* shared : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
        if (Status s = builder.optional(shared); !s)
            return s.error();
    }
    return builder.take();
}

std::string envPrefix(const std::string& deviceName) {
    std::string out = "NUMADRA_";
    for (char c : deviceName) {
        if (c >= 'a' && c <= 'z')
            out += static_cast<char>(c - 'a' + 'A');
        else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            out += c;
        else
            out += '_';
    }
    return out + "_";
}

Result<ContainerEdits> pciDeviceEdits(const discovery::PciFunction& function,
                                      const std::string& deviceName, const HostDeviceNodes& host) {
    const bool isNic = function.kind == discovery::kKindNic;
    if (!isGpuOrAccelerator(function) && !isNic) {
        return Error{describe(function, deviceName) + " has kind \"" + function.kind +
                     "\"; only gpu, accelerator and nic devices get container edits"};
    }
    EditsBuilder builder(host, envPrefix(deviceName));
    builder.env("PCI_BUS_ID", function.address);
    if (!function.pcieRoot.empty())
        builder.env("PCIE_ROOT", function.pcieRoot);
    if (function.numaNode && *function.numaNode >= 0)
        builder.env("NUMA_NODE", std::to_string(*function.numaNode));

    Status status;
    if (function.kernelDriver == "vfio-pci") {
        // Whatever the device is, with vfio-pci the container drives it through VFIO only.
        status = vfioEdits(function, deviceName, builder);
    } else if (isNic) {
        status = nicEdits(function, builder);
    } else if (usesNvidiaControlNodes(function)) {
        status = nvidiaEdits(function, host, builder);
    } else if (function.vendorId == kVendorAmd && function.kernelDriver == "amdgpu") {
        status = amdEdits(function, deviceName, builder);
    } else {
        status = drmEdits(function, deviceName, builder);
    }
    if (!status)
        return status.error();
    return builder.take();
}

ContainerEdits cpuShareEdits(const CpuShare& share) {
    const std::string prefix =
        envPrefix(share.shareId ? share.deviceName + "-" + *share.shareId : share.deviceName);
    std::vector<int> cpus = share.cpus;
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    ContainerEdits edits;
    edits.env.push_back(prefix + "CPUS=" + text::formatRangeList(cpus));
    edits.env.push_back(prefix + "NUMA_NODE=" + std::to_string(share.numaNode));
    // A consumed 0 is the capacity's default filled in by the scheduler when the claim asked for
    // no memory: the container got none, so it gets no variable saying it did.
    if (share.memoryBytes && *share.memoryBytes > 0)
        edits.env.push_back(prefix + "MEMORY=" + std::to_string(*share.memoryBytes));
    return edits;
}

std::string claimVariable(const std::string& claimUid) {
    std::string name(kClaimVariablePrefix);
    for (char c : claimUid) {
        const auto u = static_cast<unsigned char>(c);
        name.push_back(std::isalnum(u) ? static_cast<char>(std::toupper(u)) : '_');
    }
    return name + "=" + claimUid;
}

std::vector<std::string> claimUidsInEnvironment(const std::vector<std::string>& environment) {
    std::set<std::string> uids;
    for (const std::string& entry : environment) {
        if (!entry.starts_with(kClaimVariablePrefix))
            continue;
        const auto equals = entry.find('=');
        if (equals == std::string::npos || equals + 1 == entry.size())
            continue;
        std::string uid = entry.substr(equals + 1);
        // Only a variable whose name is the one claimVariable gives this value counts: another
        // program's NUMADRA_CLAIM_X=y names no claim of ours.
        if (claimVariable(uid) == entry)
            uids.insert(std::move(uid));
    }
    return {uids.begin(), uids.end()};
}

}  // namespace numadra::cdi
