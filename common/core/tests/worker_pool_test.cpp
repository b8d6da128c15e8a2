#include "numadra/common/worker_pool.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "numadra/testing/threads.hpp"

namespace numadra {
namespace {

using namespace std::chrono_literals;
using numadra::testing::threadsNamed;

constexpr const char* kName = "pool-test";

// Polls until the predicate holds or 10 s pass.
template <class Predicate>
bool eventually(Predicate predicate) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (!predicate()) {
        if (std::chrono::steady_clock::now() > end)
            return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

// Tasks that block until opened, counting how many run at once.
class Gate {
  public:
    void pass() {
        std::unique_lock lock(mutex_);
        ++running_;
        mostAtOnce_ = std::max(mostAtOnce_, running_);
        ++entered_;
        opened_.wait(lock, [this] { return open_; });
        --running_;
        ++passed_;
    }
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        opened_.notify_all();
    }
    int entered() const {
        std::lock_guard lock(mutex_);
        return entered_;
    }
    int passed() const {
        std::lock_guard lock(mutex_);
        return passed_;
    }
    int mostAtOnce() const {
        std::lock_guard lock(mutex_);
        return mostAtOnce_;
    }

  private:
    mutable std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
    int running_ = 0, mostAtOnce_ = 0, entered_ = 0, passed_ = 0;
};

TEST(WorkerPoolTest, StartsNoThreadUntilATaskIsQueued) {
    WorkerPool pool(4, kName);
    EXPECT_EQ(pool.threads(), 0U);
    EXPECT_EQ(threadsNamed(kName), 0U);
}

TEST(WorkerPoolTest, GrowsOnDemandUpToTheCapAndNeverBeyond) {
    WorkerPool pool(3, kName);
    Gate gate;
    for (int i = 0; i < 10; ++i)
        pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return gate.entered() == 3; }));
    std::this_thread::sleep_for(50ms);  // room for a fourth to (wrongly) start
    EXPECT_EQ(gate.entered(), 3);
    EXPECT_EQ(pool.threads(), 3U);
    EXPECT_EQ(threadsNamed(kName), 3U);
    gate.open();
    ASSERT_TRUE(eventually([&] { return gate.passed() == 10; }));
    EXPECT_EQ(gate.mostAtOnce(), 3);
    EXPECT_EQ(pool.threads(), 3U) << "within the linger the workers stay";
}

TEST(WorkerPoolTest, AnIdleWorkerTakesTheNextTaskInsteadOfANewThread) {
    WorkerPool pool(4, kName);
    std::atomic<int> done{0};
    for (int i = 1; i <= 5; ++i) {
        pool.submit([&] { ++done; });
        ASSERT_TRUE(eventually([&] { return done == i; }));
        ASSERT_TRUE(eventually([&] { return threadsNamed(kName) == 1; }));
        EXPECT_EQ(pool.threads(), 1U) << "task " << i;
    }
}

TEST(WorkerPoolTest, ATaskQueuedWhileAllAreBusyWaitsForAWorker) {
    WorkerPool pool(1, kName);
    Gate gate;
    std::atomic<bool> second{false};
    pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return gate.entered() == 1; }));
    pool.submit([&] { second = true; });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(second.load());
    EXPECT_EQ(pool.threads(), 1U);
    gate.open();
    EXPECT_TRUE(eventually([&] { return second.load(); }));
}

TEST(WorkerPoolTest, IdleWorkersExitAfterTheLinger) {
    WorkerPool pool(4, kName, 50ms);
    Gate gate;
    for (int i = 0; i < 4; ++i)
        pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return threadsNamed(kName) == 4; }));
    gate.open();
    EXPECT_TRUE(eventually([&] { return pool.threads() == 0; }));
    EXPECT_TRUE(eventually([&] { return threadsNamed(kName) == 0; }))
        << numadra::testing::joinedThreadNames();
    // And they come back on demand.
    std::atomic<bool> ran{false};
    pool.submit([&] { ran = true; });
    EXPECT_TRUE(eventually([&] { return ran.load(); }));
}

TEST(WorkerPoolTest, StopWaitsForBusyWorkersJoinsExitingOnesAndDropsTheQueue) {
    WorkerPool pool(3, kName, 1ms);
    // Workers that ran a quick task and are exiting (or gone) by now...
    std::atomic<int> quick{0};
    for (int i = 0; i < 2; ++i)
        pool.submit([&] { ++quick; });
    ASSERT_TRUE(eventually([&] { return quick == 2; }));
    // ...one busy, and a queue behind it.
    WorkerPool* raw = &pool;
    Gate gate;
    std::atomic<int> queuedRan{0};
    pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return gate.entered() == 1; }));
    for (int i = 0; i < 2; ++i)
        pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return gate.entered() == 3; }));  // the cap is full
    for (int i = 0; i < 5; ++i)
        pool.submit([&] { ++queuedRan; });
    std::atomic<bool> stopped{false};
    std::thread stopper([&] {
        raw->stop();
        stopped = true;
    });
    std::this_thread::sleep_for(100ms);
    EXPECT_FALSE(stopped.load()) << "stop() waits for the running tasks";
    gate.open();
    stopper.join();
    EXPECT_EQ(gate.passed(), 3);
    EXPECT_EQ(queuedRan.load(), 0) << "queued tasks are dropped";
    EXPECT_EQ(pool.threads(), 0U);
    EXPECT_EQ(threadsNamed(kName), 0U) << "every worker joined";
    pool.submit([&] { ++queuedRan; });  // ignored after stop
    std::this_thread::sleep_for(20ms);
    EXPECT_EQ(queuedRan.load(), 0);
    EXPECT_EQ(pool.threads(), 0U);
}

// A submit that lands while the only worker's linger runs out must be taken by that worker or by
// a new one, never left in the queue with no worker to run it.
TEST(WorkerPoolTest, ASubmitRacingTheLingerTimeoutIsNeverLost) {
    constexpr auto kLinger = 1ms;
    WorkerPool pool(1, kName, kLinger);
    std::mt19937 random(20240527);
    std::uniform_int_distribution<int> pauseUs(0, 2'000);  // around the linger, both sides
    std::atomic<int> ran{0};
    for (int i = 1; i <= 1'000; ++i) {
        pool.submit([&] { ++ran; });
        ASSERT_TRUE(eventually([&] { return ran == i; })) << "task " << i << " was lost";
        std::this_thread::sleep_for(std::chrono::microseconds(pauseUs(random)));
    }
    EXPECT_LE(pool.threads(), 1U);
}

TEST(WorkerPoolTest, WorkersCarryTheirName) {
    WorkerPool pool(1, "a-name-longer-than-fifteen");
    Gate gate;
    pool.submit([&] { gate.pass(); });
    ASSERT_TRUE(eventually([&] { return gate.entered() == 1; }));
    EXPECT_EQ(threadsNamed("a-name-longer-t"), 1U) << numadra::testing::joinedThreadNames();
    gate.open();
}

}  // namespace
}  // namespace numadra
