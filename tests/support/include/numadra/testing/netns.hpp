#pragma once
// A network namespace of the test's own, and the few rtnetlink requests the tests need (bring
// an interface up or down, rename it, add a bridge) or a kernel device event (uevent) sent in it,
// so tests of link and device events neither touch the machine's interfaces nor tell the
// machine's udev of devices it does not have, and need no iproute2. unshare(CLONE_NEWNET) and
// setns() change only the calling thread: the namespace is made on a helper thread and kept alive
// by its fd, and work inside it runs on threads that enter it first.

#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

namespace numadra::testing {

// One rtnetlink request with an acknowledgement; "" on success, else the error.
inline std::string rtnetlinkRequest(std::vector<char> message) {
    const int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0)
        return "rtnetlink socket: " + std::generic_category().message(errno);
    std::string error;
    if (::send(fd, message.data(), message.size(), 0) < 0) {
        error = "rtnetlink send: " + std::generic_category().message(errno);
    } else {
        char reply[4096];
        const ssize_t n = ::recv(fd, reply, sizeof reply, 0);
        if (n < static_cast<ssize_t>(NLMSG_LENGTH(sizeof(nlmsgerr)))) {
            error = "rtnetlink: no acknowledgement";
        } else {
            nlmsgerr answer;
            std::memcpy(&answer, reply + NLMSG_HDRLEN, sizeof answer);
            if (answer.error != 0)
                error = "rtnetlink: " + std::generic_category().message(-answer.error);
        }
    }
    ::close(fd);
    return error;
}

// Builds RTM_NEWLINK requests: header, ifinfomsg, attributes.
class LinkRequest {
  public:
    LinkRequest(unsigned short flags, int ifIndex, unsigned ifFlags, unsigned ifChange)
        : bytes_(NLMSG_LENGTH(sizeof(ifinfomsg))) {
        nlmsghdr header{};
        header.nlmsg_type = RTM_NEWLINK;
        header.nlmsg_flags = static_cast<unsigned short>(NLM_F_REQUEST | NLM_F_ACK | flags);
        header.nlmsg_seq = 1;
        std::memcpy(bytes_.data(), &header, sizeof header);
        ifinfomsg info{};
        info.ifi_family = AF_UNSPEC;
        info.ifi_index = ifIndex;
        info.ifi_flags = ifFlags;
        info.ifi_change = ifChange;
        std::memcpy(bytes_.data() + NLMSG_HDRLEN, &info, sizeof info);
    }
    // Returns the offset of the attribute, for nesting.
    size_t add(unsigned short type, const void* data, size_t size) {
        const size_t offset = bytes_.size();
        rtattr attribute{};
        attribute.rta_type = type;
        attribute.rta_len = static_cast<unsigned short>(RTA_LENGTH(size));
        bytes_.resize(offset + RTA_SPACE(size));
        std::memcpy(bytes_.data() + offset, &attribute, sizeof attribute);
        if (size > 0)
            std::memcpy(bytes_.data() + offset + RTA_LENGTH(0), data, size);
        return offset;
    }
    void addString(unsigned short type, const std::string& value) {
        add(type, value.c_str(), value.size() + 1);
    }
    void endNest(size_t offset) {
        const auto length = static_cast<unsigned short>(bytes_.size() - offset);
        std::memcpy(bytes_.data() + offset + offsetof(rtattr, rta_len), &length, sizeof length);
    }
    std::vector<char> finish() {
        const auto length = static_cast<unsigned>(bytes_.size());
        std::memcpy(bytes_.data() + offsetof(nlmsghdr, nlmsg_len), &length, sizeof length);
        return bytes_;
    }

  private:
    std::vector<char> bytes_;
};

// The calling thread's network namespace: interface requests by name.
inline std::string setLinkUp(const std::string& name, bool up) {
    LinkRequest request(0, 0, up ? IFF_UP : 0, IFF_UP);
    request.addString(IFLA_IFNAME, name);
    return rtnetlinkRequest(request.finish());
}

inline std::string addBridge(const std::string& name) {
    LinkRequest request(NLM_F_CREATE | NLM_F_EXCL, 0, 0, 0);
    request.addString(IFLA_IFNAME, name);
    const size_t linkInfo = request.add(IFLA_LINKINFO, nullptr, 0);
    request.addString(IFLA_INFO_KIND, "bridge");
    request.endNest(linkInfo);
    return rtnetlinkRequest(request.finish());
}

// Broadcasts a uevent as the kernel words it to the listeners of the calling thread's network
// namespace (root only); "" on success, else the error.
inline std::string sendUevent(const std::string& action, const std::string& devpath,
                              const std::string& subsystem) {
    const int fd = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_KOBJECT_UEVENT);
    if (fd < 0)
        return "uevent socket: " + std::generic_category().message(errno);
    std::string message;
    for (const std::string& field :
         {action + "@" + devpath, "ACTION=" + action, "DEVPATH=" + devpath,
          "SUBSYSTEM=" + subsystem, std::string("SEQNUM=1")}) {
        message += field;
        message.push_back('\0');
    }
    sockaddr_nl to{};
    to.nl_family = AF_NETLINK;
    to.nl_groups = 1;  // the kernel's group
    std::string error;
    if (::sendto(fd, message.data(), message.size(), 0, reinterpret_cast<sockaddr*>(&to),
                 sizeof to) < 0)
        error = "uevent send: " + std::generic_category().message(errno);
    ::close(fd);
    return error;
}

class PrivateNetworkNamespace {
  public:
    // A new namespace (only `lo`, down), or nullopt with the reason in `why` (no privilege).
    static std::optional<PrivateNetworkNamespace> create(std::string& why) {
        int fd = -1;
        std::thread([&] {
            if (::unshare(CLONE_NEWNET) != 0) {
                why = "unshare(CLONE_NEWNET): " + std::generic_category().message(errno);
                return;
            }
            fd = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
            if (fd < 0)
                why = "/proc/thread-self/ns/net: " + std::generic_category().message(errno);
        }).join();
        if (fd < 0)
            return std::nullopt;
        return PrivateNetworkNamespace(fd);
    }
    PrivateNetworkNamespace(PrivateNetworkNamespace&& other) noexcept
        : fd_(std::exchange(other.fd_, -1)) {}
    PrivateNetworkNamespace& operator=(PrivateNetworkNamespace&& other) noexcept {
        if (this != &other) {
            if (fd_ >= 0)
                ::close(fd_);
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    PrivateNetworkNamespace(const PrivateNetworkNamespace&) = delete;
    PrivateNetworkNamespace& operator=(const PrivateNetworkNamespace&) = delete;
    ~PrivateNetworkNamespace() {
        if (fd_ >= 0)
            ::close(fd_);
    }

    // Moves the calling thread into the namespace; "" on success.
    std::string enter() const {
        if (::setns(fd_, CLONE_NEWNET) != 0)
            return "setns: " + std::generic_category().message(errno);
        return {};
    }
    // Runs `work` on a new thread inside the namespace and waits for it; "" or the error.
    template <class Work>
    std::string run(Work&& work) const {
        std::string error;
        std::thread([&] {
            error = enter();
            if (error.empty())
                error = work();
        }).join();
        return error;
    }

  private:
    explicit PrivateNetworkNamespace(int fd) : fd_(fd) {}
    int fd_ = -1;
};

}  // namespace numadra::testing
