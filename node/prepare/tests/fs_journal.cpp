// The interposed calls of fs_journal.hpp. Fortified inline wrappers of open() would clash with
// the definitions below, and the interposer must see every call: no _FORTIFY_SOURCE here.
#undef _FORTIFY_SOURCE

#include "fs_journal.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdarg>
#include <map>
#include <mutex>
#include <utility>

namespace numadra::testing::fsjournal {

namespace {

struct Journal {
    std::mutex mutex;
    bool recording = false;
    std::string root;
    std::vector<Entry> entries;
    std::map<int, std::string> pathOfFd;  // fds opened below the root while recording
    std::vector<std::string> volatileFolders;
};

Journal& journal() {
    static Journal* instance = new Journal();  // never destroyed: calls may come at exit
    return *instance;
}

bool isBelow(const std::string& path, const std::string& folder) {
    return !folder.empty() && (path == folder || path.rfind(folder + "/", 0) == 0);
}

// Under the journal's mutex: the absolute path `path` names, relative to `dirFd`.
std::string resolve(Journal& j, int dirFd, const char* path) {
    if (path == nullptr)
        return {};
    if (path[0] == '/' || dirFd == AT_FDCWD)
        return path;
    auto it = j.pathOfFd.find(dirFd);
    return it == j.pathOfFd.end() ? std::string() : it->second + "/" + path;
}

bool exists(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0;
}

void add(Journal& j, Entry entry) {
    if (j.recording && isBelow(entry.path, j.root))
        j.entries.push_back(std::move(entry));
}

int openAt(int dirFd, const char* path, int flags, mode_t mode) {
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    const std::string full = resolve(j, dirFd, path);
    const bool existed = j.recording && isBelow(full, j.root) && exists(full);
    const int fd = static_cast<int>(::syscall(SYS_openat, dirFd, path, flags, mode));
    if (fd < 0 || !j.recording || !isBelow(full, j.root))
        return fd;
    j.pathOfFd[fd] = full;
    if ((flags & O_CREAT) != 0 && !existed)
        add(j, {Op::Create, full, {}, {}});
    else if ((flags & O_TRUNC) != 0)
        add(j, {Op::Truncate, full, {}, {}});
    return fd;
}

mode_t modeArgument(int flags, va_list& arguments) {
    if ((flags & O_CREAT) == 0 && (flags & O_TMPFILE) != O_TMPFILE)
        return 0;
    return static_cast<mode_t>(va_arg(arguments, int));
}

int fsyncAs(int fd, long number) {
    const int result = static_cast<int>(::syscall(number, fd));
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    if (auto it = j.pathOfFd.find(fd); result == 0 && it != j.pathOfFd.end())
        add(j, {Op::Fsync, it->second, {}, {}});
    return result;
}

int unlinkAt(int dirFd, const char* path, int flags) {
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    const std::string full = resolve(j, dirFd, path);
    const int result = static_cast<int>(::syscall(SYS_unlinkat, dirFd, path, flags));
    if (result == 0)
        add(j, {(flags & AT_REMOVEDIR) != 0 ? Op::Rmdir : Op::Unlink, full, {}, {}});
    return result;
}

}  // namespace

void start(const std::string& root) {
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    j.root = root;
    j.entries.clear();
    j.pathOfFd.clear();
    j.recording = true;
}

std::vector<Entry> stop() {
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    j.recording = false;
    j.pathOfFd.clear();
    return std::exchange(j.entries, {});
}

void markVolatile(std::vector<std::string> folders) {
    auto& j = journal();
    std::lock_guard lock(j.mutex);
    j.volatileFolders = std::move(folders);
}

size_t countFsyncs(const std::vector<Entry>& entries) {
    size_t n = 0;
    for (const auto& entry : entries)
        n += entry.op == Op::Fsync ? 1 : 0;
    return n;
}

std::string describe(const Entry& entry) {
    static const char* const kNames[] = {"create", "truncate", "write", "fsync",
                                         "rename", "unlink",   "mkdir", "rmdir"};
    std::string text = std::string(kNames[static_cast<int>(entry.op)]) + " " + entry.path;
    if (entry.op == Op::Rename)
        text += " -> " + entry.target;
    if (entry.op == Op::Write)
        text += " (" + std::to_string(entry.data.size()) + " bytes)";
    return text;
}

}  // namespace numadra::testing::fsjournal

using numadra::testing::fsjournal::Op;

// The C library names these parameters __file, __fd...: names of its own, not ours to copy.
// NOLINTBEGIN(readability-inconsistent-declaration-parameter-name)
extern "C" {

int open(const char* path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    const mode_t mode = numadra::testing::fsjournal::modeArgument(flags, arguments);
    va_end(arguments);
    return numadra::testing::fsjournal::openAt(AT_FDCWD, path, flags, mode);
}

int openat(int dirFd, const char* path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    const mode_t mode = numadra::testing::fsjournal::modeArgument(flags, arguments);
    va_end(arguments);
    return numadra::testing::fsjournal::openAt(dirFd, path, flags, mode);
}

ssize_t write(int fd, const void* buffer, size_t size) {
    const auto result = static_cast<ssize_t>(::syscall(SYS_write, fd, buffer, size));
    auto& j = numadra::testing::fsjournal::journal();
    std::lock_guard lock(j.mutex);
    if (auto it = j.pathOfFd.find(fd); result > 0 && it != j.pathOfFd.end()) {
        numadra::testing::fsjournal::add(
            j, {Op::Write,
                it->second,
                {},
                std::string(static_cast<const char*>(buffer), static_cast<size_t>(result))});
    }
    return result;
}

int close(int fd) {
    {
        auto& j = numadra::testing::fsjournal::journal();
        std::lock_guard lock(j.mutex);
        j.pathOfFd.erase(fd);
    }
    return static_cast<int>(::syscall(SYS_close, fd));
}

int fsync(int fd) {
    return numadra::testing::fsjournal::fsyncAs(fd, SYS_fsync);
}

int fdatasync(int fd) {
    return numadra::testing::fsjournal::fsyncAs(fd, SYS_fdatasync);
}

int rename(const char* from, const char* to) noexcept {
    const int result = static_cast<int>(::syscall(SYS_renameat, AT_FDCWD, from, AT_FDCWD, to));
    auto& j = numadra::testing::fsjournal::journal();
    std::lock_guard lock(j.mutex);
    if (result == 0)
        numadra::testing::fsjournal::add(j, {Op::Rename, from, to, {}});
    return result;
}

int unlink(const char* path) noexcept {
    return numadra::testing::fsjournal::unlinkAt(AT_FDCWD, path, 0);
}

int unlinkat(int dirFd, const char* path, int flags) noexcept {
    return numadra::testing::fsjournal::unlinkAt(dirFd, path, flags);
}

int rmdir(const char* path) noexcept {
    return numadra::testing::fsjournal::unlinkAt(AT_FDCWD, path, AT_REMOVEDIR);
}

int mkdir(const char* path, mode_t mode) noexcept {
    const int result = static_cast<int>(::syscall(SYS_mkdirat, AT_FDCWD, path, mode));
    auto& j = numadra::testing::fsjournal::journal();
    std::lock_guard lock(j.mutex);
    if (result == 0)
        numadra::testing::fsjournal::add(j, {Op::Mkdir, path, {}, {}});
    return result;
}

int statfs(const char* path, struct statfs* info) noexcept {
    const int result = static_cast<int>(::syscall(SYS_statfs, path, info));
    auto& j = numadra::testing::fsjournal::journal();
    std::lock_guard lock(j.mutex);
    for (const auto& folder : j.volatileFolders) {
        if (result == 0 && numadra::testing::fsjournal::isBelow(path, folder))
            info->f_type = TMPFS_MAGIC;
    }
    return result;
}

}  // extern "C"
// NOLINTEND(readability-inconsistent-declaration-parameter-name)
