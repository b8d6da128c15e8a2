#pragma once
// An eventfd that becomes readable once a stop is requested, so a thread blocked in poll() on a
// kernel socket wakes at once instead of waking every few hundred milliseconds to look.

#include <chrono>
#include <functional>
#include <stop_token>

#include "numadra/common/wake_fd.hpp"

namespace numadra {

class StopFd {
  public:
    explicit StopFd(std::stop_token stop) : onStop_(std::move(stop), [this] { wake_.ring(); }) {}
    // The descriptor to poll beside the socket (-1 without an eventfd).
    int fd() const { return wake_.fd(); }
    // How long one wait may last: without an eventfd (out of descriptors), short slices, so the
    // stop is still seen.
    std::chrono::milliseconds limit(std::chrono::milliseconds wanted) const {
        return wake_.limit(wanted);
    }

  private:
    WakeFd wake_;  // before onStop_: the callback may run in its constructor
    std::stop_callback<std::function<void()>> onStop_;
};

}  // namespace numadra
