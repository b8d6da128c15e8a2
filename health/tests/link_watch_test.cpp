// Monitor::watchLinks against the real kernel: the Monitor watches a copy of a mocked machine,
// and a bridge named like the machine's NIC interface plays it in a network namespace of the
// test's own.

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>
#include <thread>

#include "numadra/discovery/discovery.hpp"
#include "numadra/health/health.hpp"
#include "numadra/slices/builder.hpp"
#include "numadra/testing/health_changes.hpp"
#include "numadra/testing/machines.hpp"
#include "numadra/testing/netns.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::health {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNic = "nic-0000-c1-00-0";  // epyc-2s-nps4, interface ens5f0np0
constexpr const char* kInterface = "ens5f0np0";

class LinkWatchTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        netns = numadra::testing::PrivateNetworkNamespace::create(why);
        if (!netns)
            GTEST_SKIP() << "needs a network namespace of its own (root): " << why;
        for (const char* name : {kInterface, "veth0a1b2c"}) {
            if (auto failed = netns->run([name] { return numadra::testing::addBridge(name); });
                !failed.empty())
                GTEST_SKIP() << "cannot create an interface in the namespace: " << failed;
        }
        tree.copyFrom(numadra::testing::machineRoot("epyc-2s-nps4"));
        auto machine = discovery::discover({tree.root(), nullptr, nullptr});
        ASSERT_TRUE(machine) << machine.error().message;
        slices::SliceOptions options;
        options.nodeName = "node-a";
        const auto devices = slices::buildPoolContent(*machine, options).devices;
        MonitorOptions monitorOptions;
        monitorOptions.poolName = "node-a";
        monitorOptions.pollInterval = 1h;  // only a link event can start a round
        monitor = std::make_unique<Monitor>(discovery::Sysfs(tree.root()), monitorOptions);
        monitor->setDevices(watchList(*machine, devices));
        changes = std::make_unique<numadra::testing::HealthChanges>(*monitor);
    }

    void TearDown() override {
        changes.reset();
        if (monitor)
            monitor->stop();
    }

    // The subscription belongs to the namespace of the thread that makes it; the Monitor's
    // thread starts after it, and its first round is waited for.
    void startWatch() {
        const auto error = netns->run([this] {
            auto watching = monitor->watchLinks([this](std::size_t watched, bool lost) {
                watchedEvents += watched;
                lostBatches += lost ? 1 : 0;
                ++checks;
            });
            return watching ? std::string() : watching.error().message;
        });
        ASSERT_EQ(error, "");
        ASSERT_TRUE(monitor->watchesLinks());
        monitor->start({});
        ASSERT_TRUE(changes->wait(10s));  // the first round
    }

    std::string setUp(const char* name) {
        return netns->run([name] { return numadra::testing::setLinkUp(name, true); });
    }

    std::optional<numadra::testing::PrivateNetworkNamespace> netns;
    numadra::testing::TempTree tree;
    std::unique_ptr<Monitor> monitor;
    std::unique_ptr<numadra::testing::HealthChanges> changes;
    std::atomic<std::size_t> watchedEvents{0}, lostBatches{0}, checks{0};
};

TEST_F(LinkWatchTest, AChangeOfAWatchedInterfaceStartsARoundAtOnce) {
    startWatch();
    std::ofstream(tree.path(std::string("class/net/") + kInterface + "/operstate"), std::ios::trunc)
        << "down\n";
    ASSERT_EQ(setUp(kInterface), "");
    // The poll is an hour away: only the event can explain a change within the wait.
    ASSERT_TRUE(changes->wait(10s));
    EXPECT_EQ(monitor->current().at(kNic).state, State::Unhealthy);
    EXPECT_GE(watchedEvents.load(), 1U);
    EXPECT_EQ(lostBatches.load(), 0U);
}

TEST_F(LinkWatchTest, ChangesOfOtherInterfacesStartNothing) {
    startWatch();
    ASSERT_EQ(setUp("veth0a1b2c"), "");
    // Then a watched one, so the test knows the events of the first were processed.
    ASSERT_EQ(setUp(kInterface), "");
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (checks.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    EXPECT_EQ(checks.load(), 1U);
    EXPECT_GE(watchedEvents.load(), 1U);
}

TEST_F(LinkWatchTest, StoppingDoesNotWaitForAnEventOrThePoll) {
    startWatch();
    const auto begin = std::chrono::steady_clock::now();
    monitor->stop();
    // Not a timing claim: a thread that ignored the stop would sit in its hour-long wait.
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 1min);
}

}  // namespace
}  // namespace numadra::health
