#include "numadra/nri/wire.hpp"

namespace numadra::nri {

namespace {

void appendBigEndian32(std::string& out, std::uint32_t value) {
    out.push_back(static_cast<char>((value >> 24) & 0xff));
    out.push_back(static_cast<char>((value >> 16) & 0xff));
    out.push_back(static_cast<char>((value >> 8) & 0xff));
    out.push_back(static_cast<char>(value & 0xff));
}

std::uint32_t readBigEndian32(std::string_view bytes) {
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i)
        value = (value << 8) | static_cast<std::uint8_t>(bytes[static_cast<std::size_t>(i)]);
    return value;
}

bool isKnownChannel(std::uint32_t id) {
    return id == static_cast<std::uint32_t>(Channel::PluginService) ||
           id == static_cast<std::uint32_t>(Channel::RuntimeService);
}

bool isKnownType(std::uint8_t type) {
    return type >= static_cast<std::uint8_t>(MessageType::Request) &&
           type <= static_cast<std::uint8_t>(MessageType::Data);
}

std::string channelName(Channel channel) {
    return channel == Channel::PluginService ? "plugin-service connection (1)"
                                             : "runtime-service connection (2)";
}

}  // namespace

Result<std::string> encodeMessage(const Message& message) {
    if (message.payload.size() > kMaxMessageSize) {
        return Error{"ttrpc message of " + std::to_string(message.payload.size()) +
                     " bytes is over the protocol's limit of " + std::to_string(kMaxMessageSize)};
    }
    std::string stream;
    stream.reserve(kTtrpcHeaderSize + message.payload.size());
    appendBigEndian32(stream, static_cast<std::uint32_t>(message.payload.size()));
    appendBigEndian32(stream, message.streamId);
    stream.push_back(static_cast<char>(message.type));
    stream.push_back(static_cast<char>(message.flags));
    stream += message.payload;

    // The largest message (header and kMaxMessageSize) is exactly one mux frame's limit.
    std::string trunk;
    trunk.reserve(kMuxHeaderSize + stream.size());
    appendBigEndian32(trunk, static_cast<std::uint32_t>(message.channel));
    appendBigEndian32(trunk, static_cast<std::uint32_t>(stream.size()));
    trunk += stream;
    return trunk;
}

Status TrunkReader::feed(std::string_view bytes) {
    if (failed_)
        return *failed_;
    trunk_.append(bytes);
    Status status = drainMuxFrames();
    if (!status)
        failed_ = status.error();
    return status;
}

std::optional<Message> TrunkReader::next() {
    if (ready_.empty())
        return std::nullopt;
    Message message = std::move(ready_.front());
    ready_.pop_front();
    return message;
}

std::size_t TrunkReader::buffered() const {
    std::size_t total = trunk_.size();
    for (const auto& [channel, stream] : streams_)
        total += stream.size();
    return total;
}

Status TrunkReader::drainMuxFrames() {
    std::size_t offset = 0;
    while (trunk_.size() - offset >= kMuxHeaderSize) {
        const std::string_view header(trunk_.data() + offset, kMuxHeaderSize);
        const std::uint32_t id = readBigEndian32(header);
        const std::uint32_t size = readBigEndian32(header.substr(4));
        if (!isKnownChannel(id)) {
            return Error{"NRI frame for connection " + std::to_string(id) +
                         ": only 1 (plugin service) and 2 (runtime service) exist"};
        }
        if (size > kMaxMuxPayload) {
            return Error{"NRI frame of " + std::to_string(size) + " bytes is over the limit of " +
                         std::to_string(kMaxMuxPayload)};
        }
        if (trunk_.size() - offset - kMuxHeaderSize < size)
            break;
        const auto channel = static_cast<Channel>(id);
        std::string& stream = streams_[channel];
        stream.append(trunk_, offset + kMuxHeaderSize, size);
        offset += kMuxHeaderSize + size;
        if (Status status = drainChannel(channel, stream); !status)
            return status;
    }
    trunk_.erase(0, offset);
    return {};
}

Status TrunkReader::drainChannel(Channel channel, std::string& stream) {
    std::size_t offset = 0;
    while (stream.size() - offset >= kTtrpcHeaderSize) {
        const std::string_view header(stream.data() + offset, kTtrpcHeaderSize);
        const std::uint32_t size = readBigEndian32(header);
        if (size > kMaxMessageSize) {
            return Error{"ttrpc message of " + std::to_string(size) + " bytes on the " +
                         channelName(channel) + " is over the protocol's limit of " +
                         std::to_string(kMaxMessageSize)};
        }
        const auto type = static_cast<std::uint8_t>(header[8]);
        if (!isKnownType(type)) {
            return Error{"ttrpc message of unknown type " + std::to_string(type) + " on the " +
                         channelName(channel)};
        }
        if (stream.size() - offset - kTtrpcHeaderSize < size)
            break;
        Message message;
        message.channel = channel;
        message.streamId = readBigEndian32(header.substr(4));
        message.type = static_cast<MessageType>(type);
        message.flags = static_cast<std::uint8_t>(header[9]);
        message.payload.assign(stream, offset + kTtrpcHeaderSize, size);
        ready_.push_back(std::move(message));
        offset += kTtrpcHeaderSize + size;
    }
    stream.erase(0, offset);
    return {};
}

}  // namespace numadra::nri
