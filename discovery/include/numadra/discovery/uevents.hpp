#pragma once
// Kernel device events (hot-plug, removal, VFs created) from the NETLINK_KOBJECT_UEVENT socket,
// so a change is noticed at once instead of at the next periodic scan. Inside a container that
// does not share the host's network namespace no events arrive; callers keep their poll.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::discovery {

struct Uevent {
    std::string action;     // add, remove, change, bind, unbind, move, online, offline
    std::string devpath;    // /devices/pci0000:00/...
    std::string subsystem;  // pci, net, infiniband, drm, cpu, ...
};

// Parses one netlink message ("add@/devices/...\0ACTION=add\0DEVPATH=...\0SUBSYSTEM=pci\0...").
std::optional<Uevent> parseUevent(std::string_view message);

class UeventListener {
  public:
    static Result<UeventListener> open();

    // Waits up to `timeout` and returns the events of the given subsystems that arrived (the
    // first one ends the wait; anything already queued behind it is drained too). Returns early,
    // with nothing, when `wakeFd` (if given: an eventfd the caller writes to, e.g. to stop)
    // becomes readable; it is not read here.
    std::vector<Uevent> wait(std::chrono::milliseconds timeout,
                             const std::vector<std::string>& subsystems, int wakeFd = -1);
    // True, once, when the kernel dropped events since the last call because the socket's
    // buffer was full (ENOBUFS): what changed meanwhile is unknown, the caller must look.
    bool lostEvents();

  private:
    explicit UeventListener(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
    bool lost_ = false;
};

}  // namespace numadra::discovery
