// fake-apiserver: the tests' fake kube-apiserver as a process, for suites that drive the
// driver's binaries from outside. Serves on 127.0.0.1 until SIGTERM or SIGINT.
//
//   fake-apiserver [--port N] [--refuse-list-attributes] [--bookmark-interval-ms N]
//                  [--tls-cert FILE --tls-key FILE [--client-ca FILE]]
//
// The first line on stdout is the URL, printed once it listens. Bad flags exit 2.

#include <charconv>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "numadra/fakes/apiserver.hpp"
#include "numadra/testing/stop_signals.hpp"

namespace {

struct Flags {
    numadra::fakes::FakeApiServerOptions server;
    bool refuseListAttributes = false;
};

std::optional<int> parseNumber(const std::string& text) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0)
        return std::nullopt;
    return value;
}

std::optional<Flags> parseFlags(const std::vector<std::string>& args) {
    Flags flags;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& flag = args[i];
        if (flag == "--refuse-list-attributes") {
            flags.refuseListAttributes = true;
            continue;
        }
        if (i + 1 >= args.size()) {
            std::cerr << "fake-apiserver: " << flag << ": unknown flag or missing value\n";
            return std::nullopt;
        }
        const std::string& value = args[++i];
        if (flag == "--port" || flag == "--bookmark-interval-ms") {
            const auto number = parseNumber(value);
            if (!number || (flag == "--port" && *number > 65535)) {
                std::cerr << "fake-apiserver: " << flag << ": '" << value << "' is not valid\n";
                return std::nullopt;
            }
            if (flag == "--port")
                flags.server.port = *number;
            else
                flags.server.bookmarkInterval = std::chrono::milliseconds(*number);
        } else if (flag == "--tls-cert") {
            flags.server.tlsCertFile = value;
        } else if (flag == "--tls-key") {
            flags.server.tlsKeyFile = value;
        } else if (flag == "--client-ca") {
            flags.server.clientCaFile = value;
        } else {
            std::cerr << "fake-apiserver: " << flag << ": unknown flag\n";
            return std::nullopt;
        }
    }
    if (flags.server.tlsCertFile.empty() != flags.server.tlsKeyFile.empty()) {
        std::cerr << "fake-apiserver: --tls-cert and --tls-key go together\n";
        return std::nullopt;
    }
    return flags;
}

}  // namespace

int main(int argc, char** argv) {
    const auto flags = parseFlags(std::vector<std::string>(argv + 1, argv + argc));
    if (!flags)
        return 2;
    // Blocked before the server's threads start, so that they inherit the mask and wait()
    // below is the one place the signals arrive.
    const numadra::testing::StopSignals stopSignals;
    try {
        numadra::fakes::FakeApiServer server(flags->server);
        server.setRefuseListAttributes(flags->refuseListAttributes);
        std::cout << server.url() << std::endl;
        stopSignals.wait();
        server.stop();
    } catch (const std::exception& e) {
        std::cerr << "fake-apiserver: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
