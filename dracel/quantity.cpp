#include "numadra/dracel/quantity.hpp"

#include <array>
#include <charconv>
#include <limits>
#include <optional>

namespace numadra::dracel {

namespace {

using Int128 = __int128;
using UInt128 = unsigned __int128;

constexpr Int128 kNano = 1'000'000'000;
constexpr UInt128 kMaxMagnitude = static_cast<UInt128>(std::numeric_limits<Int128>::max());
// Kubernetes caps binary-suffixed quantities at the largest int64.
constexpr UInt128 kBinaryCap =
    static_cast<UInt128>(std::numeric_limits<std::int64_t>::max()) * static_cast<UInt128>(kNano);

// Kubernetes' error texts (k8s.io/apimachinery resource.ErrFormatWrong, ErrSuffix).
constexpr std::string_view kErrFormat =
    "quantities must match the regular expression "
    "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
constexpr std::string_view kErrSuffix = "unable to parse quantity's suffix";
constexpr std::string_view kErrRange = "value out of range";

bool isDigit(char c) {
    return c >= '0' && c <= '9';
}

// The pieces of a quantity as Kubernetes' parseQuantityString splits them.
struct Pieces {
    bool positive = true;
    std::string_view num;  // leading zeros stripped; "0" when no digit is left
    std::string_view denom;
    std::string_view suffix;
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
    std::int64_t exponent = 0;  // of 10, or of 2 when binary
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

std::optional<Suffix> interpret(std::string_view suffix) {
    for (const auto& s : kDecimalSuffixes)
        if (s.name == suffix)
            return Suffix{false, s.exponent, Quantity::Format::DecimalSI};
    for (std::size_t i = 1; i < kBinarySuffixes.size(); ++i)
        if (kBinarySuffixes[i] == suffix)
            return Suffix{true, static_cast<std::int64_t>(i) * 10, Quantity::Format::BinarySI};
    if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
        if (auto exponent = parseInt64(suffix.substr(1)))
            return Suffix{false, *exponent, Quantity::Format::DecimalExponent};
    }
    return std::nullopt;
}

// Whether Kubernetes keeps the parsed text as the quantity's string (its int64 fast path with a
// text already in canonical form).
bool keepsText(const Pieces& p, const Suffix& s) {
    const auto digits = static_cast<std::int64_t>(p.num.size() + p.denom.size());
    std::int64_t precision = 0;
    if (!s.binary)
        precision = 18 - digits;
    else if (p.denom.empty())
        precision = 15 - static_cast<std::int64_t>(p.num.size()) - s.exponent * 3 / 10 - 1;
    else
        precision = -1;
    if (precision < 0)
        return false;
    const std::int64_t scale =
        (s.binary ? 0 : s.exponent) - static_cast<std::int64_t>(p.denom.size());
    if (scale < -9)
        return false;
    std::string shifted;
    shifted.reserve(p.num.size() + p.denom.size());
    shifted.append(p.num).append(p.denom);
    const auto value = parseInt64(shifted);
    if (!value)
        return false;
    if (s.binary) {
        // The multiplication by 2^exponent must not overflow int64.
        if (*value > (std::numeric_limits<std::int64_t>::max() >> s.exponent))
            return false;
        return (*value & 0x07) != 0;
    }
    return scale % 3 == 0 && !(shifted.size() >= 3 && shifted.ends_with("000")) &&
           shifted[0] != '0';
}

// Multiplies a decimal digit string by 2^exponent (exponent <= 60) in place.
void multiplyByPowerOfTwo(std::string& digits, std::int64_t exponent) {
    const auto factor = static_cast<UInt128>(1) << exponent;
    UInt128 carry = 0;
    for (std::size_t i = digits.size(); i-- > 0;) {
        const UInt128 t = static_cast<UInt128>(digits[i] - '0') * factor + carry;
        digits[i] = static_cast<char>('0' + static_cast<int>(t % 10));
        carry = t / 10;
    }
    std::string head;
    while (carry != 0) {
        head.insert(head.begin(), static_cast<char>('0' + static_cast<int>(carry % 10)));
        carry /= 10;
    }
    digits.insert(0, head);
}

// digits * 10^shift in nano-units, rounded up (away from zero) when digits are cut; nullopt on
// overflow.
std::optional<UInt128> toNano(std::string_view digits, std::int64_t shift) {
    const std::size_t first = digits.find_first_not_of('0');
    if (first == std::string_view::npos)
        return UInt128{0};
    const std::string_view sig = digits.substr(first);
    const std::int64_t integerDigits = static_cast<std::int64_t>(sig.size()) + shift;
    if (integerDigits > 39)
        return std::nullopt;
    UInt128 acc = 0;
    auto push = [&acc](int d) {
        if (acc > (kMaxMagnitude - static_cast<UInt128>(d)) / 10)
            return false;
        acc = acc * 10 + static_cast<UInt128>(d);
        return true;
    };
    const std::int64_t kept = std::max<std::int64_t>(0, integerDigits);
    for (std::int64_t i = 0; i < kept; ++i) {
        const int d =
            i < static_cast<std::int64_t>(sig.size()) ? sig[static_cast<std::size_t>(i)] - '0' : 0;
        if (!push(d))
            return std::nullopt;
    }
    bool fraction = false;
    for (std::size_t i = static_cast<std::size_t>(
             std::min<std::int64_t>(kept, static_cast<std::int64_t>(sig.size())));
         i < sig.size(); ++i)
        fraction = fraction || sig[i] != '0';
    if (fraction) {
        if (acc == kMaxMagnitude)
            return std::nullopt;
        ++acc;
    }
    return acc;
}

Error parseError(std::string_view text, std::string_view why) {
    return Error{"invalid quantity \"" + std::string(text) + "\": " + std::string(why)};
}

Int128 absolute(Int128 v) {
    return v < 0 ? -v : v;
}

std::string toDecimal(Int128 value) {
    if (value == 0)
        return "0";
    const bool negative = value < 0;
    UInt128 magnitude =
        negative ? static_cast<UInt128>(-(value + 1)) + 1 : static_cast<UInt128>(value);
    std::string out;
    while (magnitude != 0) {
        out.push_back(static_cast<char>('0' + static_cast<int>(magnitude % 10)));
        magnitude /= 10;
    }
    if (negative)
        out.push_back('-');
    return {out.rbegin(), out.rend()};
}

}  // namespace

Result<Quantity> Quantity::parse(std::string_view text) {
    if (text.empty())
        return parseError(text, kErrFormat);
    if (text == "0")
        return Quantity();
    const auto pieces = split(text);
    if (!pieces)
        return parseError(text, kErrFormat);
    const auto suffix = interpret(pieces->suffix);
    if (!suffix)
        return parseError(text, kErrSuffix);

    std::string digits;
    digits.reserve(pieces->num.size() + pieces->denom.size() + 20);
    digits.append(pieces->num).append(pieces->denom);
    std::int64_t shift = 9 - static_cast<std::int64_t>(pieces->denom.size());
    if (suffix->binary) {
        multiplyByPowerOfTwo(digits, suffix->exponent);
    } else {
        // Exponents that large only fit a zero; avoid overflowing the shift.
        if (suffix->exponent > 1'000'000)
            shift = 1'000'000;
        else if (suffix->exponent < -1'000'000)
            shift = -1'000'000;
        else
            shift += suffix->exponent;
    }
    auto magnitude = toNano(digits, shift);
    if (suffix->binary && (!magnitude || *magnitude > kBinaryCap))
        magnitude = kBinaryCap;
    if (!magnitude)
        return parseError(text, kErrRange);

    Format format = suffix->format;
    if (suffix->binary && *magnitude < static_cast<UInt128>(kNano))
        format = Format::DecimalSI;  // as Kubernetes does for binary values below 1
    const Int128 nano =
        pieces->positive ? static_cast<Int128>(*magnitude) : -static_cast<Int128>(*magnitude);
    return Quantity(nano, format, keepsText(*pieces, *suffix) ? std::string(text) : std::string());
}

Quantity Quantity::fromInt(std::int64_t value, Format format) {
    return Quantity(static_cast<Int128>(value) * kNano, format);
}

Quantity Quantity::fromMilli(std::int64_t milli, Format format) {
    return Quantity(static_cast<Int128>(milli) * 1'000'000, format);
}

std::optional<std::int64_t> Quantity::exactMilli() const {
    if (nano_ % 1'000'000 != 0)
        return std::nullopt;
    const Int128 milli = nano_ / 1'000'000;
    if (milli < std::numeric_limits<std::int64_t>::min() ||
        milli > std::numeric_limits<std::int64_t>::max())
        return std::nullopt;
    return static_cast<std::int64_t>(milli);
}

bool Quantity::isInteger() const {
    if (nano_ % kNano != 0)
        return false;
    const Int128 units = nano_ / kNano;
    return units >= std::numeric_limits<std::int64_t>::min() &&
           units <= std::numeric_limits<std::int64_t>::max();
}

Result<std::int64_t> Quantity::asInteger() const {
    if (!isInteger())
        return Error{"cannot convert value to integer: " + toString()};
    return static_cast<std::int64_t>(nano_ / kNano);
}

double Quantity::asApproximateFloat() const {
    const Int128 whole = nano_ / kNano;
    const Int128 fraction = nano_ % kNano;
    return static_cast<double>(whole) + static_cast<double>(fraction) / static_cast<double>(kNano);
}

std::int64_t Quantity::scaled(Int128 unit) const {
    Int128 q = nano_ / unit;
    if (nano_ % unit != 0)
        q += nano_ > 0 ? 1 : -1;
    if (q > std::numeric_limits<std::int64_t>::max())
        return std::numeric_limits<std::int64_t>::max();
    if (q < std::numeric_limits<std::int64_t>::min())
        return std::numeric_limits<std::int64_t>::min();
    return static_cast<std::int64_t>(q);
}

std::int64_t Quantity::value() const {
    return scaled(kNano);
}

std::int64_t Quantity::milliValue() const {
    return scaled(1'000'000);
}

Result<Quantity> Quantity::add(const Quantity& other) const {
    Int128 sum = 0;
    if (__builtin_add_overflow(nano_, other.nano_, &sum))
        return Error{"quantity overflow: " + toString() + " + " + other.toString()};
    return Quantity(sum, nano_ == 0 ? other.format_ : format_);
}

Result<Quantity> Quantity::sub(const Quantity& other) const {
    Int128 difference = 0;
    if (__builtin_sub_overflow(nano_, other.nano_, &difference))
        return Error{"quantity overflow: " + toString() + " - " + other.toString()};
    return Quantity(difference, nano_ == 0 ? other.format_ : format_);
}

std::string Quantity::toString() const {
    if (!text_.empty())
        return text_;
    if (nano_ == 0)
        return "0";
    Format format = format_;
    if (format == Format::BinarySI && (absolute(nano_) < 1024 * kNano || nano_ % kNano != 0))
        format = Format::DecimalSI;  // small or fractional: shown in decimal, without rounding
    if (format == Format::BinarySI) {
        Int128 units = nano_ / kNano;
        std::size_t exponent = 0;
        while (exponent + 1 < kBinarySuffixes.size() && absolute(units) >= 1024 &&
               units % 1024 == 0) {
            units /= 1024;
            ++exponent;
        }
        return toDecimal(units) + std::string(kBinarySuffixes[exponent]);
    }
    // Decimal: trailing zeros into the exponent, then the exponent down to a multiple of 3.
    Int128 mantissa = nano_;
    std::int64_t exponent = -9;
    while (mantissa % 10 == 0) {
        mantissa /= 10;
        ++exponent;
    }
    while (exponent % 3 != 0) {
        mantissa *= 10;
        --exponent;
    }
    if (format == Format::DecimalSI) {
        for (const auto& s : kDecimalSuffixes)
            if (s.exponent == exponent)
                return toDecimal(mantissa) + std::string(s.name);
        // Beyond "E" Kubernetes finds no suffix (and prints the digits alone); the exponent
        // form keeps the value.
    }
    if (exponent == 0)
        return toDecimal(mantissa);
    return toDecimal(mantissa) + "e" + std::to_string(exponent);
}

bool Quantity::equals(const cel::Opaque& other) const {
    const auto* that = dynamic_cast<const Quantity*>(&other);
    return that != nullptr && *this == *that;
}

}  // namespace numadra::dracel
