#include "numadra/health/link_watch.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <system_error>

namespace numadra::health {

Result<std::unique_ptr<LinkWatch>> LinkWatch::start(Monitor& monitor, Observer observer) {
    auto listener = discovery::LinkEventListener::open();
    if (!listener)
        return listener.error();
    UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake)
        return Error{"eventfd: " + std::generic_category().message(errno), errno};
    return std::unique_ptr<LinkWatch>(
        new LinkWatch(monitor, std::move(listener).value(), std::move(wake), std::move(observer)));
}

LinkWatch::LinkWatch(Monitor& monitor, discovery::LinkEventListener listener, UniqueFd wake,
                     Observer observer)
    : monitor_(monitor),
      listener_(std::move(listener)),
      wake_(std::move(wake)),
      observer_(std::move(observer)),
      thread_([this](std::stop_token stop) { run(stop); }) {}

LinkWatch::~LinkWatch() {
    thread_.request_stop();
    const std::uint64_t one = 1;
    [[maybe_unused]] const auto written = ::write(wake_.get(), &one, sizeof one);
    thread_.join();
}

void LinkWatch::run(std::stop_token stop) {
    while (!stop.stop_requested()) {
        const auto batch = listener_.wait(std::chrono::minutes(10), wake_.get());
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
