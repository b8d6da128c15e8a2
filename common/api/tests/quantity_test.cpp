#include "numadra/api/quantity.hpp"

#include <gtest/gtest.h>

namespace numadra::api {
namespace {

TEST(Quantity, DecimalUsesTheLargestExactSuffix) {
    EXPECT_EQ(Quantity::decimal(100'000'000'000).text(), "100G");
    EXPECT_EQ(Quantity::decimal(1'500'000).text(), "1500k");
    EXPECT_EQ(Quantity::decimal(8).text(), "8");
    EXPECT_EQ(Quantity::decimal(0).text(), "0");
}

TEST(Quantity, BinaryUsesTheLargestExactSuffix) {
    EXPECT_EQ(Quantity::binary(std::int64_t{64} << 30).text(), "64Gi");
    EXPECT_EQ(Quantity::binary(1 << 20).text(), "1Mi");
    EXPECT_EQ(Quantity::binary(1536).text(), "1536");
}

TEST(Quantity, ParsesSuffixesAndRoundsFractionsUp) {
    EXPECT_EQ(Quantity::parse("64Gi")->value(), std::int64_t{64} << 30);
    EXPECT_EQ(Quantity::parse("100G")->value(), 100'000'000'000);
    EXPECT_EQ(Quantity::parse("2e3")->value(), 2000);
    EXPECT_EQ(Quantity::parse("1500m")->value(), 2);
    EXPECT_EQ(Quantity::parse("12")->value(), 12);
}

TEST(Quantity, RejectsNonsenseWithTheInput) {
    for (const char* bad : {"", "G", "12Q", "1.2.3", "abc"}) {
        auto q = Quantity::parse(bad);
        ASSERT_FALSE(q.ok()) << bad;
        EXPECT_NE(q.error().message.find(std::string("'") + bad + "'"), std::string::npos);
    }
}

TEST(Quantity, ComparesByValueNotSpelling) {
    EXPECT_EQ(*Quantity::parse("1Gi"), *Quantity::parse("1024Mi"));
    EXPECT_LT(*Quantity::parse("1G"), *Quantity::parse("1Gi"));
}

}  // namespace
}  // namespace numadra::api
