#pragma once
// An eventfd that becomes readable once a stop is requested, so a thread blocked in poll() on a
// kernel socket wakes at once instead of waking every few hundred milliseconds to look.

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <stop_token>

#include "numadra/common/unique_fd.hpp"

namespace numadra {

class StopFd {
  public:
    explicit StopFd(std::stop_token stop)
        : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), onStop_(std::move(stop), [this] {
              const std::uint64_t one = 1;
              [[maybe_unused]] const auto written = ::write(fd_.get(), &one, sizeof one);
          }) {}
    // The descriptor to poll beside the socket (-1 without an eventfd).
    int fd() const { return fd_.get(); }
    // How long one wait may last: without an eventfd (out of descriptors), short slices, so the
    // stop is still seen.
    std::chrono::milliseconds limit(std::chrono::milliseconds wanted) const {
        return fd_ ? wanted : std::min(wanted, kFallbackSlice);
    }

  private:
    static constexpr std::chrono::milliseconds kFallbackSlice{250};
    UniqueFd fd_;  // before onStop_: the callback may run in its constructor
    std::stop_callback<std::function<void()>> onStop_;
};

}  // namespace numadra
