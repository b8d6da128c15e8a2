#include "numadra/common/text.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>

namespace numadra::text {
namespace {

TEST(RangeList, ParsesRangesAndSingles) {
    auto cpus = parseRangeList("0-3,8,10-11\n");
    ASSERT_TRUE(cpus.ok());
    EXPECT_EQ(cpus.value(), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
}

TEST(RangeList, EmptyLineIsEmptySet) {
    auto cpus = parseRangeList("\n");
    ASSERT_TRUE(cpus.ok());
    EXPECT_TRUE(cpus.value().empty());
}

TEST(RangeList, SortsAndDeduplicatesUnorderedInput) {
    auto cpus = parseRangeList("30,20-22,21");
    ASSERT_TRUE(cpus.ok());
    EXPECT_EQ(cpus.value(), (std::vector<int>{20, 21, 22, 30}));
}

TEST(RangeList, RejectsMalformedRangesWithTheOffendingPart) {
    for (const char* bad : {"0-", "3-1", "a", "1,,2", "-4", "0-99999999"}) {
        auto parsed = parseRangeList(bad);
        ASSERT_FALSE(parsed.ok()) << bad;
        EXPECT_NE(parsed.error().message.find("range"), std::string::npos)
            << parsed.error().message;
    }
}

TEST(RangeList, IdsUpTo65535AreReadAndLargerOnesAreRefused) {
    auto largest = parseRangeList("65535");
    ASSERT_TRUE(largest.ok()) << largest.error().message;
    EXPECT_EQ(largest.value(), (std::vector<int>{65535}));
    auto beyond = parseRangeList("0-65536");
    ASSERT_FALSE(beyond.ok());
    EXPECT_EQ(beyond.error().message, "malformed range '0-65536' in range list '0-65536'");
}

TEST(RangeList, IgnoresNulPaddingAfterTheNewline) {
    auto cpus = parseRangeList(std::string_view("32-35\n\0", 7));
    ASSERT_TRUE(cpus.ok()) << cpus.error().message;
    EXPECT_EQ(cpus.value(), (std::vector<int>{32, 33, 34, 35}));
}

TEST(AttributeText, StopsAtTheFirstNulAndTrimsWhitespace) {
    EXPECT_EQ(attributeText(std::string_view(" 0-3\n\0\0", 7)), "0-3");
    EXPECT_EQ(attributeText(std::string_view("1\0 junk after the NUL", 21)), "1");
    EXPECT_EQ(attributeText(std::string_view("\0", 1)), "");
    EXPECT_EQ(attributeText("no NUL at all\n"), "no NUL at all");
}

TEST(RangeList, FormatsCompressed) {
    EXPECT_EQ(formatRangeList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
    EXPECT_EQ(formatRangeList({}), "");
    EXPECT_EQ(formatRangeList({5}), "5");
}

TEST(CpuMask, ParsesWordsMostSignificantFirst) {
    auto cpus = parseCpuMask("00000001,0000000f\n");
    ASSERT_TRUE(cpus.ok());
    EXPECT_EQ(cpus.value(), (std::vector<int>{0, 1, 2, 3, 32}));
}

TEST(CpuMask, MasksOfUpTo2048WordsAreReadAndLongerOnesAreRefused) {
    std::string mask = "80000000";
    for (int word = 1; word < 2048; ++word)
        mask += ",00000000";
    auto largest = parseCpuMask(mask);
    ASSERT_TRUE(largest.ok()) << largest.error().message;
    EXPECT_EQ(largest.value(), (std::vector<int>{65535}));
    auto beyond = parseCpuMask("00000000," + mask);
    ASSERT_FALSE(beyond.ok());
    EXPECT_EQ(beyond.error().message,
              "CPU mask of 2049 words is longer than any kernel's (ids up to 65535)");
}

TEST(CpuMask, RejectsNonHexWords) {
    EXPECT_FALSE(parseCpuMask("0000,zz").ok());
    EXPECT_FALSE(parseCpuMask("").ok());
}

TEST(Numbers, ParseIntRejectsTrailingGarbage) {
    EXPECT_EQ(parseInt(" -1\n"), -1);
    EXPECT_EQ(parseInt("42"), 42);
    EXPECT_FALSE(parseInt("4x").has_value());
    EXPECT_FALSE(parseInt("").has_value());
    EXPECT_FALSE(parseInt("garbage").has_value());
}

TEST(Numbers, HexIsPrintfsZeroPaddedLowercaseHex) {
    for (std::uint64_t value : {std::uint64_t{0}, std::uint64_t{0xa}, std::uint64_t{0x10de},
                                std::uint64_t{0xabcdef}, std::uint64_t{0xffffffffffffffff}}) {
        for (int width : {0, 1, 2, 4, 8, 20}) {
            char expected[32];
            std::snprintf(expected, sizeof expected, "%0*llx", width,
                          static_cast<unsigned long long>(value));
            EXPECT_EQ(hex(value, width), expected) << value << " width " << width;
        }
    }
}

TEST(Numbers, ParseHexAcceptsKernelIds) {
    EXPECT_EQ(parseHex("0x10de\n"), 0x10deu);
    EXPECT_EQ(parseHex("030200"), 0x030200u);
    EXPECT_FALSE(parseHex("0x").has_value());
    EXPECT_FALSE(parseHex("0xzz").has_value());
    EXPECT_EQ(parseHex("15B3:"), std::nullopt);
    EXPECT_EQ(parseHex(" 0XaBcD \n"), 0xabcdu);
    EXPECT_EQ(parseHex("ffffffffffffffff"), 0xffffffffffffffffu);
    EXPECT_EQ(parseHex("00000000000000000001"), 1u);
    EXPECT_FALSE(parseHex("10000000000000000").has_value());  // 65 bits
    EXPECT_FALSE(parseHex("+1").has_value());
    EXPECT_FALSE(parseHex("-1").has_value());
}

TEST(Numbers, LeadingDoubleReadsBothLinkSpeedFormats) {
    EXPECT_DOUBLE_EQ(*parseLeadingDouble("16.0 GT/s PCIe"), 16.0);
    EXPECT_DOUBLE_EQ(*parseLeadingDouble("8 GT/s"), 8.0);
    EXPECT_DOUBLE_EQ(*parseLeadingDouble("2.5 GT/s"), 2.5);
    EXPECT_FALSE(parseLeadingDouble("Unknown").has_value());
    EXPECT_FALSE(parseLeadingDouble("Unknown speed").has_value());
}

TEST(Split, WhitespaceSplitHandlesLeadingSpace) {
    // A distance row starts with a space when node 0 is offline.
    auto fields = splitWhitespace(" 10 21\n");
    ASSERT_EQ(fields.size(), 2u);
    EXPECT_EQ(fields[0], "10");
    EXPECT_EQ(fields[1], "21");
}

}  // namespace
}  // namespace numadra::text

TEST(EscapeInvalidUtf8, KeepsValidTextAsIs) {
    EXPECT_EQ(numadra::text::escapeInvalidUtf8("numa ü € 😀"), "numa ü € 😀");
}

TEST(EscapeInvalidUtf8, EscapesStrayAndTruncatedBytes) {
    EXPECT_EQ(numadra::text::escapeInvalidUtf8("p\xff"), "p\\xff");
    EXPECT_EQ(numadra::text::escapeInvalidUtf8("a\xe2\x82"), "a\\xe2\\x82");
}

TEST(EscapeInvalidUtf8, EscapesOverlongAndSurrogateForms) {
    EXPECT_EQ(numadra::text::escapeInvalidUtf8("\xc0\xaf"), "\\xc0\\xaf");
    EXPECT_EQ(numadra::text::escapeInvalidUtf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");
}
