#include "numadra/nri/wire.hpp"

#include <gtest/gtest.h>

#include <string>

namespace numadra::nri {
namespace {

Message request(Channel channel, std::uint32_t stream, std::string payload) {
    Message message;
    message.channel = channel;
    message.streamId = stream;
    message.type = MessageType::Request;
    message.payload = std::move(payload);
    return message;
}

std::string bytes(std::initializer_list<int> values) {
    std::string out;
    for (int v : values)
        out.push_back(static_cast<char>(v));
    return out;
}

// A frame as upstream's mux and ttrpc write it: RegisterPlugin's request on connection 2,
// stream 1, a 3-byte payload (the layout of pkg/net/multiplex/mux.go and ttrpc's channel.go).
TEST(NriWire, EncodesTheMuxAndTtrpcHeadersBigEndian) {
    auto encoded = encodeMessage(request(Channel::RuntimeService, 1, "abc"));
    ASSERT_TRUE(encoded) << encoded.error().message;
    EXPECT_EQ(*encoded, bytes({0, 0, 0, 2, 0, 0, 0, 13,          // mux: connection 2, 13 bytes
                               0, 0, 0, 3, 0, 0, 0, 1, 1, 0}) +  // ttrpc: 3 bytes, stream 1
                            "abc");
}

TEST(NriWire, ReadsAMessageFedOneByteAtATime) {
    auto encoded = encodeMessage(request(Channel::PluginService, 7, "payload"));
    ASSERT_TRUE(encoded);
    TrunkReader reader;
    for (char c : *encoded) {
        EXPECT_FALSE(reader.next().has_value());
        ASSERT_TRUE(reader.feed(std::string(1, c)));
    }
    auto message = reader.next();
    ASSERT_TRUE(message.has_value());
    EXPECT_EQ(message->channel, Channel::PluginService);
    EXPECT_EQ(message->streamId, 7u);
    EXPECT_EQ(message->type, MessageType::Request);
    EXPECT_EQ(message->payload, "payload");
    EXPECT_EQ(reader.buffered(), 0u);
}

// Upstream's ttrpc writes a message's header and its payload in two writes, which the mux sends
// as two frames; messages of both connections interleave on the trunk.
TEST(NriWire, ReassemblesATtrpcMessageSplitOverMuxFramesOfBothConnections) {
    auto first = encodeMessage(request(Channel::PluginService, 1, "configure"));
    auto second = encodeMessage(request(Channel::RuntimeService, 3, "update"));
    ASSERT_TRUE(first && second);
    auto frame = [](Channel channel, const std::string& data) {
        return bytes({0, 0, 0, static_cast<int>(channel), 0, 0, 0, static_cast<int>(data.size())}) +
               data;
    };
    const std::string streamOne = first->substr(kMuxHeaderSize);
    const std::string streamTwo = second->substr(kMuxHeaderSize);
    const std::string trunk = frame(Channel::PluginService, streamOne.substr(0, 10)) +
                              frame(Channel::RuntimeService, streamTwo) +
                              frame(Channel::PluginService, streamOne.substr(10));
    TrunkReader reader;
    ASSERT_TRUE(reader.feed(trunk));
    auto a = reader.next();
    auto b = reader.next();
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->payload, "update");
    EXPECT_EQ(a->channel, Channel::RuntimeService);
    EXPECT_EQ(b->payload, "configure");
    EXPECT_FALSE(reader.next().has_value());
}

TEST(NriWire, TheLargestMessageTravelsInOneMuxFrame) {
    const std::string payload(kMaxMessageSize, 'x');
    auto encoded = encodeMessage(request(Channel::PluginService, 5, payload));
    ASSERT_TRUE(encoded);
    EXPECT_EQ(encoded->size(), kMuxHeaderSize + kTtrpcHeaderSize + payload.size());
    TrunkReader reader;
    ASSERT_TRUE(reader.feed(*encoded));
    auto message = reader.next();
    ASSERT_TRUE(message.has_value());
    EXPECT_EQ(message->payload.size(), payload.size());
}

TEST(NriWire, RefusesToEncodeAMessageOverTheLimit) {
    auto encoded =
        encodeMessage(request(Channel::PluginService, 1, std::string(kMaxMessageSize + 1, 'x')));
    ASSERT_FALSE(encoded);
    EXPECT_NE(encoded.error().message.find("over the protocol's limit"), std::string::npos);
}

TEST(NriWire, AFrameForAnUnknownConnectionPoisonsTheReader) {
    TrunkReader reader;
    Status status = reader.feed(bytes({0, 0, 0, 9, 0, 0, 0, 0}));
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().message.find("connection 9"), std::string::npos);
    auto good = encodeMessage(request(Channel::PluginService, 1, "x"));
    EXPECT_FALSE(reader.feed(*good));  // the stream cannot be resynchronised
    EXPECT_FALSE(reader.next().has_value());
}

TEST(NriWire, ATtrpcLengthOverTheLimitIsAnErrorNamingIt) {
    TrunkReader reader;
    // ttrpc header announcing 4 MiB + 1 on connection 1.
    Status status = reader.feed(bytes({0, 0, 0, 1, 0, 0, 0, 10, 0, 0x40, 0, 1, 0, 0, 0, 1, 1, 0}));
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().message.find("4194305 bytes"), std::string::npos);
    EXPECT_NE(status.error().message.find("plugin-service connection"), std::string::npos);
}

TEST(NriWire, AMuxFrameOverTheLimitIsAnError) {
    TrunkReader reader;
    Status status = reader.feed(bytes({0, 0, 0, 1, 0, 0x41, 0, 0}));
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().message.find("over the limit"), std::string::npos);
}

TEST(NriWire, AnUnknownTtrpcMessageTypeIsAnError) {
    TrunkReader reader;
    Status status = reader.feed(bytes({0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 7, 0}));
    ASSERT_FALSE(status);
    EXPECT_NE(status.error().message.find("unknown type 7"), std::string::npos);
}

TEST(NriWire, AnEmptyPayloadIsAWholeMessage) {
    auto encoded = encodeMessage(request(Channel::RuntimeService, 3, ""));
    ASSERT_TRUE(encoded);
    TrunkReader reader;
    ASSERT_TRUE(reader.feed(*encoded));
    auto message = reader.next();
    ASSERT_TRUE(message.has_value());
    EXPECT_TRUE(message->payload.empty());
    EXPECT_EQ(message->streamId, 3u);
}

}  // namespace
}  // namespace numadra::nri
