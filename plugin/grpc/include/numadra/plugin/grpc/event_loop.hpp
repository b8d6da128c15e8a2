#pragma once
// One thread waiting on epoll: file descriptors, timers and tasks posted from other threads run
// there, one at a time, so the state they touch needs no lock.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <thread>
#include <unordered_map>

#include "numadra/common/result.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::rpc {

using Task = std::function<void()>;
using Clock = std::chrono::steady_clock;

namespace detail {
class TaskInbox;
}

// Posts tasks to a loop from any thread. Copies outlive the loop safely: once the loop is
// stopped or gone, post() drops the task and returns false.
class TaskPoster {
  public:
    bool post(Task task) const;

  private:
    friend class EventLoop;
    explicit TaskPoster(std::shared_ptr<detail::TaskInbox> inbox) : inbox_(std::move(inbox)) {}
    std::shared_ptr<detail::TaskInbox> inbox_;
};

class EventLoop {
  public:
    using WatchId = std::uint64_t;
    using TimerId = std::uint64_t;
    using FdCallback = std::function<void(std::uint32_t epollEvents)>;

    static Result<std::unique_ptr<EventLoop>> create();
    EventLoop(const EventLoop&) = delete;
    EventLoop& operator=(const EventLoop&) = delete;
    ~EventLoop();  // stops the thread

    // Starts the loop's thread (named `threadName`). Once only.
    void start(const char* threadName = "grpc-loop");
    // Stops and joins the thread; tasks not yet run are dropped. Not from the loop's thread.
    void stop();
    [[nodiscard]] bool running() const { return thread_.joinable(); }
    [[nodiscard]] bool inLoopThread() const;

    // From any thread.
    bool post(Task task) const;
    [[nodiscard]] TaskPoster poster() const { return TaskPoster(inbox_); }

    // The rest only on the loop's thread (or before start()). Level-triggered epoll events.
    Result<WatchId> watch(int fd, std::uint32_t events, FdCallback callback);
    Status modify(WatchId id, std::uint32_t events);
    void unwatch(WatchId id);  // idempotent; safe from inside the fd's own callback
    TimerId runAt(Clock::time_point when, Task task);
    void cancelTimer(TimerId id);  // idempotent

  private:
    struct Watch {
        int fd;
        FdCallback callback;
    };
    struct Timer {
        TimerId id;
        Task task;
    };

    EventLoop(UniqueFd epoll, std::shared_ptr<detail::TaskInbox> inbox);
    void run();
    int millisecondsToNextTimer() const;
    void runDueTimers();
    void dispatch(std::uint64_t watchId, std::uint32_t events);

    UniqueFd epoll_;
    std::shared_ptr<detail::TaskInbox> inbox_;
    std::unordered_map<WatchId, std::shared_ptr<Watch>> watches_;
    std::multimap<Clock::time_point, Timer> timers_;
    std::unordered_map<TimerId, std::multimap<Clock::time_point, Timer>::iterator> timerIndex_;
    WatchId nextWatchId_ = 1;  // 0 is the inbox's eventfd
    TimerId nextTimerId_ = 1;
    std::thread thread_;
};

}  // namespace numadra::rpc
