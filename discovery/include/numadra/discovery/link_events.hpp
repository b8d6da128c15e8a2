#pragma once
// Network interface changes (carrier, operstate, administrative up/down, rename, removal) from an
// rtnetlink RTMGRP_LINK subscription. A cable pull raises no kernel uevent, only this message,
// so without it a NIC's lost carrier is noticed at the next health poll. Like uevents, these come
// only from the network namespace the daemon runs in (the host's, with hostNetwork).

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::discovery {

struct LinkEvent {
    std::string ifName;  // the name the interface has now (after a rename: the new one)
    int ifIndex = 0;
    bool removed = false;  // RTM_DELLINK: gone, or moved to another network namespace
    bool operator==(const LinkEvent&) const = default;
};

// The RTM_NEWLINK / RTM_DELLINK messages of one netlink datagram; anything else, and anything
// malformed or cut short, is skipped.
std::vector<LinkEvent> parseLinkMessages(std::string_view datagram);

struct LinkEvents {
    std::vector<LinkEvent> events;
    // The kernel dropped messages (socket buffer overrun, ENOBUFS) or one was cut: something
    // changed that the events do not say.
    bool lost = false;
};

class LinkEventListener {
  public:
    static Result<LinkEventListener> open();

    // Waits up to `timeout` for link messages and returns them with whatever is queued behind
    // the first. Returns early, with nothing, when `wakeFd` (if given: an eventfd or pipe the
    // caller writes to, e.g. to stop) becomes readable; it is not read here.
    LinkEvents wait(std::chrono::milliseconds timeout, int wakeFd = -1);

  private:
    explicit LinkEventListener(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace numadra::discovery
