#pragma once
// A fixed set of threads running queued tasks: where the blocking ClaimPreparer calls run, so
// gRPC's own callback threads never block.

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <stop_token>
#include <thread>
#include <vector>

namespace numadra::plugin {

class WorkerPool {
  public:
    explicit WorkerPool(std::size_t threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Queues a task; ignored once stop() has begun. Tasks must not throw.
    void submit(std::function<void()> task);
    // Drops the tasks not yet started and waits for the running ones. Idempotent.
    void stop();

  private:
    void work(const std::stop_token& stop);

    std::mutex mutex_;
    std::condition_variable_any wake_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::vector<std::jthread> threads_;  // last: joined before the queue goes away
};

}  // namespace numadra::plugin
