#pragma once
// A small gRPC server over cleartext HTTP/2 (libnghttp2) for the kubelet's unix sockets: unary
// and server-streaming methods, all connections served by one EventLoop thread. Handlers run on
// that thread and must not block: they hand slow work elsewhere and finish the call later, from
// any thread. No TLS, no compression, no client or bidirectional streaming (the kubelet's
// plugin services use none of them). See plugin/grpc/README.md.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/plugin/grpc/event_loop.hpp"

namespace numadra::rpc {

// grpc's status codes (doc/statuscodes.md), by their wire numbers.
enum class StatusCode : int {
    Ok = 0,
    Cancelled = 1,
    Unknown = 2,
    InvalidArgument = 3,
    DeadlineExceeded = 4,
    NotFound = 5,
    AlreadyExists = 6,
    PermissionDenied = 7,
    ResourceExhausted = 8,
    FailedPrecondition = 9,
    Aborted = 10,
    OutOfRange = 11,
    Unimplemented = 12,
    Internal = 13,
    Unavailable = 14,
    DataLoss = 15,
    Unauthenticated = 16,
};

struct RpcStatus {
    StatusCode code = StatusCode::Ok;
    std::string message = {};
    static RpcStatus ok() { return {}; }
};

struct ServerOptions {
    std::size_t maxConnections = 32;           // more are closed as they arrive
    std::uint32_t maxConcurrentStreams = 100;  // per connection (SETTINGS)
    std::uint32_t maxHeaderListBytes = 16 * 1024;
    std::size_t maxReceiveMessageBytes = std::size_t{4} * 1024 * 1024;
    // What a connection may hold of serialized output its peer has not read yet; past it the
    // connection is not read either, so a peer that never reads cannot grow our memory.
    std::size_t maxConnectionOutputBytes = std::size_t{256} * 1024;
    // Messages a server stream may hold that HTTP/2 flow control has not let out yet.
    std::size_t maxStreamQueuedBytes = std::size_t{1024} * 1024;
};

namespace detail {
struct StreamState;
class Connection;
class ServerCore;
}  // namespace detail

// What a unary call and a server stream share: the deadline, and cancellation (the client
// reset the stream or went away, the deadline passed, the server stopped).
class CallContext {
  public:
    CallContext(const CallContext&) = delete;
    CallContext& operator=(const CallContext&) = delete;
    virtual ~CallContext() = default;

    [[nodiscard]] const std::string& method() const { return method_; }
    [[nodiscard]] std::optional<Clock::time_point> deadline() const { return deadline_; }
    [[nodiscard]] bool cancelled() const { return cancelled_.load(); }
    // `callback` runs once when the call is cancelled: on the loop's thread, or at once on the
    // caller's when it is cancelled already. Not after the call finished.
    void onCancel(std::function<void()> callback);

    // Made by the server only (the stream is its own).
    CallContext(std::string method, std::optional<Clock::time_point> deadline, TaskPoster poster,
                std::weak_ptr<detail::StreamState> stream);

  protected:
    // True for the first finish only.
    bool claimFinish() { return !finished_.exchange(true); }
    [[nodiscard]] bool finishClaimed() const { return finished_.load(); }
    void postToStream(std::function<void(detail::StreamState&)> action) const;

  private:
    friend struct detail::StreamState;
    friend class detail::Connection;
    void markCancelled();
    // The final status is on its way: no cancel from now on, and the callback is let go.
    void completed();

    std::string method_;
    std::optional<Clock::time_point> deadline_;
    TaskPoster poster_;
    std::weak_ptr<detail::StreamState> stream_;
    std::atomic<bool> cancelled_{false};
    std::atomic<bool> finished_{false};
    std::mutex mutex_;
    bool done_ = false;  // under mutex_
    std::function<void()> cancelCallback_;
};

class UnaryCall final : public CallContext {
  public:
    using CallContext::CallContext;
    // Sends the response message (when `status` is OK) and the status. From any thread; only
    // the first finish counts, and none after a cancel.
    void finish(const RpcStatus& status, std::string response = {});
};

class ServerStream final : public CallContext {
  public:
    enum class WriteResult {
        Queued,
        Full,    // refused: maxStreamQueuedBytes are waiting for the client already
        Closed,  // refused: the stream is finished or cancelled
    };
    ServerStream(std::string method, std::optional<Clock::time_point> deadline, TaskPoster poster,
                 std::weak_ptr<detail::StreamState> stream, std::size_t maxQueuedBytes);
    // Queues one message, from any thread. Never blocks; a refused message is not sent.
    WriteResult write(std::string_view message);
    // Sends the response headers now rather than with the first message, so a client that waits
    // for the stream to open (grpc++'s WaitForInitialMetadata) sees it open before any message.
    // From any thread; nothing once the stream is finished or cancelled.
    void sendHeaders();
    // Ends the stream with `status` after the queued messages.
    void finish(const RpcStatus& status);

  private:
    friend struct detail::StreamState;
    void released(std::size_t bytes) { queuedBytes_.fetch_sub(bytes); }

    std::size_t maxQueuedBytes_;
    std::atomic<std::size_t> queuedBytes_{0};
};

// Handlers get the request message (without gRPC's 5-byte prefix), on the loop's thread.
using UnaryHandler = std::function<void(std::shared_ptr<UnaryCall>, std::string request)>;
using ServerStreamingHandler =
    std::function<void(std::shared_ptr<ServerStream>, std::string request)>;

struct ServerStats {
    std::size_t connections = 0;
    std::size_t activeCalls = 0;
    std::size_t largestConnectionOutputBytes = 0;  // serialized, waiting for the socket, now
    std::size_t peakConnectionOutputBytes = 0;     // the most any connection ever held
    std::size_t connectionsRefused = 0;            // over maxConnections
    std::size_t connectionsFailed = 0;             // closed for a protocol or socket error
};

class GrpcServer {
  public:
    GrpcServer(EventLoop& loop, ServerOptions options = {});
    GrpcServer(const GrpcServer&) = delete;
    GrpcServer& operator=(const GrpcServer&) = delete;
    ~GrpcServer();  // stop(0) unless stopped

    // Methods by full path, "/package.Service/Method". Before serve().
    void addUnary(std::string path, UnaryHandler handler);
    void addServerStreaming(std::string path, ServerStreamingHandler handler);

    // Accepts connections on `listeningSocket` (a listening unix socket, made non-blocking
    // here). The caller keeps it open until stop() returned. Any thread.
    Status serve(int listeningSocket);

    // Stops accepting, tells clients (GOAWAY), lets running calls finish until `grace` has
    // passed, cancels the rest and closes every connection. Blocks until done; not from the
    // loop's thread. Idempotent.
    void stop(std::chrono::milliseconds grace);

    // A snapshot, for tests and metrics (waits for the loop).
    ServerStats stats();

  private:
    std::shared_ptr<detail::ServerCore> impl_;
};

}  // namespace numadra::rpc
