#pragma once
// Waits on a HealthSource's change notifications: how a test (or a benchmark) sees that a
// round of checks changed something.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "numadra/claims/health.hpp"

namespace numadra::testing {

// The source's listener while it lives (a source has one listener: not beside a server).
class HealthChanges {
  public:
    explicit HealthChanges(claims::HealthSource& source) : source_(source) {
        source_.setChangeListener([this] {
            {
                std::lock_guard lock(mutex_);
                ++changes_;
            }
            changed_.notify_all();
        });
    }
    ~HealthChanges() { source_.setChangeListener({}); }
    HealthChanges(const HealthChanges&) = delete;
    HealthChanges& operator=(const HealthChanges&) = delete;

    // True when a change came since the last call (or construction), waiting up to `timeout`
    // for one; every change seen so far is taken either way (wait(0ms) forgets them).
    bool wait(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        const bool changed = changed_.wait_for(lock, timeout, [this] { return changes_ != seen_; });
        seen_ = changes_;
        return changed;
    }

  private:
    claims::HealthSource& source_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::uint64_t changes_ = 0;
    std::uint64_t seen_ = 0;
};

}  // namespace numadra::testing
