#include "worker_pool.hpp"

#include <utility>

namespace numadra::plugin {

WorkerPool::WorkerPool(std::size_t threads) {
    threads_.reserve(threads);
    for (std::size_t i = 0; i < threads; ++i)
        threads_.emplace_back([this](const std::stop_token& stop) { work(stop); });
}

WorkerPool::~WorkerPool() {
    stop();
}

void WorkerPool::submit(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return;
        queue_.push_back(std::move(task));
    }
    wake_.notify_one();
}

void WorkerPool::stop() {
    std::deque<std::function<void()>> dropped;
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
        dropped.swap(queue_);
    }
    for (auto& thread : threads_)
        thread.request_stop();
    wake_.notify_all();
    for (auto& thread : threads_) {
        if (thread.joinable())
            thread.join();
    }
    // `dropped` is destroyed here, outside the lock: tasks may own state whose destructor locks.
}

void WorkerPool::work(const std::stop_token& stop) {
    while (true) {
        std::function<void()> task;
        {
            std::unique_lock lock(mutex_);
            if (!wake_.wait(lock, stop, [this] { return !queue_.empty(); }))
                return;  // stop requested
            task = std::move(queue_.front());
            queue_.pop_front();
        }
        task();
    }
}

}  // namespace numadra::plugin
