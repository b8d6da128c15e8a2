#include "numadra/discovery/link_events.hpp"

#include <gtest/gtest.h>
#include <linux/if.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/eventfd.h>

#include <cstring>

#include "numadra/testing/netns.hpp"

namespace numadra::discovery {
namespace {

using namespace std::chrono_literals;

// One rtnetlink message as the kernel sends it: header, ifinfomsg, attributes.
std::string linkMessage(unsigned short type, int index, const std::string& name) {
    numadra::testing::LinkRequest request(0, index, IFF_UP, 0);
    if (!name.empty())
        request.addString(IFLA_IFNAME, name);
    unsigned mtu = 1500;
    request.add(IFLA_MTU, &mtu, sizeof mtu);
    auto bytes = request.finish();
    nlmsghdr header;
    std::memcpy(&header, bytes.data(), sizeof header);
    header.nlmsg_type = type;
    std::memcpy(bytes.data(), &header, sizeof header);
    return std::string(bytes.begin(), bytes.end());
}

TEST(LinkMessages, NewAndDeletedLinksGiveTheirNameAndIndex) {
    const auto events = parseLinkMessages(linkMessage(RTM_NEWLINK, 7, "ens5f0np0") +
                                          linkMessage(RTM_DELLINK, 9, "ens1f0v3"));
    ASSERT_EQ(events.size(), 2U);
    EXPECT_EQ(events[0], (LinkEvent{"ens5f0np0", 7, false}));
    EXPECT_EQ(events[1], (LinkEvent{"ens1f0v3", 9, true}));
}

TEST(LinkMessages, OtherMessageTypesAreSkipped) {
    EXPECT_TRUE(parseLinkMessages(linkMessage(RTM_NEWADDR, 7, "eth0")).empty());
    const auto events =
        parseLinkMessages(linkMessage(NLMSG_NOOP, 1, "x") + linkMessage(RTM_NEWLINK, 2, "eth1"));
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].ifName, "eth1");
}

TEST(LinkMessages, AMessageWithoutANameStillCounts) {
    const auto events = parseLinkMessages(linkMessage(RTM_NEWLINK, 4, ""));
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].ifIndex, 4);
    EXPECT_EQ(events[0].ifName, "");
}

TEST(LinkMessages, TruncatedOrLyingLengthsAreSkippedWithoutReadingPastTheEnd) {
    const std::string whole = linkMessage(RTM_NEWLINK, 7, "ens5f0np0");
    for (size_t cut = 0; cut < whole.size(); ++cut)
        EXPECT_TRUE(parseLinkMessages(whole.substr(0, cut)).empty()) << "cut at " << cut;

    // An attribute claiming more bytes than the message has: the name is not read.
    std::string lying = whole;
    const size_t attribute = NLMSG_LENGTH(sizeof(ifinfomsg));
    const unsigned short huge = 0x7fff;
    std::memcpy(lying.data() + attribute, &huge, sizeof huge);
    const auto events = parseLinkMessages(lying);
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].ifName, "");

    // A header length of zero would loop forever if trusted.
    std::string zero = whole;
    const unsigned length = 0;
    std::memcpy(zero.data(), &length, sizeof length);
    EXPECT_TRUE(parseLinkMessages(zero).empty());
}

TEST(LinkMessages, ANameWithoutItsNulIsTakenToTheAttributeEnd) {
    numadra::testing::LinkRequest request(0, 3, 0, 0);
    request.add(IFLA_IFNAME, "eth9", 4);  // no terminating NUL
    auto bytes = request.finish();
    nlmsghdr header;
    std::memcpy(&header, bytes.data(), sizeof header);
    header.nlmsg_type = RTM_NEWLINK;
    std::memcpy(bytes.data(), &header, sizeof header);
    const auto events = parseLinkMessages(std::string(bytes.begin(), bytes.end()));
    ASSERT_EQ(events.size(), 1U);
    EXPECT_EQ(events[0].ifName, "eth9");
}

// The real kernel: a namespace of the test's own, its interfaces changed over rtnetlink.
class LinkEventListenerTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string why;
        netns = numadra::testing::PrivateNetworkNamespace::create(why);
        if (!netns)
            GTEST_SKIP() << "needs a network namespace of its own (root): " << why;
    }
    std::optional<numadra::testing::PrivateNetworkNamespace> netns;
};

TEST_F(LinkEventListenerTest, AnInterfaceGoingUpAndDownIsReportedByName) {
    const std::string error = netns->run([] {
        auto listener = LinkEventListener::open();
        if (!listener)
            return listener.error().message;
        if (auto failed = numadra::testing::setLinkUp("lo", true); !failed.empty())
            return failed;
        auto up = listener->wait(2s);
        EXPECT_FALSE(up.events.empty());
        for (const auto& event : up.events) {
            EXPECT_EQ(event.ifName, "lo");
            EXPECT_FALSE(event.removed);
        }
        if (auto failed = numadra::testing::setLinkUp("lo", false); !failed.empty())
            return failed;
        auto down = listener->wait(2s);
        EXPECT_FALSE(down.events.empty());
        EXPECT_FALSE(down.lost);
        return std::string();
    });
    EXPECT_EQ(error, "");
}

TEST_F(LinkEventListenerTest, NothingHappeningMeansNoEvents) {
    const std::string error = netns->run([] {
        auto listener = LinkEventListener::open();
        if (!listener)
            return listener.error().message;
        const auto quiet = listener->wait(20ms);
        EXPECT_TRUE(quiet.events.empty());
        EXPECT_FALSE(quiet.lost);
        return std::string();
    });
    EXPECT_EQ(error, "");
}

TEST_F(LinkEventListenerTest, TheWakeDescriptorEndsTheWaitAtOnce) {
    const std::string error = netns->run([] {
        auto listener = LinkEventListener::open();
        if (!listener)
            return listener.error().message;
        UniqueFd wake(::eventfd(1, EFD_CLOEXEC));  // already readable
        const auto begin = std::chrono::steady_clock::now();
        const auto woken = listener->wait(std::chrono::minutes(10), wake.get());
        EXPECT_TRUE(woken.events.empty());
        // Not a timing claim: a wait that ignored the descriptor would take ten minutes.
        EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::minutes(1));
        return std::string();
    });
    EXPECT_EQ(error, "");
}

}  // namespace
}  // namespace numadra::discovery
