#pragma once
// A bare HTTP/2 client (nghttp2, no threads) for what grpc++ will not send: wrong content types,
// compressed or missing messages, a grpc-timeout with no client-side deadline behind it, and a
// peer that writes and never reads.

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "numadra/common/unique_fd.hpp"

namespace numadra::rpc::testing {

inline UniqueFd connectUnix(const std::string& path) {
    UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    if (::connect(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0)
        throw std::runtime_error("connect " + path + ": " + std::strerror(errno));
    return socket;
}

struct RawResponse {
    std::map<std::string, std::string> fields;  // response headers and trailers together
    std::string body;
    bool closed = false;            // the stream ended (END_STREAM or RST_STREAM)
    std::uint32_t resetCode = 0;    // RST_STREAM's code, when the server reset it
    bool connectionClosed = false;  // the server closed the socket
};

class RawH2Client {
  public:
    explicit RawH2Client(const std::string& socketPath, std::uint32_t maxStreams = 100)
        : socket_(connectUnix(socketPath)) {
        nghttp2_session_callbacks* callbacks = nullptr;
        nghttp2_session_callbacks_new(&callbacks);
        nghttp2_session_callbacks_set_on_header_callback(callbacks, onHeader);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, onData);
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, onClose);
        nghttp2_option* option = nullptr;
        nghttp2_option_new(&option);
        nghttp2_option_set_peer_max_concurrent_streams(option, maxStreams);
        nghttp2_session* session = nullptr;
        nghttp2_session_client_new2(&session, callbacks, this, option);
        nghttp2_option_del(option);
        nghttp2_session_callbacks_del(callbacks);
        session_.reset(session);
        nghttp2_submit_settings(session, NGHTTP2_FLAG_NONE, nullptr, 0);
    }

    // A gRPC-looking POST; `body` goes out as is (frame it yourself), none means END_STREAM on
    // the HEADERS. `fields` replace or add to the defaults.
    std::int32_t submit(const std::string& path, std::optional<std::string> body,
                        const std::map<std::string, std::string>& fields = {}) {
        std::map<std::string, std::string> all{{":method", "POST"},
                                               {":scheme", "http"},
                                               {":authority", "localhost"},
                                               {":path", path},
                                               {"content-type", "application/grpc"},
                                               {"te", "trailers"}};
        for (auto& [name, value] : fields)
            all[name] = value;
        std::vector<nghttp2_nv> headers;
        // Pseudo-headers first, as HTTP/2 requires (std::map sorts ':' before letters).
        for (auto& [name, value] : all)
            headers.push_back(nv(name, value));
        nghttp2_data_provider provider{};
        provider.read_callback = readBody;
        const std::int32_t id =
            nghttp2_submit_request(session_.get(), nullptr, headers.data(), headers.size(),
                                   body ? &provider : nullptr, nullptr);
        if (body) {
            bodies_[id] = std::move(*body);
        }
        return id;
    }

    // Sends what is submitted, as far as the socket takes it now.
    void send() { sendAll(); }

    // Sends and receives until stream `id` is over or `timeout` passes.
    RawResponse wait(std::int32_t id, std::chrono::milliseconds timeout) {
        const auto giveUp = std::chrono::steady_clock::now() + timeout;
        while (!responses_[id].closed && !closed_ && std::chrono::steady_clock::now() < giveUp) {
            sendAll();
            pollFd events{socket_.get(), POLLIN, 0};
            if (::poll(&events, 1, 20) > 0)
                receive();
        }
        responses_[id].connectionClosed = closed_;
        return responses_[id];
    }

    // Writes what it has without ever reading; stops once the socket took nothing for `stall`.
    // Returns the bytes written.
    std::size_t writeWithoutReading(std::chrono::milliseconds stall) {
        std::size_t written = 0;
        for (;;) {
            if (pending_.empty()) {
                const std::uint8_t* data = nullptr;
                const ssize_t length = nghttp2_session_mem_send(session_.get(), &data);
                if (length <= 0)
                    return written;
                pending_.assign(reinterpret_cast<const char*>(data),
                                static_cast<std::size_t>(length));
            }
            const ssize_t sent = ::send(socket_.get(), pending_.data(), pending_.size(),
                                        MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent > 0) {
                written += static_cast<std::size_t>(sent);
                pending_.erase(0, static_cast<std::size_t>(sent));
                continue;
            }
            if (sent < 0 && errno != EAGAIN)
                return written;
            pollFd events{socket_.get(), POLLOUT, 0};
            if (::poll(&events, 1, static_cast<int>(stall.count())) == 0)
                return written;
        }
    }

    // True once the server closed the connection (reads until EOF or `timeout`).
    bool closedByServer(std::chrono::milliseconds timeout) {
        const auto giveUp = std::chrono::steady_clock::now() + timeout;
        while (!closed_ && std::chrono::steady_clock::now() < giveUp) {
            pollFd events{socket_.get(), POLLIN, 0};
            if (::poll(&events, 1, 20) > 0)
                receive();
        }
        return closed_;
    }

    int fd() const { return socket_.get(); }

  private:
    using pollFd = pollfd;
    struct SessionDeleter {
        void operator()(nghttp2_session* session) const { nghttp2_session_del(session); }
    };

    static nghttp2_nv nv(const std::string& name, const std::string& value) {
        return {const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
                const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())),
                name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
    }
    static RawH2Client& of(void* userData) { return *static_cast<RawH2Client*>(userData); }
    static int onHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                        std::size_t nameLength, const std::uint8_t* value, std::size_t valueLength,
                        std::uint8_t, void* userData) {
        of(userData)
            .responses_[frame->hd.stream_id]
            .fields[std::string(reinterpret_cast<const char*>(name), nameLength)] =
            std::string(reinterpret_cast<const char*>(value), valueLength);
        return 0;
    }
    static int onData(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                      std::size_t length, void* userData) {
        of(userData).responses_[id].body.append(reinterpret_cast<const char*>(data), length);
        return 0;
    }
    static int onClose(nghttp2_session*, std::int32_t id, std::uint32_t code, void* userData) {
        auto& response = of(userData).responses_[id];
        response.closed = true;
        response.resetCode = code;
        return 0;
    }
    static ssize_t readBody(nghttp2_session*, std::int32_t id, std::uint8_t* buffer,
                            std::size_t length, std::uint32_t* flags, nghttp2_data_source*,
                            void* userData) {
        std::string& body = of(userData).bodies_[id];
        const std::size_t take = std::min(length, body.size());
        std::copy_n(body.data(), take, buffer);
        body.erase(0, take);
        if (body.empty())
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(take);
    }

    void sendAll() {
        const std::uint8_t* data = nullptr;
        for (;;) {
            if (pending_.empty()) {
                const ssize_t length = nghttp2_session_mem_send(session_.get(), &data);
                if (length <= 0)
                    return;
                pending_.assign(reinterpret_cast<const char*>(data),
                                static_cast<std::size_t>(length));
            }
            const ssize_t sent = ::send(socket_.get(), pending_.data(), pending_.size(),
                                        MSG_DONTWAIT | MSG_NOSIGNAL);
            if (sent <= 0)
                return;
            pending_.erase(0, static_cast<std::size_t>(sent));
        }
    }
    void receive() {
        std::array<std::uint8_t, 16384> buffer{};
        const ssize_t received = ::recv(socket_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
        if (received == 0 || (received < 0 && errno != EAGAIN)) {
            closed_ = true;
            return;
        }
        if (received > 0 && nghttp2_session_mem_recv(session_.get(), buffer.data(),
                                                     static_cast<std::size_t>(received)) < 0)
            closed_ = true;
    }

    UniqueFd socket_;
    std::unique_ptr<nghttp2_session, SessionDeleter> session_;
    std::map<std::int32_t, std::string> bodies_;
    std::map<std::int32_t, RawResponse> responses_;
    std::string pending_;
    bool closed_ = false;
};

}  // namespace numadra::rpc::testing
