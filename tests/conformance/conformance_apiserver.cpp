// conformance-apiserver: the tests' fake kube-apiserver (tests/fakes/apiserver) as its own process,
// like tests/fakes/apiserver/fake_apiserver_main.cpp, plus what the conformance suite needs and
// that binary has no way to do: store objects that a controller or the scheduler would write
// (ResourceClaims with their allocation, Nodes) and report the requests it served. The driver talks
// to it over loopback HTTP exactly as to fake-apiserver (same server code); the suite drives it
// over stdin.
//
//   conformance-apiserver [--refuse-list-attributes] [--bookmark-interval-ms N]
//
// The first line on stdout is the URL, printed once it listens. Then one command per stdin line,
// a JSON object, each answered with one line on stdout ("ok", a number, or "error: ..."):
//
//   {"op": "putClaim", "object": {ResourceClaim}}       create or replace (status included)
//   {"op": "removeClaim", "namespace": N, "name": M}
//   {"op": "addNode", "name": N, "uid": U}
//   {"op": "requestCount", "method": "GET", "prefix": "/apis/..."}   requests served so far
//
// End of stdin stops the server (exit 0); bad flags exit 2.

#include <charconv>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "numadra/fakes/apiserver.hpp"

namespace {

using Json = numadra::fakes::FakeApiServer::Json;

std::optional<int> parseNumber(const std::string& text) {
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0)
        return std::nullopt;
    return value;
}

std::string execute(numadra::fakes::FakeApiServer& server, const std::string& line) {
    const Json command = Json::parse(line);
    const std::string op = command.at("op").get<std::string>();
    if (op == "putClaim") {
        server.putResourceClaim(command.at("object"));
        return "ok";
    }
    if (op == "removeClaim") {
        return server.removeResourceClaim(command.at("namespace").get<std::string>(),
                                          command.at("name").get<std::string>())
                   ? "ok"
                   : "error: no such claim";
    }
    if (op == "addNode") {
        server.addNode(command.at("name").get<std::string>(), command.at("uid").get<std::string>());
        return "ok";
    }
    if (op == "requestCount") {
        return std::to_string(server.requestCount(command.value("method", std::string()),
                                                  command.value("prefix", std::string())));
    }
    return "error: unknown op '" + op + "'";
}

}  // namespace

int main(int argc, char** argv) {
    numadra::fakes::FakeApiServerOptions options;
    bool refuseListAttributes = false;
    const std::vector<std::string> args(argv + 1, argv + argc);
    for (size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--refuse-list-attributes") {
            refuseListAttributes = true;
        } else if (args[i] == "--bookmark-interval-ms" && i + 1 < args.size() &&
                   parseNumber(args[i + 1])) {
            options.bookmarkInterval = std::chrono::milliseconds(*parseNumber(args[++i]));
        } else {
            std::cerr << "conformance-apiserver: " << args[i] << ": unknown flag or bad value\n";
            return 2;
        }
    }
    try {
        numadra::fakes::FakeApiServer server(options);
        server.setRefuseListAttributes(refuseListAttributes);
        std::cout << server.url() << std::endl;
        for (std::string line; std::getline(std::cin, line);) {
            if (line.empty())
                continue;
            std::string answer;
            try {
                answer = execute(server, line);
            } catch (const std::exception& e) {
                answer = std::string("error: ") + e.what();
            }
            std::cout << answer << std::endl;
        }
        server.stop();
    } catch (const std::exception& e) {
        std::cerr << "conformance-apiserver: " << e.what() << "\n";
        return 1;
    }
    return 0;
}
