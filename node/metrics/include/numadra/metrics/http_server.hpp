#pragma once
// A deliberately small HTTP/1.1 server for /metrics, /healthz and /readyz: GET only, one short
// response per connection. Not a general web server; it never reads a request body.

#include <functional>
#include <string>
#include <thread>

#include "numadra/common/result.hpp"

namespace numadra::metrics {

struct HttpResponse {
    int status = 200;
    std::string contentType = "text/plain; charset=utf-8";
    std::string body;
};

// path -> response; unknown paths get 404.
using HttpHandler = std::function<HttpResponse(const std::string& path)>;

class HttpServer {
  public:
    HttpServer() = default;
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // How the port may be shared.
    enum class Port {
        Exclusive,
        // SO_REUSEPORT: another process of the same user may listen on it too, and the kernel
        // spreads connections over both (the old and the new driver pod of a rolling update
        // on a host-network node).
        SharedWithSameUser,
    };

    // `address` is "host:port" or ":port" (all interfaces); port 0 picks a free one.
    Status start(const std::string& address, HttpHandler handler, Port sharing = Port::Exclusive);
    void stop();
    int port() const { return port_; }

  private:
    void serve(const std::stop_token& stop);
    void answer(int client) const;

    int listenFd_ = -1;
    int port_ = 0;
    HttpHandler handler_;
    std::jthread thread_;
};

}  // namespace numadra::metrics
