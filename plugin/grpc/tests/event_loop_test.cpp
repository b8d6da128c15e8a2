// The event loop alone: tasks from other threads, timers, fd watches.

#include "numadra/plugin/grpc/event_loop.hpp"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <future>
#include <thread>
#include <vector>

namespace numadra::rpc {
namespace {

using namespace std::chrono_literals;

std::unique_ptr<EventLoop> startedLoop() {
    auto loop = std::move(EventLoop::create().value());
    loop->start();
    return loop;
}

// Runs `work` on the loop and returns its result.
template <class Work>
auto onLoop(EventLoop& loop, Work work) {
    std::promise<decltype(work())> result;
    loop.post([&] { result.set_value(work()); });
    return result.get_future().get();
}

TEST(GrpcEventLoop, RunsPostedTasksOnItsThreadInOrder) {
    auto loop = startedLoop();
    std::vector<int> order;
    std::promise<std::thread::id> ranOn;
    for (int i = 0; i < 100; ++i)
        loop->post([&order, i] { order.push_back(i); });
    loop->post([&] { ranOn.set_value(std::this_thread::get_id()); });
    EXPECT_NE(ranOn.get_future().get(), std::this_thread::get_id());
    std::vector<int> expected(100);
    for (int i = 0; i < 100; ++i)
        expected[static_cast<std::size_t>(i)] = i;
    EXPECT_EQ(order, expected);
}

TEST(GrpcEventLoop, DropsTasksPostedAfterItStopped) {
    auto loop = startedLoop();
    auto poster = loop->poster();
    loop->stop();
    bool ran = false;
    EXPECT_FALSE(poster.post([&ran] { ran = true; }));
    loop.reset();
    EXPECT_FALSE(poster.post([&ran] { ran = true; }));  // the loop is gone: still safe
    EXPECT_FALSE(ran);
}

TEST(GrpcEventLoop, FiresTimersInTheirOrderAndNotCancelledOnes) {
    auto loop = startedLoop();
    std::vector<int> fired;
    std::promise<void> done;
    onLoop(*loop, [&] {
        const auto now = Clock::now();
        loop->runAt(now + 30ms, [&] { fired.push_back(2); });
        loop->runAt(now + 10ms, [&] { fired.push_back(1); });
        const auto cancelled = loop->runAt(now + 20ms, [&] { fired.push_back(99); });
        loop->runAt(now + 40ms, [&] { done.set_value(); });
        loop->cancelTimer(cancelled);
        return 0;
    });
    EXPECT_EQ(done.get_future().wait_for(5s), std::future_status::ready);
    EXPECT_EQ(fired, (std::vector<int>{1, 2}));
}

TEST(GrpcEventLoop, AWatchMayRemoveItselfFromItsCallback) {
    auto loop = startedLoop();
    UniqueFd ready(::eventfd(1, EFD_CLOEXEC | EFD_NONBLOCK));  // readable from the start
    std::atomic<int> calls{0};
    onLoop(*loop, [&] {
        auto id = std::make_shared<EventLoop::WatchId>(0);
        *id = loop->watch(ready.get(), EPOLLIN,
                          [&, id](std::uint32_t) {
                              ++calls;
                              loop->unwatch(*id);
                          })
                  .value();
        return 0;
    });
    std::this_thread::sleep_for(50ms);  // level-triggered: it would fire again and again
    onLoop(*loop, [] { return 0; });
    EXPECT_EQ(calls.load(), 1);
}

}  // namespace
}  // namespace numadra::rpc
