#include "numadra/discovery/uevents.hpp"

#include <gtest/gtest.h>
#include <sys/eventfd.h>

#include "numadra/common/unique_fd.hpp"

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

}  // namespace
}  // namespace numadra::discovery
