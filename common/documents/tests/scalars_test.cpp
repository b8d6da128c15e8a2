// YAML plain scalars typed by the YAML 1.2 core schema; quoted scalars always strings.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "numadra/documents/documents.hpp"

namespace numadra::documents {
namespace {

struct Case {
    const char* name;
    const char* yaml;  // the value of "v: ..."
    Json expected;     // number_float NaN means "NaN"
};

void PrintTo(const Case& c, std::ostream* os) {
    *os << "v: " << c.yaml;
}

class ScalarTyping : public ::testing::TestWithParam<Case> {};

TEST_P(ScalarTyping, PlainScalarsFollowTheCoreSchema) {
    const Case& c = GetParam();
    auto objects = parse(std::string("v: ") + c.yaml + "\n", "s.yaml");
    ASSERT_TRUE(objects.ok()) << objects.error().message;
    ASSERT_EQ(objects->size(), 1u);
    const Json& v = (*objects)[0].json["v"];
    ASSERT_EQ(v.type(), c.expected.type()) << v.dump();
    if (c.expected.is_number_float() && std::isnan(c.expected.get<double>())) {
        EXPECT_TRUE(std::isnan(v.get<double>()));
        return;
    }
    EXPECT_EQ(v, c.expected);
}

constexpr double kInf = std::numeric_limits<double>::infinity();

const Case kCases[] = {
    {"Tilde", "~", nullptr},
    {"NullWord", "null", nullptr},
    {"NullCapitalized", "Null", nullptr},
    {"NullUpper", "NULL", nullptr},
    {"Empty", "", nullptr},
    {"True", "true", true},
    {"TrueCapitalized", "True", true},
    {"TrueUpper", "TRUE", true},
    {"False", "false", false},
    {"FalseUpper", "FALSE", false},
    {"YesIsAString", "yes", "yes"},
    {"OnIsAString", "on", "on"},
    {"MixedCaseTrueIsAString", "tRUE", "tRUE"},
    {"QuotedTrue", "\"true\"", "true"},
    {"SingleQuotedNumber", "'123'", "123"},
    {"QuotedNull", "\"null\"", "null"},
    {"QuotedEmpty", "''", ""},
    {"Zero", "0", 0},
    {"Negative", "-17", -17},
    {"PlusSign", "+5", 5},
    {"LeadingZeroIsDecimal", "010", 10},
    {"Octal", "0o10", 8},
    {"Hex", "0x10", 16},
    {"HexUpperDigits", "0xFF", 255},
    {"HexWithoutDigits", "0x", "0x"},
    {"BadOctalDigit", "0o8", "0o8"},
    {"SignedHexIsAString", "-0x10", "-0x10"},
    {"Int64Max", "9223372036854775807", std::numeric_limits<std::int64_t>::max()},
    {"Int64Min", "-9223372036854775808", std::numeric_limits<std::int64_t>::min()},
    {"AboveInt64IsUnsigned", "9223372036854775808", std::uint64_t{9223372036854775808ULL}},
    {"Uint64Max", "18446744073709551615", std::numeric_limits<std::uint64_t>::max()},
    {"AboveUint64IsADouble", "18446744073709551616", 18446744073709551616.0},
    {"BelowInt64MinIsADouble", "-9223372036854775809", -9223372036854775809.0},
    {"HexAbove64BitsIsAString", "0x1FFFFFFFFFFFFFFFF", "0x1FFFFFFFFFFFFFFFF"},
    {"Exponent", "1e3", 1000.0},
    {"Fraction", "1.5", 1.5},
    {"LeadingDot", ".5", 0.5},
    {"NegativeLeadingDot", "-.5", -0.5},
    {"TrailingDot", "1.", 1.0},
    {"SignedExponent", "+1.5e-3", 1.5e-3},
    {"UpperExponent", "2E2", 200.0},
    {"OverflowingFloatIsAString", "1e400", "1e400"},
    {"UnderflowIsZero", "1e-400", 0.0},
    {"Infinity", ".inf", kInf},
    {"NegativeInfinity", "-.Inf", -kInf},
    {"PlusInfinity", "+.INF", kInf},
    {"NaN", ".nan", std::numeric_limits<double>::quiet_NaN()},
    {"NaNUpper", ".NAN", std::numeric_limits<double>::quiet_NaN()},
    {"DotAloneIsAString", ".", "."},
    {"Underscores", "1_000", "1_000"},
    {"Binary", "0b101", "0b101"},
    {"Version", "1.2.3", "1.2.3"},
    {"Sexagesimal", "12:30", "12:30"},
    {"Date", "2024-01-01", "2024-01-01"},
    {"ExponentWithoutDigits", "1e", "1e"},
    {"Word", "gpu.example.com", "gpu.example.com"},
    {"StrTag", "!!str 12", "12"},
    {"IntTag", "!!int \"7\"", 7},
    {"FloatTagOnInteger", "!!float 1", 1.0},
    {"BoolTagOnQuoted", "!!bool \"true\"", true},
    {"NullTag", "!!null ''", nullptr},
    {"NonSpecificTag", "! 12", "12"},
    {"ApplicationTag", "!thing 12", "12"},
    {"BlockLiteral", "|\n  12\n", "12\n"},
};

INSTANTIATE_TEST_SUITE_P(Yaml, ScalarTyping, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& param) {
                             return std::string(param.param.name);
                         });

TEST(Scalars, NonStringKeysBecomeTheirText) {
    auto objects = parse("1: a\ntrue: b\n~: c\n0x10: d\n1.50: e\n", "k.yaml");
    ASSERT_TRUE(objects.ok()) << objects.error().message;
    EXPECT_EQ((*objects)[0].json.dump(),
              R"({"1":"a","true":"b","null":"c","0x10":"d","1.50":"e"})");
}

TEST(Scalars, QuotedAndPlainKeysWithTheSameTextAreTheSameKey) {
    auto objects = parse("1: a\n\"1\": b\n", "k.yaml");
    ASSERT_FALSE(objects.ok());
    EXPECT_NE(objects.error().message.find("duplicate key \"1\""), std::string::npos);
}

TEST(Scalars, JsonNumbersKeepIntegerTypes) {
    auto objects = parse(R"({"a": 5, "b": 18446744073709551615, "c": 1e3, "d": -3,
                            "e": 100000000000000000000})",
                         "n.json");
    ASSERT_TRUE(objects.ok()) << objects.error().message;
    const Json& j = (*objects)[0].json;
    EXPECT_TRUE(j["a"].is_number_integer());
    EXPECT_TRUE(j["b"].is_number_unsigned());
    EXPECT_TRUE(j["c"].is_number_float());
    EXPECT_EQ(j["d"], -3);
    EXPECT_TRUE(j["e"].is_number_float());
}

TEST(Scalars, InfinityAndNaNCannotBeWrittenAsJson) {
    auto objects = parse("a: .inf\nb: .nan\n", "f.yaml");
    ASSERT_TRUE(objects.ok());
    EXPECT_EQ((*objects)[0].json.dump(), R"({"a":null,"b":null})");
}

}  // namespace
}  // namespace numadra::documents
