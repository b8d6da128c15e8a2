#pragma once
// An eventfd that other threads ring to wake one blocked in poll() beside its sockets: a thread
// that waits for a kernel socket and for being told something needs no periodic wake-up to look.

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "numadra/common/unique_fd.hpp"

namespace numadra {

class WakeFd {
  public:
    WakeFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}

    // The descriptor to poll (-1 without an eventfd: out of descriptors).
    int fd() const { return fd_.get(); }
    // From any thread: fd() is readable until drain().
    void ring() const {
        const std::uint64_t one = 1;
        [[maybe_unused]] const auto written = ::write(fd_.get(), &one, sizeof one);
    }
    void drain() const {
        std::uint64_t count = 0;
        [[maybe_unused]] const auto read = ::read(fd_.get(), &count, sizeof count);
    }
    // How long one wait may last: without an eventfd, short slices, so a ring (whose reason the
    // waiter keeps beside it, e.g. a flag or a stop token) is still seen.
    std::chrono::milliseconds limit(std::chrono::milliseconds wanted) const {
        return fd_ ? wanted : std::min(wanted, kFallbackSlice);
    }
    // Waits up to `timeout` (within limit()) for a ring, without draining it.
    void wait(std::chrono::milliseconds timeout) const {
        pollfd entry{fd_.get(), POLLIN, 0};
        ::poll(&entry, fd_ ? 1 : 0, static_cast<int>(limit(timeout).count()));
    }

  private:
    static constexpr std::chrono::milliseconds kFallbackSlice{250};
    UniqueFd fd_;
};

}  // namespace numadra
