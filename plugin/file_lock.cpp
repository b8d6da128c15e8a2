#include "numadra/plugin/file_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "numadra/common/errors.hpp"

namespace numadra::plugin {

Result<FileLock> FileLock::acquire(const std::string& path, claims::Deadline deadline) {
    UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!fd)
        return errorFromErrno(errno, "cannot open lock file " + path);
    // flock() cannot time out, so poll with LOCK_NB and a short, growing back-off: holders keep
    // the lock for one prepare, typically milliseconds.
    auto backoff = std::chrono::milliseconds(1);
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return errorFromErrno(errno, "cannot lock " + path);
        auto now = std::chrono::steady_clock::now();
        if (now >= deadline)
            return Error{"timed out waiting for the lock on " + path, ErrorKind::DeadlineExceeded};
        std::this_thread::sleep_for(
            std::min<std::chrono::steady_clock::duration>(backoff, deadline - now));
        backoff = std::min(backoff * 2, std::chrono::milliseconds(20));
    }
    return FileLock(std::move(fd));
}

}  // namespace numadra::plugin
