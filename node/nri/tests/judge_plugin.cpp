// nri-judge-plugin: the daemon's NRI plugin (nri::Plugin) with claims told on standard input
// instead of read from a checkpoint, for tests/upstream/nri, where upstream's own runtime side
// of NRI (github.com/containerd/nri/pkg/adaptation, what containerd links) judges it.
//
//   nri-judge-plugin --socket PATH --lock PATH --cpus LIST --mems LIST
//
// Standard input, one command per line, each answered "ok" on standard output once done:
//   claims [UID=CPUS/MEMS ...]   the prepared claims now (CPUS or MEMS may be empty), then
//                                claimsChanged(); "claims" alone: none
// End of input stops the plugin.

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "numadra/common/text.hpp"
#include "numadra/metrics/registry.hpp"
#include "numadra/nri/plugin.hpp"

namespace {

using numadra::Error;
using numadra::Result;
using numadra::nri::PinnedClaim;
using numadra::nri::PinningInputs;

Result<std::vector<int>> listOf(const std::string& what, const std::string& text) {
    if (text.empty())
        return std::vector<int>{};
    auto parsed = numadra::text::parseRangeList(text);
    if (!parsed)
        return Error{what + " \"" + text + "\": " + parsed.error().message};
    return *parsed;
}

// "UID=CPUS/MEMS"
Result<PinnedClaim> claimOf(const std::string& word) {
    const auto equals = word.find('=');
    const auto slash = word.find('/', equals == std::string::npos ? 0 : equals);
    if (equals == std::string::npos || slash == std::string::npos)
        return Error{"claim \"" + word + "\" is not UID=CPUS/MEMS"};
    PinnedClaim claim;
    claim.uid = word.substr(0, equals);
    claim.name = "judge/" + claim.uid;
    auto cpus = listOf("claim CPUs", word.substr(equals + 1, slash - equals - 1));
    auto mems = listOf("claim memory nodes", word.substr(slash + 1));
    if (!cpus)
        return cpus.error();
    if (!mems)
        return mems.error();
    claim.cpus = *cpus;
    claim.memoryNodes = *mems;
    return claim;
}

struct Flags {
    std::string socket, lock, cpus, mems;
};

Result<Flags> parseFlags(int argc, char** argv) {
    Flags flags;
    for (int i = 1; i < argc; ++i) {
        const std::string name = argv[i];
        if (i + 1 >= argc)
            return Error{"flag " + name + " needs a value"};
        const std::string value = argv[++i];
        if (name == "--socket")
            flags.socket = value;
        else if (name == "--lock")
            flags.lock = value;
        else if (name == "--cpus")
            flags.cpus = value;
        else if (name == "--mems")
            flags.mems = value;
        else
            return Error{"unknown flag " + name};
    }
    if (flags.socket.empty() || flags.lock.empty() || flags.cpus.empty() || flags.mems.empty())
        return Error{"--socket, --lock, --cpus and --mems are required"};
    return flags;
}

}  // namespace

int main(int argc, char** argv) {
    // Standard output carries the answers only.
    spdlog::set_default_logger(spdlog::stderr_logger_mt("nri-judge-plugin"));
    auto flags = parseFlags(argc, argv);
    if (!flags) {
        std::cerr << "nri-judge-plugin: " << flags.error().message << "\n";
        return 2;
    }
    auto cpus = listOf("--cpus", flags->cpus);
    auto mems = listOf("--mems", flags->mems);
    if (!cpus || !mems) {
        std::cerr << "nri-judge-plugin: " << (!cpus ? cpus.error() : mems.error()).message << "\n";
        return 2;
    }
    std::mutex mutex;
    PinningInputs inputs{*cpus, *mems, {}};

    numadra::metrics::Registry metrics;
    numadra::nri::declarePluginMetrics(metrics);
    numadra::nri::PluginOptions options;
    options.socketPath = flags->socket;
    options.lockPath = flags->lock;
    options.name = "numa-dra-judge";
    options.retryInterval = std::chrono::milliseconds(50);
    options.inputs = [&]() -> Result<PinningInputs> {
        std::lock_guard lock(mutex);
        return inputs;
    };
    auto plugin = numadra::nri::Plugin::start(options, metrics);

    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream words(line);
        std::string command;
        words >> command;
        if (command != "claims") {
            std::cerr << "nri-judge-plugin: unknown command \"" << line << "\"\n";
            return 2;
        }
        std::vector<PinnedClaim> claims;
        for (std::string word; words >> word;) {
            auto claim = claimOf(word);
            if (!claim) {
                std::cerr << "nri-judge-plugin: " << claim.error().message << "\n";
                return 2;
            }
            claims.push_back(*claim);
        }
        {
            std::lock_guard lock(mutex);
            inputs.claims = std::move(claims);
        }
        plugin->claimsChanged();
        std::cout << "ok" << std::endl;
    }
    plugin->stop();
    return 0;
}
