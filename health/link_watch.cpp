#include "numadra/health/link_watch.hpp"

#include <algorithm>

#include "numadra/common/stop_fd.hpp"

namespace numadra::health {

Result<std::unique_ptr<LinkWatch>> LinkWatch::start(Monitor& monitor, Observer observer) {
    auto listener = discovery::LinkEventListener::open();
    if (!listener)
        return listener.error();
    return std::unique_ptr<LinkWatch>(
        new LinkWatch(monitor, std::move(listener).value(), std::move(observer)));
}

LinkWatch::LinkWatch(Monitor& monitor, discovery::LinkEventListener listener, Observer observer)
    : monitor_(monitor),
      listener_(std::move(listener)),
      observer_(std::move(observer)),
      thread_([this](std::stop_token stop) { run(stop); }) {}

void LinkWatch::run(std::stop_token stop) {
    StopFd waker(stop);
    while (!stop.stop_requested()) {
        const auto batch = listener_.wait(waker.limit(std::chrono::minutes(10)), waker.fd());
        // Veth pairs of pods come and go all day: only the interfaces of watched devices count.
        const auto watched = static_cast<std::size_t>(std::count_if(
            batch.events.begin(), batch.events.end(),
            [this](const auto& event) { return monitor_.watchesInterface(event.ifName); }));
        if (watched == 0 && !batch.lost)
            continue;
        if (observer_)
            observer_(watched, batch.lost);
        monitor_.checkNow();
    }
}

}  // namespace numadra::health
