#include "numadra/discovery/uevents.hpp"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace numadra::discovery
