#include "numadra/common/files.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "numadra/common/errors.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::files {

namespace {

Error systemError(const std::string& what, const std::string& path, int error) {
    return errorFromErrno(error, what + " " + path);
}

std::string parentOf(const std::string& path) {
    const auto slash = path.rfind('/');
    if (slash == std::string::npos)
        return ".";
    return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseName(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

Status writeAll(int fd, std::string_view content, const std::string& path) {
    while (!content.empty()) {
        const ssize_t written = ::write(fd, content.data(), content.size());
        if (written < 0) {
            if (errno == EINTR)
                continue;
            return systemError("writing", path, errno);
        }
        content.remove_prefix(static_cast<size_t>(written));
    }
    return {};
}

// ".<name>.tmp.<random>": hidden, so nothing that lists the folder for "*.json" picks it up.
std::string tempNameFor(const std::string& path) {
    thread_local std::mt19937_64 random{std::random_device{}()};
    static constexpr char kHex[] = "0123456789abcdef";
    std::string suffix(12, '0');
    for (auto& c : suffix)
        c = kHex[random() % 16];
    return parentOf(path) + "/." + baseName(path) + ".tmp." + suffix;
}

}  // namespace

Status syncDirectory(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!fd)
        return systemError("opening folder", path, errno);
    if (::fsync(fd.get()) != 0)
        return systemError("syncing folder", path, errno);
    return {};
}

Result<bool> isOnVolatileFilesystem(const std::string& path) {
    struct statfs info {};
    if (::statfs(path.c_str(), &info) != 0)
        return systemError("asking the filesystem of", path, errno);
    // f_type's type differs between architectures; the magic numbers fit in 32 bits.
    const auto type = static_cast<unsigned long>(info.f_type);
    return type == TMPFS_MAGIC || type == RAMFS_MAGIC;
}

Durability durabilityFor(const std::string& folder, Durability wanted) {
    auto isVolatile = isOnVolatileFilesystem(folder);
    return isVolatile && *isVolatile ? Durability::None : wanted;
}

Status writeFileAtomically(const std::string& path, std::string_view content, mode_t mode,
                           Durability durability) {
    const std::string temp = tempNameFor(path);
    UniqueFd fd(::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (!fd)
        return systemError("creating", temp, errno);
    auto fail = [&temp](Error error) {
        ::unlink(temp.c_str());
        return Status(std::move(error));
    };
    // The umask must not weaken or widen what the caller asked for.
    if (::fchmod(fd.get(), mode) != 0)
        return fail(systemError("setting the mode of", temp, errno));
    if (auto written = writeAll(fd.get(), content, temp); !written)
        return fail(written.error());
    // Before the rename: otherwise a power cut can leave the new name on an empty or partial
    // file (delayed allocation writes the data long after the rename's metadata).
    if (durability != Durability::None && ::fsync(fd.get()) != 0)
        return fail(systemError("syncing", temp, errno));
    fd.reset();
    if (::rename(temp.c_str(), path.c_str()) != 0)
        return fail(systemError("renaming " + temp + " to", path, errno));
    if (durability != Durability::Full)
        return {};
    return syncDirectory(parentOf(path));
}

Status rewriteFileInPlace(const std::string& path, std::string_view content) {
    // No O_CREAT: an update of a file that is gone must not silently create a new one.
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
    if (!fd)
        return systemError("opening", path, errno);
    if (auto written = writeAll(fd.get(), content, path); !written)
        return written;
    if (::fsync(fd.get()) != 0)
        return systemError("syncing", path, errno);
    return {};
}

Result<std::string> readFile(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd)
        return systemError("reading", path, errno);
    std::string content;
    char buffer[16384];
    for (;;) {
        const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return systemError("reading", path, errno);
        }
        if (n == 0)
            break;
        content.append(buffer, static_cast<size_t>(n));
    }
    return content;
}

Status makeDirectories(const std::string& path, mode_t mode, Durability durability) {
    if (path.empty())
        return errorWithErrno(EINVAL, "cannot create a folder with an empty path");
    // Usually the folder or its parent exists: try the deepest level first and only walk up on
    // ENOENT (a prepare creates two levels below a metadata root that is always there).
    if (::mkdir(path.c_str(), mode) == 0) {
        ::chmod(path.c_str(), mode);  // the umask must not change the mode we asked for
        // A new folder is only durable once its parent's entry is: without this a power loss
        // could take a checkpoint folder and every record in it.
        if (durability != Durability::Full)
            return {};
        return syncDirectory(parentOf(path));
    }
    if (errno == EEXIST) {
        struct stat info {};
        if (::stat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
            return errorWithErrno(ENOTDIR,
                                  "creating folder " + path + ": exists and is not a folder");
        return {};
    }
    if (errno != ENOENT)
        return systemError("creating folder", path, errno);
    const std::string parent = parentOf(path);
    if (parent == path || parent == "/" || parent == ".")
        return systemError("creating folder", path, ENOENT);
    if (auto made = makeDirectories(parent, mode, durability); !made)
        return made;
    return makeDirectories(path, mode, durability);
}

namespace {

// Whether `name` (in the folder `parentFd`, or the current one) is absent. Asked after a failed
// removal: on a read-only filesystem unlink() answers EROFS before it looks for the name, and a
// file that was never there is no failure to report.
bool isAbsent(int parentFd, const std::string& name) {
    struct stat info {};
    return ::fstatat(parentFd, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0 && errno == ENOENT;
}

}  // namespace

Status removeFile(const std::string& path, Durability durability) {
    if (::unlink(path.c_str()) != 0) {
        const int error = errno;
        if (error == ENOENT || isAbsent(AT_FDCWD, path))
            return {};
        return systemError("removing", path, error);
    }
    if (durability != Durability::Full)
        return {};
    return syncDirectory(parentOf(path));
}

namespace {

Status removeTreeAt(int parentFd, const std::string& name, const std::string& path) {
    if (::unlinkat(parentFd, name.c_str(), 0) == 0 || errno == ENOENT)
        return {};
    if (errno != EISDIR && errno != EPERM) {
        const int error = errno;
        return isAbsent(parentFd, name) ? Status{} : Status(systemError("removing", path, error));
    }
    // O_NOFOLLOW: a symlink planted where a folder was expected is removed, never followed.
    UniqueFd dirFd(
        ::openat(parentFd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dirFd)
        return systemError("opening folder", path, errno);
    UniqueFd listFd(::dup(dirFd.get()));
    if (!listFd)
        return systemError("listing", path, errno);
    DIR* dir = ::fdopendir(listFd.get());
    if (dir == nullptr)
        return systemError("listing", path, errno);
    (void)listFd.release();  // owned by `dir` now, closed by closedir()
    std::vector<std::string> entries;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string entryName = entry->d_name;
        if (entryName != "." && entryName != "..")
            entries.push_back(entryName);
    }
    ::closedir(dir);
    for (const auto& entry : entries) {
        if (auto removed = removeTreeAt(dirFd.get(), entry, path + "/" + entry); !removed)
            return removed;
    }
    if (::unlinkat(parentFd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
        return systemError("removing folder", path, errno);
    return {};
}

}  // namespace

Status removeTree(const std::string& path, Durability durability) {
    const std::string parent = parentOf(path);
    UniqueFd parentFd(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!parentFd)
        return errno == ENOENT ? Status{} : Status(systemError("opening folder", parent, errno));
    if (isAbsent(parentFd.get(), baseName(path)))
        return {};  // nothing to remove, nothing to make durable
    if (auto removed = removeTreeAt(parentFd.get(), baseName(path), path); !removed)
        return removed;
    // The parent's entry is all a power cut could bring back: below it nothing is reachable.
    if (durability == Durability::Full && ::fsync(parentFd.get()) != 0)
        return systemError("syncing folder", parent, errno);
    return {};
}

Result<std::vector<std::string>> listDirectory(const std::string& path) {
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr)
        return systemError("listing", path, errno);
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(dir)) {
        const std::string name = entry->d_name;
        if (name != "." && name != "..")
            names.push_back(name);
    }
    ::closedir(dir);
    std::sort(names.begin(), names.end());
    return names;
}

bool exists(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0;
}

}  // namespace numadra::files
