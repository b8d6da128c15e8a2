// numa-dra-plugin-faults: numa-dra-plugin with fault injection, for the crash-safety tests
// (daemon_test, the conformance suite); never shipped. NUMADRA_TEST_KILL_AFTER_WRITES=N makes
// the process SIGKILL itself right after the N-th file the prepare pipeline writes, so a test
// can stop it at every step of a Prepare. The production program has no such hook.

#include <spdlog/spdlog.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <string>

#include "numadra/common/text.hpp"
#include "numadra/daemon/daemon.hpp"

namespace {

numadra::daemon::DaemonHooks hooksFromEnvironment() {
    numadra::daemon::DaemonHooks hooks;
    const char* value = std::getenv("NUMADRA_TEST_KILL_AFTER_WRITES");
    if (value == nullptr)
        return hooks;
    auto limit = numadra::text::parseInt(value);
    if (!limit || *limit <= 0)
        return hooks;
    auto writes = std::make_shared<std::atomic<std::int64_t>>(0);
    hooks.afterFileWrite = [writes, limit = *limit](const std::string& path) {
        if (++*writes == limit) {
            spdlog::warn("fault injection: SIGKILL after writing path={}", path);
            spdlog::default_logger()->flush();
            std::raise(SIGKILL);
        }
    };
    return hooks;
}

}  // namespace

int main(int argc, char** argv) {
    return numadra::daemon::daemonMain(argc, argv, hooksFromEnvironment());
}
