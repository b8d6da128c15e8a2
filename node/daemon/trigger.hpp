#pragma once
// A one-shot "something may have changed" flag threads can wait on, with a stop token.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>

namespace numadra::daemon {

class Trigger {
  public:
    void fire() {
        {
            std::lock_guard lock(mutex_);
            fired_ = true;
        }
        condition_.notify_all();
    }
    // True when fired (and resets), false on timeout or stop.
    bool wait(std::stop_token stop, std::chrono::steady_clock::duration timeout) {
        std::unique_lock lock(mutex_);
        condition_.wait_for(lock, stop, timeout, [&] { return fired_; });
        const bool fired = fired_;
        fired_ = false;
        return fired;
    }

  private:
    std::mutex mutex_;
    std::condition_variable_any condition_;
    bool fired_ = false;
};

}  // namespace numadra::daemon
