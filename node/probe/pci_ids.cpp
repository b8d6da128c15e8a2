#include "numadra/probe/pci_ids.hpp"

extern "C" {
#include <pci/pci.h>
}
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <bitset>
#include <memory>

#include "numadra/common/unique_fd.hpp"
#include "numadra/discovery/pci_names.hpp"

namespace numadra::probe {

namespace {

// libpci reads a line into 1,024 bytes with its '\n' and a NUL; a longer one ends its parse.
constexpr size_t kLongestLine = 1022;
// discovery::PciNameDatabase's buffer; pci_lookup_name ends a longer name with "...".
constexpr size_t kNameBuffer = 256;

bool isBlank(char c) {
    return c == ' ' || c == '\t';
}

// Hex digit values, -1 for anything else (libpci's id_hex takes both cases).
constexpr std::array<signed char, 256> kHexDigit = [] {
    std::array<signed char, 256> table{};
    table.fill(-1);
    for (int c = 0; c < 10; ++c)
        table[static_cast<size_t>('0' + c)] = static_cast<signed char>(c);
    for (int c = 0; c < 6; ++c) {
        table[static_cast<size_t>('a' + c)] = static_cast<signed char>(10 + c);
        table[static_cast<size_t>('A' + c)] = static_cast<signed char>(10 + c);
    }
    return table;
}();

// libpci's id_hex: `count` hex digits at `at`, or -1. Without a branch per digit: a scan checks
// ~30,000 ids on its way to the machine's vendors.
inline int hexAt(std::string_view s, size_t at, size_t count) {
    if (s.size() < at + count)
        return -1;
    int value = 0;
    int invalid = 0;  // negative once any digit is not one
    for (size_t i = at; i < at + count; ++i) {
        const int digit = kHexDigit[static_cast<unsigned char>(s[i])];
        invalid |= digit;
        value = value * 16 + digit;
    }
    return invalid < 0 ? -1 : value;
}

// An id of `count` hex digits that a blank follows, as libpci requires; else -1.
inline int idAt(std::string_view s, size_t at, size_t count) {
    const int id = hexAt(s, at, count);
    return id >= 0 && s.size() > at + count && isBlank(s[at + count]) ? id : -1;
}

std::string bufferedName(std::string_view name) {
    if (name.size() < kNameBuffer)
        return std::string(name);
    return std::string(name.substr(0, kNameBuffer - 4)) + "...";
}

// libpci's id_parse_list, one line at a time, keeping the names `wanted` asks for. It makes
// every check libpci makes and refuses (returns false) where libpci would stop with an error,
// and also where ids do not ascend: then no entry can be a duplicate, which libpci stops at too.
class Scanner {
  public:
    explicit Scanner(const std::vector<PciId>& wanted) : wanted_(wanted) {
        std::sort(wanted_.begin(), wanted_.end());
        for (const auto& id : wanted_)
            wantedVendors_.set(id.vendor);
        vendorsToFind_ = wantedVendors_.count();
    }

    // Once every wanted vendor is found and its block has ended, no later line can change an
    // answer: libpci keeps the first entry of an id (a second one ends its parse), and a
    // device is only ever read within the block of its vendor.
    bool answered() const { return answered_; }

    // One line without its '\n', and without what follows a '\r' (libpci ends lines there too).
    bool line(std::string_view raw, std::string_view s) {
        if (raw.size() > kLongestLine)
            return false;
        if (!s.empty() && isBlank(s.back()))
            s.remove_suffix(1);  // one, as libpci
        size_t nest = 0;
        while (nest < s.size() && s[nest] == '\t')
            ++nest;
        size_t first = nest;
        while (first < s.size() && isBlank(s[first]))
            ++first;
        if (first == s.size() || s[first] == '#')
            return true;
        const std::string_view p = s.substr(nest);
        if (nest == 0 && vendorsToFind_ == 0) {
            answered_ = true;
            return true;
        }
        if (nest == 0)
            return topLevel(p);
        if (category_ == Category::Unknown)
            return true;  // libpci skips what an unknown block holds, unchecked
        if (nest == 1)
            return levelOne(p);
        if (nest == 2)
            return levelTwo(p);
        return false;
    }

    PciIdNames take() { return std::move(names_); }

  private:
    enum class Category {
        None,
        Vendor,
        Device,
        Subsystem,
        GenericSubsystem,
        Class,
        Subclass,
        ProgIf,
        Unknown
    };

    static bool ascends(std::int64_t id, std::int64_t& last) {
        if (id <= last)
            return false;
        last = id;
        return true;
    }

    bool topLevel(std::string_view p) {
        lastLevelOne_ = -1;
        lastLevelTwo_ = -1;
        if (p.size() > 1 && p[0] == 'C' && p[1] == ' ') {
            const int id = idAt(p, 2, 2);
            category_ = Category::Class;
            return id >= 0 && ascends(id, lastClass_) && named(p, 5);
        }
        if (p.size() > 1 && p[0] == 'S' && p[1] == ' ') {
            const int vendor = hexAt(p, 2, 4);
            category_ = Category::GenericSubsystem;
            return vendor >= 0 && p.size() == 6 && seenVendors_.test(static_cast<size_t>(vendor)) &&
                   ascends(vendor, lastGenericSubsystem_);
        }
        if (p.size() > 1 && p[0] >= 'A' && p[0] <= 'Z' && p[1] == ' ') {
            category_ = Category::Unknown;
            return true;
        }
        vendor_ = idAt(p, 0, 4);
        category_ = Category::Vendor;
        if (vendor_ < 0 || !ascends(vendor_, lastVendor_))
            return false;
        seenVendors_.set(static_cast<size_t>(vendor_));
        std::string_view name;
        if (!named(p, 5, &name))
            return false;
        if (wantedVendors_.test(static_cast<size_t>(vendor_))) {
            names_.vendors[static_cast<std::uint16_t>(vendor_)] = bufferedName(name);
            --vendorsToFind_;
        }
        return true;
    }

    bool levelOne(std::string_view p) {
        lastLevelTwo_ = -1;
        switch (category_) {
            case Category::Vendor:
            case Category::Device:
            case Category::Subsystem: {
                const int device = idAt(p, 0, 4);
                category_ = Category::Device;
                std::string_view name;
                if (device < 0 || !ascends(device, lastLevelOne_) || !named(p, 5, &name))
                    return false;
                const PciId id{static_cast<std::uint16_t>(vendor_),
                               static_cast<std::uint16_t>(device)};
                if (wantedVendors_.test(id.vendor) &&
                    std::binary_search(wanted_.begin(), wanted_.end(), id)) {
                    names_.devices[id] = bufferedName(name);
                }
                return true;
            }
            case Category::GenericSubsystem: {
                const int device = idAt(p, 0, 4);
                return device >= 0 && ascends(device, lastLevelOne_) && named(p, 5);
            }
            case Category::Class:
            case Category::Subclass:
            case Category::ProgIf: {
                const int subclass = idAt(p, 0, 2);
                category_ = Category::Subclass;
                return subclass >= 0 && ascends(subclass, lastLevelOne_) && named(p, 3);
            }
            default:
                return false;
        }
    }

    bool levelTwo(std::string_view p) {
        switch (category_) {
            case Category::Device:
            case Category::Subsystem: {
                const int subvendor = idAt(p, 0, 4);
                const int subdevice = idAt(p, 5, 4);
                category_ = Category::Subsystem;
                return subvendor >= 0 && subdevice >= 0 &&
                       ascends(std::int64_t{subvendor} << 16 | subdevice, lastLevelTwo_) &&
                       named(p, 10);
            }
            case Category::Subclass:
            case Category::ProgIf: {
                const int progIf = idAt(p, 0, 2);
                category_ = Category::ProgIf;
                return progIf >= 0 && ascends(progIf, lastLevelTwo_) && named(p, 3);
            }
            default:
                // Also a prog-if straight under a class, which libpci files under the stale
                // subclass id: too odd to vouch for.
                return false;
        }
    }

    // libpci requires a name after the id: blanks skipped, something left.
    static bool named(std::string_view p, size_t from, std::string_view* name = nullptr) {
        size_t start = from;
        while (start < p.size() && isBlank(p[start]))
            ++start;
        if (start >= p.size())
            return false;
        if (name != nullptr)
            *name = p.substr(start);
        return true;
    }

    std::vector<PciId> wanted_;
    std::bitset<0x10000> wantedVendors_;
    std::bitset<0x10000> seenVendors_;
    size_t vendorsToFind_ = 0;
    bool answered_ = false;
    PciIdNames names_;
    Category category_ = Category::None;
    int vendor_ = -1;
    std::int64_t lastVendor_ = -1;
    std::int64_t lastClass_ = -1;
    std::int64_t lastGenericSubsystem_ = -1;
    std::int64_t lastLevelOne_ = -1;
    std::int64_t lastLevelTwo_ = -1;
};

struct Unmap {
    size_t size = 0;
    void operator()(void* data) const { ::munmap(data, size); }
};
using Mapping = std::unique_ptr<void, Unmap>;

// The file mapped read-only (no copy of its 1.3 MB); empty when it cannot be.
Mapping mapFile(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat status {};
    if (!fd || ::fstat(fd.get(), &status) != 0 || status.st_size <= 0)
        return Mapping(nullptr, Unmap{});
    const auto size = static_cast<size_t>(status.st_size);
    void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
    if (data == MAP_FAILED)
        return Mapping(nullptr, Unmap{});
    return Mapping(data, Unmap{size});
}

// The file libpci reads by default: its compiled-in path, or that path without ".gz" when it
// does not exist ("" for a compressed file, which only libpci reads).
std::string defaultIdsFile() {
    pci_access* access = pci_alloc();
    if (access == nullptr)
        return {};
    std::string path = access->id_file_name != nullptr ? access->id_file_name : "";
    pci_cleanup(access);
    constexpr std::string_view kGz = ".gz";
    if (path.size() < kGz.size() || path.compare(path.size() - kGz.size(), kGz.size(), kGz) != 0)
        return path;
    struct stat status {};
    if (::stat(path.c_str(), &status) == 0)
        return {};
    return path.substr(0, path.size() - kGz.size());
}

std::optional<PciIdNames> scanDefaultIdsFile(const std::vector<PciId>& wanted) {
    const std::string path = defaultIdsFile();
    if (path.empty())
        return std::nullopt;
    const Mapping mapping = mapFile(path);
    if (!mapping)
        return std::nullopt;
    return scanPciIds({static_cast<const char*>(mapping.get()), mapping.get_deleter().size},
                      wanted);
}

PciIdNames namesFromLibpci(const std::vector<PciId>& wanted) {
    const discovery::PciNameDatabase database;
    PciIdNames names;
    for (const auto& id : wanted) {
        if (auto vendor = database.vendorName(id.vendor); !vendor.empty())
            names.vendors[id.vendor] = std::move(vendor);
        if (auto device = database.deviceName(id.vendor, id.device); !device.empty())
            names.devices[id] = std::move(device);
    }
    return names;
}

}  // namespace

std::optional<PciIdNames> scanPciIds(std::string_view text, const std::vector<PciId>& wanted) {
    // A NUL ends a line early in libpci, and files without '\r' need no look for one per line.
    if (text.find('\0') != std::string_view::npos)
        return std::nullopt;
    const bool carriageReturns = text.find('\r') != std::string_view::npos;
    Scanner scanner(wanted);
    while (!text.empty()) {
        const size_t end = text.find('\n');
        const std::string_view raw = text.substr(0, end);
        if (!scanner.line(raw, carriageReturns ? raw.substr(0, raw.find('\r')) : raw))
            return std::nullopt;
        if (scanner.answered() || end == std::string_view::npos)
            break;
        text.remove_prefix(end + 1);
    }
    return scanner.take();
}

void namePciFunctions(discovery::Machine& machine) {
    std::vector<PciId> wanted;
    for (const auto& f : machine.pci)
        wanted.push_back({f.vendorId, f.deviceId});
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    auto names = scanDefaultIdsFile(wanted);
    if (!names)
        names = namesFromLibpci(wanted);
    for (auto& f : machine.pci) {
        if (auto it = names->vendors.find(f.vendorId); it != names->vendors.end())
            f.vendorName = it->second;
        if (auto it = names->devices.find({f.vendorId, f.deviceId}); it != names->devices.end())
            f.deviceName = it->second;
    }
}

}  // namespace numadra::probe
