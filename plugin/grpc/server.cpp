#include "numadra/plugin/grpc/server.hpp"

#include <fcntl.h>
#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <deque>
#include <future>
#include <string_view>
#include <thread>

#include "numadra/common/errors.hpp"
#include "protocol.hpp"

namespace numadra::rpc {
namespace detail {

class Connection;
class ServerCore;

// One HTTP/2 stream = one call, as the loop sees it. Owned by its Connection; the call handles
// reach it only through a weak_ptr, in tasks run on the loop.
struct StreamState {
    Connection* connection = nullptr;
    std::int32_t id = 0;

    // The request.
    std::string httpMethod, path, contentType, timeout;
    std::size_t headerBytes = 0;
    MessageReader reader;
    bool requestEnded = false;  // the client half-closed
    bool answered = false;      // the final HEADERS (trailers or trailers-only) are submitted
    std::optional<Clock::time_point> deadline;
    EventLoop::TimerId deadlineTimer = 0;

    // The response.
    bool headersSubmitted = false;
    std::deque<std::string> outbox;  // framed messages; the first one possibly partly sent
    std::size_t outboxOffset = 0;
    std::optional<RpcStatus> finalStatus;

    std::shared_ptr<CallContext> call;     // once dispatched
    ServerStream* streamHandle = nullptr;  // the same object, for a server-streaming call

    void cancelCall() const {
        if (call)
            call->markCancelled();
    }
    void releaseQueued(std::size_t bytes) const {
        if (streamHandle != nullptr)
            streamHandle->released(bytes);
    }
};

struct SessionDeleter {
    void operator()(nghttp2_session* session) const { nghttp2_session_del(session); }
};
struct CallbacksDeleter {
    void operator()(nghttp2_session_callbacks* callbacks) const {
        nghttp2_session_callbacks_del(callbacks);
    }
};
struct OptionDeleter {
    void operator()(nghttp2_option* option) const { nghttp2_option_del(option); }
};

// --- The server's state, on the loop thread -----------------------------------------------------

struct Method {
    UnaryHandler unary;
    ServerStreamingHandler streaming;
};

class ServerCore : public std::enable_shared_from_this<ServerCore> {
  public:
    ServerCore(EventLoop& loop, ServerOptions options);
    ~ServerCore();

    EventLoop& loop() { return loop_; }
    const ServerOptions& options() const { return options_; }
    const Method* findMethod(const std::string& path) const {
        auto found = methods_.find(path);
        return found == methods_.end() ? nullptr : &found->second;
    }
    nghttp2_session_callbacks* callbacks() const { return callbacks_.get(); }
    nghttp2_option* sessionOption() const { return option_.get(); }
    bool stopping() const { return stopping_; }

    void add(std::string path, Method method) {
        methods_.insert_or_assign(std::move(path), std::move(method));
    }
    Status listen(int socket);
    void beginShutdown();
    void cancelEverything();
    std::size_t activeCalls() const;
    ServerStats stats() const;

    // From a Connection that closed: erase it later, outside its own callbacks.
    void connectionClosed(std::uint64_t id, bool failed);
    void notePeakOutput(std::size_t bytes) { peakOutput_ = std::max(peakOutput_, bytes); }
    void expireDeadline(std::uint64_t connectionId, std::int32_t streamId);

  private:
    struct Listener {
        int fd;
        EventLoop::WatchId watch;
    };
    void acceptPending(Listener& listener);
    void pauseListener(Listener& listener);
    void adopt(UniqueFd socket);

    EventLoop& loop_;
    ServerOptions options_;
    std::map<std::string, Method, std::less<>> methods_;
    std::unique_ptr<nghttp2_session_callbacks, CallbacksDeleter> callbacks_;
    std::unique_ptr<nghttp2_option, OptionDeleter> option_;
    std::deque<Listener> listeners_;  // stable references: callbacks hold them
    std::map<std::uint64_t, std::unique_ptr<Connection>> connections_;
    std::uint64_t nextConnectionId_ = 1;
    bool stopping_ = false;
    std::size_t refused_ = 0;
    std::size_t failed_ = 0;
    std::size_t peakOutput_ = 0;
};

// One accepted socket with its nghttp2 server session.
class Connection {
  public:
    Connection(detail::ServerCore& server, std::uint64_t id, UniqueFd socket)
        : server_(server), id_(id), socket_(std::move(socket)) {}
    Connection(const Connection&) = delete;
    Connection& operator=(const Connection&) = delete;
    ~Connection() {
        server_.loop().unwatch(watch_);
        streams_.clear();
    }

    Status start();
    [[nodiscard]] std::size_t activeStreams() const { return streams_.size(); }
    [[nodiscard]] std::size_t pendingOutput() const { return output_.size() - outputOffset_; }

    // What the call handles and the timers ask for. respond() and queueMessage() only submit
    // (they may run inside nghttp2's callbacks); the caller flushes.
    void respond(StreamState& stream, const RpcStatus& status,
                 const std::optional<std::string>& message);
    void queueMessage(StreamState& stream, std::string framed);
    // The response headers without a message yet (ServerStream::sendHeaders).
    void openResponse(StreamState& stream);
    void expire(std::int32_t streamId);
    // Shutdown: no new streams; then, past the grace, end the remaining ones.
    void goAway();
    void cancelStreams();
    void close(std::string_view reason, bool failure);
    // Hands nghttp2's output to the socket, as much as it takes. Never from nghttp2's callbacks.
    void flush();

  private:
    static Connection& of(void* userData) { return *static_cast<Connection*>(userData); }
    static int onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* userData);
    static int onHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                        std::size_t nameLength, const std::uint8_t* value, std::size_t valueLength,
                        std::uint8_t flags, void* userData);
    static int onFrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* userData);
    static int onDataChunk(nghttp2_session*, std::uint8_t flags, std::int32_t streamId,
                           const std::uint8_t* data, std::size_t length, void* userData);
    static int onFrameSent(nghttp2_session*, const nghttp2_frame* frame, void* userData);
    static int onFrameNotSent(nghttp2_session*, const nghttp2_frame* frame, int errorCode,
                              void* userData);
    static int onStreamClose(nghttp2_session*, std::int32_t streamId, std::uint32_t errorCode,
                             void* userData);
    static ssize_t readResponse(nghttp2_session*, std::int32_t streamId, std::uint8_t* buffer,
                                std::size_t length, std::uint32_t* dataFlags, nghttp2_data_source*,
                                void* userData);

    friend class ServerCore;
    void onEvents(std::uint32_t events);
    void readAvailable();
    bool fillOutput();
    bool writeOutput();
    void updateInterest();
    [[nodiscard]] bool readPaused() const {
        return pendingOutput() >= server_.options().maxConnectionOutputBytes;
    }

    StreamState* find(std::int32_t streamId) {
        auto found = streams_.find(streamId);
        return found == streams_.end() ? nullptr : found->second.get();
    }
    void requestHeadersDone(StreamState& stream);
    void requestEnded(StreamState& stream);
    void dispatch(StreamState& stream);
    void refuse(StreamState& stream, const RpcStatus& status, const char* httpStatus = "200");
    void submitResponse(StreamState& stream);
    void submitTrailers(StreamState& stream);
    void answered(StreamState& stream);
    void dropUnsentMessages(StreamState& stream);

    detail::ServerCore& server_;
    std::uint64_t id_;
    UniqueFd socket_;
    EventLoop::WatchId watch_ = 0;
    std::uint32_t interest_ = 0;
    std::unique_ptr<nghttp2_session, SessionDeleter> session_;
    std::map<std::int32_t, std::shared_ptr<StreamState>> streams_;
    std::string output_;  // serialized by nghttp2, not yet taken by the socket
    std::size_t outputOffset_ = 0;
    bool closed_ = false;
};

namespace {

nghttp2_nv header(std::string_view name, std::string_view value) {
    // nghttp2 copies names and values on submit (no NO_COPY flags), and never writes to them.
    return {const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(name.data())),
            const_cast<std::uint8_t*>(reinterpret_cast<const std::uint8_t*>(value.data())),
            name.size(), value.size(), NGHTTP2_NV_FLAG_NONE};
}

std::string_view text(const std::uint8_t* data, std::size_t length) {
    return {reinterpret_cast<const char*>(data), length};
}

}  // namespace

Status Connection::start() {
    nghttp2_session* session = nullptr;
    const int created =
        nghttp2_session_server_new2(&session, server_.callbacks(), this, server_.sessionOption());
    if (created != 0)
        return Error{std::string("nghttp2 session: ") + nghttp2_strerror(created),
                     ErrorKind::ResourceExhausted};
    session_.reset(session);
    const std::array<nghttp2_settings_entry, 2> settings{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, server_.options().maxConcurrentStreams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, server_.options().maxHeaderListBytes},
    }};
    nghttp2_submit_settings(session_.get(), NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    auto watch = server_.loop().watch(socket_.get(), EPOLLIN,
                                      [this](std::uint32_t events) { onEvents(events); });
    if (!watch)
        return watch.error();
    watch_ = *watch;
    interest_ = EPOLLIN;
    flush();
    return Status::Ok();
}

void Connection::onEvents(std::uint32_t events) {
    if ((events & EPOLLERR) != 0) {
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(socket_.get(), SOL_SOCKET, SO_ERROR, &error, &length);
        // The peer going away with answers unread is its choice, not a failure of ours.
        close(error != 0 ? std::strerror(error) : "socket error",
              error != EPIPE && error != ECONNRESET);
        return;
    }
    if ((events & (EPOLLIN | EPOLLHUP)) != 0 && !readPaused())
        readAvailable();
    flush();
}

void Connection::readAvailable() {
    // A few reads per wakeup, so one busy connection cannot starve the others.
    constexpr int kReadsPerWakeup = 4;
    std::array<std::uint8_t, std::size_t{16} * 1024> buffer{};
    for (int round = 0; round < kReadsPerWakeup && !closed_ && !readPaused(); ++round) {
        const ssize_t received = ::recv(socket_.get(), buffer.data(), buffer.size(), 0);
        if (received == 0) {
            close("peer closed the connection", false);
            return;
        }
        if (received < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                return;
            close(std::strerror(errno), errno != ECONNRESET);
            return;
        }
        const ssize_t used = nghttp2_session_mem_recv(session_.get(), buffer.data(),
                                                      static_cast<std::size_t>(received));
        if (used < 0) {
            close(nghttp2_strerror(static_cast<int>(used)), true);
            return;
        }
    }
}

void Connection::flush() {
    while (!closed_) {
        if (!fillOutput())
            return;
        if (pendingOutput() == 0 || !writeOutput())
            break;
    }
    if (closed_)
        return;
    if (pendingOutput() == 0 && nghttp2_session_want_read(session_.get()) == 0 &&
        nghttp2_session_want_write(session_.get()) == 0) {
        close("session ended", false);  // after GOAWAY, once every stream is done
        return;
    }
    updateInterest();
}

// Takes what nghttp2 has to send, up to the connection's output bound.
bool Connection::fillOutput() {
    while (pendingOutput() < server_.options().maxConnectionOutputBytes) {
        const std::uint8_t* data = nullptr;
        const ssize_t length = nghttp2_session_mem_send(session_.get(), &data);
        if (length < 0) {
            close(nghttp2_strerror(static_cast<int>(length)), true);
            return false;
        }
        if (length == 0)
            break;
        output_.append(text(data, static_cast<std::size_t>(length)));
    }
    server_.notePeakOutput(pendingOutput());
    return true;
}

// False when the socket takes no more for now (or failed).
bool Connection::writeOutput() {
    const ssize_t sent = ::send(socket_.get(), output_.data() + outputOffset_, pendingOutput(),
                                MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent < 0) {
        if (errno == EINTR)
            return true;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            close(std::strerror(errno), errno != EPIPE && errno != ECONNRESET);
        return false;
    }
    outputOffset_ += static_cast<std::size_t>(sent);
    if (outputOffset_ == output_.size()) {
        output_.clear();
        outputOffset_ = 0;
    } else if (outputOffset_ > output_.size() / 2) {
        output_.erase(0, outputOffset_);
        outputOffset_ = 0;
    }
    return true;
}

void Connection::updateInterest() {
    std::uint32_t wanted = 0;
    if (!readPaused())
        wanted |= EPOLLIN;
    if (pendingOutput() > 0)
        wanted |= EPOLLOUT;
    if (wanted == interest_)
        return;
    interest_ = wanted;
    (void)server_.loop().modify(watch_, wanted);
}

void Connection::close(std::string_view reason, bool failure) {
    if (closed_)
        return;
    closed_ = true;
    if (failure)
        spdlog::warn("grpc connection closed reason=\"{}\" calls={}", reason, streams_.size());
    else
        spdlog::debug("grpc connection closed reason=\"{}\"", reason);
    server_.loop().unwatch(watch_);
    socket_.reset();
    for (auto& [id, stream] : streams_) {
        server_.loop().cancelTimer(stream->deadlineTimer);
        if (!stream->answered)
            stream->cancelCall();
    }
    server_.connectionClosed(id_, failure);
}

// --- nghttp2 callbacks: the request
// ---------------------------------------------------------------

int Connection::onBeginHeaders(nghttp2_session*, const nghttp2_frame* frame, void* userData) {
    if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    auto& self = of(userData);
    auto stream = std::make_shared<StreamState>();
    stream->connection = &self;
    stream->id = frame->hd.stream_id;
    stream->reader = MessageReader(self.server_.options().maxReceiveMessageBytes);
    self.streams_.emplace(stream->id, std::move(stream));
    return 0;
}

int Connection::onHeader(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                         std::size_t nameLength, const std::uint8_t* value, std::size_t valueLength,
                         std::uint8_t, void* userData) {
    auto& self = of(userData);
    StreamState* stream = self.find(frame->hd.stream_id);
    if (stream == nullptr || frame->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;  // the client's trailers: nothing in them matters to a gRPC server
    // RFC 9113 counts 32 bytes of overhead per field toward SETTINGS_MAX_HEADER_LIST_SIZE.
    stream->headerBytes += nameLength + valueLength + 32;
    if (stream->headerBytes > self.server_.options().maxHeaderListBytes)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;  // resets this stream only
    const auto key = text(name, nameLength);
    const auto field = text(value, valueLength);
    if (key == ":method")
        stream->httpMethod = field;
    else if (key == ":path")
        stream->path = field;
    else if (key == "content-type")
        stream->contentType = field;
    else if (key == "grpc-timeout")
        stream->timeout = field;
    return 0;
}

int Connection::onFrameReceived(nghttp2_session*, const nghttp2_frame* frame, void* userData) {
    auto& self = of(userData);
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
        return 0;
    auto found = self.streams_.find(frame->hd.stream_id);
    if (found == self.streams_.end())
        return 0;
    auto stream = found->second;  // kept alive while a handler runs
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST)
        self.requestHeadersDone(*stream);
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0)
        self.requestEnded(*stream);
    return 0;
}

int Connection::onDataChunk(nghttp2_session*, std::uint8_t, std::int32_t streamId,
                            const std::uint8_t* data, std::size_t length, void* userData) {
    auto& self = of(userData);
    StreamState* stream = self.find(streamId);
    if (stream == nullptr || stream->answered || stream->call)
        return 0;  // refused already: the rest is read and dropped, never kept
    switch (stream->reader.append(text(data, length))) {
        case MessageReader::Outcome::Fine:
            break;
        case MessageReader::Outcome::Compressed:
            self.refuse(*stream, {StatusCode::Unimplemented,
                                  "compressed messages are not supported (no grpc-encoding)"});
            break;
        case MessageReader::Outcome::TooLarge:
            self.refuse(
                *stream,
                {StatusCode::ResourceExhausted,
                 "request message larger than " +
                     std::to_string(self.server_.options().maxReceiveMessageBytes) + " bytes"});
            break;
        case MessageReader::Outcome::SecondMessage:
            self.refuse(*stream, {StatusCode::Internal, "more than one request message"});
            break;
    }
    return 0;
}

void Connection::requestHeadersDone(StreamState& stream) {
    if (stream.httpMethod != "POST") {
        refuse(stream, {StatusCode::Internal, "gRPC requires POST"}, "405");
        return;
    }
    if (!isGrpcContentType(stream.contentType)) {
        // PROTOCOL-HTTP2.md: 415, so that a plain HTTP client does not take it for a success.
        refuse(stream, {StatusCode::Internal, "content-type is not application/grpc"}, "415");
        return;
    }
    if (!stream.timeout.empty()) {
        auto timeout = parseGrpcTimeout(stream.timeout);
        if (!timeout) {
            refuse(stream, {StatusCode::Internal, "malformed grpc-timeout"});
            return;
        }
        stream.deadline = Clock::now() + *timeout;
        std::weak_ptr server = server_.shared_from_this();
        stream.deadlineTimer = server_.loop().runAt(
            *stream.deadline, [server, connection = id_, streamId = stream.id] {
                if (auto alive = server.lock())
                    alive->expireDeadline(connection, streamId);
            });
    }
    if (server_.findMethod(stream.path) == nullptr)
        refuse(stream, {StatusCode::Unimplemented, "unknown method " + stream.path});
}

void Connection::requestEnded(StreamState& stream) {
    stream.requestEnded = true;
    if (stream.answered || stream.call)
        return;
    if (!stream.reader.atMessageBoundary()) {
        refuse(stream, {StatusCode::Internal, "the request ended inside a message"});
        return;
    }
    if (!stream.reader.message()) {
        refuse(stream, {StatusCode::Internal, "no request message"});
        return;
    }
    dispatch(stream);
}

void Connection::dispatch(StreamState& stream) {
    const Method* method = server_.findMethod(stream.path);
    std::string request = std::move(*stream.reader.message());
    std::weak_ptr<StreamState> weak = streams_.at(stream.id);
    auto poster = server_.loop().poster();
    try {
        if (method->unary) {
            auto call = std::make_shared<UnaryCall>(stream.path, stream.deadline, poster, weak);
            stream.call = call;
            method->unary(std::move(call), std::move(request));
        } else {
            auto call = std::make_shared<ServerStream>(stream.path, stream.deadline, poster, weak,
                                                       server_.options().maxStreamQueuedBytes);
            stream.call = call;
            stream.streamHandle = call.get();
            method->streaming(std::move(call), std::move(request));
        }
    } catch (const std::exception& error) {
        spdlog::error("grpc handler failed method={} error=\"{}\"", stream.path, error.what());
        respond(stream, {StatusCode::Unknown, "the handler failed"}, std::nullopt);
    }
}

// --- The response ------------------------------------------------------------------------------

// A trailers-only response, before any handler saw the call.
void Connection::refuse(StreamState& stream, const RpcStatus& status, const char* httpStatus) {
    if (stream.answered)
        return;
    const std::string code = std::to_string(static_cast<int>(status.code));
    const std::string message = grpcMessageValue(status.message);
    const std::array<nghttp2_nv, 4> headers{
        header(":status", httpStatus), header("content-type", "application/grpc"),
        header("grpc-status", code), header("grpc-message", message)};
    nghttp2_submit_response(session_.get(), stream.id, headers.data(), headers.size(), nullptr);
    stream.headersSubmitted = true;
    answered(stream);
}

// A unary response message goes only with OK; a stream's queued messages go before any status.
void Connection::respond(StreamState& stream, const RpcStatus& status,
                         const std::optional<std::string>& message) {
    if (closed_ || stream.answered || stream.finalStatus)
        return;
    if (status.code == StatusCode::Ok && message)
        stream.outbox.push_back(frameMessage(*message));
    stream.finalStatus = status;
    submitResponse(stream);
}

void Connection::queueMessage(StreamState& stream, std::string framed) {
    if (closed_ || stream.answered || stream.finalStatus) {
        stream.releaseQueued(framed.size());
        return;
    }
    stream.outbox.push_back(std::move(framed));
    submitResponse(stream);
}

void Connection::openResponse(StreamState& stream) {
    if (closed_ || stream.answered || stream.finalStatus || stream.headersSubmitted)
        return;
    submitResponse(stream);  // an empty outbox: the body waits, deferred, for the first message
}

void Connection::submitResponse(StreamState& stream) {
    if (stream.answered)
        return;
    if (stream.headersSubmitted) {
        nghttp2_session_resume_data(session_.get(), stream.id);  // no-op unless deferred
        return;
    }
    if (stream.outbox.empty() && stream.finalStatus) {
        refuse(stream, *stream.finalStatus);
        return;
    }
    const std::array<nghttp2_nv, 2> headers{header(":status", "200"),
                                            header("content-type", "application/grpc")};
    nghttp2_data_provider body{};
    body.read_callback = readResponse;
    nghttp2_submit_response(session_.get(), stream.id, headers.data(), headers.size(), &body);
    stream.headersSubmitted = true;
}

ssize_t Connection::readResponse(nghttp2_session*, std::int32_t streamId, std::uint8_t* buffer,
                                 std::size_t length, std::uint32_t* dataFlags, nghttp2_data_source*,
                                 void* userData) {
    auto& self = of(userData);
    StreamState* stream = self.find(streamId);
    if (stream == nullptr)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    std::size_t copied = 0;
    while (copied < length && !stream->outbox.empty()) {
        const std::string& front = stream->outbox.front();
        const std::size_t take = std::min(length - copied, front.size() - stream->outboxOffset);
        std::copy_n(front.data() + stream->outboxOffset, take, buffer + copied);
        copied += take;
        stream->outboxOffset += take;
        if (stream->outboxOffset == front.size()) {
            stream->releaseQueued(front.size());
            stream->outbox.pop_front();
            stream->outboxOffset = 0;
        }
    }
    if (stream->outbox.empty() && stream->finalStatus) {
        // The status goes in trailers: end the DATA without END_STREAM, which they carry.
        *dataFlags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        self.submitTrailers(*stream);
        return static_cast<ssize_t>(copied);
    }
    if (copied == 0)
        return NGHTTP2_ERR_DEFERRED;  // resumed by the next write or finish
    return static_cast<ssize_t>(copied);
}

void Connection::submitTrailers(StreamState& stream) {
    const std::string code = std::to_string(static_cast<int>(stream.finalStatus->code));
    const std::string message = grpcMessageValue(stream.finalStatus->message);
    std::array<nghttp2_nv, 2> trailers{header("grpc-status", code),
                                       header("grpc-message", message)};
    const std::size_t count = message.empty() ? 1 : 2;
    nghttp2_submit_trailer(session_.get(), stream.id, trailers.data(), count);
    answered(stream);
}

void Connection::answered(StreamState& stream) {
    stream.answered = true;
    server_.loop().cancelTimer(stream.deadlineTimer);
    stream.deadlineTimer = 0;
    if (stream.call)
        stream.call->completed();
}

// Messages not yet started are dropped; one partly sent must end whole, or the framing breaks.
void Connection::dropUnsentMessages(StreamState& stream) {
    const std::size_t keep = stream.outboxOffset > 0 ? 1 : 0;
    while (stream.outbox.size() > keep) {
        stream.releaseQueued(stream.outbox.back().size());
        stream.outbox.pop_back();
    }
}

void Connection::expire(std::int32_t streamId) {
    StreamState* stream = find(streamId);
    if (stream == nullptr || stream->answered)
        return;
    stream->deadlineTimer = 0;
    stream->cancelCall();
    stream->finalStatus.reset();
    dropUnsentMessages(*stream);
    stream->finalStatus = RpcStatus{StatusCode::DeadlineExceeded, "deadline exceeded"};
    submitResponse(*stream);
    flush();
}

// After a complete answer to a request still being sent, ask the client to stop sending
// (RFC 9113 8.1: RST_STREAM with NO_ERROR). Sent after our final frame, never before it.
int Connection::onFrameSent(nghttp2_session* session, const nghttp2_frame* frame, void* userData) {
    if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) == 0 ||
        (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA))
        return 0;
    StreamState* stream = of(userData).find(frame->hd.stream_id);
    if (stream != nullptr && !stream->requestEnded)
        nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream->id, NGHTTP2_NO_ERROR);
    return 0;
}

// Answers nghttp2 could not send (say, headers too big for the peer): reset the stream, so the
// client learns it now rather than at its deadline.
int Connection::onFrameNotSent(nghttp2_session* session, const nghttp2_frame* frame, int errorCode,
                               void*) {
    if (frame->hd.type != NGHTTP2_HEADERS)
        return 0;
    spdlog::warn("grpc answer not sent stream={} reason=\"{}\"", frame->hd.stream_id,
                 nghttp2_strerror(errorCode));
    nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                              NGHTTP2_INTERNAL_ERROR);
    return 0;
}

int Connection::onStreamClose(nghttp2_session*, std::int32_t streamId, std::uint32_t,
                              void* userData) {
    auto& self = of(userData);
    auto found = self.streams_.find(streamId);
    if (found == self.streams_.end())
        return 0;
    auto stream = std::move(found->second);
    self.streams_.erase(found);
    self.server_.loop().cancelTimer(stream->deadlineTimer);
    if (!stream->answered)
        stream->cancelCall();  // a client RST_STREAM: the client cancelled
    return 0;
}

void Connection::goAway() {
    if (closed_)
        return;
    nghttp2_submit_goaway(session_.get(), NGHTTP2_FLAG_NONE,
                          nghttp2_session_get_last_proc_stream_id(session_.get()), NGHTTP2_NO_ERROR,
                          nullptr, 0);
    flush();
}

void Connection::cancelStreams() {
    if (closed_)
        return;
    for (auto& [id, stream] : streams_) {
        if (stream->answered)
            continue;
        stream->cancelCall();
        nghttp2_submit_rst_stream(session_.get(), NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
    }
    flush();
}

}  // namespace detail

// --- Call handles ------------------------------------------------------------------------------

CallContext::CallContext(std::string method, std::optional<Clock::time_point> deadline,
                         TaskPoster poster, std::weak_ptr<detail::StreamState> stream)
    : method_(std::move(method)),
      deadline_(deadline),
      poster_(std::move(poster)),
      stream_(std::move(stream)) {}

void CallContext::onCancel(std::function<void()> callback) {
    {
        std::lock_guard lock(mutex_);
        if (!cancelled_.load()) {
            if (!done_)
                cancelCallback_ = std::move(callback);
            return;
        }
    }
    callback();
}

void CallContext::markCancelled() {
    std::function<void()> callback;
    {
        std::lock_guard lock(mutex_);
        if (cancelled_.exchange(true) || done_)
            return;
        callback = std::move(cancelCallback_);
    }
    if (callback)
        callback();
}

void CallContext::completed() {
    std::function<void()> released;  // whatever it captured is let go outside the lock
    std::lock_guard lock(mutex_);
    done_ = true;
    released.swap(cancelCallback_);
}

void CallContext::postToStream(std::function<void(detail::StreamState&)> action) const {
    poster_.post([stream = stream_, action = std::move(action)] {
        if (auto alive = stream.lock())
            action(*alive);
    });
}

void UnaryCall::finish(const RpcStatus& status, std::string response) {
    if (!claimFinish())
        return;
    postToStream([status, response = std::move(response)](detail::StreamState& stream) mutable {
        stream.connection->respond(stream, status, std::move(response));
        stream.connection->flush();
    });
}

ServerStream::ServerStream(std::string method, std::optional<Clock::time_point> deadline,
                           TaskPoster poster, std::weak_ptr<detail::StreamState> stream,
                           std::size_t maxQueuedBytes)
    : CallContext(std::move(method), deadline, std::move(poster), std::move(stream)),
      maxQueuedBytes_(maxQueuedBytes) {}

ServerStream::WriteResult ServerStream::write(std::string_view message) {
    if (cancelled() || finishClaimed())
        return WriteResult::Closed;
    std::string framed = detail::frameMessage(message);
    const std::size_t size = framed.size();
    std::size_t queued = queuedBytes_.load();
    do {
        if (queued + size > maxQueuedBytes_)
            return WriteResult::Full;
    } while (!queuedBytes_.compare_exchange_weak(queued, queued + size));
    postToStream([framed = std::move(framed)](detail::StreamState& stream) mutable {
        stream.connection->queueMessage(stream, std::move(framed));
        stream.connection->flush();
    });
    return WriteResult::Queued;
}

void ServerStream::sendHeaders() {
    if (cancelled() || finishClaimed())
        return;
    postToStream([](detail::StreamState& stream) {
        stream.connection->openResponse(stream);
        stream.connection->flush();
    });
}

void ServerStream::finish(const RpcStatus& status) {
    if (!claimFinish())
        return;
    postToStream([status](detail::StreamState& stream) {
        stream.connection->respond(stream, status, std::nullopt);
        stream.connection->flush();
    });
}

// --- The server --------------------------------------------------------------------------------

detail::ServerCore::ServerCore(EventLoop& loop, ServerOptions options)
    : loop_(loop), options_(options) {
    nghttp2_session_callbacks* callbacks = nullptr;
    nghttp2_session_callbacks_new(&callbacks);
    callbacks_.reset(callbacks);
    nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks,
                                                            detail::Connection::onBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(callbacks, detail::Connection::onHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks,
                                                         detail::Connection::onFrameReceived);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks,
                                                              detail::Connection::onDataChunk);
    nghttp2_session_callbacks_set_on_frame_send_callback(callbacks,
                                                         detail::Connection::onFrameSent);
    nghttp2_session_callbacks_set_on_stream_close_callback(callbacks,
                                                           detail::Connection::onStreamClose);

    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    option_.reset(option);
    // Closed streams are not kept for priority bookkeeping: memory per connection stays flat.
    nghttp2_option_set_no_closed_streams(option, 1);
    nghttp2_option_set_max_send_header_block_length(option, options_.maxHeaderListBytes);
}

detail::ServerCore::~ServerCore() = default;

Status detail::ServerCore::listen(int socket) {
    if (stopping_)
        return Error{"the server is stopped", ErrorKind::FailedPrecondition};
    const int flags = ::fcntl(socket, F_GETFL);
    if (flags < 0 || ::fcntl(socket, F_SETFL, flags | O_NONBLOCK) != 0)
        return errorFromErrno(errno, "cannot make the listening socket non-blocking");
    listeners_.push_back({socket, 0});
    auto watch = loop_.watch(socket, EPOLLIN, [this, &listener = listeners_.back()](std::uint32_t) {
        acceptPending(listener);
    });
    if (!watch) {
        listeners_.pop_back();
        return watch.error();
    }
    listeners_.back().watch = *watch;
    return Status::Ok();
}

void detail::ServerCore::acceptPending(Listener& listener) {
    constexpr int kAcceptsPerWakeup = 16;
    for (int round = 0; round < kAcceptsPerWakeup && !stopping_; ++round) {
        UniqueFd socket(::accept4(listener.fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
        if (!socket) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK) {
                // Out of descriptors or memory: the connection stays queued, and a
                // level-triggered listener would spin on it. Wait a little instead.
                spdlog::warn("grpc accept failed reason=\"{}\"", std::strerror(errno));
                pauseListener(listener);
            }
            return;
        }
        if (connections_.size() >= options_.maxConnections) {
            ++refused_;
            spdlog::warn("grpc connection refused reason=\"over the limit\" limit={}",
                         options_.maxConnections);
            continue;
        }
        adopt(std::move(socket));
    }
}

void detail::ServerCore::pauseListener(Listener& listener) {
    (void)loop_.modify(listener.watch, 0);
    std::weak_ptr self = shared_from_this();
    loop_.runAt(Clock::now() + std::chrono::milliseconds(100), [self, &listener] {
        if (auto alive = self.lock(); alive && !alive->stopping_)
            (void)alive->loop_.modify(listener.watch, EPOLLIN);
    });
}

void detail::ServerCore::adopt(UniqueFd socket) {
    const std::uint64_t id = nextConnectionId_++;
    auto connection = std::make_unique<Connection>(*this, id, std::move(socket));
    Connection& added = *connection;
    connections_.emplace(id, std::move(connection));
    if (auto started = added.start(); !started) {
        spdlog::warn("grpc connection failed reason=\"{}\"", started.error().message);
        added.close("could not start", true);
    }
}

void detail::ServerCore::connectionClosed(std::uint64_t id, bool failed) {
    if (failed)
        ++failed_;
    // Erased from a task of its own: the connection may be inside one of its callbacks now.
    std::weak_ptr self = shared_from_this();
    loop_.post([self, id] {
        if (auto alive = self.lock())
            alive->connections_.erase(id);
    });
}

void detail::ServerCore::expireDeadline(std::uint64_t connectionId, std::int32_t streamId) {
    auto found = connections_.find(connectionId);
    if (found != connections_.end())
        found->second->expire(streamId);
}

void detail::ServerCore::beginShutdown() {
    if (stopping_)
        return;
    stopping_ = true;
    for (auto& listener : listeners_)
        loop_.unwatch(listener.watch);
    listeners_.clear();
    for (auto& [id, connection] : connections_)
        connection->goAway();
}

void detail::ServerCore::cancelEverything() {
    for (auto& [id, connection] : connections_)
        connection->cancelStreams();
    for (auto& [id, connection] : connections_)
        connection->close("server stopped", false);
    connections_.clear();
}

std::size_t detail::ServerCore::activeCalls() const {
    std::size_t calls = 0;
    for (const auto& [id, connection] : connections_)
        if (!connection->closed_)
            calls += connection->activeStreams();
    return calls;
}

ServerStats detail::ServerCore::stats() const {
    ServerStats stats;
    for (const auto& [id, connection] : connections_) {
        if (connection->closed_)
            continue;
        ++stats.connections;
        stats.activeCalls += connection->activeStreams();
        stats.largestConnectionOutputBytes =
            std::max(stats.largestConnectionOutputBytes, connection->pendingOutput());
    }
    stats.peakConnectionOutputBytes = peakOutput_;
    stats.connectionsRefused = refused_;
    stats.connectionsFailed = failed_;
    return stats;
}

namespace {

// Runs `work` on the loop's thread and waits for it; inline when the loop is not running (no
// other thread can touch the server then). A task the loop drops unrun ends the wait too.
template <class Work>
auto runOnLoop(EventLoop& loop, Work work) -> decltype(work()) {
    if (!loop.running() || loop.inLoopThread())
        return work();
    auto task = std::make_shared<std::packaged_task<decltype(work())()>>(std::move(work));
    auto result = task->get_future();
    if (!loop.post([task] { (*task)(); }))
        (*task)();  // the loop is stopping: nothing runs there any more
    return result.get();
}

}  // namespace

GrpcServer::GrpcServer(EventLoop& loop, ServerOptions options)
    : impl_(std::make_shared<detail::ServerCore>(loop, options)) {}

GrpcServer::~GrpcServer() {
    stop(std::chrono::milliseconds(0));
}

void GrpcServer::addUnary(std::string path, UnaryHandler handler) {
    impl_->add(std::move(path), detail::Method{std::move(handler), {}});
}

void GrpcServer::addServerStreaming(std::string path, ServerStreamingHandler handler) {
    impl_->add(std::move(path), detail::Method{{}, std::move(handler)});
}

Status GrpcServer::serve(int listeningSocket) {
    return runOnLoop(impl_->loop(),
                     [this, listeningSocket] { return impl_->listen(listeningSocket); });
}

void GrpcServer::stop(std::chrono::milliseconds grace) {
    EventLoop& loop = impl_->loop();
    runOnLoop(loop, [this] { impl_->beginShutdown(); });
    const auto giveUp = Clock::now() + grace;
    // Shutdown only: a short poll is simpler than a completion signal through every stream.
    while (Clock::now() < giveUp && runOnLoop(loop, [this] { return impl_->activeCalls(); }) > 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    runOnLoop(loop, [this] { impl_->cancelEverything(); });
}

ServerStats GrpcServer::stats() {
    return runOnLoop(impl_->loop(), [this] { return impl_->stats(); });
}

}  // namespace numadra::rpc
