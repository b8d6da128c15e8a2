// string.format() of the cel-go strings extension as Kubernetes enables it: version 2, whose
// format() is cel-go's first formatter (ext/formatting.go, not formatting_v2.go, which only
// versions 4 and later use). Its quirks are upstream's behaviour and are kept: %f and %e go
// through golang.org/x/text's printer for the en_US locale ("1,234.50", "∞", "1.5×10⁰³"), %e takes
// its precision as a field width, precisions wrap as the printer's 8- and 16-bit fields do, and
// list and map elements print as CEL literals (strings quoted as Go's strconv.Quote quotes them).

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "functions.hpp"
#include "numadra/cel/go_text.hpp"

namespace numadra::cel::detail {

namespace {

constexpr std::string_view kTimestampType = "google.protobuf.Timestamp";
constexpr std::string_view kDurationType = "google.protobuf.Duration";
// x/text's printer reads a width or precision above this as a malformed directive.
constexpr std::int64_t kPrinterNumberLimit = 10'000'010;
constexpr std::string_view kNoVerb = "%!(NOVERB)";
constexpr std::int64_t kDefaultPrecision = 6;

// ---- Go's strconv.Quote -------------------------------------------------------------------------

// ---- integers -----------------------------------------------------------------------------------

// Go's %d, %x, %X, %o, %b of an int64 or uint64: a sign and the magnitude's digits.
std::string integerText(bool negative, std::uint64_t magnitude, unsigned base, bool upper) {
    constexpr std::string_view kLower = "0123456789abcdef";
    constexpr std::string_view kUpper = "0123456789ABCDEF";
    std::string digits;
    do {
        digits += (upper ? kUpper : kLower)[magnitude % base];
        magnitude /= base;
    } while (magnitude != 0);
    if (negative)
        digits += '-';
    return {digits.rbegin(), digits.rend()};
}

std::optional<std::string> integerClause(const Value& value, unsigned base, bool upper) {
    if (const auto* i = std::get_if<std::int64_t>(&value.v)) {
        // The magnitude of INT64_MIN does not fit an int64, so negate in unsigned arithmetic.
        const auto magnitude =
            *i < 0 ? ~static_cast<std::uint64_t>(*i) + 1 : static_cast<std::uint64_t>(*i);
        return integerText(*i < 0, magnitude, base, upper);
    }
    if (const auto* u = std::get_if<std::uint64_t>(&value.v))
        return integerText(false, *u, base, upper);
    return std::nullopt;
}

// ---- doubles ------------------------------------------------------------------------------------

// A non-negative double's decimal digits, without leading or trailing zeros: the value is
// 0.digits × 10^exponent.
struct DecimalDigits {
    std::string digits;
    int exponent = 0;
};

DecimalDigits normalized(const std::string& digits, int exponent) {
    const std::size_t first = digits.find_first_not_of('0');
    if (first == std::string::npos)
        return {};
    const std::size_t last = digits.find_last_not_of('0');
    return {digits.substr(first, last + 1 - first), exponent - static_cast<int>(first)};
}

// Rounded to `precision` fraction digits. A double's exact expansion has at most 1074 of them,
// so a larger precision only adds zeros, which are dropped anyway.
DecimalDigits fixedDigits(double magnitude, std::int64_t precision) {
    std::array<char, 1500> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), magnitude,
                                         std::chars_format::fixed,
                                         static_cast<int>(std::min<std::int64_t>(precision, 1100)));
    const std::string_view text(buffer.data(), ec == std::errc() ? end - buffer.data() : 0);
    const std::size_t dot = std::min(text.find('.'), text.size());
    std::string digits(text.substr(0, dot));
    if (dot < text.size())
        digits.append(text.substr(dot + 1));
    return normalized(digits, static_cast<int>(dot));
}

// The shortest digits that read back as the double (Go's strconv precision -1).
DecimalDigits shortestDigits(double magnitude) {
    std::array<char, 64> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), magnitude,
                                         std::chars_format::scientific);
    const std::string_view text(buffer.data(), ec == std::errc() ? end - buffer.data() : 0);
    const std::size_t e = text.find('e');
    if (e == std::string_view::npos)
        return {};
    std::string digits;
    for (const char c : text.substr(0, e))
        if (c != '.')
            digits += c;
    int exponent = 0;
    const std::size_t from = e + 1 + (text[e + 1] == '+' ? 1 : 0);
    std::from_chars(text.data() + from, text.data() + text.size(), exponent);
    return normalized(digits, exponent + 1);
}

// en_US groups integer digits by three: a separator follows a digit when the number of digits
// after it is a positive multiple of three.
bool needsGroupSeparator(int digitsAfter) {
    return digitsAfter > 0 && digitsAfter % 3 == 0;
}

// x/text's decimal rendering (internal/number appendDecimal) with at least `minFraction`
// fraction digits.
std::string renderDecimal(bool negative, const DecimalDigits& number, int minFraction) {
    int exponent = number.exponent;
    const auto count = static_cast<int>(number.digits.size());
    int end = count;
    if (count == 0) {
        exponent = 0;
        end = minFraction;
    } else {
        end = std::max(end, exponent + minFraction);
    }
    std::string out = negative ? "-" : "";
    const int integerDigits = std::max(exponent, 0);
    if (integerDigits == 0)
        out += '0';
    for (int i = 0; i < integerDigits; ++i) {
        out += i < count ? number.digits[static_cast<std::size_t>(i)] : '0';
        if (needsGroupSeparator(integerDigits - i - 1))
            out += ',';
    }
    const int fractionDigits = end - exponent;
    if (fractionDigits <= 0)
        return out;
    out += '.';
    int written = 0;
    for (; written < -exponent; ++written)
        out += '0';
    for (int i = integerDigits; i < count; ++i, ++written)
        out += number.digits[static_cast<std::size_t>(i)];
    for (; written < fractionDigits; ++written)
        out += '0';
    return out;
}

// message.NewPrinter(en_US).Sprintf("%.<precision>f", value). The printer keeps the precision
// in an int16 (the maximum fraction digits; negative means "as many as needed") and a uint8
// (the minimum), so large precisions wrap.
std::string localeFixed(double value, std::int64_t precision) {
    if (precision >= kPrinterNumberLimit)
        return std::string(kNoVerb);
    if (std::isnan(value))
        return "NaN";
    const bool negative = value < 0;
    if (std::isinf(value))
        return negative ? "-∞" : "∞";
    const auto maxFraction = static_cast<std::int16_t>(static_cast<std::uint16_t>(precision));
    const auto minFraction = static_cast<std::uint8_t>(precision);
    const DecimalDigits number = maxFraction >= 0 ? fixedDigits(std::fabs(value), maxFraction)
                                                  : shortestDigits(std::fabs(value));
    return renderDecimal(negative, number, minFraction);
}

std::size_t codePoints(std::string_view text) {
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80;
    }));
}

std::string superscript(int exponent) {
    static constexpr std::array<std::string_view, 10> kDigits{
        "\u2070", "\u00B9", "\u00B2", "\u00B3", "\u2074",
        "\u2075", "\u2076", "\u2077", "\u2078", "\u2079"};
    std::string out = exponent < 0 ? "\u207B" : "";
    const std::string digits = std::to_string(std::abs(exponent));
    if (digits.size() < 2)
        out += kDigits[0];
    for (const char c : digits)
        out += kDigits[static_cast<std::size_t>(c - '0')];
    return out;
}

// message.NewPrinter(en_US).Sprintf("%<precision>e", value): cel-go writes the precision where
// the width goes, so it pads (to a width the printer keeps in a uint16) and the digits stay six.
std::string localeScientific(double value, std::int64_t precision) {
    if (precision >= kPrinterNumberLimit)
        return std::string(kNoVerb);
    const bool negative = value < 0;
    std::string text;
    if (std::isnan(value)) {
        text = "NaN";
    } else if (std::isinf(value)) {
        text = negative ? "-∞" : "∞";
    } else {
        std::array<char, 64> buffer{};
        const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(),
                                             std::fabs(value), std::chars_format::scientific, 6);
        const std::string_view chars(buffer.data(), ec == std::errc() ? end - buffer.data() : 0);
        const std::size_t e = std::min(chars.find('e'), chars.size());
        int exponent = 0;
        if (e + 1 < chars.size()) {
            const std::size_t from = e + 1 + (chars[e + 1] == '+' ? 1 : 0);
            std::from_chars(chars.data() + from, chars.data() + chars.size(), exponent);
        }
        text = (negative ? "-" : "") + std::string(chars.substr(0, e)) + "\u00D710" +
               superscript(exponent);
    }
    // "%0e" is the zero flag, not a width.
    const std::size_t width = static_cast<std::uint16_t>(precision);
    const std::size_t length = codePoints(text);
    return length < width ? std::string(width - length, ' ') + text : text;
}

// Go's fmt "%.6f", which list and map elements use: exact digits, "NaN", "+Inf", "-Inf".
std::string plainFixed(double value) {
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    std::array<char, 400> buffer{};
    const auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                         std::chars_format::fixed, 6);
    return {buffer.data(), ec == std::errc() ? end : buffer.data()};
}

// ---- %s -----------------------------------------------------------------------------------------

using Text = Result<std::string>;

Error formatError(std::string_view message, const std::string& typeName) {
    return Error{std::string(message) + ", was given " + typeName};
}

constexpr std::string_view kStringClause =
    "string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
    "durations, and timestamps";

class ValuePrinter {
  public:
    explicit ValuePrinter(const HostText& hostText) : hostText_(hostText) {}

    // cel-go's FormatString: the value's string conversion; lists and maps as literals.
    Text plain(const Value& value) const {
        if (const auto* list = std::get_if<std::shared_ptr<const List>>(&value.v))
            return listText(**list);
        if (const Map* map = mapEntries(value))
            return mapText(*map);
        if (auto integer = integerClause(value, 10, false))
            return *integer;
        if (const auto* d = std::get_if<double>(&value.v))
            return formatDouble(*d);
        if (const auto* b = std::get_if<bool>(&value.v))
            return std::string(*b ? "true" : "false");
        if (const auto* s = std::get_if<std::string>(&value.v))
            return *s;
        if (const auto* b = std::get_if<Bytes>(&value.v))
            return bytesText(*b);
        if (value.is<Null>())
            return std::string("null");
        if (const auto* t = std::get_if<TypeValue>(&value.v))
            return t->name;
        if (isTime(value))
            return timeText(value);
        return formatError(kStringClause, value.typeName());
    }

  private:
    static bool isTime(const Value& value) {
        const std::string type = value.typeName();
        return type == kTimestampType || type == kDurationType;
    }

    Text timeText(const Value& value) const {
        if (auto text = hostText_(value))
            return *text;
        return Error{"could not convert argument to string"};
    }

    static Text bytesText(const Bytes& bytes) {
        if (!validUtf8(bytes.data))
            return Error{
                "could not convert argument \"invalid UTF-8 in bytes, cannot convert to "
                "string\" to string"};
        return bytes.data;
    }

    // cel-go's clauseForType and quoteForCEL: an element of a list or a map value.
    Text element(const Value& value) const {
        if (const auto* d = std::get_if<double>(&value.v)) {
            std::string text = plainFixed(*d);
            return std::isfinite(*d) ? text : goQuote(text);
        }
        if (isTime(value)) {
            Text text = timeText(value);
            if (!text)
                return text;
            const bool timestamp = value.typeName() == kTimestampType;
            return (timestamp ? "timestamp(" : "duration(") + goQuote(*text) + ")";
        }
        const bool listOrMap = value.is<std::shared_ptr<const List>>() || mapEntries(value);
        const bool scalar = value.is<std::int64_t>() || value.is<std::uint64_t>() ||
                            value.is<bool>() || value.is<std::string>() || value.is<Bytes>() ||
                            value.is<Null>() || value.is<TypeValue>();
        if (!listOrMap && !scalar)
            return Error{"no formatting function for " + value.typeName()};
        Text text = plain(value);
        if (!text)
            return text;
        if (value.is<std::string>())
            return goQuote(*text);
        if (value.is<Bytes>())
            return "b" + goQuote(*text);
        return text;
    }

    Text listText(const List& list) const {
        std::string out = "[";
        for (std::size_t i = 0; i < list.size(); ++i) {
            Text item = element(list[i]);
            if (!item)
                return item;
            out += (i == 0 ? "" : ", ") + *item;
        }
        return out + "]";
    }

    // Entries sorted by the key's text, as cel-go sorts them (its map order is random).
    Text mapText(const Map& map) const {
        std::vector<std::pair<std::string, std::string>> entries;
        entries.reserve(map.size());
        for (const auto& [key, value] : map) {
            std::string keyText;
            if (const auto* s = std::get_if<std::string>(&key))
                keyText = goQuote(*s);
            else if (const auto* b = std::get_if<bool>(&key))
                keyText = *b ? "true" : "false";
            else
                keyText = *integerClause(keyValue(key), 10, false);
            Text valueText = element(value);
            if (!valueText)
                return valueText;
            entries.emplace_back(std::move(keyText), std::move(*valueText));
        }
        std::stable_sort(entries.begin(), entries.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        std::string out = "{";
        for (std::size_t i = 0; i < entries.size(); ++i)
            out += (i == 0 ? "" : ", ") + entries[i].first + ":" + entries[i].second;
        return out + "}";
    }

    const HostText& hostText_;
};

// ---- clauses ------------------------------------------------------------------------------------

enum class Verb { String, Decimal, Fixed, Scientific, Binary, Hex, HexUpper, Octal };

struct Clause {
    Verb verb = Verb::String;
    std::optional<std::int64_t> precision;
    std::size_t length = 0;  // of the clause after the '%'
};

// Go's strconv.Atoi on a string of ASCII digits.
Result<std::int64_t> atoi(std::string_view digits) {
    std::int64_t value = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec == std::errc::invalid_argument)
        return Error{"strconv.Atoi: parsing \"" + std::string(digits) + "\": invalid syntax"};
    if (ec != std::errc() || end != digits.data() + digits.size())
        return Error{"strconv.Atoi: parsing \"" + std::string(digits) + "\": value out of range"};
    return value;
}

Result<Clause> parsePrecision(std::string_view text) {
    Clause clause;
    if (text[0] != '.')
        return clause;
    std::size_t i = 1;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9')
        ++i;
    if (i >= text.size())
        return Error{"error while parsing precision: could not find end of precision specifier"};
    auto precision = atoi(text.substr(1, i - 1));
    if (!precision)
        return Error{
            "error while parsing precision: error while converting precision to "
            "integer: " +
            precision.error().message};
    clause.precision = *precision;
    clause.length = i;
    return clause;
}

// A byte as Go's rune(b) prints with %c: the code point U+00XX.
std::string byteAsRune(unsigned char byte) {
    std::string out;
    appendUtf8(out, byte);
    return out;
}

// The clause after a '%' (text is not empty): an optional ".precision" and a verb.
Result<Clause> parseClause(std::string_view text) {
    Result<Clause> parsed = parsePrecision(text);
    if (!parsed)
        return Error{"could not parse formatting clause: " + parsed.error().message};
    Clause clause = *parsed;
    const char verb = text[clause.length++];
    static constexpr std::array<std::pair<char, Verb>, 8> kVerbs = {{
        {'s', Verb::String},
        {'d', Verb::Decimal},
        {'f', Verb::Fixed},
        {'e', Verb::Scientific},
        {'b', Verb::Binary},
        {'x', Verb::Hex},
        {'X', Verb::HexUpper},
        {'o', Verb::Octal},
    }};
    for (const auto& [letter, kind] : kVerbs) {
        if (letter == verb) {
            clause.verb = kind;
            return clause;
        }
    }
    return Error{"could not parse formatting clause: unrecognized formatting clause \"" +
                 byteAsRune(static_cast<unsigned char>(verb)) + "\""};
}

// %f and %e take doubles, and the strings "NaN", "Infinity" and "-Infinity".
std::optional<double> floatArgument(const Value& value) {
    if (const auto* d = std::get_if<double>(&value.v))
        return *d;
    if (const auto* s = std::get_if<std::string>(&value.v)) {
        if (*s == "NaN")
            return std::nan("");
        if (*s == "Infinity" || *s == "-Infinity")
            return *s == "Infinity" ? HUGE_VAL : -HUGE_VAL;
    }
    return std::nullopt;
}

constexpr std::string_view kDecimalClause = "decimal clause can only be used on integers";
constexpr std::string_view kFixedClause = "fixed-point clause can only be used on doubles";
constexpr std::string_view kScientificClause = "scientific clause can only be used on doubles";
constexpr std::string_view kBinaryClause = "only integers and bools can be formatted as binary";
constexpr std::string_view kHexClause =
    "only integers, byte buffers, and strings can be formatted as hex";
constexpr std::string_view kOctalClause = "octal clause can only be used on integers";

std::string hexOfBytes(std::string_view bytes, bool upper) {
    std::string out;
    for (const char c : bytes)
        out += integerText(false, static_cast<unsigned char>(c) | 0x100U, 16, upper).substr(1);
    return out;
}

Text hexClause(const Value& value, bool upper) {
    if (const auto* s = std::get_if<std::string>(&value.v))
        return hexOfBytes(*s, upper);
    if (const auto* b = std::get_if<Bytes>(&value.v))
        return hexOfBytes(b->data, upper);
    if (auto text = integerClause(value, 16, upper))
        return *text;
    return formatError(kHexClause, value.typeName());
}

Text binaryClause(const Value& value) {
    if (const auto* b = std::get_if<bool>(&value.v))
        return std::string(*b ? "1" : "0");
    if (auto text = integerClause(value, 2, false))
        return *text;
    return formatError(kBinaryClause, value.typeName());
}

Text formatClause(const Clause& clause, const Value& value, const ValuePrinter& printer) {
    const std::int64_t precision = clause.precision.value_or(kDefaultPrecision);
    switch (clause.verb) {
        case Verb::String:
            return printer.plain(value);
        case Verb::Decimal:
            if (auto text = integerClause(value, 10, false))
                return *text;
            return formatError(kDecimalClause, value.typeName());
        case Verb::Fixed:
            if (auto number = floatArgument(value))
                return localeFixed(*number, precision);
            return formatError(kFixedClause, value.typeName());
        case Verb::Scientific:
            if (auto number = floatArgument(value))
                return localeScientific(*number, precision);
            return formatError(kScientificClause, value.typeName());
        case Verb::Binary:
            return binaryClause(value);
        case Verb::Hex:
        case Verb::HexUpper:
            return hexClause(value, clause.verb == Verb::HexUpper);
        case Verb::Octal:
            if (auto text = integerClause(value, 8, false))
                return *text;
            return formatError(kOctalClause, value.typeName());
    }
    return formatError(kStringClause, value.typeName());
}

// ---- compile-time check -------------------------------------------------------------------------

// The type cel-go's checker gives an argument, as far as this engine deduces it: optionals are
// told apart from other values of unknown type because no clause accepts them.
std::string argumentType(const Node& node) {
    const bool optionalCall =
        node.kind == NodeKind::Call &&
        (node.builtin == Builtin::OptionalOf || node.builtin == Builtin::OptionalOfNonZero ||
         node.builtin == Builtin::OptionalNone);
    const bool optionalAccess =
        (node.kind == NodeKind::Select || node.kind == NodeKind::Index) && node.optional;
    return optionalCall || optionalAccess ? "optional_type" : deduceType(node);
}

bool typeOneOf(const std::string& type, std::initializer_list<std::string_view> accepted) {
    return type == "dyn" || std::find(accepted.begin(), accepted.end(), type) != accepted.end();
}

// cel-go's verifyString: the argument, and the elements of a list or map literal, recursively.
const Node* unprintable(const Node& node) {
    if (argumentType(node) == "optional_type")
        return &node;
    if (node.kind == NodeKind::List || node.kind == NodeKind::Map) {
        for (const auto& child : node.children)
            if (const Node* bad = unprintable(*child))
                return bad;
    }
    return nullptr;
}

std::optional<FormatCheckError> checkClause(const Clause& clause, const Node& argument) {
    const std::string type = argumentType(argument);
    const auto reject = [&](std::string_view message) {
        return FormatCheckError{"error during formatting: " + formatError(message, type).message,
                                &argument};
    };
    switch (clause.verb) {
        case Verb::String:
            if (const Node* bad = unprintable(argument))
                return FormatCheckError{"error during formatting: " +
                                            formatError(kStringClause, argumentType(*bad)).message,
                                        bad};
            return std::nullopt;
        case Verb::Decimal:
            return typeOneOf(type, {"int", "uint"}) ? std::nullopt
                                                    : std::optional(reject(kDecimalClause));
        case Verb::Fixed:
            return typeOneOf(type, {"double", "string"}) ? std::nullopt
                                                         : std::optional(reject(kFixedClause));
        case Verb::Scientific:
            return typeOneOf(type, {"double", "string"}) ? std::nullopt
                                                         : std::optional(reject(kScientificClause));
        case Verb::Binary:
            return typeOneOf(type, {"int", "uint", "bool"}) ? std::nullopt
                                                            : std::optional(reject(kBinaryClause));
        case Verb::Hex:
        case Verb::HexUpper:
            return typeOneOf(type, {"int", "uint", "string", "bytes"})
                       ? std::nullopt
                       : std::optional(reject(kHexClause));
        case Verb::Octal:
            return typeOneOf(type, {"int", "uint"}) ? std::nullopt
                                                    : std::optional(reject(kOctalClause));
    }
    return std::nullopt;
}

std::string outOfRange(std::size_t index) {
    return "index " + std::to_string(index) + " out of range";
}

}  // namespace

std::optional<Value> formatString(const std::vector<Value>& args, const HostText& hostText,
                                  std::size_t maxOutput) {
    const auto* format = args.size() == 2 ? std::get_if<std::string>(&args[0].v) : nullptr;
    const auto* list =
        args.size() == 2 ? std::get_if<std::shared_ptr<const List>>(&args[1].v) : nullptr;
    if (!format || !list)
        return std::nullopt;
    const std::string_view text = *format;
    const ValuePrinter printer(hostText);
    std::string out;
    std::size_t argument = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] != '%' || (i + 1 < text.size() && text[i + 1] == '%')) {
            out += text[i];
            i += text[i] == '%' ? 2 : 1;
            continue;
        }
        if (argument >= (*list)->size())
            return Value::error(outOfRange(argument));
        if (i + 1 >= text.size())
            return Value::error("unexpected end of string");
        const Result<Clause> clause = parseClause(text.substr(i + 1));
        if (!clause)
            return Value::error(clause.error().message);
        const Text piece = formatClause(*clause, (**list)[argument++], printer);
        if (!piece)
            return Value::error("error during formatting: " + piece.error().message);
        out += *piece;
        // The output is charged by its size: past the budget, stop before it grows further.
        if (out.size() > maxOutput)
            return Value::error(std::string(kCostLimitExceeded));
        i += 1 + clause->length;
    }
    return Value(std::move(out));
}

std::optional<FormatCheckError> checkFormat(std::string_view text,
                                            const std::vector<const Node*>& arguments) {
    std::size_t requested = 0;
    for (std::size_t i = 0; i < text.size();) {
        if (text[i] != '%' || (i + 1 < text.size() && text[i + 1] == '%')) {
            i += text[i] == '%' ? 2 : 1;
            continue;
        }
        const std::size_t argument = requested++;
        if (i + 1 >= text.size())
            return FormatCheckError{"unexpected end of string", nullptr};
        if (argument >= arguments.size())
            return FormatCheckError{outOfRange(argument), nullptr};
        const Result<Clause> clause = parseClause(text.substr(i + 1));
        if (!clause)
            return FormatCheckError{clause.error().message, nullptr};
        if (auto error = checkClause(*clause, *arguments[argument]))
            return error;
        i += 1 + clause->length;
    }
    if (arguments.size() > requested)
        return FormatCheckError{"too many arguments supplied to string.format (expected " +
                                    std::to_string(requested) + ", got " +
                                    std::to_string(arguments.size()) + ")",
                                nullptr};
    return std::nullopt;
}

}  // namespace numadra::cel::detail
