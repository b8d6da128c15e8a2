#pragma once
// Starts a health round at once when a watched network interface changes (carrier, operstate,
// up/down, gone), from rtnetlink link messages, instead of at the next poll. A cable pull raises
// no kernel uevent, so without this it is seen up to --health-interval later. The poll stays:
// messages can be lost, and a namespace without them (no hostNetwork) still gets its checks.

#include <cstddef>
#include <functional>
#include <memory>
#include <stop_token>
#include <thread>

#include "numadra/common/result.hpp"
#include "numadra/discovery/link_events.hpp"
#include "numadra/health/health.hpp"

namespace numadra::health {

class LinkWatch {
  public:
    // Called on the watcher's thread before each check it starts: how many events were for
    // watched interfaces, and whether the kernel dropped messages (which also starts a check).
    using Observer = std::function<void(std::size_t watchedEvents, bool lost)>;

    // Subscribes and starts the thread; an error when the subscription is refused.
    static Result<std::unique_ptr<LinkWatch>> start(Monitor& monitor, Observer observer = {});
    ~LinkWatch() = default;  // the jthread stops (waking its poll) and joins
    LinkWatch(const LinkWatch&) = delete;
    LinkWatch& operator=(const LinkWatch&) = delete;

  private:
    LinkWatch(Monitor& monitor, discovery::LinkEventListener listener, Observer observer);
    void run(std::stop_token stop);

    Monitor& monitor_;
    discovery::LinkEventListener listener_;
    Observer observer_;
    std::jthread thread_;
};

}  // namespace numadra::health
