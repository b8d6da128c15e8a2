#include "numadra/discovery/link_events.hpp"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "netlink_wait.hpp"
#include "numadra/common/errors.hpp"

namespace numadra::discovery {

namespace {

// The kernel aligns every message and attribute to 4 bytes (NLMSG_ALIGN, RTA_ALIGN).
constexpr size_t align4(size_t length) {
    return (length + 3) & ~size_t{3};
}

template <class T>
T copyAt(std::string_view bytes, size_t offset) {
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

// IFLA_IFNAME among the attributes after the ifinfomsg; empty when absent or malformed.
std::string interfaceName(std::string_view attributes) {
    size_t offset = 0;
    while (attributes.size() - offset >= sizeof(rtattr)) {
        const auto attribute = copyAt<rtattr>(attributes, offset);
        if (attribute.rta_len < sizeof(rtattr) || attribute.rta_len > attributes.size() - offset)
            break;
        if (attribute.rta_type == IFLA_IFNAME) {
            auto name =
                attributes.substr(offset + sizeof(rtattr), attribute.rta_len - sizeof(rtattr));
            return std::string(name.substr(0, name.find('\0')));
        }
        offset += align4(attribute.rta_len);
        if (offset > attributes.size())
            break;
    }
    return {};
}

// A large receive buffer: pod churn on a busy node adds and removes veth pairs in bursts.
constexpr int kReceiveBuffer = 1 << 20;

}  // namespace

std::vector<LinkEvent> parseLinkMessages(std::string_view datagram) {
    std::vector<LinkEvent> events;
    size_t offset = 0;
    while (datagram.size() - offset >= sizeof(nlmsghdr)) {
        const auto header = copyAt<nlmsghdr>(datagram, offset);
        if (header.nlmsg_len < sizeof(nlmsghdr) || header.nlmsg_len > datagram.size() - offset)
            break;
        const auto message = datagram.substr(offset, header.nlmsg_len);
        const size_t infoOffset = align4(sizeof(nlmsghdr));
        if ((header.nlmsg_type == RTM_NEWLINK || header.nlmsg_type == RTM_DELLINK) &&
            message.size() >= infoOffset + sizeof(ifinfomsg)) {
            const auto info = copyAt<ifinfomsg>(message, infoOffset);
            const size_t attributesOffset = infoOffset + align4(sizeof(ifinfomsg));
            LinkEvent event;
            event.ifIndex = info.ifi_index;
            event.removed = header.nlmsg_type == RTM_DELLINK;
            if (attributesOffset < message.size())
                event.ifName = interfaceName(message.substr(attributesOffset));
            events.push_back(std::move(event));
        }
        offset += align4(header.nlmsg_len);
        if (offset > datagram.size())
            break;
    }
    return events;
}

Result<LinkEventListener> LinkEventListener::open() {
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE));
    if (!fd)
        return errorFromErrno(errno, "rtnetlink socket");
    // Best effort: without it the default buffer (about 200 KiB) is used.
    (void)::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &kReceiveBuffer, sizeof kReceiveBuffer);
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = RTMGRP_LINK;
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        return errorFromErrno(errno, "rtnetlink bind (RTMGRP_LINK)");
    return LinkEventListener(std::move(fd));
}

LinkEvents LinkEventListener::wait(std::chrono::milliseconds timeout, int wakeFd) {
    LinkEvents result;
    if (!waitReadable(fd_.get(), timeout, wakeFd))
        return result;
    // Link messages carry statistics and are about 1-2 KiB each; one datagram holds one.
    std::array<char, 32768> buffer{};
    for (;;) {
        const ssize_t n = ::recv(fd_.get(), buffer.data(), buffer.size(), MSG_TRUNC);
        if (n < 0) {
            if (errno == ENOBUFS) {
                result.lost = true;  // the kernel dropped some; the socket goes on working
                continue;
            }
            if (errno == EINTR)
                continue;
            break;  // EAGAIN: drained
        }
        if (static_cast<size_t>(n) > buffer.size()) {
            result.lost = true;
            continue;
        }
        auto events = parseLinkMessages(std::string_view(buffer.data(), static_cast<size_t>(n)));
        for (auto& event : events)
            result.events.push_back(std::move(event));
    }
    return result;
}

}  // namespace numadra::discovery
