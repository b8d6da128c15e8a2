#pragma once
// Read access to a sysfs tree rooted anywhere (the directory that plays /sys), so mocked trees
// and real machines go through the same code. Nothing here follows symlinks implicitly except
// when reading a file's content: link targets are resolved lexically, never by walking the tree.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::discovery {

// A file held open for positioned reads of binary content. Made for PCI config space, where the
// kernel performs a config access per dword read: a reader fetches only the bytes it needs
// instead of the whole 4096 bytes.
class SysfsFile {
  public:
    SysfsFile(SysfsFile&& other) noexcept;
    SysfsFile& operator=(SysfsFile&& other) noexcept;
    SysfsFile(const SysfsFile&) = delete;
    SysfsFile& operator=(const SysfsFile&) = delete;
    ~SysfsFile();

    const std::string& path() const { return path_; }
    // Up to `size` bytes from `offset`: fewer at the end of the file, none past it. Errors name
    // the full path.
    Result<std::string> readAt(std::uint64_t offset, std::size_t size) const;

  private:
    friend class Sysfs;
    SysfsFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
    int fd_;
    std::string path_;
};

class Sysfs {
  public:
    // Opens the root once; every later access is relative to that descriptor, which spares the
    // kernel a walk of the root's own path on each of the thousands of reads of a scan.
    explicit Sysfs(std::string root);

    // The folder `relative` as a tree of its own: paths below it are resolved from its own
    // descriptor (a scan reading the files of many sibling folders walks the shared part of
    // their paths once), while path() and errors still name the whole path. nullopt when the
    // folder cannot be opened. Resolved links are relative to the folder, not to this root.
    std::optional<Sysfs> folder(std::string_view relative) const;

    const std::string& root() const { return root_; }
    // "<root>/<relative>"
    std::string path(std::string_view relative) const;

    // Content of a (small) file; errors name the full path.
    Result<std::string> read(std::string_view relative) const;
    // The file opened for readAt(); errors name the full path.
    Result<SysfsFile> open(std::string_view relative) const;
    // Target of a symlink, as stored.
    Result<std::string> readLink(std::string_view relative) const;
    // Target of a symlink resolved lexically against the link's folder and made relative to the
    // root ("bus/pci/devices/0000:00:01.0" -> "devices/pci0000:00/0000:00:01.0").
    Result<std::string> resolveLink(std::string_view relative) const;
    // Names in a folder, sorted; empty if the folder is missing.
    std::vector<std::string> list(std::string_view relative) const;
    bool exists(std::string_view relative) const;
    bool isDirectory(std::string_view relative) const;

  private:
    Sysfs(std::string root, int fd);
    std::string root_;
    std::shared_ptr<const int> rootFd_;  // closes on last copy; -1 when the root cannot be opened
    int fd() const { return *rootFd_; }
};

// Where a symlink at `link` (relative to the root) whose target reads `target` points, resolved
// lexically as Sysfs::resolveLink does, for a target read by other means.
std::string resolveLinkTarget(std::string_view link, std::string_view target);

// "a/b/../c/./d/" -> "a/c/d"; ".." above the start is kept out (clamped), as Go's path.Clean does
// for rooted paths.
std::string cleanPath(std::string_view path);
std::string joinPath(std::string_view base, std::string_view relative);
std::string baseName(std::string_view path);
std::string dirName(std::string_view path);

}  // namespace numadra::discovery
