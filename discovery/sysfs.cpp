#include "numadra/discovery/sysfs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "numadra/common/errors.hpp"

namespace numadra::discovery {

namespace {

// Owns a file descriptor for the duration of one read.
class FileDescriptor {
  public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0)
            ::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

  private:
    int fd_;
};

constexpr size_t kMaxSysfsFile = 1 << 20;  // sysfs attributes are at most a page; be generous

// A relative path as the *at() calls take it (no leading '/', "." for the root itself),
// NUL-terminated on the stack for the usual lengths: no allocation per system call.
class AtPath {
  public:
    explicit AtPath(std::string_view relative) {
        while (!relative.empty() && relative.front() == '/')
            relative.remove_prefix(1);
        if (relative.empty())
            relative = ".";
        if (relative.size() < sizeof small_) {
            std::memcpy(small_, relative.data(), relative.size());
            small_[relative.size()] = '\0';
            path_ = small_;
        } else {
            large_.assign(relative);
            path_ = large_.c_str();
        }
    }
    AtPath(const AtPath&) = delete;
    AtPath& operator=(const AtPath&) = delete;
    const char* c_str() const { return path_; }

  private:
    char small_[256];
    std::string large_;
    const char* path_;
};

// dirName() as a view of `path`.
std::string_view dirNameView(std::string_view path) {
    while (path.size() > 1 && path.back() == '/')
        path.remove_suffix(1);
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? std::string_view() : path.substr(0, slash);
}

// Appends the components of `path` to the clean path in out[0, length) (components joined by
// '/', no '/' at either end): empty and "." components are skipped, ".." drops the last
// component (nothing above the start). cleanPath(a + "/" + b) is appending a, then b. `out` has
// room for length + 1 + path.size() characters (no component comes out longer than it went in).
// Written into the buffer directly: link resolution runs ~1,100 times a scan.
size_t appendClean(char* out, size_t length, std::string_view path) {
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string_view::npos)
            end = path.size();
        const std::string_view part = path.substr(start, end - start);
        start = end + 1;
        if (part.empty() || part == ".")
            continue;
        if (part == "..") {
            while (length > 0 && out[length - 1] != '/')
                --length;
            if (length > 0)
                --length;  // the '/' before the dropped component
            continue;
        }
        if (length > 0)
            out[length++] = '/';
        std::memcpy(out + length, part.data(), part.size());
        length += part.size();
    }
    return length;
}

}  // namespace

Sysfs::Sysfs(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/')
        root_.pop_back();
    const int fd = ::open(root_.empty() ? "." : root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    rootFd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
        if (*p >= 0)
            ::close(*p);
        delete p;
    });
}

Sysfs::Sysfs(std::string root, int fd) : root_(std::move(root)) {
    rootFd_ = std::shared_ptr<const int>(new int(fd), [](const int* p) {
        if (*p >= 0)
            ::close(*p);
        delete p;
    });
}

std::optional<Sysfs> Sysfs::folder(std::string_view relative) const {
    const int fd = ::openat(this->fd(), AtPath(relative).c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return std::nullopt;
    return Sysfs(path(relative), fd);
}

std::string Sysfs::path(std::string_view relative) const {
    return joinPath(root_, relative);
}

Result<std::string> Sysfs::read(std::string_view relative) const {
    FileDescriptor fd(
        ::openat(this->fd(), AtPath(relative).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0)
        return errorFromErrno(errno, path(relative));
    std::string content;
    char buffer[4096];
    while (content.size() < kMaxSysfsFile) {
        ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errorFromErrno(errno, path(relative));
        }
        content.append(buffer, static_cast<size_t>(n));
        // A sysfs attribute arrives in one read; a short read of a regular file is its end.
        // Saves the second, empty read that dominates discovery time on big machines.
        if (static_cast<size_t>(n) < sizeof buffer)
            break;
    }
    return content;
}

Result<SysfsFile> Sysfs::open(std::string_view relative) const {
    const int fd =
        ::openat(this->fd(), AtPath(relative).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errorFromErrno(errno, path(relative));
    return SysfsFile(fd, path(relative));
}

SysfsFile::SysfsFile(SysfsFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)) {}

SysfsFile& SysfsFile::operator=(SysfsFile&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0)
            ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
        path_ = std::move(other.path_);
    }
    return *this;
}

SysfsFile::~SysfsFile() {
    if (fd_ >= 0)
        ::close(fd_);
}

Result<std::string> SysfsFile::readAt(std::uint64_t offset, std::size_t size) const {
    std::string content(size, '\0');
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n =
            ::pread(fd_, content.data() + got, size - got, static_cast<off_t>(offset + got));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errorFromErrno(errno, path_);
        }
        if (n == 0)
            break;  // end of file: config space is 4096 bytes for root, 256 or 64 for others
        got += static_cast<std::size_t>(n);
    }
    content.resize(got);
    return content;
}

Result<std::string> Sysfs::readLink(std::string_view relative) const {
    char buffer[4096];
    ssize_t n = ::readlinkat(fd(), AtPath(relative).c_str(), buffer, sizeof buffer - 1);
    if (n < 0)
        return errorFromErrno(errno, path(relative));
    return std::string(buffer, static_cast<size_t>(n));
}

Result<std::string> Sysfs::resolveLink(std::string_view relative) const {
    char buffer[4096];
    ssize_t n = ::readlinkat(fd(), AtPath(relative).c_str(), buffer, sizeof buffer - 1);
    if (n < 0)
        return errorFromErrno(errno, path(relative));
    return resolveLinkTarget(relative, std::string_view(buffer, static_cast<size_t>(n)));
}

std::string resolveLinkTarget(std::string_view link, std::string_view target) {
    std::string resolved(link.size() + target.size() + 2, '\0');
    size_t length = 0;
    // Absolute targets (never seen in sysfs) are taken as relative to the root.
    if (target.empty() || target.front() != '/')
        length = appendClean(resolved.data(), length, dirNameView(link));
    length = appendClean(resolved.data(), length, target);
    resolved.resize(length);
    return resolved;
}

std::vector<std::string> Sysfs::list(std::string_view relative) const {
    std::vector<std::string> names;
    const int dirFd = ::openat(fd(), AtPath(relative).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirFd < 0)
        return names;
    // fdopendir owns dirFd from here on; closedir releases both.
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::fdopendir(dirFd), ::closedir);
    if (!dir) {
        ::close(dirFd);
        return names;
    }
    while (const dirent* entry = ::readdir(dir.get())) {
        const std::string_view name = entry->d_name;
        if (name != "." && name != "..")
            names.emplace_back(name);
    }
    // Sorted through views (a swap of two std::strings is several times a swap of two views),
    // then moved into place once: bus/pci/devices and class/net hold hundreds of names.
    std::vector<std::string_view> order(names.begin(), names.end());
    std::sort(order.begin(), order.end());
    std::vector<std::string> sorted;
    sorted.reserve(names.size());
    for (std::string_view name : order)
        sorted.emplace_back(name);
    return sorted;
}

bool Sysfs::exists(std::string_view relative) const {
    struct stat st {};
    return ::fstatat(fd(), AtPath(relative).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
}

bool Sysfs::isDirectory(std::string_view relative) const {
    struct stat st {};
    return ::fstatat(fd(), AtPath(relative).c_str(), &st, 0) == 0 && S_ISDIR(st.st_mode);
}

std::string cleanPath(std::string_view path) {
    std::string out(path.size() + 1, '\0');
    out.resize(appendClean(out.data(), 0, path));
    return out;
}

std::string joinPath(std::string_view base, std::string_view relative) {
    if (base.empty())
        return std::string(relative);
    if (relative.empty())
        return std::string(base);
    std::string out(base);
    if (out.back() != '/')
        out += '/';
    while (!relative.empty() && relative.front() == '/')
        relative.remove_prefix(1);
    out += relative;
    return out;
}

std::string baseName(std::string_view path) {
    while (path.size() > 1 && path.back() == '/')
        path.remove_suffix(1);
    auto slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string dirName(std::string_view path) {
    return std::string(dirNameView(path));
}

}  // namespace numadra::discovery
