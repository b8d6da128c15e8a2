#include "numadra/discovery/uevents.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include <optional>
#include <string>

#include "numadra/common/unique_fd.hpp"
#include "numadra/testing/netns.hpp"

namespace numadra::discovery {
namespace {

std::string message(std::initializer_list<std::string> fields) {
    std::string out;
    for (const auto& f : fields) {
        out += f;
        out += '\0';
    }
    return out;
}

TEST(Uevent, ParsesAKernelMessage) {
    auto event = parseUevent(
        message({"remove@/devices/pci0000:00/0000:00:01.0/0000:01:00.0", "ACTION=remove",
                 "DEVPATH=/devices/pci0000:00/0000:00:01.0/0000:01:00.0", "SUBSYSTEM=pci",
                 "PCI_SLOT_NAME=0000:01:00.0", "SEQNUM=4242"}));
    ASSERT_TRUE(event.has_value());
    EXPECT_EQ(event->action, "remove");
    EXPECT_EQ(event->subsystem, "pci");
    EXPECT_EQ(event->devpath, "/devices/pci0000:00/0000:00:01.0/0000:01:00.0");
}

TEST(Uevent, IncompleteMessagesAreIgnored) {
    EXPECT_FALSE(parseUevent("").has_value());
    EXPECT_FALSE(parseUevent(message({"add@/x", "SUBSYSTEM=pci"})).has_value());
    EXPECT_FALSE(parseUevent("garbage without separators").has_value());
}

TEST(UeventListener, OpensOrSaysWhy) {
    auto listener = UeventListener::open();
    if (!listener) {
        EXPECT_NE(listener.error().message.find("netlink"), std::string::npos);
        return;
    }
    // Nothing is hot-plugged during the test: a short wait returns no pci events.
    auto events = listener->wait(std::chrono::milliseconds(10), {"pci"});
    EXPECT_TRUE(events.empty());
}

TEST(UeventListener, TheWakeDescriptorEndsTheWaitAtOnce) {
    auto listener = UeventListener::open();
    if (!listener)
        GTEST_SKIP() << listener.error().message;
    UniqueFd wake(::eventfd(1, EFD_CLOEXEC));  // already readable
    const auto begin = std::chrono::steady_clock::now();
    EXPECT_TRUE(listener->wait(std::chrono::minutes(10), {"pci"}, wake.get()).empty());
    // Not a timing claim: a wait that ignored the descriptor would take ten minutes.
    EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::minutes(1));
}

// More events than the socket's buffer holds, sent in a network namespace of the test's own: the
// kernel drops the rest and the listener says so, once.
TEST(UeventListener, EventsTheKernelDroppedAreReportedOnce) {
    std::string why;
    auto netns = testing::PrivateNetworkNamespace::create(why);
    if (!netns)
        GTEST_SKIP() << "needs a network namespace of its own (root): " << why;
    std::optional<UeventListener> listener;
    const std::string sent = netns->run([&] {
        auto opened = UeventListener::open();
        if (!opened)
            return opened.error().message;
        listener = std::move(opened).value();
        constexpr int kFarMoreThanItsBuffer = 100'000;  // ~1 KiB each against 16 MiB at most
        for (int i = 0; i < kFarMoreThanItsBuffer; ++i) {
            if (auto error = testing::sendUevent("change", "/devices/virtual/x", "pci");
                !error.empty())
                return error;
        }
        return std::string();
    });
    if (!sent.empty())
        GTEST_SKIP() << "cannot send uevents in the namespace: " << sent;
    EXPECT_FALSE(listener->wait(std::chrono::milliseconds(0), {"pci"}).empty());
    EXPECT_TRUE(listener->lostEvents());
    EXPECT_FALSE(listener->lostEvents());
}

}  // namespace
}  // namespace numadra::discovery
