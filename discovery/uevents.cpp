#include "numadra/discovery/uevents.hpp"

#include <linux/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>
#include <utility>

#include "netlink_wait.hpp"
#include "numadra/common/errors.hpp"

namespace numadra::discovery {

std::optional<Uevent> parseUevent(std::string_view message) {
    Uevent event;
    size_t start = 0;
    bool header = true;
    while (start < message.size()) {
        size_t end = message.find('\0', start);
        if (end == std::string_view::npos)
            end = message.size();
        const std::string_view field = message.substr(start, end - start);
        start = end + 1;
        if (header) {
            header = false;
            // udev's re-broadcasts start with "libudev"; the kernel's with "action@devpath".
            if (field.find('@') != std::string_view::npos)
                continue;
        }
        const auto eq = field.find('=');
        if (eq == std::string_view::npos)
            continue;
        const auto key = field.substr(0, eq);
        const auto value = std::string(field.substr(eq + 1));
        if (key == "ACTION")
            event.action = value;
        if (key == "DEVPATH")
            event.devpath = value;
        if (key == "SUBSYSTEM")
            event.subsystem = value;
    }
    if (event.action.empty() || event.devpath.empty())
        return std::nullopt;
    return event;
}

Result<UeventListener> UeventListener::open() {
    UniqueFd fd(
        ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_KOBJECT_UEVENT));
    if (!fd)
        return errorFromErrno(errno, "netlink uevent socket");
    sockaddr_nl address{};
    address.nl_family = AF_NETLINK;
    address.nl_groups = 1;  // the kernel's broadcast group
    if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address) != 0)
        return errorFromErrno(errno, "netlink uevent bind");
    // A burst (512 VFs created: thousands of add, bind and net events) must fit while a rescan
    // runs: past the buffer the kernel drops events. FORCE goes past rmem_max (root only).
    constexpr int kReceiveBuffer = 8 << 20;
    if (::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUFFORCE, &kReceiveBuffer,
                     sizeof kReceiveBuffer) != 0)
        ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &kReceiveBuffer, sizeof kReceiveBuffer);
    return UeventListener(std::move(fd));
}

std::vector<Uevent> UeventListener::wait(std::chrono::milliseconds timeout,
                                         const std::vector<std::string>& subsystems, int wakeFd) {
    std::vector<Uevent> events;
    if (!waitReadable(fd_.get(), timeout, wakeFd))
        return events;
    char buffer[8192];
    for (;;) {
        ssize_t n = ::recv(fd_.get(), buffer, sizeof buffer, 0);
        if (n < 0 && errno == ENOBUFS) {
            lost_ = true;  // reported once; what was queued before the drop comes next
            continue;
        }
        if (n <= 0)
            break;  // EAGAIN: drained
        auto event = parseUevent(std::string_view(buffer, static_cast<size_t>(n)));
        if (event &&
            std::find(subsystems.begin(), subsystems.end(), event->subsystem) != subsystems.end()) {
            events.push_back(std::move(*event));
        }
    }
    return events;
}

bool UeventListener::lostEvents() {
    return std::exchange(lost_, false);
}

}  // namespace numadra::discovery
