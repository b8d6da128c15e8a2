// The pure parts of the wire protocol: framing, grpc-timeout, grpc-message, content-type.

#include "protocol.hpp"

#include <gtest/gtest.h>

namespace numadra::rpc::detail {
namespace {

using namespace std::chrono_literals;

TEST(GrpcProtocol, FramesAMessageWithItsBigEndianLength) {
    EXPECT_EQ(frameMessage("abc"), std::string("\0\0\0\0\3abc", 8));
    EXPECT_EQ(frameMessage(std::string(300, 'x')).substr(0, 5), std::string("\0\0\0\1\x2c", 5));
}

TEST(GrpcProtocol, ReassemblesAMessageSplitAcrossChunks) {
    MessageReader reader(1024);
    const std::string framed = frameMessage("hello");
    for (char byte : framed)
        ASSERT_EQ(reader.append(std::string_view(&byte, 1)), MessageReader::Outcome::Fine);
    ASSERT_TRUE(reader.message());
    EXPECT_EQ(*reader.message(), "hello");
    EXPECT_TRUE(reader.atMessageBoundary());
}

TEST(GrpcProtocol, AnEmptyMessageIsAMessage) {
    MessageReader reader(1024);
    EXPECT_EQ(reader.append(frameMessage("")), MessageReader::Outcome::Fine);
    ASSERT_TRUE(reader.message());
    EXPECT_EQ(*reader.message(), "");
}

TEST(GrpcProtocol, AHalfReceivedMessageIsNotAtABoundary) {
    MessageReader reader(1024);
    reader.append(frameMessage("hello").substr(0, 7));
    EXPECT_FALSE(reader.atMessageBoundary());
    EXPECT_FALSE(reader.message());
}

TEST(GrpcProtocol, RefusesAMessageOverTheLimitFromItsPrefix) {
    MessageReader reader(4);
    EXPECT_EQ(reader.append(frameMessage("hello").substr(0, 5)), MessageReader::Outcome::TooLarge);
}

TEST(GrpcProtocol, RefusesACompressedMessage) {
    MessageReader reader(1024);
    std::string framed = frameMessage("hello");
    framed[0] = '\1';
    EXPECT_EQ(reader.append(framed), MessageReader::Outcome::Compressed);
}

TEST(GrpcProtocol, RefusesASecondMessage) {
    MessageReader reader(1024);
    EXPECT_EQ(reader.append(frameMessage("one") + frameMessage("two")),
              MessageReader::Outcome::SecondMessage);
}

TEST(GrpcProtocol, ParsesEveryTimeoutUnit) {
    EXPECT_EQ(parseGrpcTimeout("2H"), Clock::duration(2h));
    EXPECT_EQ(parseGrpcTimeout("3M"), Clock::duration(3min));
    EXPECT_EQ(parseGrpcTimeout("4S"), Clock::duration(4s));
    EXPECT_EQ(parseGrpcTimeout("5m"), Clock::duration(5ms));
    EXPECT_EQ(parseGrpcTimeout("6u"), Clock::duration(6us));
    EXPECT_EQ(parseGrpcTimeout("99999999n"), Clock::duration(99999999ns));
}

TEST(GrpcProtocol, RefusesMalformedTimeouts) {
    for (const char* bad : {"", "S", "10", "1x", "-1S", "123456789S", "1.5S"})
        EXPECT_FALSE(parseGrpcTimeout(bad)) << bad;
}

TEST(GrpcProtocol, CapsVeryLongTimeoutsAtAYear) {
    EXPECT_EQ(parseGrpcTimeout("99999999H"), Clock::duration(24h * 365));
}

TEST(GrpcProtocol, PercentEncodesWhatIsNotPrintableAsciiAndThePercentSign) {
    EXPECT_EQ(percentEncode("plain text: ok"), "plain text: ok");
    EXPECT_EQ(percentEncode("100%\n\xc3\xa9"), "100%25%0A%C3%A9");
}

TEST(GrpcProtocol, CutsALongStatusMessageToItsEncodedLimit) {
    EXPECT_EQ(grpcMessageValue(std::string(kMaxStatusMessageValueBytes + 10, 'x')),
              std::string(kMaxStatusMessageValueBytes, 'x'));
    EXPECT_EQ(grpcMessageValue(std::string(kMaxStatusMessageValueBytes, '\n')).size(),
              kMaxStatusMessageValueBytes / 3 * 3);
    EXPECT_EQ(grpcMessageValue("50%"), "50%25");
}

TEST(GrpcProtocol, CutsALongStatusMessageBetweenCharacters) {
    // "é" is two bytes, six encoded: the cut must not fall between them.
    std::string message(kMaxStatusMessageValueBytes - 4, 'x');
    message += "\xc3\xa9";
    EXPECT_EQ(grpcMessageValue(message), std::string(kMaxStatusMessageValueBytes - 4, 'x'));
}

TEST(GrpcProtocol, RecognisesGrpcContentTypes) {
    EXPECT_TRUE(isGrpcContentType("application/grpc"));
    EXPECT_TRUE(isGrpcContentType("application/grpc+proto"));
    EXPECT_TRUE(isGrpcContentType("application/grpc;charset=utf-8"));
    EXPECT_FALSE(isGrpcContentType("application/grpcx"));
    EXPECT_FALSE(isGrpcContentType("application/json"));
    EXPECT_FALSE(isGrpcContentType(""));
}

}  // namespace
}  // namespace numadra::rpc::detail
