#include "numadra/plugin/grpc/event_loop.hpp"

#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <array>
#include <cerrno>
#include <mutex>
#include <vector>

#include "numadra/common/errors.hpp"
#include "numadra/common/thread_name.hpp"

namespace numadra::rpc {
namespace detail {

// The part of a loop other threads touch: a queue behind a mutex and the eventfd that wakes the
// loop. Shared with every TaskPoster, so a late post() after the loop is gone is harmless.
class TaskInbox {
  public:
    explicit TaskInbox(UniqueFd wake) : wake_(std::move(wake)) {}

    bool post(Task task) {
        {
            std::lock_guard lock(mutex_);
            if (closed_)
                return false;
            tasks_.push_back(std::move(task));
        }
        wakeUp();
        return true;
    }
    void close() {
        std::vector<Task> dropped;  // destroyed outside the lock: they may own anything
        {
            std::lock_guard lock(mutex_);
            closed_ = true;
            dropped.swap(tasks_);
        }
        wakeUp();
    }
    bool closed() {
        std::lock_guard lock(mutex_);
        return closed_;
    }
    std::vector<Task> take() {
        std::uint64_t count = 0;
        (void)!::read(wake_.get(), &count, sizeof count);  // EAGAIN when already drained
        std::lock_guard lock(mutex_);
        return std::exchange(tasks_, {});
    }
    [[nodiscard]] int fd() const { return wake_.get(); }

  private:
    void wakeUp() {
        std::uint64_t one = 1;
        (void)!::write(wake_.get(), &one, sizeof one);  // only fails when the counter is full
    }

    UniqueFd wake_;
    std::mutex mutex_;
    std::vector<Task> tasks_;
    bool closed_ = false;
};

}  // namespace detail

bool TaskPoster::post(Task task) const {
    return inbox_ && inbox_->post(std::move(task));
}

Result<std::unique_ptr<EventLoop>> EventLoop::create() {
    UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
    if (!epoll)
        return errorFromErrno(errno, "epoll_create1");
    UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!wake)
        return errorFromErrno(errno, "eventfd");
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = 0;
    if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, wake.get(), &event) != 0)
        return errorFromErrno(errno, "epoll_ctl(eventfd)");
    auto inbox = std::make_shared<detail::TaskInbox>(std::move(wake));
    return std::unique_ptr<EventLoop>(new EventLoop(std::move(epoll), std::move(inbox)));
}

EventLoop::EventLoop(UniqueFd epoll, std::shared_ptr<detail::TaskInbox> inbox)
    : epoll_(std::move(epoll)), inbox_(std::move(inbox)) {}

EventLoop::~EventLoop() {
    stop();
    inbox_->close();
}

void EventLoop::start(const char* threadName) {
    thread_ = std::thread([this, threadName] {
        nameThisThread(threadName);
        run();
    });
}

void EventLoop::stop() {
    if (!thread_.joinable())
        return;
    inbox_->close();
    thread_.join();
}

bool EventLoop::inLoopThread() const {
    return std::this_thread::get_id() == thread_.get_id();
}

bool EventLoop::post(Task task) const {
    return inbox_->post(std::move(task));
}

Result<EventLoop::WatchId> EventLoop::watch(int fd, std::uint32_t events, FdCallback callback) {
    const WatchId id = nextWatchId_++;
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &event) != 0)
        return errorFromErrno(errno, "epoll_ctl(add)");
    watches_.emplace(id, std::make_shared<Watch>(Watch{fd, std::move(callback)}));
    return id;
}

Status EventLoop::modify(WatchId id, std::uint32_t events) {
    auto found = watches_.find(id);
    if (found == watches_.end())
        return Error{"no such watch", ErrorKind::NotFound};
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, found->second->fd, &event) != 0)
        return errorFromErrno(errno, "epoll_ctl(mod)");
    return Status::Ok();
}

void EventLoop::unwatch(WatchId id) {
    auto found = watches_.find(id);
    if (found == watches_.end())
        return;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, found->second->fd, nullptr);
    watches_.erase(found);
}

EventLoop::TimerId EventLoop::runAt(Clock::time_point when, Task task) {
    const TimerId id = nextTimerId_++;
    timerIndex_.emplace(id, timers_.emplace(when, Timer{id, std::move(task)}));
    return id;
}

void EventLoop::cancelTimer(TimerId id) {
    auto found = timerIndex_.find(id);
    if (found == timerIndex_.end())
        return;
    timers_.erase(found->second);
    timerIndex_.erase(found);
}

int EventLoop::millisecondsToNextTimer() const {
    if (timers_.empty())
        return -1;
    const auto wait = timers_.begin()->first - Clock::now();
    if (wait <= Clock::duration::zero())
        return 0;
    // Round up: waking a little late is fine, waking early would spin until the timer is due.
    return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(wait).count());
}

void EventLoop::runDueTimers() {
    const auto now = Clock::now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
        auto first = timers_.begin();
        Task task = std::move(first->second.task);
        timerIndex_.erase(first->second.id);
        timers_.erase(first);
        task();
    }
}

void EventLoop::dispatch(std::uint64_t watchId, std::uint32_t events) {
    auto found = watches_.find(watchId);
    if (found == watches_.end())
        return;  // unwatched earlier in this same batch
    // Keep the callback alive while it runs: it may unwatch itself.
    auto watch = found->second;
    watch->callback(events);
}

void EventLoop::run() {
    constexpr int kBatch = 64;
    std::array<epoll_event, kBatch> events{};
    while (!inbox_->closed()) {
        const int ready =
            ::epoll_wait(epoll_.get(), events.data(), kBatch, millisecondsToNextTimer());
        if (ready < 0 && errno != EINTR) {
            spdlog::error("grpc event loop stopped reason=\"epoll_wait: {}\"",
                          std::strerror(errno));
            return;
        }
        for (int i = 0; i < ready; ++i) {
            if (events[static_cast<std::size_t>(i)].data.u64 == 0) {
                for (auto& task : inbox_->take())
                    task();
                continue;
            }
            dispatch(events[static_cast<std::size_t>(i)].data.u64,
                     events[static_cast<std::size_t>(i)].events);
        }
        runDueTimers();
    }
}

}  // namespace numadra::rpc
