#pragma once
// The bytes an NRI plugin and its runtime exchange on the runtime's socket: one unix connection
// (the trunk) multiplexed into logical connections by NRI's frames (github.com/containerd/nri
// pkg/net/multiplex: a big-endian connection id and length, then that many bytes), each
// logical connection carrying a ttrpc byte stream (github.com/containerd/ttrpc: a 10-byte
// header — big-endian length and stream id, a type and flags — then a protobuf message).
// The runtime serves the plugin's calls on connection 2 and calls the plugin on connection 1.
//
// Nothing here does I/O: encoders return bytes, TrunkReader takes bytes as they arrive and
// hands out whole ttrpc messages, so every framing rule is tested without a socket.

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "numadra/common/result.hpp"

namespace numadra::nri {

// NRI's logical connections (pkg/net/multiplex/ttrpc.go).
enum class Channel : std::uint32_t {
    PluginService = 1,   // the runtime calls the plugin (Configure, CreateContainer, ...)
    RuntimeService = 2,  // the plugin calls the runtime (RegisterPlugin, UpdateContainers)
};

enum class MessageType : std::uint8_t { Request = 1, Response = 2, Data = 3 };

inline constexpr std::size_t kTtrpcHeaderSize = 10;
// ttrpc refuses larger messages (channel.go messageLengthMax); NRI's mux frames are at most a
// header plus this.
inline constexpr std::size_t kMaxMessageSize = std::size_t{4} << 20;
inline constexpr std::size_t kMuxHeaderSize = 8;
inline constexpr std::size_t kMaxMuxPayload = kTtrpcHeaderSize + kMaxMessageSize;

struct Message {
    Channel channel = Channel::PluginService;
    std::uint32_t streamId = 0;
    MessageType type = MessageType::Request;
    std::uint8_t flags = 0;
    std::string payload;  // a serialized ttrpc.Request or ttrpc.Response
};

// The trunk bytes of one ttrpc message: its header and payload in one mux frame. An error when
// the payload is over kMaxMessageSize.
Result<std::string> encodeMessage(const Message& message);

// Reassembles ttrpc messages from trunk bytes fed in any pieces. A frame for an unknown
// channel, a ttrpc message over the size limit or of an unknown type poisons the reader: the
// error names what was wrong, and the connection has to be dropped (the stream cannot be
// resynchronised, as in upstream's mux).
class TrunkReader {
  public:
    Status feed(std::string_view bytes);
    std::optional<Message> next();
    // Bytes held that do not yet form a whole frame or message.
    std::size_t buffered() const;

  private:
    Status drainMuxFrames();
    Status drainChannel(Channel channel, std::string& stream);

    std::string trunk_;
    std::map<Channel, std::string> streams_;
    std::deque<Message> ready_;
    std::optional<Error> failed_;
};

}  // namespace numadra::nri
