#pragma once
// Private to discovery/: the wait both kernel-event listeners make.

#include <poll.h>

#include <array>
#include <chrono>

namespace numadra::discovery {

// Waits up to `timeout` for `fd` to be readable; false on timeout, or when `wakeFd` (if >= 0)
// became readable first.
inline bool waitReadable(int fd, std::chrono::milliseconds timeout, int wakeFd) {
    std::array<pollfd, 2> fds{pollfd{fd, POLLIN, 0}, pollfd{wakeFd, POLLIN, 0}};
    const nfds_t count = wakeFd >= 0 ? 2 : 1;
    return ::poll(fds.data(), count, static_cast<int>(timeout.count())) > 0 &&
           (fds[0].revents & (POLLIN | POLLERR)) != 0;
}

}  // namespace numadra::discovery
