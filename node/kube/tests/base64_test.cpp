#include "numadra/kube/base64.hpp"

#include <gtest/gtest.h>

namespace numadra::kube {
namespace {

TEST(Base64, DecodesWithAndWithoutPadding) {
    EXPECT_EQ(decodeBase64("aGVsbG8="), "hello");
    EXPECT_EQ(decodeBase64("aGVsbG8"), "hello");
    EXPECT_EQ(decodeBase64("aGk="), "hi");
    EXPECT_EQ(decodeBase64("aGV5"), "hey");
    EXPECT_EQ(decodeBase64(""), "");
}

TEST(Base64, DecodesBinaryBytes) {
    EXPECT_EQ(decodeBase64("AP8Q+/8="), std::string("\x00\xff\x10\xfb\xff", 5));
}

TEST(Base64, SkipsTheLineBreaksOfWrappedValues) {
    EXPECT_EQ(decodeBase64("LS0tLS1C\nRUdJTiBD\r\nRVJU  "), "-----BEGIN CERT");
}

TEST(Base64, RejectsCharactersOutsideTheAlphabet) {
    EXPECT_FALSE(decodeBase64("aGV*bG8=").has_value());
    EXPECT_FALSE(decodeBase64("not base64!").has_value());
}

TEST(Base64, RejectsLengthsNoEncoderProduces) {
    EXPECT_FALSE(decodeBase64("a").has_value());
    EXPECT_FALSE(decodeBase64("aGVsb").has_value());
    EXPECT_FALSE(decodeBase64("aGk===").has_value());
    EXPECT_FALSE(decodeBase64("aG=k").has_value());  // data after padding
}

}  // namespace
}  // namespace numadra::kube
