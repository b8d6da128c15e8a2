#pragma once
// Threads running queued tasks, started on demand and gone when idle: an idle daemon keeps none,
// a burst gets up to `maxThreads` of them at once.
//
// A thread starts only when a task is queued and no idle worker is left to take it (never more
// than `maxThreads`); a worker that finds nothing to do for `linger` exits. Where the blocking
// ClaimPreparer calls run (so gRPC's loop never blocks), and the claim-status writes.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace numadra {

class WorkerPool {
  public:
    static constexpr std::chrono::milliseconds kDefaultLinger{5'000};

    // `threadName` names each worker (15 characters are kept).
    explicit WorkerPool(std::size_t maxThreads, std::string threadName = "worker",
                        std::chrono::milliseconds linger = kDefaultLinger);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Queues a task, starting a worker for it if none is idle and the cap allows; ignored once
    // stop() has begun. Tasks must not throw. If the system refuses a new thread the task waits
    // for a worker that is already running, or for the next submit() that gets one started.
    void submit(std::function<void()> task);
    // Drops the tasks not yet started and waits for every worker to end: the running ones finish
    // their task, the idle and the exiting ones are joined. Idempotent.
    void stop();

    // Workers alive now (running a task, idle or about to exit).
    [[nodiscard]] std::size_t threads() const;

  private:
    using Worker = std::list<std::thread>::iterator;

    void startWorker();  // mutex_ held
    void work(Worker self);
    // The task to run next, or none when the worker should exit (stop, or idle for `linger`).
    std::function<void()> nextTask(std::unique_lock<std::mutex>& lock);
    void retire(Worker self, std::unique_lock<std::mutex>& lock);

    const std::size_t maxThreads_;
    const std::string threadName_;
    const std::chrono::milliseconds linger_;

    mutable std::mutex mutex_;
    std::condition_variable wake_;     // a task was queued, or stop() began
    std::condition_variable allGone_;  // the last worker retired
    std::deque<std::function<void()>> queue_;
    std::list<std::thread> workers_;  // alive: running a task, idle or about to exit
    std::size_t idle_ = 0;            // waiting for a task
    bool stopping_ = false;
    // No worker is detached: each one that ends moves its own handle here and joins the one it
    // replaces, so at most one ended thread is left unjoined (stop() joins it).
    std::thread lastRetired_;
};

}  // namespace numadra
