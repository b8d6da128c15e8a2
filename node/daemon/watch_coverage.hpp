#pragma once
// Whether the slice watch has delivered every change to this node's slices since a moment: the
// periodic resync lists the slices again only when it cannot say so.

#include <atomic>
#include <cstdint>

namespace numadra::daemon {

// A chain is a run of watches that resume one another from the resourceVersion of one list:
// while it is unbroken, every change made after that list is delivered as an event (a stream the
// server ended is reopened from the last resourceVersion seen, and replays what came meanwhile).
// The watch loop says when a chain begins and when it breaks; the publish loop marks the chain
// before each reconcile lists the slices, and later asks whether that chain is still unbroken.
class WatchCoverage {
  public:
    using Mark = std::uint64_t;  // 0: no chain

    // Called by the watch loop alone.
    void begin() { current_ = ++chains_; }
    void broken() { current_ = 0; }

    Mark mark() const { return current_; }
    // True when the chain of `mark` is still the unbroken one: a change since the mark reached
    // (or, through a replay, will reach) the watch loop as an event.
    bool unbrokenSince(Mark mark) const { return mark != 0 && current_ == mark; }

  private:
    std::atomic<Mark> current_{0};
    Mark chains_ = 0;  // the watch loop's own
};

}  // namespace numadra::daemon
