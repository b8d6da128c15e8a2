#pragma once
// Internal: the sysfs readers discover() is made of.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/discovery/machine.hpp"
#include "numadra/discovery/pci_names.hpp"
#include "numadra/discovery/sysfs.hpp"

namespace numadra::discovery::detail {

// Collects diagnostics while reading; every helper names the file it failed on.
class Reader {
  public:
    // `unannounced`: where remember() puts what it reads (nullptr: nowhere).
    Reader(const Sysfs& sysfs, std::vector<Diagnostic>& diagnostics,
           std::vector<UnannouncedRead>* unannounced = nullptr)
        : sysfs_(sysfs), diagnostics_(diagnostics), unannounced_(unannounced) {}

    const Sysfs& sysfs() const { return sysfs_; }
    // A reader of a folder of this tree (Sysfs::folder) that reports into the same list. It
    // remembers nothing: its paths are not the root's.
    Reader forFolder(const Sysfs& folder) const { return Reader(folder, diagnostics_); }
    void warn(std::string_view relative, std::string message);
    // Reads what the kernel can change without a uevent (Machine::unannounced), before the scan
    // reads it in its own way.
    void remember(UnannouncedRead::What what, const std::string& relative);

    // The file's text::attributeText (no surrounding whitespace, nothing from a NUL byte on);
    // nullopt if missing/unreadable. A missing file is reported only when `required`; every
    // parser below reports a value it cannot parse and returns nullopt for it.
    std::optional<std::string> text(std::string_view relative, bool required);
    std::optional<std::int64_t> integer(std::string_view relative, bool required);
    std::optional<std::uint64_t> hexNumber(std::string_view relative, bool required);
    // Kernel range list ("0-3,8"), as in cpulist files.
    std::optional<std::vector<int>> rangeList(std::string_view relative, bool required);
    // Kernel hex CPU mask ("00000000,0000ffff"), as in cpumap files.
    std::optional<std::vector<int>> cpuMask(std::string_view relative, bool required);
    // A CPU set from its list file, or from its mask twin when the list is missing or cannot be
    // parsed: kernels before the *_list files have only the mask (hwloc reads only masks).
    // Neither file is required.
    std::optional<std::vector<int>> cpuSet(std::string_view listFile, std::string_view maskFile);

    // Diagnostics so far; with the two below, a reader that reads files out of their usual
    // order can still report in that order.
    size_t diagnosticCount() const { return diagnostics_.size(); }
    // Moves the diagnostics [from, to) after the later ones.
    void moveDiagnosticsToEnd(size_t from, size_t to);
    // Drops the diagnostics from `from` on.
    void dropDiagnostics(size_t from);

  private:
    const Sysfs& sysfs_;
    std::vector<Diagnostic>& diagnostics_;
    std::vector<UnannouncedRead>* unannounced_;
};

// An UnannouncedRead's value as read now: one function for the scan and for the check.
std::string readUnannounced(const Sysfs& sysfs, UnannouncedRead::What what,
                            const std::string& relative);
// The bytes of the "MemTotal: <n> kB" line of a meminfo file ("Node 0 MemTotal:" in a node's).
std::optional<std::uint64_t> parseMemTotal(std::string_view meminfo);

void readNumaAndCpus(Reader& reader, Machine& machine);
void readPciFunctions(Reader& reader, const PciNameDatabase* names, Machine& machine);
// The Device Serial Number of every function with a kind (classify first) that is not a VF.
void readSerialNumbers(Reader& reader, Machine& machine);

// "0000:1a:00.0" (domain of 4 or more hex digits), lowercase.
bool isPciAddress(std::string_view name);
// "pci0000:00" / "pci10000:e0"
bool isPciRootName(std::string_view name);

}  // namespace numadra::discovery::detail
