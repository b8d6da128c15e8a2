#include "numadra/discovery/sysfs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "numadra/common/text.hpp"

namespace numadra::discovery {

namespace {

// Owns a file descriptor for the duration of one read.
class FileDescriptor {
public:
    explicit FileDescriptor(int fd) : fd_(fd) {}
    ~FileDescriptor() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileDescriptor(const FileDescriptor&) = delete;
    FileDescriptor& operator=(const FileDescriptor&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

constexpr size_t kMaxSysfsFile = 1 << 20;  // sysfs attributes are at most a page; be generous

}  // namespace

Sysfs::Sysfs(std::string root) : root_(std::move(root)) {
    while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string Sysfs::path(std::string_view relative) const { return joinPath(root_, relative); }

Result<std::string> Sysfs::read(std::string_view relative) const {
    const std::string full = path(relative);
    FileDescriptor fd(::open(full.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) return Error{full + ": " + std::strerror(errno)};
    std::string content;
    char buffer[4096];
    while (content.size() < kMaxSysfsFile) {
        ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            return Error{full + ": " + std::strerror(errno)};
        }
        if (n == 0) break;
        content.append(buffer, static_cast<size_t>(n));
    }
    return content;
}

Result<std::string> Sysfs::readLink(std::string_view relative) const {
    const std::string full = path(relative);
    char buffer[4096];
    ssize_t n = ::readlink(full.c_str(), buffer, sizeof buffer - 1);
    if (n < 0) return Error{full + ": " + std::strerror(errno)};
    return std::string(buffer, static_cast<size_t>(n));
}

Result<std::string> Sysfs::resolveLink(std::string_view relative) const {
    auto target = readLink(relative);
    if (!target) return target.error();
    std::string t = target.value();
    if (!t.empty() && t.front() == '/') {
        // Absolute targets (never seen in sysfs) are taken as relative to the root.
        return cleanPath(t);
    }
    return cleanPath(joinPath(dirName(relative), t));
}

std::vector<std::string> Sysfs::list(std::string_view relative) const {
    std::vector<std::string> names;
    std::error_code ec;
    std::filesystem::directory_iterator it(path(relative), ec), end;
    for (; !ec && it != end; it.increment(ec)) names.push_back(it->path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

bool Sysfs::exists(std::string_view relative) const {
    struct stat st {};
    return ::lstat(path(relative).c_str(), &st) == 0;
}

bool Sysfs::isDirectory(std::string_view relative) const {
    struct stat st {};
    return ::stat(path(relative).c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string cleanPath(std::string_view path) {
    std::vector<std::string_view> parts;
    for (std::string_view part : text::split(path, '/')) {
        if (part.empty() || part == ".") continue;
        if (part == "..") {
            if (!parts.empty()) parts.pop_back();
            continue;
        }
        parts.push_back(part);
    }
    std::string out;
    for (auto part : parts) {
        if (!out.empty()) out += '/';
        out += part;
    }
    return out;
}

std::string joinPath(std::string_view base, std::string_view relative) {
    if (base.empty()) return std::string(relative);
    if (relative.empty()) return std::string(base);
    std::string out(base);
    if (out.back() != '/') out += '/';
    while (!relative.empty() && relative.front() == '/') relative.remove_prefix(1);
    out += relative;
    return out;
}

std::string baseName(std::string_view path) {
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    auto slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string dirName(std::string_view path) {
    while (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
    auto slash = path.rfind('/');
    return slash == std::string_view::npos ? std::string() : std::string(path.substr(0, slash));
}

}  // namespace numadra::discovery
