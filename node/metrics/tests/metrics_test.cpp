#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "numadra/metrics/http_server.hpp"
#include "numadra/metrics/registry.hpp"

namespace numadra::metrics {
namespace {

std::string get(int port, const std::string& request) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return {};
    }
    ::send(fd, request.data(), request.size(), 0);
    std::string response;
    char buffer[4096];
    for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
        response.append(buffer, static_cast<size_t>(n));
    ::close(fd);
    return response;
}

TEST(Registry, RendersCountersWithLabels) {
    Registry registry;
    registry.declareCounter("numadra_prepare_total", "Prepare calls.", {"result"});
    registry.counterAdd("numadra_prepare_total", {"ok"});
    registry.counterAdd("numadra_prepare_total", {"ok"});
    registry.counterAdd("numadra_prepare_total", {"error"});
    const std::string text = registry.render();
    EXPECT_NE(text.find("# TYPE numadra_prepare_total counter"), std::string::npos);
    EXPECT_NE(text.find("numadra_prepare_total{result=\"ok\"} 2"), std::string::npos) << text;
    EXPECT_NE(text.find("numadra_prepare_total{result=\"error\"} 1"), std::string::npos);
}

TEST(Registry, HistogramBucketsAreCumulative) {
    Registry registry;
    registry.declareHistogram("lat_seconds", "Latency.", {}, {0.1, 1});
    registry.histogramObserve("lat_seconds", {}, 0.05);
    registry.histogramObserve("lat_seconds", {}, 0.5);
    registry.histogramObserve("lat_seconds", {}, 5);
    const std::string text = registry.render();
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.10000000000000001\"} 1"), std::string::npos)
        << text;
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"1\"} 2"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 3"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_count 3"), std::string::npos);
}

TEST(Registry, LabelValuesAreEscaped) {
    Registry registry;
    registry.declareGauge("g", "G.", {"msg"});
    registry.gaugeSet("g", {"a\"b\\c\nd"}, 1);
    EXPECT_NE(registry.render().find("g{msg=\"a\\\"b\\\\c\\nd\"} 1"), std::string::npos)
        << registry.render();
}

TEST(Registry, UndeclaredMetricIsAProgrammingError) {
    Registry registry;
    EXPECT_THROW(registry.counterAdd("nope"), std::logic_error);
}

TEST(HttpServer, ServesPathsAndRejectsOthers) {
    HttpServer server;
    ASSERT_TRUE(server
                    .start("127.0.0.1:0",
                           [](const std::string& path) {
                               if (path == "/healthz")
                                   return HttpResponse{200, "text/plain", "ok\n"};
                               return HttpResponse{404, "text/plain", "not found\n"};
                           })
                    .ok());
    ASSERT_GT(server.port(), 0);
    auto ok = get(server.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK", 0), 0u) << ok;
    EXPECT_NE(ok.find("\r\n\r\nok\n"), std::string::npos);
    EXPECT_EQ(get(server.port(), "GET /x HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
    EXPECT_EQ(get(server.port(), "POST /healthz HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
    server.stop();
}

HttpHandler answering(std::string body) {
    return [body](const std::string&) { return HttpResponse{200, "text/plain", body}; };
}

TEST(HttpServer, AnExclusivePortIsRefusedToASecondServer) {
    HttpServer first;
    ASSERT_TRUE(first.start("127.0.0.1:0", answering("first\n")).ok());
    HttpServer second;
    auto status = second.start("127.0.0.1:" + std::to_string(first.port()), answering("second\n"),
                               HttpServer::Port::SharedWithSameUser);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().errnoValue, EADDRINUSE) << status.error().message;
}

// A rolling update on a host-network node: the new driver pod listens beside the old one, and
// the port keeps answering when the old one stops.
TEST(HttpServer, ASharedPortTakesASecondServerThatOutlivesTheFirst) {
    HttpServer old;
    ASSERT_TRUE(
        old.start("127.0.0.1:0", answering("old\n"), HttpServer::Port::SharedWithSameUser).ok());
    HttpServer next;
    ASSERT_TRUE(next.start("127.0.0.1:" + std::to_string(old.port()), answering("new\n"),
                           HttpServer::Port::SharedWithSameUser)
                    .ok());
    old.stop();
    for (int i = 0; i < 8; ++i) {
        auto reply = get(next.port(), "GET / HTTP/1.1\r\n\r\n");
        EXPECT_NE(reply.find("\r\n\r\nnew\n"), std::string::npos) << reply;
    }
}

// Calls `visit` with the /proc/self/task folder of each thread of this process but the calling
// one.
template <class Visit>
void forEachOtherThread(Visit visit) {
    const std::string self = std::to_string(::gettid());
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
        if (task.path().filename() != self)
            visit(task.path());
    }
}

// Context switches of this process's threads other than the calling one.
long otherThreadsWakeups() {
    long total = 0;
    forEachOtherThread([&](const std::filesystem::path& task) {
        std::ifstream status(task / "status");
        for (std::string line; std::getline(status, line);) {
            if (line.rfind("voluntary_ctxt_switches:", 0) == 0)
                total += std::stol(line.substr(line.find(':') + 1));
        }
    });
    return total;
}

// Whether every thread of this process but the calling one is asleep (state S).
bool otherThreadsAsleep() {
    bool asleep = true;
    forEachOtherThread([&](const std::filesystem::path& task) {
        std::ifstream stat(task / "stat");
        std::string line;
        std::getline(stat, line);
        const auto afterName = line.rfind(')');
        asleep = asleep && afterName != std::string::npos && line.substr(afterName + 2, 1) == "S";
    });
    return asleep;
}

// An idle endpoint blocks until a connection or the stop: no thread waking to look.
TEST(HttpServer, AnIdleServerDoesNotWakeUp) {
    HttpServer server;
    ASSERT_TRUE(server.start("127.0.0.1:0", answering("ok\n")).ok());
    // The server's thread has reached its wait (however slow a busy machine makes its start).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!otherThreadsAsleep() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(otherThreadsAsleep());
    const long before = otherThreadsWakeups();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    EXPECT_EQ(otherThreadsWakeups() - before, 0);
    const auto stopping = std::chrono::steady_clock::now();
    server.stop();  // wakes the wait at once
    EXPECT_LT(std::chrono::steady_clock::now() - stopping, std::chrono::seconds(10));
}

TEST(HttpServer, BadAddressIsAClearError) {
    HttpServer server;
    auto status = server.start("not-an-address", [](const std::string&) { return HttpResponse{}; });
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message.find("not-an-address"), std::string::npos);
}

}  // namespace
}  // namespace numadra::metrics
