#pragma once
// SIGTERM and SIGINT for a test program that runs until it is told to stop: blocked from the
// constructor on (before the program starts threads, so that they inherit the mask), then taken
// by wait() on the calling thread alone.

#include <signal.h>

namespace numadra::testing {

class StopSignals {
  public:
    StopSignals() {
        sigemptyset(&signals_);
        sigaddset(&signals_, SIGTERM);
        sigaddset(&signals_, SIGINT);
        pthread_sigmask(SIG_BLOCK, &signals_, nullptr);
    }
    // Returns once SIGTERM or SIGINT arrives.
    void wait() const {
        int received = 0;
        sigwait(&signals_, &received);
    }

  private:
    sigset_t signals_{};
};

}  // namespace numadra::testing
