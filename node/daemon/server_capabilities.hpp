#pragma once
// What the API server turned out to take, learned from its answers while publishing. Each
// starts as "supported" and is withdrawn at most once (the first refusal); a restart asks
// again. One value, so that a slice build reads all of them at one moment.

#include <mutex>

namespace numadra::daemon {

struct ServerCapabilities {
    bool deviceTaints = true;     // DRADeviceTaints: taints in the slices
    bool listAttributes = true;   // DRAListTypeAttributes: the list form of numaNode, pcieRoot
    bool nodeAllocatable = true;  // DRANodeAllocatableResources: CPU devices' mappings
};

// The daemon's one copy, shared by its publishing and slice-building threads.
class NegotiatedCapabilities {
  public:
    using Field = bool ServerCapabilities::*;

    ServerCapabilities current() const {
        std::lock_guard lock(mutex_);
        return value_;
    }
    // Marks one as not supported; true only for the call that changed it, so that what follows a
    // refusal (a warning, a metric, a rebuild) happens once.
    bool withdraw(Field field) {
        std::lock_guard lock(mutex_);
        const bool was = value_.*field;
        value_.*field = false;
        return was;
    }

  private:
    mutable std::mutex mutex_;
    ServerCapabilities value_;
};

}  // namespace numadra::daemon
