// Upstream's own tables: k8s.io/apimachinery v0.37.2, pkg/api/resource/quantity_test.go, each
// test named after the upstream function it ports (over 800 lines because it follows upstream's
// file table by table, so the two can be read side by side). Rows are copied as they are; checks
// that read upstream's internals (parseQuantityString, the cached string `s`, AsDec(), the
// int64Amount / inf.Dec split, Format values outside the three) are left out and said so where a
// table had them.
//
// Upstream builds expectations with decQuantity(i, exponent, format), an inf.Dec holding
// i × 10^exponent; decQuantity() below builds the same value (fromInt(i) times 10^exponent,
// which keeps i's format, as inf.Dec's Mul does). Its intQuantity() (an int64Amount) has no public
// constructor here beyond exponents 0 and -3; the comparison tables use decQuantity() for both,
// which compares the same values.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "numadra/api/quantity.hpp"

namespace numadra::api {
namespace {

using Format = Quantity::Format;

constexpr std::int64_t kMostPositive = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMostNegative = std::numeric_limits<std::int64_t>::min();

Quantity q(std::string_view text) {
    auto parsed = Quantity::parse(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? *parsed : Quantity();
}

// 10^exponent, exactly: parsing rounds below 1n up to 1n, a product does not.
Quantity powerOfTen(int exponent) {
    if (exponent >= -9)
        return q("1e" + std::to_string(exponent));
    return *powerOfTen(exponent + 9).mul(q("1e-9"));
}

Quantity decQuantity(std::int64_t i, int exponent, Format format) {
    Quantity unscaled = Quantity::fromInt(i, format);
    if (exponent == 0)
        return unscaled;
    auto scaled = unscaled.mul(powerOfTen(exponent));
    EXPECT_TRUE(scaled.ok());
    return scaled.ok() ? *scaled : Quantity();
}

Quantity negated(const Quantity& value) {
    auto result = Quantity::fromInt(0, value.format()).sub(value);
    EXPECT_TRUE(result.ok());
    return result.ok() ? *result : Quantity();
}

// ---- TestQuantityParseZero, TestQuantityParseNonNumericPanic ----------------------------------

TEST(UpstreamQuantity, TestQuantityParseZero) {
    EXPECT_EQ(q("0").text(), "0");
}

TEST(UpstreamQuantity, TestQuantityParseNonNumericPanic) {
    EXPECT_FALSE(Quantity::parse("Non-Numeric").ok());
}

// ---- TestQuantityAddZeroPreservesSuffix, TestQuantitySubZeroPreservesSuffix --------------------

TEST(UpstreamQuantity, TestQuantityAddZeroPreservesSuffix) {
    const Quantity zero = q("0");
    for (const char* text : {"100m", "1Gi"}) {
        EXPECT_EQ(q(text).add(zero)->text(), text);
        EXPECT_EQ(zero.add(q(text))->text(), text);
    }
}

TEST(UpstreamQuantity, TestQuantitySubZeroPreservesSuffix) {
    const Quantity zero = q("0");
    for (const char* text : {"100m", "1Gi"}) {
        EXPECT_EQ(q(text).sub(zero)->text(), text);
        EXPECT_EQ(zero.sub(q(text))->text(), negated(q(text)).text());
    }
}

// ---- TestQuantityCanocicalizeZero -------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityCanocicalizeZero) {
    EXPECT_EQ(q("1000m").sub(q("1"))->text(), "0");
}

// ---- TestQuantityCmp (the first table; the second builds nil inf.Decs) ------------------------

TEST(UpstreamQuantity, TestQuantityCmp) {
    struct Row {
        const char* x;
        const char* y;
        int expect;
    };
    for (const Row& row : {Row{"0", "0", 0}, Row{"100m", "50m", 1}, Row{"50m", "100m", -1},
                           Row{"10000T", "100Gi", 1}}) {
        const auto c = q(row.x) <=> q(row.y);
        EXPECT_EQ(std::is_lt(c) ? -1 : (std::is_gt(c) ? 1 : 0), row.expect)
            << row.x << " " << row.y;
    }
}

// ---- TestQuantityParse ------------------------------------------------------------------------

struct ParseRow {
    const char* input;
    std::int64_t i;
    int exponent;
    Format format;
};

const std::vector<ParseRow>& parseTable() {
    constexpr auto SI = Format::DecimalSI;
    constexpr auto Bin = Format::BinarySI;
    constexpr auto Exp = Format::DecimalExponent;
    static const std::vector<ParseRow> rows{
        {"0", 0, 0, SI},
        {"0n", 0, 0, SI},
        {"0u", 0, 0, SI},
        {"0m", 0, 0, SI},
        {"0Ki", 0, 0, Bin},
        {"0k", 0, 0, SI},
        {"0Mi", 0, 0, Bin},
        {"0M", 0, 0, SI},
        {"0Gi", 0, 0, Bin},
        {"0G", 0, 0, SI},
        {"0Ti", 0, 0, Bin},
        {"0T", 0, 0, SI},
        // Quantity less numbers are allowed
        {"1", 1, 0, SI},
        // Binary suffixes
        {"1Ki", 1024, 0, Bin},
        {"8Ki", 8LL * 1024, 0, Bin},
        {"7Mi", 7LL * 1024 * 1024, 0, Bin},
        {"6Gi", 6LL * 1024 * 1024 * 1024, 0, Bin},
        {"5Ti", 5LL << 40, 0, Bin},
        {"4Pi", 4LL << 50, 0, Bin},
        {"3Ei", 3LL << 60, 0, Bin},
        {"10Ti", 10LL << 40, 0, Bin},
        {"100Ti", 100LL << 40, 0, Bin},
        // Decimal suffixes
        {"5n", 5, -9, SI},
        {"4u", 4, -6, SI},
        {"3m", 3, -3, SI},
        {"9", 9, 0, SI},
        {"8k", 8, 3, SI},
        {"50k", 5, 4, SI},
        {"7M", 7, 6, SI},
        {"6G", 6, 9, SI},
        {"5T", 5, 12, SI},
        {"40T", 4, 13, SI},
        {"300T", 3, 14, SI},
        {"2P", 2, 15, SI},
        {"1E", 1, 18, SI},
        // Decimal exponents
        {"1E-3", 1, -3, Exp},
        {"1e3", 1, 3, Exp},
        {"1E6", 1, 6, Exp},
        {"1e9", 1, 9, Exp},
        {"1E12", 1, 12, Exp},
        {"1e15", 1, 15, Exp},
        {"1E18", 1, 18, Exp},
        // Nonstandard but still parsable
        {"1e14", 1, 14, Exp},
        {"1e13", 1, 13, Exp},
        {"1e3", 1, 3, Exp},
        {"100.035k", 100035, 0, SI},
        // Things that look like floating point
        {"0.001", 1, -3, SI},
        {"0.0005k", 5, -1, SI},
        {"0.005", 5, -3, SI},
        {"0.05", 5, -2, SI},
        {"0.5", 5, -1, SI},
        {"0.00050k", 5, -1, SI},
        {"0.00500", 5, -3, SI},
        {"0.05000", 5, -2, SI},
        {"0.50000", 5, -1, SI},
        {"0.5e0", 5, -1, Exp},
        {"0.5e-1", 5, -2, Exp},
        {"0.5e-2", 5, -3, Exp},
        {"0.5e0", 5, -1, Exp},
        {"10.035M", 10035, 3, SI},
        {"1.2e3", 12, 2, Exp},
        {"1.3E+6", 13, 5, Exp},
        {"1.40e9", 14, 8, Exp},
        {"1.53E12", 153, 10, Exp},
        {"1.6e15", 16, 14, Exp},
        {"1.7E18", 17, 17, Exp},
        {"9.01", 901, -2, SI},
        {"8.1k", 81, 2, SI},
        {"7.123456M", 7123456, 0, SI},
        {"6.987654321G", 6987654321, 0, SI},
        {"5.444T", 5444, 9, SI},
        {"40.1T", 401, 11, SI},
        {"300.2T", 3002, 11, SI},
        {"2.5P", 25, 14, SI},
        {"1.01E", 101, 16, SI},
        // Things that saturate/round
        {"3.001n", 4, -9, SI},
        {"1.1E-9", 2, -9, Exp},
        {"0.0000000001", 1, -9, SI},
        {"0.0000000005", 1, -9, SI},
        {"0.00000000050", 1, -9, SI},
        {"0.5e-9", 1, -9, Exp},
        {"0.9n", 1, -9, SI},
        {"0.00000012345", 124, -9, SI},
        {"0.00000012354", 124, -9, SI},
        {"9Ei", kMostPositive, 0, Bin},  // upstream's maxAllowed
        {"9223372036854775807Ki", kMostPositive, 0, Bin},
        {"12E", 12, 18, SI},
        // We'll accept fractional binary stuff, too.
        {"100.035Ki", 10243584, -2, Bin},
        {"0.5Mi", 512LL * 1024, 0, Bin},
        {"0.05Gi", 536870912, -1, Bin},
        {"0.025Ti", 274877906944, -1, Bin},
        // Things written by trolls
        {"0.000000000001Ki", 2, -9, SI},  // rounds up, changes format
        {".001", 1, -3, SI},
        {".0001k", 100, -3, SI},
        {"1.", 1, 0, SI},
        {"1.G", 1, 9, SI}};
    return rows;
}

TEST(UpstreamQuantity, TestQuantityParse) {
    EXPECT_FALSE(Quantity::parse("").ok());
    for (const ParseRow& row : parseTable()) {
        const Quantity expect = decQuantity(row.i, row.exponent, row.format);
        const Quantity got = q(row.input);
        EXPECT_EQ(got, expect) << row.input << ": got " << got.text() << ", want " << expect.text();
        EXPECT_EQ(got.format(), row.format) << row.input;
        // Try the negative version of everything
        const Quantity minus = q(std::string("-") + row.input);
        EXPECT_EQ(minus, negated(expect)) << "-" << row.input;
        EXPECT_EQ(minus.format(), row.format) << "-" << row.input;
        // Try everything with an explicit +
        const Quantity plus = q(std::string("+") + row.input);
        EXPECT_EQ(plus, expect) << "+" << row.input;
        EXPECT_EQ(plus.format(), row.format) << "+" << row.input;
    }
    for (const char* invalid :
         {"1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-",
          // trailing whitespace is forbidden
          " 1", "1 "})
        EXPECT_FALSE(Quantity::parse(invalid).ok()) << invalid;
}

// ---- TestQuantityRoundUp: RoundUp(scale) has no counterpart; Value() and MilliValue() are its
// scale 0 and -3 (rounded up, away from zero). -------------------------------------------------

TEST(UpstreamQuantity, TestQuantityRoundUp) {
    EXPECT_EQ(q("9.01").milliValue(), 9010);
    EXPECT_EQ(q("9.01").value(), 10);
    EXPECT_EQ(q("-9.01").milliValue(), -9010);
    EXPECT_EQ(q("-9.01").value(), -10);
}

// ---- TestQuantityCmpInt64AndDec ---------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityCmpInt64AndDec) {
    constexpr auto SI = Format::DecimalSI;
    constexpr std::int64_t kTrillion3 = 1'000'000LL * 1'000'000LL * 1'000'000LL;
    struct Row {
        std::int64_t a;
        int ea;
        std::int64_t b;
        int eb;
        int cmp;
    };
    const std::vector<Row> rows{
        {901, -2, 901, -2, 0},
        {90, -1, 901, -2, -1},
        {901, -2, 900, -2, 1},
        {0, 0, 0, 0, 0},
        {0, 1, 0, -1, 0},
        {0, -1, 0, 1, 0},
        {800, -3, 1, 0, -1},
        {800, -3, 79, -2, 1},
        {kMostPositive, 0, 1, -1, 1},
        {kMostPositive, 1, 1, 0, 1},
        {kMostPositive, 1, 1, 1, 1},
        {kMostPositive, 1, 0, 1, 1},
        {kMostPositive, -16, 1, 3, -1},
        {kMostNegative, 0, 0, 0, -1},
        {kMostNegative, -18, -1, 0, -1},
        {kMostNegative, -19, -1, 0, 1},
        {kTrillion3, -17, 1, 1, 0},
        {kTrillion3, -17, -10, 0, 1},
        {-kTrillion3, -17, -10, 0, 0},
        {kTrillion3, -17, 1, 0, 1},
        {kTrillion3 + 1, -17, 1, 1, 1},
        {kTrillion3 - 1, -17, 1, 1, -1},
    };
    auto sign = [](std::strong_ordering c) { return std::is_lt(c) ? -1 : (std::is_gt(c) ? 1 : 0); };
    for (const Row& row : rows) {
        const Quantity a = decQuantity(row.a, row.ea, SI);
        const Quantity b = decQuantity(row.b, row.eb, SI);
        EXPECT_EQ(sign(a <=> b), row.cmp)
            << row.a << "e" << row.ea << " vs " << row.b << "e" << row.eb;
        EXPECT_EQ(sign(b <=> a), -row.cmp)
            << row.a << "e" << row.ea << " vs " << row.b << "e" << row.eb;
    }
}

// ---- TestQuantityNeg --------------------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityNeg) {
    for (const Quantity& value : {Quantity::fromInt(901, Format::DecimalSI).mul(q("1e-2")).value(),
                                  decQuantity(901, -2, Format::DecimalSI)}) {
        const Quantity out = negated(value);
        EXPECT_NE(out, value);
        EXPECT_EQ(out.text(), "-9010m");
    }
}

// ---- TestQuantityString -----------------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityString) {
    constexpr auto SI = Format::DecimalSI;
    constexpr auto Bin = Format::BinarySI;
    constexpr auto Exp = Format::DecimalExponent;
    struct Row {
        Quantity in;
        std::string expect;
        std::string alternate;
    };
    const std::vector<Row> rows{
        {decQuantity(1024LL * 1024 * 1024, 0, Bin), "1Gi", "1024Mi"},
        {decQuantity(300LL * 1024 * 1024, 0, Bin), "300Mi", "307200Ki"},
        {decQuantity(6LL * 1024, 0, Bin), "6Ki", ""},
        {decQuantity(1001LL * 1024 * 1024 * 1024, 0, Bin), "1001Gi", "1025024Mi"},
        {decQuantity(1024LL * 1024 * 1024 * 1024, 0, Bin), "1Ti", "1024Gi"},
        {decQuantity(5, 0, Bin), "5", "5000m"},
        {decQuantity(500, -3, Bin), "500m", "0.5"},
        {decQuantity(1, 9, SI), "1G", "1000M"},
        {decQuantity(1000, 6, SI), "1G", "0.001T"},
        {decQuantity(1000000, 3, SI), "1G", ""},
        {decQuantity(1000000000, 0, SI), "1G", ""},
        {decQuantity(1, -3, SI), "1m", "1000u"},
        {decQuantity(80, -3, SI), "80m", ""},
        {decQuantity(1080, -3, SI), "1080m", "1.08"},
        {decQuantity(108, -2, SI), "1080m", "1080000000n"},
        {decQuantity(10800, -4, SI), "1080m", ""},
        {decQuantity(300, 6, SI), "300M", ""},
        {decQuantity(1, 12, SI), "1T", ""},
        {decQuantity(1234567, 6, SI), "1234567M", ""},
        {decQuantity(1234567, -3, Bin), "1234567m", ""},
        {decQuantity(3, 3, SI), "3k", ""},
        {decQuantity(1025, 0, Bin), "1025", ""},
        {decQuantity(0, 0, SI), "0", ""},
        {decQuantity(0, 0, Bin), "0", ""},
        {decQuantity(1, 9, Exp), "1e9", ".001e12"},
        {decQuantity(1, -3, Exp), "1e-3", "0.001e0"},
        {decQuantity(1, -9, Exp), "1e-9", "1000e-12"},
        {decQuantity(80, -3, Exp), "80e-3", ""},
        {decQuantity(300, 6, Exp), "300e6", ""},
        {decQuantity(1, 12, Exp), "1e12", ""},
        {decQuantity(1, 3, Exp), "1e3", ""},
        {decQuantity(3, 3, Exp), "3e3", ""},
        {decQuantity(3, 3, SI), "3k", ""},
        {decQuantity(0, 0, Exp), "0", "00"},
        {decQuantity(1, -9, SI), "1n", ""},
        {decQuantity(80, -9, SI), "80n", ""},
        {decQuantity(1080, -9, SI), "1080n", ""},
        {decQuantity(108, -8, SI), "1080n", ""},
        {decQuantity(10800, -10, SI), "1080n", ""},
        {decQuantity(1, -6, SI), "1u", ""},
        {decQuantity(80, -6, SI), "80u", ""},
        {decQuantity(1080, -6, SI), "1080u", ""},
    };
    for (const Row& row : rows) {
        EXPECT_EQ(row.in.text(), row.expect);
        // The canonical text parses back to itself, and the alternate spelling prints as it.
        EXPECT_EQ(q(row.expect).text(), row.expect);
        if (!row.alternate.empty()) {
            EXPECT_EQ(q(row.alternate).text(), row.expect) << row.alternate;
        }
        // Don't expect it to print "-0" ever
        if (!row.in.isZero()) {
            EXPECT_EQ(negated(row.in).text(), "-" + row.expect);
        }
    }
}

// ---- TestQuantityParseEmit --------------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityParseEmit) {
    struct Row {
        const char* in;
        const char* expect;
    };
    for (const Row& row :
         {Row{"1Ki", "1Ki"}, Row{"1Mi", "1Mi"}, Row{"1Gi", "1Gi"}, Row{"1024Mi", "1Gi"},
          Row{"1000M", "1G"}, Row{".001Ki", "1024m"}, Row{".000001Ki", "1024u"},
          Row{".000000001Ki", "1024n"}, Row{".000000000001Ki", "2n"}}) {
        EXPECT_EQ(q(row.in).text(), row.expect) << row.in;
        EXPECT_EQ(q(std::string("-") + row.in).text(), std::string("-") + row.expect) << row.in;
    }
}

// ---- TestMilliNewSet, TestNewSet (the "invalidFormatDefaultsToExponent" rows as
// DecimalExponent, what upstream falls back to), TestNewScaledSet, TestScaledValue ---------------

TEST(UpstreamQuantity, TestMilliNewSet) {
    struct Row {
        std::int64_t value;
        Format format;
        const char* expect;
        bool exact;
    };
    for (const Row& row :
         {Row{1, Format::DecimalSI, "1m", true}, Row{1000, Format::DecimalSI, "1", true},
          Row{1234000, Format::DecimalSI, "1234", true},
          Row{1024, Format::BinarySI, "1024m", false},  // Format changes
          Row{1000000, Format::DecimalExponent, "1e3", true},
          Row{1024LL * 1024, Format::BinarySI, "1048576m", false}}) {
        const Quantity value = Quantity::fromMilli(row.value, row.format);
        EXPECT_EQ(value.text(), row.expect);
        if (row.exact) {
            EXPECT_EQ(q(value.text()).milliValue(), row.value) << row.expect;
        }
    }
}

TEST(UpstreamQuantity, TestNewSet) {
    struct Row {
        std::int64_t value;
        Format format;
        const char* expect;
    };
    for (const Row& row :
         {Row{1, Format::DecimalSI, "1"}, Row{1000, Format::DecimalSI, "1k"},
          Row{1234000, Format::DecimalSI, "1234k"}, Row{1024, Format::BinarySI, "1Ki"},
          Row{1000000, Format::DecimalExponent, "1e6"},
          Row{1024LL * 1024, Format::BinarySI, "1Mi"}}) {
        const Quantity value = Quantity::fromInt(row.value, row.format);
        EXPECT_EQ(value.text(), row.expect);
        EXPECT_EQ(q(value.text()).value(), row.value) << row.expect;
    }
}

TEST(UpstreamQuantity, TestNewScaledSet) {
    struct Row {
        std::int64_t value;
        int scale;
        const char* expect;
    };
    for (const Row& row :
         {Row{1, -9, "1n"}, Row{1000, -9, "1u"}, Row{1, -6, "1u"}, Row{1000, -6, "1m"},
          Row{1, -3, "1m"}, Row{1000, -3, "1"}, Row{1, 0, "1"}, Row{0, -9, "0"}, Row{0, -6, "0"},
          Row{0, -3, "0"}, Row{0, 0, "0"}}) {
        const Quantity value = decQuantity(row.value, row.scale, Format::DecimalSI);
        EXPECT_EQ(value.text(), row.expect);
        // ScaledValue(scale) for the scales Quantity reads: Value() and MilliValue().
        if (row.scale == 0) {
            EXPECT_EQ(q(value.text()).value(), row.value);
        }
        if (row.scale == -3) {
            EXPECT_EQ(q(value.text()).milliValue(), row.value);
        }
    }
}

TEST(UpstreamQuantity, TestScaledValue) {
    struct Row {
        int fromScale;
        int toScale;
        std::int64_t expected;
    };
    for (const Row& row : {Row{-9, -3, 1}, Row{-9, 0, 1}, Row{-6, -3, 1}, Row{-6, 0, 1},
                           Row{-3, -3, 1}, Row{-3, 0, 1}, Row{0, -3, 1000}, Row{0, 0, 1}}) {
        const Quantity value = decQuantity(1, row.fromScale, Format::DecimalSI);
        EXPECT_EQ(row.toScale == 0 ? value.value() : value.milliValue(), row.expected)
            << row.fromScale << " -> " << row.toScale;
    }
}

// ---- TestUninitializedNoCrash -----------------------------------------------------------------

TEST(UpstreamQuantity, TestUninitializedNoCrash) {
    const Quantity zero;
    EXPECT_EQ(zero.value(), 0);
    EXPECT_EQ(zero.milliValue(), 0);
    EXPECT_EQ(zero.text(), "0");
}

// ---- TestSub, TestAdd, TestMul ----------------------------------------------------------------

TEST(UpstreamQuantity, TestSub) {
    constexpr auto SI = Format::DecimalSI;
    constexpr auto Bin = Format::BinarySI;
    const Quantity empty;
    EXPECT_EQ(*decQuantity(10, 0, SI).sub(decQuantity(1, 1, SI)), decQuantity(0, 0, SI));
    EXPECT_EQ(*decQuantity(10, 0, SI).sub(decQuantity(1, 0, Bin)), decQuantity(9, 0, SI));
    EXPECT_EQ(*decQuantity(10, 0, Bin).sub(decQuantity(1, 0, SI)), decQuantity(9, 0, Bin));
    EXPECT_EQ(*empty.sub(decQuantity(50, 0, SI)), decQuantity(-50, 0, SI));
    EXPECT_EQ(*decQuantity(50, 0, SI).sub(empty), decQuantity(50, 0, SI));
    EXPECT_EQ(*empty.sub(empty), decQuantity(0, 0, SI));
}

TEST(UpstreamQuantity, TestAdd) {
    constexpr auto SI = Format::DecimalSI;
    constexpr auto Bin = Format::BinarySI;
    const Quantity empty;
    EXPECT_EQ(*decQuantity(10, 0, SI).add(decQuantity(1, 1, SI)), decQuantity(20, 0, SI));
    EXPECT_EQ(*decQuantity(10, 0, SI).add(decQuantity(1, 0, Bin)), decQuantity(11, 0, SI));
    EXPECT_EQ(*decQuantity(10, 0, Bin).add(decQuantity(1, 0, SI)), decQuantity(11, 0, Bin));
    EXPECT_EQ(*empty.add(decQuantity(50, 0, SI)), decQuantity(50, 0, SI));
    EXPECT_EQ(*decQuantity(50, 0, SI).add(empty), decQuantity(50, 0, SI));
    EXPECT_EQ(*empty.add(empty), decQuantity(0, 0, SI));
}

// Upstream's Mul(int64) reports whether the int64 held; here every product is exact, so the
// values are checked (its `ok` column is how it was held, not what it is).
TEST(UpstreamQuantity, TestMul) {
    constexpr auto SI = Format::DecimalSI;
    constexpr auto Bin = Format::BinarySI;
    struct Row {
        Quantity a;
        std::int64_t b;
        Quantity expected;
    };
    const Quantity empty;
    const std::vector<Row> rows{
        {decQuantity(10, 0, SI), 10, decQuantity(100, 0, SI)},
        {decQuantity(10, 0, SI), 1, decQuantity(10, 0, SI)},
        {decQuantity(10, 0, Bin), 1, decQuantity(10, 0, Bin)},
        {empty, 50, decQuantity(0, 0, SI)},
        {decQuantity(50, 0, SI), 0, decQuantity(0, 0, SI)},
        {empty, 0, decQuantity(0, 0, SI)},
        {decQuantity(10, 0, SI), -10, decQuantity(-100, 0, SI)},
        {decQuantity(-10, 0, SI), 1, decQuantity(-10, 0, SI)},
        {decQuantity(10, 0, Bin), -1, decQuantity(-10, 0, Bin)},
        {decQuantity(-50, 0, SI), 0, decQuantity(0, 0, SI)},
        {decQuantity(-50, 0, SI), -50, decQuantity(2500, 0, SI)},
        {empty, -50, decQuantity(0, 0, SI)},
        {decQuantity(kMostPositive, 0, SI), 0, decQuantity(0, 1, SI)},
        {decQuantity(kMostPositive, 0, SI), 1, decQuantity(kMostPositive, 0, SI)},
        {decQuantity(kMostPositive, 0, SI), -1, decQuantity(-kMostPositive, 0, SI)},
        {decQuantity(kMostPositive / 2, 0, SI), 2, decQuantity((kMostPositive / 2) * 2, 0, SI)},
        {decQuantity(kMostPositive / -2, 0, SI), -2, decQuantity((kMostPositive / 2) * 2, 0, SI)},
        {decQuantity(kMostPositive, 0, SI), 2, q("18446744073709551614")},
        {decQuantity(kMostPositive, 0, SI), 10, decQuantity(kMostPositive, 1, SI)},
        {decQuantity(kMostPositive, 0, SI), -10, decQuantity(-kMostPositive, 1, SI)},
        {decQuantity(kMostNegative, 0, SI), 0, decQuantity(0, 1, SI)},
        {decQuantity(kMostNegative, 0, SI), 1, decQuantity(kMostNegative, 0, SI)},
        {decQuantity(kMostNegative, 0, SI), -1, q("9223372036854775808")},
        {decQuantity(kMostNegative / 2, 0, SI), 2, decQuantity(kMostNegative, 0, SI)},
        {decQuantity(kMostNegative / -2, 0, SI), -2, decQuantity(kMostNegative, 0, SI)},
        {decQuantity(kMostNegative, 0, SI), 2, q("-18446744073709551616")},
        {decQuantity(kMostNegative, 0, SI), 10, decQuantity(kMostNegative, 1, SI)},
        {decQuantity(kMostNegative, 0, SI), -10, q("92233720368547758080")},
    };
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const auto product = rows[i].a.mul(Quantity::fromInt(rows[i].b, SI));
        ASSERT_TRUE(product.ok()) << i;
        EXPECT_EQ(*product, rows[i].expected)
            << "[" << i << "] got " << product->text() << ", want " << rows[i].expected.text();
    }
}

// ---- TestAddSubRoundTrip, TestAddSubRoundTripAcrossScales, TestNegateRoundTrip (a fixed seed
// instead of rand) ------------------------------------------------------------------------------

std::int64_t randomInt63(std::mt19937_64& random) {
    return static_cast<std::int64_t>(random() >> 1);
}

TEST(UpstreamQuantity, TestAddSubRoundTrip) {
    std::mt19937_64 random(1);
    for (int k = -10; k <= 10; ++k) {
        Quantity sum;
        std::vector<std::int64_t> order;
        for (int i = 0; i < 100; ++i) {
            order.push_back(randomInt63(random));
            sum = *sum.add(decQuantity(order.back(), k, Format::DecimalSI));
        }
        for (const std::int64_t j : order)
            sum = *sum.sub(decQuantity(j, k, Format::DecimalSI));
        EXPECT_TRUE(sum.isZero()) << "addition and subtraction did not cancel: " << sum.text();
    }
}

TEST(UpstreamQuantity, TestAddSubRoundTripAcrossScales) {
    std::mt19937_64 random(2);
    Quantity sum;
    std::vector<std::int64_t> order;
    for (int i = 0; i < 100; ++i) {
        order.push_back(randomInt63(random));
        sum = *sum.add(
            decQuantity(order.back(), static_cast<int>(order.back() % 20 - 10), Format::DecimalSI));
    }
    for (const std::int64_t j : order)
        sum = *sum.sub(decQuantity(j, static_cast<int>(j % 20 - 10), Format::DecimalSI));
    EXPECT_TRUE(sum.isZero()) << "addition and subtraction did not cancel: " << sum.text();
}

TEST(UpstreamQuantity, TestNegateRoundTrip) {
    std::mt19937_64 random(3);
    for (int k = -10; k <= 10; ++k) {
        for (int i = 0; i < 100; ++i) {
            const Quantity value = decQuantity(randomInt63(random), k, Format::DecimalSI);
            EXPECT_EQ(negated(negated(value)), value) << value.text();
        }
    }
}

// ---- TestQuantityAsApproximateFloat64, TestStringQuantityAsApproximateFloat64 ------------------

TEST(UpstreamQuantity, TestQuantityAsApproximateFloat64) {
    constexpr std::int64_t k7Mi = 7LL * 1024 * 1024;
    struct Row {
        Quantity in;
        double out;
    };
    std::vector<Row> rows;
    for (const Format format : {Format::DecimalSI, Format::DecimalExponent, Format::BinarySI}) {
        rows.push_back({decQuantity(0, 0, format), 0.0});
        rows.push_back({decQuantity(1, 0, format), 1});
        rows.push_back({decQuantity(1024, 0, format), 1024});
        rows.push_back({decQuantity(8LL * 1024, 0, format), 8 * 1024});
        rows.push_back({decQuantity(k7Mi, 0, format), k7Mi});
        rows.push_back({decQuantity(k7Mi, 1, format), k7Mi * 10.0});
        rows.push_back({decQuantity(k7Mi, 4, format), k7Mi * 10000.0});
        rows.push_back({decQuantity(k7Mi, 8, format), k7Mi * 100000000.0});
        // '* Pow10' and '/ float(10)' do not round the same way
        rows.push_back({decQuantity(k7Mi, -1, format), k7Mi * 0.1});
        rows.push_back({decQuantity(k7Mi, -8, format), k7Mi / 100000000.0});
    }
    // very large numbers
    rows.push_back({decQuantity(kMostPositive, 0, Format::DecimalSI), 9223372036854775807.0});
    rows.push_back({decQuantity(kMostPositive, 0, Format::BinarySI), 9223372036854775807.0});
    rows.push_back({decQuantity(12, 18, Format::DecimalSI), 1.2e19});
    // infinities caused due to float64 overflow
    rows.push_back({decQuantity(12, 500, Format::DecimalSI), HUGE_VAL});
    rows.push_back({decQuantity(-12, 500, Format::DecimalSI), -HUGE_VAL});
    for (const Row& row : rows)
        EXPECT_EQ(row.in.asApproximateFloat(), row.out) << row.in.text();
}

TEST(UpstreamQuantity, TestStringQuantityAsApproximateFloat64) {
    EXPECT_EQ(q("2Ki").asApproximateFloat(), 2048);
    EXPECT_EQ(q("1.1Ki").asApproximateFloat(), 1126.4e+0);
    EXPECT_EQ(q("1Mi").asApproximateFloat(), 1.048576e+06);
    EXPECT_EQ(q("2Gi").asApproximateFloat(), 2.147483648e+09);
}

// ---- TestQuantityValueSet ---------------------------------------------------------------------

TEST(UpstreamQuantity, TestQuantityValueSet) {
    EXPECT_FALSE(Quantity::parse("invalid").ok());
    EXPECT_EQ(q("1Mi").value(), 1024 * 1024);
    EXPECT_EQ(q("1Mi").text(), "1Mi");
}

// ---- TestParseQuantity: AsInt64 (isInteger / asInteger), AsDec (the same value as the plain
// decimal) and the text it serializes to -------------------------------------------------------

TEST(UpstreamQuantity, TestParseQuantity) {
    struct Row {
        const char* input;
        std::optional<std::int64_t> wantAsInt64;
        const char* wantAsDec;
        const char* canonical = nullptr;  // nullptr: the input itself
    };
    const std::vector<Row> rows{
        // min/max 18 digits
        {"-999999999999999999", -999999999999999999, "-999999999999999999"},
        {"999999999999999999", 999999999999999999, "999999999999999999"},
        // .0
        {"-999999999999999999.0", {}, "-999999999999999999", "-999999999999999999"},
        {"999999999999999999.0", {}, "999999999999999999", "999999999999999999"},
        // .1
        {"-999999999999999999.1", {}, "-999999999999999999.1", "-999999999999999999100m"},
        {"999999999999999999.1", {}, "999999999999999999.1", "999999999999999999100m"},
        // min/max 19 digits
        {"-9999999999999999999", {}, "-9999999999999999999"},
        {"9999999999999999999", {}, "9999999999999999999"},
        {"-1E", -1000000000000000000, "-1000000000000000000"},
        {"1E", 1000000000000000000, "1000000000000000000"},
        {"-1000000000000000000", {}, "-1000000000000000000", "-1E"},
        {"1000000000000000000", {}, "1000000000000000000", "1E"},
        // .0
        {"-9999999999999999999.0", {}, "-9999999999999999999", "-9999999999999999999"},
        {"9999999999999999999.0", {}, "9999999999999999999", "9999999999999999999"},
        {"-1.0E", -1000000000000000000, "-1000000000000000000", "-1E"},
        {"1.0E", 1000000000000000000, "1000000000000000000", "1E"},
        {"-1000000000000000000.0", {}, "-1000000000000000000", "-1E"},
        {"1000000000000000000.0", {}, "1000000000000000000", "1E"},
        // 000m
        {"-9999999999999999999000m", {}, "-9999999999999999999", "-9999999999999999999"},
        {"9999999999999999999000m", {}, "9999999999999999999", "9999999999999999999"},
        // .1
        {"-9999999999999999999.1", {}, "-9999999999999999999.1", "-9999999999999999999100m"},
        {"9999999999999999999.1", {}, "9999999999999999999.1", "9999999999999999999100m"},
        {"-1.0000000000000000001E", {}, "-1000000000000000000.1", "-1000000000000000000100m"},
        {"1.0000000000000000001E", {}, "1000000000000000000.1", "1000000000000000000100m"},
        {"-1000000000000000000.1", {}, "-1000000000000000000.1", "-1000000000000000000100m"},
        {"1000000000000000000.1", {}, "1000000000000000000.1", "1000000000000000000100m"},
        // +1
        {"-1.000000000000000001E", {}, "-1000000000000000001", "-1000000000000000001"},
        {"1.000000000000000001E", {}, "1000000000000000001", "1000000000000000001"},
        {"-1000000000000000001", {}, "-1000000000000000001"},
        {"1000000000000000001", {}, "1000000000000000001"},
        // min/max 20 digits
        {"-10E", {}, "-10000000000000000000"},
        {"10E", {}, "10000000000000000000"},
        {"-10000000000000000000", {}, "-10000000000000000000", "-10E"},
        {"10000000000000000000", {}, "10000000000000000000", "10E"},
        // .0
        {"-10.0E", {}, "-10000000000000000000", "-10E"},
        {"10.0E", {}, "10000000000000000000", "10E"},
        {"-10000000000000000000.0", {}, "-10000000000000000000", "-10E"},
        {"10000000000000000000.0", {}, "10000000000000000000", "10E"},
        // 000m
        {"-10000000000000000000000m", {}, "-10000000000000000000", "-10E"},
        {"10000000000000000000000m", {}, "10000000000000000000", "10E"},
        // .1
        {"-10.0000000000000000001E", {}, "-10000000000000000000.1", "-10000000000000000000100m"},
        {"10.0000000000000000001E", {}, "10000000000000000000.1", "10000000000000000000100m"},
        {"-10000000000000000000.1", {}, "-10000000000000000000.1", "-10000000000000000000100m"},
        {"10000000000000000000.1", {}, "10000000000000000000.1", "10000000000000000000100m"},
        // +1
        {"-10.000000000000000001E", {}, "-10000000000000000001", "-10000000000000000001"},
        {"10.000000000000000001E", {}, "10000000000000000001", "10000000000000000001"},
        {"-10000000000000000001", {}, "-10000000000000000001"},
        {"10000000000000000001", {}, "10000000000000000001"},
        // min/max int64 - 1
        {"-9223372036854775809", {}, "-9223372036854775809"},
        {"9223372036854775806", {}, "9223372036854775806"},
        // .0
        {"-9223372036854775809.0", {}, "-9223372036854775809", "-9223372036854775809"},
        {"9223372036854775806.0", {}, "9223372036854775806", "9223372036854775806"},
        // 000m
        {"-9223372036854775809000m", {}, "-9223372036854775809", "-9223372036854775809"},
        {"9223372036854775806000m", {}, "9223372036854775806", "9223372036854775806"},
        // .1
        {"-9223372036854775809.1", {}, "-9223372036854775809.1", "-9223372036854775809100m"},
        {"9223372036854775806.1", {}, "9223372036854775806.1", "9223372036854775806100m"},
        // min/max int64
        {"-9223372036854775808", {}, "-9223372036854775808"},
        {"9223372036854775807", {}, "9223372036854775807"},
        // .0
        {"-9223372036854775808.0", {}, "-9223372036854775808", "-9223372036854775808"},
        {"9223372036854775807.0", {}, "9223372036854775807", "9223372036854775807"},
        // 000m
        {"-9223372036854775808000m", {}, "-9223372036854775808", "-9223372036854775808"},
        {"9223372036854775807000m", {}, "9223372036854775807", "9223372036854775807"},
        // .1
        {"-9223372036854775808.1", {}, "-9223372036854775808.1", "-9223372036854775808100m"},
        {"9223372036854775807.1", {}, "9223372036854775807.1", "9223372036854775807100m"},
        // min/max int64 + 1
        {"-9223372036854775807", {}, "-9223372036854775807"},
        {"9223372036854775808", {}, "9223372036854775808"},
        // .0
        {"-9223372036854775807.0", {}, "-9223372036854775807", "-9223372036854775807"},
        {"9223372036854775808.0", {}, "9223372036854775808", "9223372036854775808"},
        // 000m
        {"-9223372036854775807000m", {}, "-9223372036854775807", "-9223372036854775807"},
        {"9223372036854775808000m", {}, "9223372036854775808", "9223372036854775808"},
        // .1
        {"-9223372036854775807.1", {}, "-9223372036854775807.1", "-9223372036854775807100m"},
        {"9223372036854775808.1", {}, "9223372036854775808.1", "9223372036854775808100m"},
    };
    for (const Row& row : rows) {
        const Quantity value = q(row.input);
        const auto asInt64 = value.asInteger();
        if (row.wantAsInt64) {
            ASSERT_TRUE(asInt64.ok()) << row.input;
            EXPECT_EQ(*asInt64, *row.wantAsInt64) << row.input;
        } else {
            EXPECT_FALSE(asInt64.ok()) << row.input;
        }
        EXPECT_EQ(value, q(row.wantAsDec)) << row.input;
        EXPECT_EQ(value.text(), row.canonical ? row.canonical : row.input) << row.input;
    }
}

// ---- Value() and MilliValue() of quantities in range, as resource.Quantity v0.37.2 computes
// them (Value(), MilliValue(), String() printed by upstream's code) ----------------------------

TEST(UpstreamQuantity, ValueAndMilliValueAsUpstreamComputesThem) {
    struct Row {
        const char* input;
        std::int64_t value;
        std::int64_t milli;
        const char* text;
    };
    for (const Row& row : {
             Row{"1n", 1, 1, "1n"},
             Row{"-1n", -1, -1, "-1n"},
             Row{"1.0000000001", 2, 1001, "1000000001n"},
             Row{"-1.5", -2, -1500, "-1500m"},
             Row{"-1500m", -2, -1500, "-1500m"},
             Row{"1500m", 2, 1500, "1500m"},
             Row{"0.0000000001", 1, 1, "1n"},
             Row{"1", 1, 1000, "1"},
             Row{"1000m", 1, 1000, "1"},
             Row{"G", 0, 0, "0"},
             Row{"1024Mi", 1073741824, 1073741824000, "1Gi"},
             Row{"1000", 1000, 1000000, "1k"},
             Row{"0.5", 1, 500, "500m"},
             Row{"8Ei", 9223372036854775807, -1000, "9223372036854775807"},
             Row{"9223372036854775.807", 9223372036854776, 9223372036854775807,
                 "9223372036854775807m"},
             Row{"1e-20", 1, 1, "1e-9"},
             Row{"1.5Gi", 1610612736, 1610612736000, "1536Mi"},
             Row{"0.5Ki", 512, 512000, "512"},
             Row{"123456789.123456789", 123456790, 123456789124, "123456789.123456789"},
             Row{"-123456789.123456789", -123456790, -123456789124, "-123456789.123456789"},
             Row{"1.1E-9", 1, 1, "2e-9"},
         }) {
        const Quantity value = q(row.input);
        EXPECT_EQ(value.value(), row.value) << row.input;
        EXPECT_EQ(value.text(), row.text) << row.input;
        // Upstream's MilliValue() of "8Ei" overflows int64 (-1000); ours saturates.
        if (std::string_view(row.input) != "8Ei") {
            EXPECT_EQ(value.milliValue(), row.milli) << row.input;
        }
    }
    EXPECT_EQ(q("8Ei").milliValue(), std::numeric_limits<std::int64_t>::max());
}

// Where this port departs from upstream on purpose: values beyond int64 saturate instead of
// wrapping (upstream: "100E" Value() 0, "12345678901234567890.5" Value() -6101065172474983725),
// and a negative value held in arbitrary precision rounds away from zero as an int64-held one
// does, where upstream's scaledValue adds one to Go's truncated quotient ("-1.0000000001":
// Value() 0, "-0.0000000001": Value() 1).
TEST(UpstreamQuantity, DeliberateDepartures) {
    EXPECT_EQ(q("100E").value(), std::numeric_limits<std::int64_t>::max());
    EXPECT_EQ(q("-100E").value(), std::numeric_limits<std::int64_t>::min());
    EXPECT_EQ(q("-1.0000000001").value(), -2);
    EXPECT_EQ(q("-1.0000000001").milliValue(), -1001);
    EXPECT_EQ(q("-0.0000000001").value(), -1);
}

}  // namespace
}  // namespace numadra::api
