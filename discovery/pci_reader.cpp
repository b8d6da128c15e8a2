// PCI functions (bus/pci/devices) and what hangs below them (netdevs, RDMA, DRM, SR-IOV).

#include <algorithm>
#include <map>
#include <string_view>
#include <unordered_map>

#include "numadra/common/text.hpp"
#include "readers.hpp"

namespace numadra::discovery::detail {

namespace {

constexpr std::string_view kPciDevices = "bus/pci/devices";

std::string functionFile(const PciFunction& function, std::string_view file) {
    return joinPath(function.devicePath, file);
}

// Where a function's own files are read from: `reader` is of the function's parent folder (or
// of the root, when that folder cannot be opened), `self` the function's folder relative to it.
// Diagnostics name whole paths either way.
struct FunctionFiles {
    Reader& reader;
    std::string self;
    const Sysfs& sysfs() const { return reader.sysfs(); }
    std::string file(std::string_view name) const { return joinPath(self, name); }
};

// The parent folder of the functions being read, held open: functions in address order mostly
// share it (a bridge's PF and its VFs), and a file opened as "<bdf>/<file>" from it spares the
// kernel the walk of the whole path from the root (devices/pci0000:00/0000:00:03.1/...).
class ParentFolders {
  public:
    explicit ParentFolders(Reader& root) : root_(root) {}

    FunctionFiles filesOf(const std::string& devicePath) {
        const auto slash = devicePath.rfind('/');
        if (slash == std::string::npos || slash == 0)
            return {root_, devicePath};
        const std::string_view parent(devicePath.data(), slash);
        if (!open_ || parent != parentPath_) {
            reader_.reset();
            folder_ = root_.sysfs().folder(parent);
            if (folder_)
                reader_.emplace(root_.forFolder(*folder_));
            parentPath_ = parent;
            open_ = true;
        }
        if (!reader_)
            return {root_, devicePath};
        return {*reader_, devicePath.substr(slash + 1)};
    }

  private:
    Reader& root_;
    bool open_ = false;
    std::string parentPath_;
    std::optional<Sysfs> folder_;
    std::optional<Reader> reader_;  // of *folder_
};

// The root complex: the first "pciDDDD:BB" component of the resolved path. Looking past the
// first component (rather than requiring "devices/pci...") keeps Hyper-V/VMBus layouts working.
std::string pcieRootOf(std::string_view devicePath) {
    size_t start = 0;
    while (start <= devicePath.size()) {
        size_t end = devicePath.find('/', start);
        if (end == std::string_view::npos)
            end = devicePath.size();
        const auto component = devicePath.substr(start, end - start);
        if (isPciRootName(component))
            return std::string(component);
        start = end + 1;
    }
    return {};
}

PciLink readLink(const FunctionFiles& files, std::string_view prefix) {
    PciLink link;
    const std::string speedFile = files.file(std::string(prefix) + "_link_speed");
    if (auto speed = files.reader.text(speedFile, false)) {
        link.speedGTs = text::parseLeadingDouble(*speed);  // "Unknown" stays unknown
    }
    const std::string widthFile = files.file(std::string(prefix) + "_link_width");
    if (auto width = files.reader.integer(widthFile, false); width && *width > 0) {
        link.width = static_cast<int>(*width);
    }
    return link;
}

std::optional<int> numberAfterLastSlash(const std::string& path) {
    auto value = text::parseInt(baseName(path));
    if (!value)
        return std::nullopt;
    return static_cast<int>(*value);
}

// A VF as its PF's virtfnK link shows it.
struct LinkedVf {
    std::string pfAddress;
    std::string devicePath;  // the link resolved: the VF's folder
};
// VF address -> what the virtfnK links of the PFs read so far say of it.
using KnownVfs = std::unordered_map<std::string, LinkedVf>;

// The PF's SR-IOV files; the VFs its virtfnK links name go into `knownVfs`.
void readSriovPf(const FunctionFiles& files, PciFunction& function, KnownVfs& knownVfs) {
    Reader& reader = files.reader;
    const Sysfs& sysfs = files.sysfs();
    auto total = reader.integer(files.file("sriov_totalvfs"), false);
    if (!total)
        return;
    SriovPhysicalFunction pf;
    pf.totalVfs = static_cast<int>(*total);
    pf.numVfs = static_cast<int>(reader.integer(files.file("sriov_numvfs"), true).value_or(0));
    if (pf.numVfs > 0) {
        // virtfnK links do not list in numeric order (virtfn10 < virtfn2): index by K.
        // Index -> address and folder of the VF.
        std::map<int, std::pair<std::string, std::string>> byIndex;
        for (const auto& entry : sysfs.list(files.self)) {
            if (!text::startsWith(entry, "virtfn"))
                continue;
            auto index = text::parseInt(std::string_view(entry).substr(6));
            auto target = sysfs.readLink(files.file(entry));
            if (!index || !target)
                continue;
            byIndex[static_cast<int>(*index)] = {
                baseName(target.value()),
                resolveLinkTarget(functionFile(function, entry), target.value())};
        }
        for (auto& [index, vf] : byIndex) {
            if (static_cast<int>(pf.vfAddresses.size()) != index) {
                reader.warn(files.file("virtfn" + std::to_string(index)),
                            "VF index gap before this link");
            }
            pf.vfAddresses.push_back(vf.first);
            knownVfs.emplace(std::move(vf.first), LinkedVf{function.address, std::move(vf.second)});
        }
    }
    function.sriovPf = std::move(pf);
}

// A VF netdev is known by name only: its link type and speed are its PF's, its MAC matters only
// once the VF is prepared, and its state is the health monitor's to watch. Reading them all
// for hundreds of VFs would double the cost of a scan.
NetInterface readNetInterface(Reader& reader, std::string path, std::string name, bool nameOnly) {
    NetInterface netdev;
    netdev.name = std::move(name);
    netdev.path = std::move(path);
    if (nameOnly)
        return netdev;
    auto file = [&](std::string_view f) { return joinPath(netdev.path, f); };
    netdev.mac = reader.text(file("address"), false).value_or("");
    if (auto type = reader.integer(file("type"), false))
        netdev.linkType = static_cast<int>(*type);
    // speed/carrier of an admin-down interface fail with EINVAL: unknown, not an error.
    reader.remember(UnannouncedRead::What::FileText, file("speed"));
    if (auto content = reader.sysfs().read(file("speed"))) {
        auto speed = text::parseInt(content.value());
        if (speed && *speed > 0 && *speed < 0xffffffffLL)
            netdev.speedMbps = *speed;
    }
    netdev.operstate = reader.text(file("operstate"), false).value_or("");
    if (auto content = reader.sysfs().read(file("carrier"))) {
        if (auto carrier = text::parseInt(content.value()))
            netdev.carrier = *carrier != 0;
    }
    if (auto mtu = reader.integer(file("mtu"), false))
        netdev.mtu = static_cast<int>(*mtu);
    return netdev;
}

RdmaDevice readRdmaDevice(Reader& reader, const std::string& path, std::string name) {
    RdmaDevice rdma;
    rdma.name = std::move(name);
    rdma.nodeGuid = reader.text(joinPath(path, "node_guid"), false).value_or("");
    return rdma;
}

// Index of the function whose device path is the longest prefix of `classDevicePath`: class
// devices can sit below the function (virtio-net: <bdf>/virtio2/net/eth0).
// Functions by device path (views of the functions' own strings).
using FunctionsByPath = std::unordered_map<std::string_view, size_t>;

std::optional<size_t> owningFunction(const FunctionsByPath& byPath,
                                     std::string_view classDevicePath) {
    while (!classDevicePath.empty()) {
        if (auto it = byPath.find(classDevicePath); it != byPath.end())
            return it->second;
        // dirName() without a copy
        while (classDevicePath.size() > 1 && classDevicePath.back() == '/')
            classDevicePath.remove_suffix(1);
        const auto slash = classDevicePath.rfind('/');
        classDevicePath =
            slash == std::string_view::npos ? std::string_view() : classDevicePath.substr(0, slash);
    }
    return std::nullopt;
}

// Walks class/<name>/* once and hands each class device to its PCI function, in name order.
template <class Visit>
void forEachClassDevice(const Sysfs& sysfs, std::string_view className,
                        const FunctionsByPath& byPath, std::vector<PciFunction>& functions,
                        Visit visit) {
    const std::string folder = "class/" + std::string(className);
    const std::vector<std::string> names = sysfs.list(folder);
    if (names.empty())
        return;
    // The links are read from the class folder held open (each a one-component path).
    const std::optional<Sysfs> classFolder = sysfs.folder(folder);
    std::string link = folder + "/";
    for (const auto& name : names) {
        link.resize(folder.size() + 1);
        link += name;
        auto target = classFolder ? classFolder->readLink(name) : sysfs.readLink(link);
        if (!target)
            continue;  // a plain folder (old layouts) or unreadable: not a class link
        const std::string path = resolveLinkTarget(link, target.value());
        const std::string_view devicePath = path;
        const auto slash = devicePath.rfind('/');
        if (auto owner = owningFunction(byPath, slash == std::string_view::npos
                                                    ? std::string_view()
                                                    : devicePath.substr(0, slash))) {
            visit(functions[*owner], path, name);
        }
    }
}

void readChildren(Reader& reader, std::vector<PciFunction>& functions) {
    const Sysfs& sysfs = reader.sysfs();
    FunctionsByPath byPath(functions.size());
    for (size_t i = 0; i < functions.size(); ++i)
        byPath.emplace(functions[i].devicePath, i);
    for (const char* folder : {"class/net", "class/infiniband", "class/drm"})
        reader.remember(UnannouncedRead::What::Listing, folder);

    forEachClassDevice(
        sysfs, "net", byPath, functions,
        [&](PciFunction& f, const std::string& path, const std::string& name) {
            f.netdevs.push_back(readNetInterface(reader, path, name, f.sriovVf.has_value()));
        });
    forEachClassDevice(sysfs, "infiniband", byPath, functions,
                       [&](PciFunction& f, const std::string& path, const std::string& name) {
                           f.rdma.push_back(readRdmaDevice(reader, path, name));
                       });
    forEachClassDevice(
        sysfs, "drm", byPath, functions,
        [&](PciFunction& f, const std::string&, const std::string& name) {
            if (text::startsWith(name, "card") || text::startsWith(name, "renderD")) {
                if (name.find('-') == std::string::npos)
                    f.drm.push_back(name);
            }
        });
    // Trees without class/ link farms (hand-reduced ones): look directly below each function.
    // A real sysfs always has class/, and class/<x> whenever <x> has members.
    const bool scanFunctions = !sysfs.isDirectory("class");
    const bool scanNet = scanFunctions;
    const bool scanInfiniband = scanFunctions;
    const bool scanDrm = scanFunctions;
    for (auto& f : functions) {
        if (scanNet && f.netdevs.empty()) {
            for (const auto& name : sysfs.list(functionFile(f, "net"))) {
                f.netdevs.push_back(readNetInterface(reader, functionFile(f, "net/" + name), name,
                                                     f.sriovVf.has_value()));
            }
        }
        if (scanInfiniband && f.rdma.empty()) {
            for (const auto& name : sysfs.list(functionFile(f, "infiniband"))) {
                f.rdma.push_back(
                    readRdmaDevice(reader, functionFile(f, "infiniband/" + name), name));
            }
        }
        if (scanDrm && f.drm.empty()) {
            for (const auto& name : sysfs.list(functionFile(f, "drm"))) {
                if ((text::startsWith(name, "card") || text::startsWith(name, "renderD")) &&
                    name.find('-') == std::string::npos) {
                    f.drm.push_back(name);
                }
            }
        }
        // uverbs char devices of each RDMA device sit beside it.
        for (auto& rdma : f.rdma) {
            for (const auto& verbs : sysfs.list(functionFile(f, "infiniband_verbs"))) {
                auto ibdev =
                    reader.sysfs().read(functionFile(f, "infiniband_verbs/" + verbs + "/ibdev"));
                if (!ibdev || text::attributeText(ibdev.value()) == rdma.name ||
                    f.rdma.size() == 1) {
                    rdma.uverbs.push_back(verbs);
                }
            }
        }
        std::sort(f.netdevs.begin(), f.netdevs.end(),
                  [](const NetInterface& a, const NetInterface& b) { return a.name < b.name; });
        std::sort(f.drm.begin(), f.drm.end());
    }
}

// VFs share their PF's link, CPU locality and link layer.
void inheritFromPf(Machine& machine) {
    for (auto& f : machine.pci) {
        if (!f.sriovVf)
            continue;
        if (const auto* pf = machine.pciFunction(f.sriovVf->pfAddress)) {
            f.currentLink = pf->currentLink;
            f.maxLink = pf->maxLink;
            f.localCpus = pf->localCpus;
            if (!pf->netdevs.empty()) {
                for (auto& netdev : f.netdevs)
                    netdev.linkType = pf->netdevs.front().linkType;
            }
        }
    }
}

void resolveVfIndexes(Machine& machine) {
    // Views of the PFs' strings, which this does not change.
    std::unordered_map<std::string_view, std::pair<std::string_view, int>> vfToPf;
    for (const auto& f : machine.pci) {
        if (!f.sriovPf)
            continue;
        for (size_t k = 0; k < f.sriovPf->vfAddresses.size(); ++k) {
            vfToPf[f.sriovPf->vfAddresses[k]] = {f.address, static_cast<int>(k)};
        }
    }
    for (auto& f : machine.pci) {
        auto it = vfToPf.find(f.address);
        if (it == vfToPf.end())
            continue;
        if (!f.sriovVf)
            f.sriovVf = SriovVirtualFunction{std::string(it->second.first), -1};
        if (f.sriovVf->pfAddress == it->second.first)
            f.sriovVf->index = it->second.second;
    }
}

// The identity values of a function. The kernel's uevent file holds them all (class, ids,
// bound driver) in one read; trees without it fall back to one file per value.
struct PciIdentity {
    std::optional<std::uint32_t> classCode;
    std::optional<std::uint16_t> vendorId, deviceId, subsystemVendorId, subsystemDeviceId;
    std::optional<std::string> driver;  // set (possibly empty) when the source says
    bool missingFolder = false;         // the bus link dangles
};

std::optional<std::pair<std::uint16_t, std::uint16_t>> idPair(std::string_view text) {
    const auto colon = text.find(':');
    if (colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos)
        return std::nullopt;
    auto a = text::parseHex(text.substr(0, colon));
    auto b = text::parseHex(text.substr(colon + 1));
    if (!a || !b || *a > 0xffff || *b > 0xffff)
        return std::nullopt;
    return std::pair{static_cast<std::uint16_t>(*a), static_cast<std::uint16_t>(*b)};
}

PciIdentity identityFromUevent(const FunctionFiles& files) {
    Reader& reader = files.reader;
    PciIdentity id;
    auto uevent = files.sysfs().read(files.file("uevent"));
    if (!uevent) {
        id.missingFolder = !files.sysfs().isDirectory(files.self);
        return id;
    }
    id.driver = std::string();
    const std::string_view content = text::attributeText(uevent.value());
    for (size_t start = 0; start <= content.size();) {
        size_t end = content.find('\n', start);
        if (end == std::string_view::npos)
            end = content.size();
        const std::string_view line = content.substr(start, end - start);
        start = end + 1;
        auto eq = line.find('=');
        if (eq == std::string_view::npos)
            continue;
        auto key = line.substr(0, eq);
        auto value = text::trim(line.substr(eq + 1));
        auto malformed = [&] {
            reader.warn(files.file("uevent"),
                        "malformed " + std::string(key) + "='" + std::string(value) + "'");
        };
        if (key == "PCI_CLASS") {
            auto cls = text::parseHex(value);
            if (cls && *cls <= 0xffffff) {
                id.classCode = static_cast<std::uint32_t>(*cls);
            } else {
                malformed();
            }
        } else if (key == "PCI_ID" || key == "PCI_SUBSYS_ID") {
            auto ids = idPair(value);
            if (!ids) {
                malformed();
            } else if (key == "PCI_ID") {
                std::tie(id.vendorId, id.deviceId) = *ids;
            } else {
                std::tie(id.subsystemVendorId, id.subsystemDeviceId) = *ids;
            }
        } else if (key == "DRIVER") {
            id.driver = std::string(value);
        }
    }
    return id;
}

// False when the function's folder does not exist.
bool readIdentity(const FunctionFiles& files, PciFunction& f) {
    Reader& reader = files.reader;
    PciIdentity id = identityFromUevent(files);
    if (id.missingFolder)
        return false;
    if (!id.classCode) {
        id.classCode = static_cast<std::uint32_t>(
            reader.hexNumber(files.file("class"), true).value_or(0) & 0xffffff);
    }
    auto id16 = [&](std::optional<std::uint16_t>& target, std::string_view file, bool required) {
        if (!target)
            target = static_cast<std::uint16_t>(
                reader.hexNumber(files.file(file), required).value_or(0) & 0xffff);
    };
    id16(id.vendorId, "vendor", true);
    id16(id.deviceId, "device", true);
    id16(id.subsystemVendorId, "subsystem_vendor", false);
    id16(id.subsystemDeviceId, "subsystem_device", false);
    if (!id.driver) {
        auto driver = files.sysfs().readLink(files.file("driver"));
        id.driver = driver ? baseName(driver.value()) : std::string();
    }
    f.classCode = *id.classCode;
    f.vendorId = *id.vendorId;
    f.deviceId = *id.deviceId;
    f.subsystemVendorId = *id.subsystemVendorId;
    f.subsystemDeviceId = *id.subsystemDeviceId;
    f.kernelDriver = *id.driver;
    return true;
}

void readLocality(const FunctionFiles& files, PciFunction& f) {
    // Older kernels and hand-reduced trees have only the hex mask.
    if (auto cpus = files.reader.cpuSet(files.file("local_cpulist"), files.file("local_cpus")))
        f.localCpus = *cpus;
    f.currentLink = readLink(files, "current");
    f.maxLink = readLink(files, "max");
}

// The function's folder from its bus/pci/devices link, and its identity; false (reported) when
// the link does not lead to the function's folder.
bool locateByBusLink(Reader& reader, ParentFolders& folders, const std::string& address,
                     PciFunction& f) {
    const Sysfs& sysfs = reader.sysfs();
    const std::string busEntry = std::string(kPciDevices) + "/" + address;
    auto resolved = sysfs.resolveLink(busEntry);
    if (!resolved) {
        // Some hand-made trees use plain folders instead of links.
        if (!sysfs.isDirectory(busEntry)) {
            reader.warn(busEntry, "not a link to a device folder: " + resolved.error().message);
            return false;
        }
        resolved = busEntry;
    }
    if (baseName(resolved.value()) != address) {
        reader.warn(busEntry, "link target '" + resolved.value() + "' is not this device's folder");
        return false;
    }
    f.address = address;
    f.devicePath = std::move(resolved).value();
    f.pcieRoot = pcieRootOf(f.devicePath);
    if (!readIdentity(folders.filesOf(f.devicePath), f)) {
        reader.warn(busEntry, "link target '" + f.devicePath + "' does not exist");
        return false;
    }
    return true;
}

// Reads the function into `f` (a new, empty one); false when it cannot be located.
bool readFunction(Reader& reader, ParentFolders& folders, const PciNameDatabase* names,
                  const std::string& address, KnownVfs& knownVfs, PciFunction& f) {
    // A VF that its PF's virtfnK link named: that link led to its folder as the bus link would
    // (both are links to the one device), so the bus link is not read. Should the folder not
    // be there, the bus link decides and reports as for any function.
    const auto known = knownVfs.find(address);
    bool located = false;
    if (known != knownVfs.end() && baseName(known->second.devicePath) == address) {
        f.address = address;
        f.devicePath = known->second.devicePath;
        f.pcieRoot = pcieRootOf(f.devicePath);
        // A failed readIdentity changes nothing; the bus link sets the rest anew.
        located = readIdentity(folders.filesOf(f.devicePath), f);
    }
    if (!located && !locateByBusLink(reader, folders, address, f))
        return false;
    const FunctionFiles files = folders.filesOf(f.devicePath);
    const Sysfs& sysfs = files.sysfs();

    if (auto node = files.reader.integer(files.file("numa_node"), false)) {
        if (*node < -1 || *node >= 1024) {
            files.reader.warn(files.file("numa_node"),
                              "NUMA node " + std::to_string(*node) + " out of range");
        } else {
            f.numaNode = static_cast<int>(*node);
        }
    }
    if (auto group = sysfs.readLink(files.file("iommu_group")))
        f.iommuGroup = numberAfterLastSlash(group.value());
    // A VF: its link and CPU locality are its PF's (copied once all functions are read). The
    // kernel makes a VF's physfn link before its PF's virtfnK link and removes it after, so a VF
    // that a PF read before names by virtfnK has that PF as physfn: no need to read it again
    // (VFs come after their PF in address order; one that comes first reads its physfn).
    if (known != knownVfs.end()) {
        f.sriovVf = SriovVirtualFunction{known->second.pfAddress, -1};
    } else if (auto physfn = sysfs.readLink(files.file("physfn"))) {
        f.sriovVf = SriovVirtualFunction{baseName(physfn.value()), -1};
    } else {
        readLocality(files, f);
        readSriovPf(files, f, knownVfs);
    }

    if (names != nullptr) {
        f.vendorName = names->vendorName(f.vendorId);
        f.deviceName = names->deviceName(f.vendorId, f.deviceId);
    }
    if (f.vendorName.empty())
        f.vendorName = "0x" + text::hex(f.vendorId, 4);
    if (f.deviceName.empty())
        f.deviceName = "0x" + text::hex(f.deviceId, 4);
    return true;
}

}  // namespace

void readPciFunctions(Reader& reader, const PciNameDatabase* names, Machine& machine) {
    std::vector<std::string> addresses;
    reader.remember(UnannouncedRead::What::Listing, std::string(kPciDevices));
    for (const auto& address : reader.sysfs().list(kPciDevices)) {
        if (isPciAddress(address)) {
            addresses.push_back(address);
        } else {
            reader.warn(std::string(kPciDevices) + "/" + address, "not a PCI address; skipped");
        }
    }
    machine.pci.reserve(addresses.size());
    KnownVfs knownVfs;
    ParentFolders folders(reader);
    for (const auto& address : addresses) {
        // Read in place: a PciFunction is ~30 members, not worth moving twice per function.
        if (!readFunction(reader, folders, names, address, knownVfs, machine.pci.emplace_back()))
            machine.pci.pop_back();
    }
    readChildren(reader, machine.pci);
    resolveVfIndexes(machine);
    inheritFromPf(machine);
}

}  // namespace numadra::discovery::detail
