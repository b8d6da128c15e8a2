#pragma once
// The parts of gRPC's wire protocol (PROTOCOL-HTTP2.md) that are pure functions of bytes: the
// 5-byte message framing, grpc-timeout, grpc-message's percent-encoding, the content-type check.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "numadra/plugin/grpc/event_loop.hpp"

namespace numadra::rpc::detail {

// "<compressed flag><big-endian length><message>".
std::string frameMessage(std::string_view message);

// Reassembles a request's one message from DATA chunks, refusing as soon as the prefix tells a
// message that cannot be accepted: nothing past the prefix of a refused message is kept.
class MessageReader {
  public:
    enum class Outcome {
        Fine,
        Compressed,     // the compressed flag: we support no grpc-encoding
        TooLarge,       // over the receive limit
        SecondMessage,  // a unary or server-streaming request has exactly one
    };
    MessageReader() = default;
    explicit MessageReader(std::size_t maxMessageBytes) : maxMessageBytes_(maxMessageBytes) {}

    Outcome append(std::string_view bytes);
    // No message partly received.
    [[nodiscard]] bool atMessageBoundary() const { return prefix_.empty() && !expected_; }
    // The complete message, once there is one.
    std::optional<std::string>& message() { return message_; }

  private:
    std::size_t maxMessageBytes_ = 0;
    std::string prefix_;
    std::optional<std::size_t> expected_;  // the current message's length, once its prefix is in
    std::string body_;
    std::optional<std::string> message_;
};

// "<1 to 8 digits><unit H M S m u n>"; nullopt when malformed. Very long timeouts are capped at a
// year (grpc's own limit is a little under 100 million hours: far past any clock's range).
std::optional<Clock::duration> parseGrpcTimeout(std::string_view value);

// grpc-message: bytes outside printable ASCII, and '%', as %XX (upper-case hex).
std::string percentEncode(std::string_view message);

// The most a grpc-message value may take, encoded: the answer's metadata must fit the peer's
// limit (grpc-core's default is 8 KiB for all of it) and the header block nghttp2 sends, or the
// answer never arrives and the call hangs until its deadline.
inline constexpr std::size_t kMaxStatusMessageValueBytes = std::size_t{4} * 1024;

// The grpc-message header's value: the message percent-encoded, cut to
// kMaxStatusMessageValueBytes between whole UTF-8 characters.
std::string grpcMessageValue(std::string_view message);

// "application/grpc", optionally followed by "+<format>" or ";<parameters>".
bool isGrpcContentType(std::string_view contentType);

}  // namespace numadra::rpc::detail
