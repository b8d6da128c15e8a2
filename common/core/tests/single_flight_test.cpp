#include "numadra/common/single_flight.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <stdexcept>
#include <thread>
#include <vector>

namespace numadra {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Work that blocks until released, counting its runs.
class Gate {
  public:
    int run() {
        ++runs;
        std::unique_lock lock(mutex_);
        opened_.wait(lock, [this] { return open_; });
        return 42;
    }
    void open() {
        {
            std::lock_guard lock(mutex_);
            open_ = true;
        }
        opened_.notify_all();
    }
    std::atomic<int> runs{0};

  private:
    std::mutex mutex_;
    std::condition_variable opened_;
    bool open_ = false;
};

template <class Predicate>
bool eventually(Predicate predicate) {
    for (int i = 0; i < 1000 && !predicate(); ++i)
        std::this_thread::sleep_for(5ms);
    return predicate();
}

TEST(SingleFlight, ConcurrentCallersOfOneKeyShareOneRun) {
    SingleFlight<int> flights;
    Gate gate;
    const auto deadline = Clock::now() + 30s;
    std::vector<std::future<SingleFlight<int>::Outcome>> callers;
    callers.push_back(std::async(std::launch::async, [&] {
        return flights.run("ns/claim", deadline, [&] { return gate.run(); });
    }));
    ASSERT_TRUE(eventually([&] { return gate.runs.load() == 1; }));
    for (int i = 0; i < 4; ++i)
        callers.push_back(std::async(std::launch::async, [&] {
            return flights.run("ns/claim", deadline, [&] { return gate.run(); });
        }));
    ASSERT_TRUE(eventually([&] { return flights.callers("ns/claim") == 5; }));
    gate.open();
    int shared = 0;
    for (auto& caller : callers) {
        const auto outcome = caller.get();
        EXPECT_EQ(outcome.value, 42);
        shared += outcome.shared ? 1 : 0;
    }
    EXPECT_EQ(gate.runs.load(), 1);
    EXPECT_EQ(shared, 4);
    EXPECT_EQ(flights.inFlight(), 0U);
}

TEST(SingleFlight, DifferentKeysRunApart) {
    SingleFlight<int> flights;
    std::atomic<int> runs{0};
    const auto deadline = Clock::now() + 1s;
    EXPECT_EQ(flights.run("a", deadline, [&] { return ++runs; }).value, 1);
    EXPECT_EQ(flights.run("b", deadline, [&] { return ++runs; }).value, 2);
    EXPECT_EQ(flights.run("a", deadline, [&] { return ++runs; }).value, 3) << "runs are not cached";
}

TEST(SingleFlight, AJoinerGivesUpAtItsOwnDeadline) {
    SingleFlight<int> flights;
    Gate gate;
    auto leader = std::async(std::launch::async, [&] {
        return flights.run("k", Clock::now() + 30s, [&] { return gate.run(); });
    });
    ASSERT_TRUE(eventually([&] { return gate.runs.load() == 1; }));
    const auto started = Clock::now();
    const auto joiner = flights.run("k", Clock::now() + 100ms, [&] { return gate.run(); });
    EXPECT_FALSE(joiner.value.has_value());
    EXPECT_TRUE(joiner.shared);
    EXPECT_GE(Clock::now() - started, 100ms);
    EXPECT_EQ(gate.runs.load(), 1);
    gate.open();
    EXPECT_EQ(leader.get().value, 42);
}

TEST(SingleFlight, ACallerWithALaterDeadlineDoesNotJoinARunThatEndsSooner) {
    SingleFlight<int> flights;
    Gate gate;
    auto early = std::async(std::launch::async, [&] {
        return flights.run("k", Clock::now() + 1s, [&] { return gate.run(); });
    });
    ASSERT_TRUE(eventually([&] { return gate.runs.load() == 1; }));
    auto late = std::async(std::launch::async, [&] {
        return flights.run("k", Clock::now() + 30s, [&] { return gate.run(); });
    });
    ASSERT_TRUE(eventually([&] { return gate.runs.load() == 2; }));
    // A third caller joins the run that lasts longest.
    auto third = std::async(std::launch::async, [&] {
        return flights.run("k", Clock::now() + 20s, [&] { return gate.run(); });
    });
    ASSERT_TRUE(eventually([&] { return flights.callers("k") == 2; }));
    gate.open();
    EXPECT_FALSE(early.get().shared);
    EXPECT_FALSE(late.get().shared);
    EXPECT_TRUE(third.get().shared);
    EXPECT_EQ(gate.runs.load(), 2);
}

TEST(SingleFlight, AnExceptionReachesEveryCallerOfTheRun) {
    SingleFlight<int> flights;
    std::atomic<bool> release{false};
    auto leader = std::async(std::launch::async, [&] {
        return flights.run("k", Clock::now() + 30s, [&]() -> int {
            while (!release)
                std::this_thread::sleep_for(1ms);
            throw std::runtime_error("broken");
        });
    });
    ASSERT_TRUE(eventually([&] { return flights.inFlight() == 1; }));
    auto joiner = std::async(
        std::launch::async, [&] { return flights.run("k", Clock::now() + 10s, [] { return 0; }); });
    ASSERT_TRUE(eventually([&] { return flights.callers("k") == 2; }));
    release = true;
    EXPECT_THROW(leader.get(), std::runtime_error);
    EXPECT_THROW(joiner.get(), std::runtime_error);
    EXPECT_EQ(flights.inFlight(), 0U);
}

}  // namespace
}  // namespace numadra
