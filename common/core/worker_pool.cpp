#include "numadra/common/worker_pool.hpp"

#include <system_error>
#include <utility>

#include "numadra/common/thread_name.hpp"

namespace numadra {

WorkerPool::WorkerPool(std::size_t maxThreads, std::string threadName,
                       std::chrono::milliseconds linger)
    : maxThreads_(maxThreads), threadName_(std::move(threadName)), linger_(linger) {}

WorkerPool::~WorkerPool() {
    stop();
}

void WorkerPool::submit(std::function<void()> task) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return;
        queue_.push_back(std::move(task));
        // Each idle worker takes one queued task: a worker starts only for the tasks beyond them.
        if (queue_.size() > idle_ && workers_.size() < maxThreads_)
            startWorker();
    }
    wake_.notify_one();
}

void WorkerPool::startWorker() {
    auto self = workers_.emplace(workers_.end());
    try {
        // The worker touches its handle only under mutex_, which is held until it is assigned.
        *self = std::thread([this, self] { work(self); });
    } catch (const std::system_error&) {
        workers_.erase(self);  // out of threads: a running worker or a later submit takes it
    }
}

std::size_t WorkerPool::threads() const {
    std::lock_guard lock(mutex_);
    return workers_.size();
}

void WorkerPool::stop() {
    std::deque<std::function<void()>> dropped;
    std::thread last;
    {
        std::unique_lock lock(mutex_);
        stopping_ = true;
        dropped.swap(queue_);
        wake_.notify_all();
        allGone_.wait(lock, [this] { return workers_.empty(); });
        last = std::move(lastRetired_);
    }
    if (last.joinable())
        last.join();  // it joined the one before it, and so on
    // `dropped` is destroyed here, outside the lock: tasks may own state whose destructor locks.
}

void WorkerPool::work(Worker self) {
    nameThisThread(threadName_);
    std::unique_lock lock(mutex_);
    while (auto task = nextTask(lock)) {
        lock.unlock();
        task();
        task = nullptr;  // what it owns goes outside the lock too
        lock.lock();
    }
    retire(self, lock);
}

std::function<void()> WorkerPool::nextTask(std::unique_lock<std::mutex>& lock) {
    if (queue_.empty() && !stopping_) {
        ++idle_;
        // A submit() that queued its task before the timeout is seen here: the predicate is
        // checked under the lock once more when the wait times out.
        wake_.wait_for(lock, linger_, [this] { return !queue_.empty() || stopping_; });
        --idle_;
    }
    if (queue_.empty())
        return nullptr;  // idle for the whole linger, or stopping
    auto task = std::move(queue_.front());
    queue_.pop_front();
    return task;
}

void WorkerPool::retire(Worker self, std::unique_lock<std::mutex>& lock) {
    std::thread previous = std::exchange(lastRetired_, std::move(*self));
    workers_.erase(self);
    if (workers_.empty())
        allGone_.notify_all();
    lock.unlock();
    if (previous.joinable())
        previous.join();  // it ended (or is ending) its run without the lock: a short wait
}

}  // namespace numadra
