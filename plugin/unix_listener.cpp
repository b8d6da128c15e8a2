#include "unix_listener.hpp"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <utility>

#include "hash.hpp"
#include "numadra/common/errors.hpp"

namespace numadra::plugin {
namespace {

Error systemError(const std::string& what, int code = errno) {
    return errorFromErrno(code, what);
}

Result<sockaddr_un> unixAddress(const std::string& path) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof(address.sun_path))
        return errorWithErrno(
            ENAMETOOLONG, "socket path too long (" + std::to_string(path.size()) + " bytes, max " +
                              std::to_string(sizeof(address.sun_path) - 1) + "): " + path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    return address;
}

// Binding creates the file, so checking first is how we avoid clobbering a regular file or a
// directory somebody put at our path by mistake.
Status refuseNonSocket(const std::string& path) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        if (errno == ENOENT)
            return Status::Ok();
        return systemError("cannot inspect " + path);
    }
    if (!S_ISSOCK(info.st_mode))
        return errorWithErrno(EEXIST, path + " exists and is not a socket; refusing to replace it");
    return Status::Ok();
}

// "." and six hex digits: shorter than any of our socket names (>= 8 bytes, "dra.sock").
std::string hiddenName(std::uint64_t bits) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string name = ".";
    for (int i = 0; i < 6; ++i, bits >>= 4)
        name += kHex[bits & 0xfU];
    return name;
}

Status bindTo(int socket, const std::string& path) {
    auto address = unixAddress(path);
    if (!address)
        return address.error();
    if (::bind(socket, reinterpret_cast<const sockaddr*>(&address.value()), sizeof(sockaddr_un)) !=
        0)
        return systemError("cannot bind a socket at " + path);
    return Status::Ok();
}

// A 0700 directory of ours, emptied of what a crashed run may have left in it.
Status makePrivateDirectory(const std::string& dir) {
    if (::mkdir(dir.c_str(), 0700) == 0)
        return Status::Ok();
    if (errno != EEXIST)
        return systemError("cannot create " + dir);
    struct stat info {};
    if (::lstat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != ::geteuid())
        return errorWithErrno(EEXIST, dir + " exists and is not our private directory");
    if (::chmod(dir.c_str(), 0700) != 0)
        return systemError("cannot chmod " + dir);
    std::string leftover = dir + "/s";
    if (::unlink(leftover.c_str()) != 0 && errno != ENOENT)
        return systemError("cannot remove " + leftover);
    return Status::Ok();
}

}  // namespace

// Where a socket is bound before it is renamed onto its real path. Preferably inside a private
// 0700 directory beside it, so nobody can connect before the mode and group are final. That
// directory has a hidden name, which the kubelet ignores, and stays until the listener closes:
// the kubelet stats every new entry of plugins_registry and logs an error for one that is
// already gone. Where that path would not fit in sun_path, a hidden sibling name is used.
class UnixListener::BindSite {
  public:
    static Result<BindSite> bind(int socket, const std::string& finalPath) {
        auto parent = std::filesystem::path(finalPath).parent_path().string();
        auto name = std::filesystem::path(finalPath).filename().string();
        auto directory = parent + "/" + hiddenName(fnv1a64(name));
        auto socketPath = directory + "/s";
        if (!unixAddress(socketPath))
            return bindToSibling(socket, parent);
        if (auto made = makePrivateDirectory(directory); !made)
            return made.error();
        BindSite site;
        site.directory_ = directory;  // from here on ours to remove
        if (auto bound = bindTo(socket, socketPath); !bound)
            return bound.error();
        site.socket_ = socketPath;
        return site;
    }

    BindSite(BindSite&& other) noexcept
        : socket_(std::exchange(other.socket_, {})),
          directory_(std::exchange(other.directory_, {})) {}
    BindSite& operator=(BindSite&&) = delete;
    ~BindSite() {
        if (!socket_.empty())
            ::unlink(socket_.c_str());
        if (!directory_.empty())
            ::rmdir(directory_.c_str());
    }

    const std::string& socketPath() const { return socket_; }
    // After the rename: nothing left to clean up but the directory, which the caller now owns.
    std::string release() {
        socket_.clear();
        return std::exchange(directory_, {});
    }

  private:
    BindSite() = default;

    static Result<BindSite> bindToSibling(int socket, const std::string& parent) {
        std::random_device random;
        for (int attempt = 0; attempt < 16; ++attempt) {
            auto socketPath = parent + "/" + hiddenName(random());
            auto bound = bindTo(socket, socketPath);
            if (bound) {
                BindSite site;
                site.socket_ = socketPath;
                return site;
            }
            if (!bound.error().is(ErrorKind::AlreadyExists))
                return bound.error();
        }
        return errorWithErrno(EADDRINUSE, "cannot find a free temporary socket name in " + parent);
    }

    std::string socket_;
    std::string directory_;
};

namespace {

Status applyAccess(const std::string& path, const SocketAccess& access) {
    if (access.group && ::chown(path.c_str(), static_cast<uid_t>(-1), *access.group) != 0)
        return systemError("cannot give " + path + " to group " + std::to_string(*access.group));
    mode_t mode = access.group ? 0660 : 0600;
    if (::chmod(path.c_str(), mode) != 0)
        return systemError("cannot chmod " + path);
    return Status::Ok();
}

}  // namespace

UnixListener::UnixListener(std::string path, std::string bindDirectory, UniqueFd socket,
                           dev_t device, ino_t inode)
    : path_(std::move(path)),
      bindDirectory_(std::move(bindDirectory)),
      socket_(std::move(socket)),
      device_(device),
      inode_(inode) {}

UnixListener::~UnixListener() {
    closeSocket();
    removeSocketFile();
}

Result<std::unique_ptr<UnixListener>> UnixListener::open(const std::string& path,
                                                         const SocketAccess& access) {
    if (auto address = unixAddress(path); !address)
        return address.error();
    if (auto refused = refuseNonSocket(path); !refused)
        return refused.error();

    UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!socket)
        return systemError("cannot create a unix socket");
    auto site = BindSite::bind(socket.get(), path);
    if (!site)
        return site.error();
    const auto& bound = site->socketPath();
    if (auto applied = applyAccess(bound, access); !applied)
        return applied.error();
    if (::listen(socket.get(), SOMAXCONN) != 0)
        return systemError("cannot listen on " + bound);
    if (::rename(bound.c_str(), path.c_str()) != 0)
        return systemError("cannot move socket " + bound + " to " + path);
    auto bindDirectory = site->release();

    // Remember which file is ours, so stop() never removes a successor's socket.
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0) {
        auto error = systemError("cannot inspect " + path);
        ::unlink(path.c_str());
        ::rmdir(bindDirectory.c_str());
        return error;
    }
    return std::unique_ptr<UnixListener>(new UnixListener(
        path, std::move(bindDirectory), std::move(socket), info.st_dev, info.st_ino));
}

void UnixListener::closeSocket() {
    socket_.reset();
}

void UnixListener::removeSocketFile() {
    if (fileRemoved_)
        return;
    fileRemoved_ = true;
    unlinkSocketIfOurs();
    removeBindDirectory();
}

void UnixListener::unlinkSocketIfOurs() {
    struct stat info {};
    if (::lstat(path_.c_str(), &info) != 0)
        return;
    if (info.st_dev != device_ || info.st_ino != inode_) {
        spdlog::warn("socket replaced by another process, leaving it path={}", path_);
        return;
    }
    if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
        spdlog::warn("cannot remove socket path={} error={}", path_, std::strerror(errno));
}

void UnixListener::removeBindDirectory() {
    if (!bindDirectory_.empty() && ::rmdir(bindDirectory_.c_str()) != 0 && errno != ENOENT)
        spdlog::warn("cannot remove directory path={} error={}", bindDirectory_,
                     std::strerror(errno));
    bindDirectory_.clear();
}

bool acceptsConnections(const std::string& path) {
    auto address = unixAddress(path);
    if (!address)
        return false;
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    return fd && ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address.value()),
                           sizeof(sockaddr_un)) == 0;
}

}  // namespace numadra::plugin
