#include "numadra/metrics/http_server.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <system_error>

#include "numadra/common/errors.hpp"
#include "numadra/common/stop_fd.hpp"
#include "numadra/common/thread_name.hpp"

namespace numadra::metrics {

namespace {

constexpr int kReadMillis = 2000;  // a client gets this long to send its request line

const char* reasonPhrase(int status) {
    switch (status) {
        case 200:
            return "OK";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 503:
            return "Service Unavailable";
        default:
            return "Error";
    }
}

void writeAll(int fd, const std::string& data) {
    size_t sent = 0;
    while (sent < data.size()) {
        ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
        if (n <= 0) {
            if (n < 0 && errno == EINTR)
                continue;
            return;
        }
        sent += static_cast<size_t>(n);
    }
}

}  // namespace

HttpServer::~HttpServer() {
    stop();
}

Status HttpServer::start(const std::string& address, HttpHandler handler, Port sharing) {
    auto colon = address.rfind(':');
    if (colon == std::string::npos)
        return Error{"metrics address '" + address + "' is not host:port"};
    std::string host = address.substr(0, colon);
    const std::string port = address.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);

    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
        rc != 0) {
        return Error{"metrics address '" + address + "': " + ::gai_strerror(rc)};
    }
    std::unique_ptr<addrinfo, void (*)(addrinfo*)> addresses(found, ::freeaddrinfo);
    int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
    if (fd < 0)
        return errorFromErrno(errno, "metrics socket");
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (sharing == Port::SharedWithSameUser &&
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0) {
        const int error = errno;
        ::close(fd);
        return errorFromErrno(error, "metrics address '" + address + "': SO_REUSEPORT");
    }
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0 || ::listen(fd, 64) != 0) {
        const int error = errno;
        ::close(fd);
        return errorFromErrno(error, "metrics address '" + address + "'");
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    listenFd_ = fd;
    handler_ = std::move(handler);
    thread_ = std::jthread([this](const std::stop_token& stop) { serve(stop); });
    return Status::Ok();
}

void HttpServer::stop() {
    if (thread_.joinable()) {
        thread_.request_stop();
        thread_.join();
    }
    if (listenFd_ >= 0) {
        ::close(listenFd_);
        listenFd_ = -1;
    }
}

void HttpServer::serve(const std::stop_token& stop) {
    nameThisThread("metrics-http");
    // Blocks until a connection or the stop: an idle daemon's metrics endpoint costs no wake-ups.
    const StopFd stopFd(stop);
    const auto wait = stopFd.limit(std::chrono::hours(1));
    while (!stop.stop_requested()) {
        std::array<pollfd, 2> entries{{{listenFd_, POLLIN, 0}, {stopFd.fd(), POLLIN, 0}}};
        if (::poll(entries.data(), entries.size(), static_cast<int>(wait.count())) <= 0 ||
            entries[0].revents == 0)
            continue;
        int client = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client < 0)
            continue;
        answer(client);
        ::close(client);
    }
}

void HttpServer::answer(int client) const {
    std::string request;
    char buffer[2048];
    while (request.find("\r\n\r\n") == std::string::npos && request.size() < 8192) {
        pollfd p{client, POLLIN, 0};
        if (::poll(&p, 1, kReadMillis) <= 0)
            return;
        ssize_t n = ::recv(client, buffer, sizeof buffer, 0);
        if (n <= 0)
            return;
        request.append(buffer, static_cast<size_t>(n));
    }
    HttpResponse response;
    const auto firstSpace = request.find(' ');
    const auto secondSpace = request.find(' ', firstSpace + 1);
    if (firstSpace == std::string::npos || secondSpace == std::string::npos)
        return;
    const std::string method = request.substr(0, firstSpace);
    std::string path = request.substr(firstSpace + 1, secondSpace - firstSpace - 1);
    if (auto query = path.find('?'); query != std::string::npos)
        path.resize(query);
    if (method != "GET" && method != "HEAD") {
        response = {405, "text/plain; charset=utf-8", "only GET\n"};
    } else {
        response = handler_(path);
    }
    std::string head = "HTTP/1.1 " + std::to_string(response.status) + " " +
                       reasonPhrase(response.status) + "\r\nContent-Type: " + response.contentType +
                       "\r\nContent-Length: " + std::to_string(response.body.size()) +
                       "\r\nConnection: close\r\n\r\n";
    writeAll(client, head);
    if (method != "HEAD")
        writeAll(client, response.body);
}

}  // namespace numadra::metrics
