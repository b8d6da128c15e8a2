// numa-dra-plugin's main (daemon.hpp: daemonMain), shared by node/daemon/numa_dra_plugin.cpp and
// the crash tests' numa-dra-plugin-faults.

#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "numadra/common/host.hpp"
#include "numadra/common/thread_name.hpp"
#include "numadra/daemon/config.hpp"
#include "numadra/daemon/daemon.hpp"
#include "numadra/daemon/logging.hpp"

extern char** environ;

namespace numadra::daemon {
namespace {

std::map<std::string, std::string> environmentMap() {
    std::map<std::string, std::string> out;
    for (char** entry = environ; entry && *entry; ++entry) {
        std::string text(*entry);
        if (auto eq = text.find('='); eq != std::string::npos)
            out[text.substr(0, eq)] = text.substr(eq + 1);
    }
    return out;
}

}  // namespace

int daemonMain(int argc, char** argv, const DaemonHooks& hooks) {
    const auto started = std::chrono::steady_clock::now();
    // glibc gives each thread that allocates an arena of its own, up to 8 per core, each keeping
    // its freed pages: ~5 MiB resident on a 536-device node for threads that mostly wait. Two
    // arenas are plenty for a daemon whose threads rarely allocate at the same time (the
    // environment's MALLOC_ARENA_MAX still decides when set).
    if (std::getenv("MALLOC_ARENA_MAX") == nullptr)
        ::mallopt(M_ARENA_MAX, 2);
    // Signals are taken by one thread with sigwait; every other thread inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    auto parsed = parseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc),
                                   environmentMap(), numadra::defaultNodeName());
    if (!parsed) {
        std::cerr << "numa-dra-plugin: " << parsed.error().message << "\n\n" << daemonUsage();
        return kExitBadConfig;
    }
    if (parsed->helpRequested) {
        std::cout << daemonUsage();
        return 0;
    }
    if (parsed->versionRequested) {
        std::cout << "numa-dra-plugin " << NUMADRA_VERSION << "\n";
        return 0;
    }
    setupLogging(parsed->config.logFormat, parsed->config.logLevel);

    std::stop_source stop;
    std::jthread signalWaiter([&] {
        nameThisThread("signals");
        int signal = 0;
        sigwait(&signals, &signal);
        stop.request_stop();
    });
    const int code = runDaemon(parsed->config, stop.get_token(), started, hooks);
    // Wake the signal thread if the daemon ended on its own (fatal error).
    if (!stop.stop_requested())
        ::kill(::getpid(), SIGTERM);
    return code;
}

}  // namespace numadra::daemon
