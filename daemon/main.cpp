// numa-dra-plugin: the DRA kubelet plugin daemon. SIGTERM/SIGINT stop it cleanly.

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "numadra/common/host.hpp"
#include "numadra/daemon/config.hpp"
#include "numadra/daemon/daemon.hpp"
#include "numadra/daemon/logging.hpp"

extern char** environ;

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

int main(int argc, char** argv) {
    const auto started = std::chrono::steady_clock::now();
    // Signals are taken by one thread with sigwait; every other thread inherits the mask.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGTERM);
    sigaddset(&signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    auto parsed = numadra::daemon::parseDaemonFlags(std::vector<std::string>(argv + 1, argv + argc),
                                                    environmentMap(), numadra::defaultNodeName());
    if (!parsed) {
        std::cerr << "numa-dra-plugin: " << parsed.error().message << "\n\n"
                  << numadra::daemon::daemonUsage();
        return numadra::daemon::kExitBadConfig;
    }
    if (parsed->helpRequested) {
        std::cout << numadra::daemon::daemonUsage();
        return 0;
    }
    if (parsed->versionRequested) {
        std::cout << "numa-dra-plugin " << NUMADRA_VERSION << "\n";
        return 0;
    }
    numadra::daemon::setupLogging(parsed->config.logFormat, parsed->config.logLevel);

    std::stop_source stop;
    std::jthread signalWaiter([&] {
        int signal = 0;
        sigwait(&signals, &signal);
        stop.request_stop();
    });
    const int code = numadra::daemon::runDaemon(parsed->config, stop.get_token(), started);
    // Wake the signal thread if the daemon ended on its own (fatal error).
    if (!stop.stop_requested())
        ::kill(::getpid(), SIGTERM);
    return code;
}
