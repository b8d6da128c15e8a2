#include "numadra/api/quantity.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <system_error>

#include "big_decimal.hpp"

namespace numadra::api {

namespace {

using detail::addBig;
using detail::addMagnitudes;
using detail::compareBig;
using detail::compareMagnitudes;
using detail::multiplyMagnitudes;
using detail::multiplySmall;
using detail::removeFactors;
using detail::roundUpToNano;
using detail::stripLeadingZeros;
using detail::toUnsigned;
using detail::wholeDigits;
using Int128 = __int128;

constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
constexpr std::int64_t kMinInt64 = std::numeric_limits<std::int64_t>::min();

// Kubernetes' error texts (k8s.io/apimachinery resource.ErrFormatWrong, ErrSuffix).
constexpr std::string_view kErrFormat =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";
constexpr std::string_view kErrNumeric = "unable to parse numeric part of quantity";
constexpr std::string_view kErrDigits = "value needs more digits than are kept";

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

// The pieces of a quantity as Kubernetes' parseQuantityString splits them.
struct Pieces {
    bool positive = true;
    std::string_view num;  // leading zeros stripped; "0" when no digit is left
    std::string_view denom;
    std::string_view suffix;
    bool digits = true;  // the number has a digit (inf.Dec refuses "-." and ".")
};

// A faithful port of parseQuantityString, quirks included (`1.G` is accepted, a text without
// digits such as "-" or "Ki" reads as zero).
std::optional<Pieces> split(std::string_view str) {
    Pieces p;
    std::size_t pos = 0;
    const std::size_t end = str.size();
    if (pos < end && (str[0] == '-' || str[0] == '+')) {
        p.positive = str[0] != '-';
        ++pos;
    }
    const std::size_t numberStart = pos;
    while (pos < end && str[pos] == '0')
        ++pos;
    if (pos >= end) {
        p.num = "0";
        return p;
    }
    std::size_t i = pos;
    while (i < end && isDigit(str[i]))
        ++i;
    p.num = str.substr(pos, i - pos);
    p.digits = i > numberStart;
    if (p.num.empty())
        p.num = "0";
    pos = i;
    if (pos >= end)
        return p;
    if (str[pos] == '.') {
        ++pos;
        i = pos;
        while (i < end && isDigit(str[i]))
            ++i;
        p.denom = str.substr(pos, i - pos);
        p.digits = p.digits || !p.denom.empty();
        pos = i;
        if (pos >= end)
            return p;
    }
    const std::size_t suffixStart = pos;
    constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
    while (pos < end && kSuffixChars.find(str[pos]) != std::string_view::npos)
        ++pos;
    if (pos < end && (str[pos] == '-' || str[pos] == '+'))
        ++pos;
    while (pos < end && isDigit(str[pos]))
        ++pos;
    if (pos < end)
        return std::nullopt;  // a character that cannot be part of the suffix
    p.suffix = str.substr(suffixStart);
    return p;
}

struct Suffix {
    bool binary = false;
    std::int32_t exponent = 0;  // of 10, or of 2 when binary; Kubernetes keeps 32 bits
    Quantity::Format format = Quantity::Format::DecimalSI;
};

struct NamedSuffix {
    std::string_view name;
    int exponent;
};
constexpr std::array<NamedSuffix, 10> kDecimalSuffixes{{{"n", -9},
                                                        {"u", -6},
                                                        {"m", -3},
                                                        {"", 0},
                                                        {"k", 3},
                                                        {"M", 6},
                                                        {"G", 9},
                                                        {"T", 12},
                                                        {"P", 15},
                                                        {"E", 18}}};
constexpr std::array<std::string_view, 7> kBinarySuffixes{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};

// Go's strconv.ParseInt(s, 10, 64).
std::optional<std::int64_t> parseInt64(std::string_view s) {
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
        negative = s[0] == '-';
        s.remove_prefix(1);
    }
    if (s.empty() || !isDigit(s[0]))
        return std::nullopt;
    std::uint64_t magnitude = 0;
    const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), magnitude);
    if (ec != std::errc() || ptr != s.data() + s.size())
        return std::nullopt;
    const auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    if (magnitude > max + (negative ? 1 : 0))
        return std::nullopt;
    if (negative)
        return magnitude == max + 1 ? std::numeric_limits<std::int64_t>::min()
                                    : -static_cast<std::int64_t>(magnitude);
    return static_cast<std::int64_t>(magnitude);
}

// Go's int32(x): the low 32 bits.
std::int32_t wrap32(std::int64_t value) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(value)));
}

std::optional<Suffix> interpret(std::string_view suffix) {
    for (const auto& s : kDecimalSuffixes)
        if (s.name == suffix)
            return Suffix{false, s.exponent, Quantity::Format::DecimalSI};
    for (std::size_t i = 1; i < kBinarySuffixes.size(); ++i)
        if (kBinarySuffixes[i] == suffix)
            return Suffix{true, static_cast<std::int32_t>(i) * 10, Quantity::Format::BinarySI};
    if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
        if (auto exponent = parseInt64(suffix.substr(1)))
            return Suffix{false, wrap32(*exponent), Quantity::Format::DecimalExponent};
    }
    return std::nullopt;
}

Error parseError(std::string_view text, std::string_view why) {
    return Error{"invalid quantity \"" + std::string(text) + "\": " + std::string(why)};
}

std::string magnitudeText(std::uint64_t value) {
    return value == 0 ? std::string() : std::to_string(value);
}

std::uint64_t unsignedMagnitude(std::int64_t value) {
    return value < 0 ? ~static_cast<std::uint64_t>(value) + 1 : static_cast<std::uint64_t>(value);
}

// Go's math.Pow10, whose products and quotients decide asApproximateFloat()'s last bit.
double goPow10(std::int64_t n) {
    static constexpr std::array<double, 32> kTab{1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23,
                                                 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31};
    static constexpr std::array<double, 10> kPos32{1e0,   1e32,  1e64,  1e96,  1e128,
                                                   1e160, 1e192, 1e224, 1e256, 1e288};
    static constexpr std::array<double, 11> kNeg32{1e-0,   1e-32,  1e-64,  1e-96,  1e-128, 1e-160,
                                                   1e-192, 1e-224, 1e-256, 1e-288, 1e-320};
    if (n >= 0 && n <= 308)
        return kPos32[static_cast<std::size_t>(n / 32)] * kTab[static_cast<std::size_t>(n % 32)];
    if (n >= -323 && n <= 0)
        return kNeg32[static_cast<std::size_t>(-n / 32)] / kTab[static_cast<std::size_t>(-n % 32)];
    return n > 0 ? HUGE_VAL : 0.0;
}

std::optional<std::int64_t> signedValue(bool negative, std::uint64_t magnitude) {
    if (magnitude > static_cast<std::uint64_t>(kMaxInt64) + (negative ? 1 : 0))
        return std::nullopt;
    if (magnitude == static_cast<std::uint64_t>(kMaxInt64) + 1)
        return kMinInt64;
    const auto value = static_cast<std::int64_t>(magnitude);
    return negative ? -value : value;
}

// Go's a + b with int64Add's overflow rule.
std::optional<std::int64_t> add64(std::int64_t a, std::int64_t b) {
    std::int64_t c = 0;
    if (__builtin_add_overflow(a, b, &c))
        return std::nullopt;
    return c;
}

// Kubernetes' positiveScaleInt64: value × 10^scale when it fits.
std::optional<std::int64_t> scaleUp(std::int64_t value, std::int64_t scale) {
    if (value == 0)
        return 0;
    for (std::int64_t i = 0; i < scale; ++i)
        if (__builtin_mul_overflow(value, std::int64_t{10}, &value))
            return std::nullopt;
    return value;
}

// Kubernetes' int64Amount.Add: a's mantissa and exponent after adding b, or nullopt when the
// int64 overflows (the caller then adds in arbitrary precision).
std::optional<std::pair<std::int64_t, std::int32_t>> addAmounts(std::int64_t a, std::int32_t ea,
                                                                std::int64_t b, std::int32_t eb) {
    if (b == 0)
        return std::pair{a, ea};
    if (a == 0)
        return std::pair{b, eb};
    if (ea == eb) {
        auto c = add64(a, b);
        return c ? std::optional(std::pair{*c, ea}) : std::nullopt;
    }
    if (ea > eb) {
        auto scaled = scaleUp(a, static_cast<std::int64_t>(ea) - eb);
        auto c = scaled ? add64(*scaled, b) : std::nullopt;
        return c ? std::optional(std::pair{*c, eb}) : std::nullopt;
    }
    auto scaled = scaleUp(b, static_cast<std::int64_t>(eb) - ea);
    auto c = scaled ? add64(a, *scaled) : std::nullopt;
    return c ? std::optional(std::pair{*c, ea}) : std::nullopt;
}

std::string decimalSuffix(std::int64_t exponent, Quantity::Format format) {
    if (format == Quantity::Format::DecimalExponent)
        return exponent == 0 ? "" : "e" + std::to_string(exponent);
    for (const auto& s : kDecimalSuffixes)
        if (s.exponent == exponent)
            return std::string(s.name);
    return "";  // Kubernetes finds no suffix and prints the digits alone
}

std::string signedText(const BigDecimal& big, const std::string& digits) {
    return (big.negative ? "-" : "") + (digits.empty() ? std::string("0") : digits);
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
    if (text.empty())
        return parseError(text, kErrFormat);
    if (text == "0")
        return Quantity(0, 0, Format::DecimalSI, "0");
    const auto pieces = split(text);
    if (!pieces)
        return parseError(text, kErrFormat);
    const auto suffix = interpret(pieces->suffix);
    if (!suffix)
        return parseError(text, kErrSuffix);

    // Kubernetes' int64 fast path, with its conditions.
    const auto digits = static_cast<std::int32_t>(pieces->num.size() + pieces->denom.size());
    std::int32_t precision = 0;
    std::int32_t scale = 0;
    std::int64_t multiplier = 1;
    if (!suffix->binary) {
        scale = suffix->exponent;
        precision = 18 - digits;
    } else if (pieces->denom.empty()) {
        multiplier = std::int64_t{1} << suffix->exponent;
        precision =
            15 - static_cast<std::int32_t>(pieces->num.size()) - suffix->exponent * 3 / 10 - 1;
    } else {
        precision = -1;
    }
    if (precision >= 0) {
        scale = wrap32(static_cast<std::int64_t>(scale) -
                       static_cast<std::int64_t>(pieces->denom.size()));
        if (scale >= -9) {
            const std::string shifted = std::string(pieces->num) + std::string(pieces->denom);
            const auto value = parseInt64(shifted);
            if (!value)
                return parseError(text, kErrNumeric);
            std::int64_t result = 0;
            if (!__builtin_mul_overflow(*value, multiplier, &result)) {
                if (!pieces->positive)
                    result = -result;
                const bool canonical =
                    suffix->binary
                        ? (*value & 0x07) != 0
                        : scale % 3 == 0 && !shifted.ends_with("000") && shifted[0] != '0';
                return Quantity(result, scale, suffix->format,
                                canonical ? std::string(text) : std::string());
            }
        }
    }

    // Arbitrary precision.
    if (!pieces->digits)
        return parseError(text, kErrNumeric);
    BigDecimal big{!pieces->positive,
                   stripLeadingZeros(std::string(pieces->num) + std::string(pieces->denom)),
                   -static_cast<std::int64_t>(pieces->denom.size())};
    if (big.digits.size() > kMaxDigits)
        return parseError(text, kErrDigits);
    if (suffix->binary)
        big.digits = multiplySmall(big.digits, std::uint64_t{1} << suffix->exponent);
    else  // inf.Dec keeps its scale in 32 bits too
        big.exponent = -static_cast<std::int64_t>(wrap32(-big.exponent - suffix->exponent));
    if (!big.digits.empty()) {
        auto rounded = roundUpToNano(std::move(big));
        if (!rounded)
            return parseError(text, kErrDigits);
        big = std::move(*rounded);
    }
    const BigDecimal maxInt64{false, std::to_string(kMaxInt64), 0};
    Format format = suffix->format;
    const bool negative = big.negative;
    big.negative = false;
    if (format == Format::BinarySI && compareBig(big, maxInt64) > 0)
        big = maxInt64;
    if (format == Format::BinarySI && big.sign() > 0 &&
        compareBig(big, BigDecimal{false, "1", 0}) < 0)
        format = Format::DecimalSI;  // as Kubernetes does for binary values below 1
    big.negative = negative && big.sign() != 0;
    return Quantity(std::make_shared<const BigDecimal>(std::move(big)), format);
}

Quantity Quantity::fromInt(std::int64_t value, Format format) {
    return Quantity(value, 0, format);
}

Quantity Quantity::fromMilli(std::int64_t milli, Format format) {
    return Quantity(milli, -3, format);
}

BigDecimal Quantity::toBig() const {
    if (big_)
        return *big_;
    return BigDecimal{mantissa_ < 0, magnitudeText(unsignedMagnitude(mantissa_)), exponent_};
}

// The value in nano-units when an int128 holds it exactly (every parsed int64 value whose
// exponent is at most 10): the fast path of comparisons and conversions.
std::optional<Int128> Quantity::nano() const {
    if (big_ || exponent_ < -9 || exponent_ > 10)
        return std::nullopt;
    Int128 value = mantissa_;
    for (std::int32_t i = -9; i < exponent_; ++i)
        value *= 10;
    return value;
}

int Quantity::sign() const {
    if (big_)
        return big_->sign();
    return mantissa_ < 0 ? -1 : (mantissa_ > 0 ? 1 : 0);
}

std::strong_ordering Quantity::operator<=>(const Quantity& other) const {
    if (!big_ && !other.big_ && exponent_ == other.exponent_)
        return mantissa_ <=> other.mantissa_;
    const auto a = nano();
    const auto b = other.nano();
    if (a && b)
        return *a <=> *b;
    return compareBig(toBig(), other.toBig()) <=> 0;
}

bool Quantity::isInteger() const {
    if (big_ || exponent_ < 0)
        return false;
    return scaleUp(mantissa_, exponent_).has_value();
}

Result<std::int64_t> Quantity::asInteger() const {
    if (!isInteger())
        return Error{"cannot convert value to integer"};
    return *scaleUp(mantissa_, exponent_);
}

double Quantity::asApproximateFloat() const {
    double base = static_cast<double>(mantissa_);
    std::int64_t exponent = exponent_;
    if (big_) {
        base = 0;
        const auto [end, ec] =
            std::from_chars(big_->digits.data(), big_->digits.data() + big_->digits.size(), base);
        if (ec == std::errc::result_out_of_range)
            base = HUGE_VAL;
        base = big_->negative ? -base : base;
        exponent = big_->exponent;
    }
    return exponent == 0 ? base : base * goPow10(exponent);
}

// Rounded up (away from zero) to a multiple of 10^unitExponent, saturated at the int64 limits.
std::int64_t Quantity::scaled(int unitExponent) const {
    if (const auto value = nano()) {
        Int128 unit = 1;
        for (int i = -9; i < unitExponent; ++i)
            unit *= 10;
        Int128 q = *value / unit;
        if (*value % unit != 0)
            q += *value > 0 ? 1 : -1;
        return static_cast<std::int64_t>(std::clamp<Int128>(q, kMinInt64, kMaxInt64));
    }
    const BigDecimal big = toBig();
    std::string digits = big.digits;
    if (big.exponent < unitExponent) {
        const auto cut = static_cast<std::size_t>(std::min<std::int64_t>(
            unitExponent - big.exponent, static_cast<std::int64_t>(digits.size())));
        const bool fraction =
            digits.find_first_not_of('0', digits.size() - cut) != std::string::npos;
        digits = stripLeadingZeros(digits.substr(0, digits.size() - cut));
        if (fraction)
            digits = addMagnitudes(digits, "1");
    } else if (!digits.empty()) {
        const std::int64_t zeros = big.exponent - unitExponent;
        if (zeros > 19)
            return big.negative ? kMinInt64 : kMaxInt64;
        digits += std::string(static_cast<std::size_t>(zeros), '0');
    }
    const auto magnitude = toUnsigned(digits);
    const auto value = magnitude ? signedValue(big.negative, *magnitude) : std::nullopt;
    return value ? *value : (big.negative ? kMinInt64 : kMaxInt64);
}

std::int64_t Quantity::value() const {
    return scaled(0);
}

std::int64_t Quantity::milliValue() const {
    return scaled(-3);
}

std::optional<std::int64_t> Quantity::exactMilli() const {
    if (const auto value = nano()) {
        if (*value % 1'000'000 != 0)
            return std::nullopt;
        const Int128 milli = *value / 1'000'000;
        if (milli < kMinInt64 || milli > kMaxInt64)
            return std::nullopt;
        return static_cast<std::int64_t>(milli);
    }
    const std::int64_t milli = scaled(-3);
    const Quantity back(milli, -3, format_);
    if (milli == kMinInt64 || milli == kMaxInt64 || back != *this)
        return std::nullopt;
    return milli;
}

Result<Quantity> Quantity::add(const Quantity& other) const {
    const Format format = isZero() ? other.format_ : format_;
    if (!big_ && !other.big_) {
        if (auto sum = addAmounts(mantissa_, exponent_, other.mantissa_, other.exponent_))
            return Quantity(sum->first, sum->second, format);
    }
    auto sum = addBig(toBig(), other.toBig());
    if (!sum)
        return Error{"quantity overflow: " + text() + " + " + other.text() +
                     " needs more digits than are kept"};
    return Quantity(std::make_shared<const BigDecimal>(std::move(*sum)), format);
}

Result<Quantity> Quantity::sub(const Quantity& other) const {
    const Format format = isZero() ? other.format_ : format_;
    if (!big_ && !other.big_) {
        // Go negates in 64 bits: the most negative int64 stays itself, as in Kubernetes.
        const auto negated =
            static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(other.mantissa_));
        if (auto difference = addAmounts(mantissa_, exponent_, negated, other.exponent_))
            return Quantity(difference->first, difference->second, format);
    }
    BigDecimal negated = other.toBig();
    negated.negative = !negated.negative && negated.sign() != 0;
    auto difference = addBig(toBig(), negated);
    if (!difference)
        return Error{"quantity overflow: " + text() + " - " + other.text() +
                     " needs more digits than are kept"};
    return Quantity(std::make_shared<const BigDecimal>(std::move(*difference)), format);
}

Result<Quantity> Quantity::mul(const Quantity& other) const {
    const BigDecimal a = toBig();
    const BigDecimal b = other.toBig();
    BigDecimal product{a.negative != b.negative, multiplyMagnitudes(a.digits, b.digits),
                       a.exponent + b.exponent};
    if (product.digits.empty())
        return Quantity(0, 0, format_);
    // The digits as written out, the exponent's zeros included, as add() bounds them.
    if (product.digits.size() + static_cast<std::size_t>(std::llabs(product.exponent)) > kMaxDigits)
        return Error{"quantity overflow: " + text() + " * " + other.text() +
                     " needs more digits than are kept"};
    return Quantity(std::make_shared<const BigDecimal>(std::move(product)), format_);
}

// Kubernetes' CanonicalizeBytes: binary when the value is a whole number of at least 1024,
// else the digits without trailing zeros, the exponent brought down to a multiple of 3.
std::string Quantity::text() const {
    if (!text_.empty())
        return text_;
    if (isZero())
        return "0";
    const BigDecimal big = toBig();
    Format format = format_;
    const auto whole = format == Format::BinarySI ? wholeDigits(big) : std::nullopt;
    if (whole && compareMagnitudes(*whole, "1024") >= 0) {
        auto [mantissa, times] = removeFactors(*whole, 1024);
        // Beyond "Ei" Kubernetes finds no suffix and prints the digits alone.
        const std::string suffix =
            times < static_cast<std::int64_t>(kBinarySuffixes.size())
                ? std::string(kBinarySuffixes[static_cast<std::size_t>(times)])
                : "";
        return signedText(big, mantissa) + suffix;
    }
    if (format == Format::BinarySI)
        format = Format::DecimalSI;  // small or fractional: decimal, without rounding
    const std::size_t zeros = big.digits.size() - 1 - big.digits.find_last_not_of('0');
    std::string mantissa = big.digits.substr(0, big.digits.size() - zeros);
    std::int64_t exponent = big.exponent + static_cast<std::int64_t>(zeros);
    while (exponent % 3 != 0) {
        mantissa += '0';
        --exponent;
    }
    return signedText(big, mantissa) + decimalSuffix(exponent, format);
}

}  // namespace numadra::api
