// Kubernetes resource quantities: the node's uses (the numbers it publishes and reads back), then
// parsing (every form, the invalid ones, rounding, range), the canonical text, arithmetic and
// comparisons. quantity_upstream_test.cpp ports upstream's own tables.

#include "numadra/api/quantity.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

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

// As NewQuantity(v, BinarySI).String(): below 1024 Kubernetes prints the decimal canonical form.
TEST(Quantity, BinaryBelow1024PrintsAsKubernetes) {
    EXPECT_EQ(Quantity::binary(512).text(), "512");
    EXPECT_EQ(Quantity::binary(1000).text(), "1k");
}

TEST(Quantity, ParsesSuffixesAndRoundsFractionsUp) {
    EXPECT_EQ(Quantity::parse("64Gi")->value(), std::int64_t{64} << 30);
    EXPECT_EQ(Quantity::parse("100G")->value(), 100'000'000'000);
    EXPECT_EQ(Quantity::parse("2e3")->value(), 2000);
    EXPECT_EQ(Quantity::parse("1500m")->value(), 2);
    EXPECT_EQ(Quantity::parse("12")->value(), 12);
}

// Kubernetes' Value() rounds any fraction up to the next unit, however small: the old
// floating-point parse lost both of these.
TEST(Quantity, ValueRoundsTheSmallestFractionUpAsKubernetes) {
    EXPECT_EQ(Quantity::parse("1n")->value(), 1);
    EXPECT_EQ(Quantity::parse("1.0000000001")->value(), 2);
    EXPECT_EQ(Quantity::parse("1.0000000001")->milliValue(), 1001);
    // Away from zero, as upstream's int64Amount does ("-1n": Value() -1, MilliValue() -1).
    EXPECT_EQ(Quantity::parse("-1n")->value(), -1);
    EXPECT_EQ(Quantity::parse("-1n")->milliValue(), -1);
    EXPECT_EQ(Quantity::parse("-1n")->text(), "-1n");
}

TEST(Quantity, RejectsNonsenseWithTheInput) {
    for (const char* bad : {"", "12Q", "1.2.3", "abc"}) {
        auto q = Quantity::parse(bad);
        ASSERT_FALSE(q.ok()) << bad;
        EXPECT_NE(q.error().message.find(std::string("\"") + bad + "\""), std::string::npos);
    }
}

TEST(Quantity, ComparesByValueNotSpelling) {
    EXPECT_EQ(*Quantity::parse("1Gi"), *Quantity::parse("1024Mi"));
    EXPECT_LT(*Quantity::parse("1G"), *Quantity::parse("1Gi"));
}

// Exact, as Quantity.Cmp: no rounding to a whole unit before comparing.
TEST(Quantity, ComparesExactly) {
    EXPECT_EQ(*Quantity::parse("1"), *Quantity::parse("1000m"));
    EXPECT_NE(*Quantity::parse("1"), *Quantity::parse("1001m"));
    EXPECT_LT(*Quantity::parse("1"), *Quantity::parse("1.0000000001"));
    EXPECT_NE(*Quantity::parse("0"), *Quantity::parse("1n"));
}

Quantity q(std::string_view text) {
    auto parsed = Quantity::parse(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? *parsed : Quantity();
}

struct Canonical {
    std::string text;
    std::string printed;
};

std::string canonicalName(const ::testing::TestParamInfo<Canonical>& param) {
    std::string name = std::to_string(param.index) + "_";
    for (const char c : param.param.text)
        name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return name;
}

class QuantityCanonical : public ::testing::TestWithParam<Canonical> {};

TEST_P(QuantityCanonical, PrintsAsKubernetes) {
    EXPECT_EQ(q(GetParam().text).text(), GetParam().printed) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Table, QuantityCanonical,
    ::testing::Values(
        // From the brief and Kubernetes' own examples.
        Canonical{"1Gi", "1Gi"}, Canonical{"1024Mi", "1Gi"}, Canonical{"1000M", "1G"},
        Canonical{"0.5", "500m"}, Canonical{"1500m", "1500m"}, Canonical{"2e3", "2e3"},
        Canonical{"100G", "100G"}, Canonical{"80Gi", "80Gi"},
        // Binary: the largest exact binary suffix; small or fractional values print in decimal.
        Canonical{"1536Ki", "1536Ki"}, Canonical{"1.5Gi", "1536Mi"}, Canonical{"2048Ki", "2Mi"},
        Canonical{"1Ki", "1Ki"}, Canonical{"0.5Ki", "512"}, Canonical{"1Ei", "1Ei"},
        Canonical{"-1Gi", "-1Gi"}, Canonical{"1.0001Ki", "1024102400u"},
        // Decimal: trailing zeros go into a multiple-of-3 exponent with its SI suffix.
        Canonical{"1000", "1k"}, Canonical{"1k", "1k"}, Canonical{"1.5k", "1500"},
        Canonical{"1E", "1E"}, Canonical{"1n", "1n"}, Canonical{"1u", "1u"},
        Canonical{"0.001", "1m"}, Canonical{"123", "123"}, Canonical{"1.5G", "1500M"},
        Canonical{"-1500m", "-1500m"}, Canonical{"0.000001", "1u"},
        // Exponent form stays an exponent form.
        Canonical{"1e3", "1e3"}, Canonical{"10e3", "10e3"}, Canonical{"12e6", "12e6"},
        Canonical{"1e4", "10e3"}, Canonical{"1.5e3", "1500"}, Canonical{"1e-3", "1e-3"},
        Canonical{"1000e0", "1e3"}, Canonical{"1e28", "10e27"},
        // Zero in every form prints "0".
        Canonical{"0", "0"}, Canonical{"0Ki", "0"}, Canonical{"-0", "0"}, Canonical{"0.0", "0"},
        Canonical{"00", "0"}, Canonical{"0e5", "0"},
        // Text Kubernetes keeps as given (its fast path finds it canonical already).
        Canonical{"+1Gi", "+1Gi"}, Canonical{"01k", "01k"}, Canonical{"1.G", "1.G"},
        Canonical{"1E3", "1E3"}, Canonical{"1e+3", "1e+3"}, Canonical{"1.5Gi", "1536Mi"}),
    canonicalName);

TEST(QuantityParse, ValuesAreExact) {
    EXPECT_EQ(q("1Gi").value(), 1073741824);
    EXPECT_EQ(q("1.5Gi").value(), 1610612736);
    EXPECT_EQ(q("100G").value(), 100'000'000'000);
    EXPECT_EQ(q("2e3").value(), 2000);
    EXPECT_EQ(q("1500m").milliValue(), 1500);
    EXPECT_EQ(q("7Ei").value(), 7 * (std::int64_t{1} << 60));
    EXPECT_EQ(q("123456789.123456789").milliValue(), 123456789124);
}

TEST(QuantityParse, FinerThanNanoRoundsUpAwayFromZero) {
    EXPECT_EQ(q("0.1n"), q("1n"));
    EXPECT_EQ(q("-0.1n"), q("-1n"));
    EXPECT_EQ(q("1.0000000001").text(), "1000000001n");
    EXPECT_EQ(q("1e-20"), q("1n"));
    EXPECT_EQ(q("0.0000000001Ki"), q("103n"));  // 102.4n, rounded after the binary factor
}

TEST(QuantityParse, ValueAndMilliValueRoundUpToAWholeUnit) {
    EXPECT_EQ(q("1500m").value(), 2);
    EXPECT_EQ(q("-1500m").value(), -2);
    EXPECT_EQ(q("1n").value(), 1);
    EXPECT_EQ(q("1n").milliValue(), 1);
    EXPECT_EQ(q("0").value(), 0);
}

TEST(QuantityParse, BinaryValuesAreCappedAtTheLargestInt64) {
    EXPECT_EQ(q("8Ei").value(), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(q("8Ei").text(), "9223372036854775807");
    EXPECT_EQ(q("-100000000000000000000000000000000Ki").value(),
              -std::numeric_limits<std::int64_t>::max());
}

TEST(QuantityParse, ValuesBeyondInt128AreKeptExactly) {
    EXPECT_EQ(q("1e30").text(), "1e30");
    // 1e32 in DecimalSI: Kubernetes has no suffix for 10^30 and prints the digits alone.
    EXPECT_EQ(q("100000000000000000000000000000000").text(), "100");
    EXPECT_EQ(q("9999999999999999999999999999999999999G").text(),
              "9999999999999999999999999999999999999G");
    EXPECT_EQ(q("12345678901234567890123.5").text(), "12345678901234567890123500m");
    EXPECT_GT(q("10000000000000000000000000000000000000001"), q("1e40"));
}

TEST(QuantityParse, ExponentsKeep32BitsAsInKubernetes) {
    EXPECT_EQ(*q("1e4294967296").asInteger(), 1);
    EXPECT_TRUE(Quantity::parse("1e99999999999").ok());
}

TEST(QuantityParse, ValuesNeedingTooManyDigitsAreErrors) {
    const auto error = Quantity::parse("1111111111111111111e5000");
    ASSERT_FALSE(error.ok());
    EXPECT_EQ(
        error.error().message,
        "invalid quantity \"1111111111111111111e5000\": value needs more digits than are kept");
    EXPECT_FALSE(Quantity::parse("1e-2147483648").ok());  // Kubernetes would compute 10^2147483648
}

TEST(QuantityParse, ArbitraryPrecisionRoundsUpToNano) {
    EXPECT_EQ(q("0.0000000001"), q("1n"));
    EXPECT_EQ(q("-0.0000000001"), q("-1n"));
    EXPECT_EQ(q("1111111111111111111.0000000001"), q("1111111111111111111000000001n"));
}

TEST(QuantityParse, ArbitraryPrecisionNeedsADigit) {
    EXPECT_FALSE(Quantity::parse("-.e-20").ok());
    EXPECT_TRUE(Quantity::parse("0.e-20").ok());
}

TEST(QuantityParse, LargeValuesPastInt64AreKeptExactly) {
    const Quantity big = q("100E");                                    // 1e20, past int64
    EXPECT_EQ(big.value(), std::numeric_limits<std::int64_t>::max());  // saturated
    EXPECT_FALSE(big.isInteger());
    EXPECT_EQ(big.text(), "100E");
    EXPECT_EQ(q("1000E").text(), "1");  // Kubernetes has no suffix for it and drops it
    EXPECT_GT(big, q("99E"));
}

TEST(QuantityParse, InvalidForms) {
    for (const char* text :
         {"",      " 1",   "1 ",  " ",    "200K",   "1.5.5",   "1.1.M", "1+1.0M", "0.1mi",
          "0.1am", "aoeu", ".5i", "1i",   "-3.01i", "-3.01e-", "1e",    "1ki",    "1Ki3",
          "1e3.5", "1KiB", "1Mb", "1 Gi", "1,5",    "--1",     "1ee3",  "0x10",   "\t1"}) {
        EXPECT_FALSE(Quantity::parse(text).ok()) << "'" << text << "'";
    }
}

TEST(QuantityParse, ErrorsNameTheText) {
    const auto suffix = Quantity::parse("200K");
    ASSERT_FALSE(suffix.ok());
    EXPECT_EQ(suffix.error().message,
              "invalid quantity \"200K\": unable to parse quantity's suffix");
    const auto format = Quantity::parse("1.5.5");
    ASSERT_FALSE(format.ok());
    EXPECT_NE(format.error().message.find("\"1.5.5\""), std::string::npos);
    EXPECT_NE(format.error().message.find("quantities must match the regular expression"),
              std::string::npos);
}

// Kubernetes' parser reads a text without any digit as zero.
TEST(QuantityParse, TextsWithoutDigitsReadAsZeroAsInKubernetes) {
    for (const char* text : {"-", "+", ".", "Ki", "m", "G", "-.", "1."}) {
        auto parsed = Quantity::parse(text);
        ASSERT_TRUE(parsed.ok()) << text;
        EXPECT_EQ(parsed->isZero(), std::string(text) != "1.") << text;
    }
}

TEST(QuantityFormat, ParsedFormat) {
    EXPECT_EQ(q("1Gi").format(), Quantity::Format::BinarySI);
    EXPECT_EQ(q("1G").format(), Quantity::Format::DecimalSI);
    EXPECT_EQ(q("1").format(), Quantity::Format::DecimalSI);
    EXPECT_EQ(q("1e3").format(), Quantity::Format::DecimalExponent);
    EXPECT_EQ(q("1E").format(), Quantity::Format::DecimalSI);
    EXPECT_EQ(q("0.5m").format(), Quantity::Format::DecimalSI);
    EXPECT_EQ(q("0.0001Ki").format(), Quantity::Format::DecimalSI);  // binary below 1
}

TEST(QuantityFormat, FromInt) {
    EXPECT_EQ(Quantity::fromInt(1024, Quantity::Format::BinarySI).text(), "1Ki");
    // Binary values below 1024 print in decimal.
    EXPECT_EQ(Quantity::fromInt(1000, Quantity::Format::BinarySI).text(), "1k");
    EXPECT_EQ(Quantity::fromInt(1000, Quantity::Format::DecimalSI).text(), "1k");
    EXPECT_EQ(Quantity::fromInt(1000, Quantity::Format::DecimalExponent).text(), "1e3");
    EXPECT_EQ(Quantity::fromInt(-5, Quantity::Format::DecimalSI).text(), "-5");
    EXPECT_EQ(Quantity::fromInt(0, Quantity::Format::BinarySI).text(), "0");
    EXPECT_EQ(
        Quantity::fromInt(std::numeric_limits<std::int64_t>::min(), Quantity::Format::DecimalSI)
            .value(),
        std::numeric_limits<std::int64_t>::min());
}

TEST(QuantityArithmetic, AddKeepsTheReceiversFormat) {
    auto sum = q("1Gi").add(q("1Gi"));
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(sum->text(), "2Gi");
    auto mixed = q("1Gi").add(q("1M"));
    ASSERT_TRUE(mixed.ok());
    EXPECT_EQ(mixed->value(), 1073741824 + 1000000);
    EXPECT_EQ(mixed->format(), Quantity::Format::BinarySI);
    EXPECT_EQ(mixed->text(), "1074741824");  // binary, but not a multiple of 1024
}

TEST(QuantityArithmetic, AddToZeroTakesTheOthersFormat) {
    auto sum = q("0").add(q("1Gi"));
    ASSERT_TRUE(sum.ok());
    EXPECT_EQ(sum->text(), "1Gi");
}

TEST(QuantityArithmetic, Sub) {
    auto difference = q("1").sub(q("1500m"));
    ASSERT_TRUE(difference.ok());
    EXPECT_EQ(difference->text(), "-500m");
    EXPECT_EQ(difference->sign(), -1);
    auto zero = q("1Gi").sub(q("1024Mi"));
    ASSERT_TRUE(zero.ok());
    EXPECT_TRUE(zero->isZero());
    EXPECT_EQ(zero->text(), "0");
}

TEST(QuantityArithmetic, SumsBeyondInt64AreExact) {
    const Quantity huge = q("170000000000000000000000000000");
    EXPECT_EQ(*huge.add(huge), q("340000000000000000000000000000"));
    EXPECT_EQ(*q("-170000000000000000000000000000").sub(huge),
              q("-340000000000000000000000000000"));
    EXPECT_TRUE(huge.sub(huge)->isZero());
    EXPECT_EQ(*q("9223372036854775807").add(q("1")), q("9223372036854775808"));
}

// Upstream multiplies a consumed capacity by a node-allocatable capacityMultiplier (inf.Dec's
// Mul, the consumed quantity's format).
TEST(QuantityArithmetic, MulIsExactAndKeepsTheReceiversFormat) {
    EXPECT_EQ(q("8").mul(q("1"))->text(), "8");
    EXPECT_EQ(q("8").mul(q("500m"))->text(), "4");
    EXPECT_EQ(q("3").mul(q("250m"))->text(), "750m");
    EXPECT_EQ(q("2Gi").mul(q("2"))->text(), "4Gi");
    EXPECT_EQ(q("-2").mul(q("3"))->text(), "-6");
    EXPECT_TRUE(q("5").mul(q("0"))->isZero());
    EXPECT_EQ(*q("170000000000000000000").mul(q("2000000000000000")),
              q("340000000000000000000000000000000000"));
    EXPECT_FALSE(q("1e3000").mul(q("1e3000")).ok());
}

TEST(QuantityArithmetic, SumsBeyondTheDigitLimitAreErrors) {
    EXPECT_FALSE(q("1e5000").add(q("1")).ok());
}

TEST(QuantityArithmetic, ArbitraryPrecisionStaysArbitrary) {
    const Quantity back = *q("9223372036854775807").add(q("1"))->sub(q("1"));
    EXPECT_EQ(back, q("9223372036854775807"));
    EXPECT_FALSE(back.isInteger());  // Kubernetes' AsInt64 refuses an inf.Dec
}

TEST(QuantityConversions, IsIntegerAndAsInteger) {
    EXPECT_TRUE(q("1Gi").isInteger());
    EXPECT_FALSE(q("1000m").isInteger());  // an int64 with a negative exponent, as upstream
    EXPECT_TRUE(q("-5").isInteger());
    EXPECT_FALSE(q("1500m").isInteger());
    EXPECT_FALSE(q("1e19").isInteger());  // past int64
    EXPECT_EQ(*q("2k").asInteger(), 2000);
    EXPECT_FALSE(q("0.5").asInteger().ok());
    EXPECT_FALSE(q("10E").asInteger().ok());
    // 19 digits take Kubernetes' arbitrary-precision path, which AsInt64 refuses.
    EXPECT_FALSE(q("-9223372036854775808").asInteger().ok());
    EXPECT_EQ(*q("-922337203685477580").asInteger(), -922337203685477580);
}

TEST(QuantityConversions, AsApproximateFloat) {
    EXPECT_DOUBLE_EQ(q("1.5").asApproximateFloat(), 1.5);
    EXPECT_DOUBLE_EQ(q("1Gi").asApproximateFloat(), 1073741824.0);
    EXPECT_DOUBLE_EQ(q("-250m").asApproximateFloat(), -0.25);
    EXPECT_DOUBLE_EQ(q("1e28").asApproximateFloat(), 1e28);
}

TEST(QuantityConversions, AsApproximateFloatOfArbitraryPrecision) {
    EXPECT_EQ(q("1e400").asApproximateFloat(), HUGE_VAL);
    EXPECT_EQ(q("1e-400").asApproximateFloat(), 1e-9);  // rounded up to 1n when parsed
    // The digits times Go's Pow10(-9), rounded twice, as Kubernetes computes it.
    EXPECT_EQ(q("9999999999999999999999999999999999999G").asApproximateFloat(),
              1.0000000000000001e+46);
}

TEST(QuantityConversions, Sign) {
    EXPECT_EQ(q("5m").sign(), 1);
    EXPECT_EQ(q("0Gi").sign(), 0);
    EXPECT_EQ(q("-1n").sign(), -1);
}

TEST(QuantityCompare, EqualityIsSemantic) {
    EXPECT_EQ(q("1Gi"), q("1024Mi"));
    EXPECT_EQ(q("1k"), q("1000"));
    EXPECT_EQ(q("1e3"), q("1k"));
    EXPECT_EQ(q("0.5"), q("500m"));
    EXPECT_NE(q("1Gi"), q("1G"));
}

TEST(QuantityCompare, Ordering) {
    EXPECT_LT(q("1G"), q("1Gi"));
    EXPECT_GT(q("1Ki"), q("1k"));
    EXPECT_LT(q("-1"), q("1n"));
    EXPECT_LT(q("999m"), q("1"));
    EXPECT_EQ(q("2") <=> q("2000m"), std::strong_ordering::equal);
}

}  // namespace
}  // namespace numadra::api
