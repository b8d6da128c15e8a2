// The built-in functions. String indices count Unicode code points and follow the cel-go strings
// extension (version 2, the one Kubernetes pins), including its error cases.

#include "functions.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace numadra::cel::detail {

namespace {

using ValueList = std::vector<Value>;

const std::string* str(const ValueList& args, std::size_t i) {
    return i < args.size() ? std::get_if<std::string>(&args[i].v) : nullptr;
}
const std::int64_t* integer(const ValueList& args, std::size_t i) {
    return i < args.size() ? std::get_if<std::int64_t>(&args[i].v) : nullptr;
}

Value outOfRange(std::int64_t index) {
    return Value::error("index out of range: " + std::to_string(index));
}

// ---- conversions --------------------------------------------------------------------------

// Go's strconv.ParseInt/ParseUint(s, 10, 64): optional sign (ParseInt only), decimal digits.
template <class T>
std::optional<T> parseInteger(std::string_view text) {
    if constexpr (std::is_signed_v<T>) {
        if (!text.empty() && text[0] == '+')
            text.remove_prefix(1);
        if (text.size() > 1 && text[0] == '-' && text[1] == '+')
            return std::nullopt;
    }
    T value{};
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size())
        return std::nullopt;
    return value;
}

std::optional<Value> toInt(const Value& v) {
    if (v.is<std::int64_t>())
        return v;
    if (const auto* u = std::get_if<std::uint64_t>(&v.v)) {
        if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return Value::error("integer overflow: uint " + std::to_string(*u) +
                                " out of int range");
        return Value(static_cast<std::int64_t>(*u));
    }
    if (const auto* d = std::get_if<double>(&v.v)) {
        // cel-go's bounds: both ends exclusive (2^63 itself is not representable).
        if (!(*d > -9223372036854775808.0 && *d < 9223372036854775808.0))
            return Value::error("integer overflow: double " + formatDouble(*d) +
                                " out of int range");
        return Value(static_cast<std::int64_t>(*d));
    }
    if (const auto* s = std::get_if<std::string>(&v.v)) {
        if (auto parsed = parseInteger<std::int64_t>(*s))
            return Value(*parsed);
        return Value::error("cannot convert string '" + *s + "' to int");
    }
    return std::nullopt;
}

std::optional<Value> toUint(const Value& v) {
    if (v.is<std::uint64_t>())
        return v;
    if (const auto* i = std::get_if<std::int64_t>(&v.v)) {
        if (*i < 0)
            return Value::error("unsigned integer overflow: int " + std::to_string(*i) +
                                " out of uint range");
        return Value(static_cast<std::uint64_t>(*i));
    }
    if (const auto* d = std::get_if<double>(&v.v)) {
        if (!(*d >= 0 && *d < 18446744073709551616.0))
            return Value::error("unsigned integer overflow: double " + formatDouble(*d) +
                                " out of uint range");
        return Value(static_cast<std::uint64_t>(*d));
    }
    if (const auto* s = std::get_if<std::string>(&v.v)) {
        if (auto parsed = parseInteger<std::uint64_t>(*s))
            return Value(*parsed);
        return Value::error("cannot convert string '" + *s + "' to uint");
    }
    return std::nullopt;
}

// Go's strconv.ParseFloat: decimal or hexadecimal floats, "inf"/"infinity"/"nan" in any case,
// an optional sign; out-of-range magnitudes are errors.
std::optional<double> parseDouble(std::string_view text) {
    bool negative = false;
    if (!text.empty() && (text[0] == '+' || text[0] == '-')) {
        negative = text[0] == '-';
        text.remove_prefix(1);
    }
    if (text.empty() || text[0] == '+' || text[0] == '-')
        return std::nullopt;
    double value = 0;
    std::chars_format format = std::chars_format::general;
    if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
        text.remove_prefix(2);
        format = std::chars_format::hex;
    }
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, format);
    if (ec != std::errc() || ptr != text.data() + text.size())
        return std::nullopt;
    return negative ? -value : value;
}

std::optional<Value> toDouble(const Value& v) {
    if (v.is<double>())
        return v;
    if (const auto* i = std::get_if<std::int64_t>(&v.v))
        return Value(static_cast<double>(*i));
    if (const auto* u = std::get_if<std::uint64_t>(&v.v))
        return Value(static_cast<double>(*u));
    if (const auto* s = std::get_if<std::string>(&v.v)) {
        if (auto parsed = parseDouble(*s))
            return Value(*parsed);
        return Value::error("cannot convert string '" + *s + "' to double");
    }
    return std::nullopt;
}

std::optional<Value> toStringValue(const Value& v) {
    if (v.is<std::string>())
        return v;
    if (const auto* i = std::get_if<std::int64_t>(&v.v))
        return Value(std::to_string(*i));
    if (const auto* u = std::get_if<std::uint64_t>(&v.v))
        return Value(std::to_string(*u));
    if (const auto* d = std::get_if<double>(&v.v))
        return Value(formatDouble(*d));
    if (const auto* b = std::get_if<bool>(&v.v))
        return Value(std::string(*b ? "true" : "false"));
    if (const auto* b = std::get_if<Bytes>(&v.v)) {
        if (!validUtf8(b->data))
            return Value::error("invalid UTF-8 in bytes, cannot convert to string");
        return Value(b->data);
    }
    return std::nullopt;
}

std::optional<Value> toBool(const Value& v) {
    if (v.is<bool>())
        return v;
    if (const auto* s = std::get_if<std::string>(&v.v)) {
        // Go's strconv.ParseBool spellings.
        if (*s == "1" || *s == "t" || *s == "T" || *s == "true" || *s == "TRUE" || *s == "True")
            return Value(true);
        if (*s == "0" || *s == "f" || *s == "F" || *s == "false" || *s == "FALSE" || *s == "False")
            return Value(false);
        return Value::error("cannot convert string '" + *s + "' to bool");
    }
    return std::nullopt;
}

// ---- strings --------------------------------------------------------------------------------

Value charAt(const std::string& s, std::int64_t index) {
    const auto offsets = codePointOffsets(s);
    const auto count = static_cast<std::int64_t>(offsets.size() - 1);
    if (index < 0 || index > count)
        return outOfRange(index);
    if (index == count)
        return Value(std::string());
    const auto i = static_cast<std::size_t>(index);
    return Value(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
}

// Code-point position of `sub` in `s` at or after `from` (forward) or at or before `from`
// (backward), -1 if absent.
std::int64_t findCodePoint(const std::string& s, const std::string& sub, std::int64_t from,
                           bool backward) {
    const auto offsets = codePointOffsets(s);
    const auto count = static_cast<std::int64_t>(offsets.size() - 1);
    const auto subCount = static_cast<std::int64_t>(codePointCount(sub));
    if (count < subCount)
        return -1;
    auto matchesAt = [&](std::int64_t i) {
        return s.compare(offsets[static_cast<std::size_t>(i)], sub.size(), sub) == 0;
    };
    if (backward) {
        for (std::int64_t i = std::min(from, count - subCount); i >= 0; --i)
            if (matchesAt(i))
                return i;
    } else {
        for (std::int64_t i = from; i <= count - subCount; ++i)
            if (matchesAt(i))
                return i;
    }
    return -1;
}

Value indexOf(const std::string& s, const std::string& sub, std::optional<std::int64_t> offset,
              bool last) {
    const auto count = static_cast<std::int64_t>(codePointCount(s));
    if (!offset) {
        if (sub.empty())
            return Value(last ? count : std::int64_t{0});
        if (count == 0)
            return Value(std::int64_t{-1});
        return Value(findCodePoint(s, sub, last ? count - 1 : 0, last));
    }
    // cel-go v0.29's rules (both directions): a negative offset is an error, even for ''; '' is
    // found at the offset clamped to the end; past the end nothing else is found.
    if (*offset < 0)
        return outOfRange(*offset);
    if (sub.empty())
        return Value(std::min(*offset, count));
    if (*offset >= count)
        return Value(std::int64_t{-1});
    return Value(findCodePoint(s, sub, *offset, last));
}

Value substring(const std::string& s, std::int64_t start, std::optional<std::int64_t> end) {
    const auto offsets = codePointOffsets(s);
    const auto count = static_cast<std::int64_t>(offsets.size() - 1);
    const std::int64_t stop = end.value_or(count);
    if (end && start > stop)
        return Value::error("invalid substring range. start: " + std::to_string(start) +
                            ", end: " + std::to_string(stop));
    if (start < 0 || start > count)
        return outOfRange(start);
    if (stop < 0 || stop > count)
        return outOfRange(stop);
    const auto from = offsets[static_cast<std::size_t>(start)];
    return Value(s.substr(from, offsets[static_cast<std::size_t>(stop)] - from));
}

// Go's strings.Replace: n < 0 replaces all; an empty `from` matches before every code point and
// at the end.
Value replace(const std::string& s, const std::string& from, const std::string& to,
              std::int64_t n) {
    std::string out;
    std::size_t pos = 0;
    std::int64_t done = 0;
    if (from.empty()) {
        const auto offsets = codePointOffsets(s);
        for (std::size_t i = 0; i < offsets.size(); ++i) {
            if (n < 0 || done < n) {
                out += to;
                ++done;
            }
            if (i + 1 < offsets.size())
                out += s.substr(offsets[i], offsets[i + 1] - offsets[i]);
        }
        return Value(std::move(out));
    }
    while (n < 0 || done < n) {
        const auto found = s.find(from, pos);
        if (found == std::string::npos)
            break;
        out.append(s, pos, found - pos);
        out += to;
        pos = found + from.size();
        ++done;
    }
    out.append(s, pos, std::string::npos);
    return Value(std::move(out));
}

// Go's strings.SplitN: n == 0 gives no parts, n < 0 all parts, an empty separator splits into
// code points; the last part keeps the rest.
Value split(const std::string& s, const std::string& sep, std::int64_t n) {
    List parts;
    if (n == 0)
        return Value::list(std::move(parts));
    if (sep.empty()) {
        const auto offsets = codePointOffsets(s);
        const std::size_t count = offsets.size() - 1;
        for (std::size_t i = 0; i < count; ++i) {
            if (n > 0 && static_cast<std::int64_t>(parts.size()) == n - 1) {
                parts.emplace_back(s.substr(offsets[i]));
                return Value::list(std::move(parts));
            }
            parts.emplace_back(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
        }
        return Value::list(std::move(parts));
    }
    std::size_t pos = 0;
    while (n < 0 || static_cast<std::int64_t>(parts.size()) < n - 1) {
        const auto found = s.find(sep, pos);
        if (found == std::string::npos)
            break;
        parts.emplace_back(s.substr(pos, found - pos));
        pos = found + sep.size();
    }
    parts.emplace_back(s.substr(pos));
    return Value::list(std::move(parts));
}

// Unicode White_Space, as Go's strings.TrimSpace uses.
bool isSpace(char32_t c) {
    return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
           c == 0x205F || c == 0x3000;
}

char32_t decodeAt(const std::string& s, std::size_t from, std::size_t to) {
    const auto c0 = static_cast<unsigned char>(s[from]);
    const std::size_t len = to - from;
    if (len == 1)
        return c0;
    char32_t cp = c0 & (0xFF >> (len + 1));
    for (std::size_t i = from + 1; i < to; ++i)
        cp = (cp << 6) | (static_cast<unsigned char>(s[i]) & 0x3F);
    return cp;
}

Value trim(const std::string& s) {
    const auto offsets = codePointOffsets(s);
    std::size_t first = 0;
    std::size_t last = offsets.size() - 1;
    while (first < last && isSpace(decodeAt(s, offsets[first], offsets[first + 1])))
        ++first;
    while (last > first && isSpace(decodeAt(s, offsets[last - 1], offsets[last])))
        --last;
    return Value(s.substr(offsets[first], offsets[last] - offsets[first]));
}

Value asciiCase(std::string s, bool upper) {
    for (char& c : s) {
        if (upper && c >= 'a' && c <= 'z')
            c = static_cast<char>(c - 'a' + 'A');
        else if (!upper && c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    }
    return Value(std::move(s));
}

std::optional<Value> join(const Value& target, const std::string& sep) {
    const auto* list = std::get_if<std::shared_ptr<const List>>(&target.v);
    if (!list)
        return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < (*list)->size(); ++i) {
        const auto* item = std::get_if<std::string>(&(**list)[i].v);
        if (!item)
            return Value::error("join: list element " + std::to_string(i) + " is a " +
                                (**list)[i].typeName() + ", not a string");
        if (i > 0)
            out += sep;
        out += *item;
    }
    return Value(std::move(out));
}

Value matches(const Node& node, const std::string& text, const std::string& pattern) {
    if (node.regex)
        return Value(re2::RE2::PartialMatch(text, *node.regex));
    re2::RE2::Options options;
    options.set_log_errors(false);
    const re2::RE2 regex(pattern, options);
    if (!regex.ok())
        return Value::error("invalid regular expression '" + pattern + "': " + regex.error());
    return Value(re2::RE2::PartialMatch(text, regex));
}

std::optional<Value> size(const Value& v) {
    if (const auto* s = std::get_if<std::string>(&v.v))
        return Value(static_cast<std::int64_t>(codePointCount(*s)));
    if (const auto* b = std::get_if<Bytes>(&v.v))
        return Value(static_cast<std::int64_t>(b->data.size()));
    if (const auto* l = std::get_if<std::shared_ptr<const List>>(&v.v))
        return Value(static_cast<std::int64_t>((*l)->size()));
    if (const Map* m = mapEntries(v))  // a HostMap counts its entries, not what lookup() finds
        return Value(static_cast<std::int64_t>(m->size()));
    return std::nullopt;
}

// hasValue(), value(), optional.of(), optional.ofNonZeroValue(), optional.none(). or() and
// orValue() do not evaluate their argument when the receiver has a value, so the evaluator runs
// them itself.
std::optional<Value> optionalFunction(Builtin builtin, bool member, const ValueList& args) {
    const std::size_t n = args.size();
    const OptionalValue* receiver = member && n >= 1 ? asOptional(args[0]) : nullptr;
    switch (builtin) {
        case Builtin::HasValue:
            return receiver && n == 1 ? std::optional<Value>(receiver->value().has_value())
                                      : std::nullopt;
        case Builtin::OptValue:
            if (!receiver || n != 1)
                return std::nullopt;
            return receiver->value() ? *receiver->value()
                                     : Value::error("optional.none() dereference");
        case Builtin::OptionalOf:
            return !member && n == 1 ? std::optional<Value>(makeOptional(args[0])) : std::nullopt;
        case Builtin::OptionalOfNonZero:
            if (member || n != 1)
                return std::nullopt;
            return isZeroValue(args[0]) ? noneOptional() : makeOptional(args[0]);
        case Builtin::OptionalNone:
            return !member && n == 0 ? std::optional<Value>(noneOptional()) : std::nullopt;
        default:
            return std::nullopt;
    }
}

}  // namespace

Value noSuchOverload(std::string_view function, const std::vector<Value>& args) {
    std::string message = "no such overload: " + std::string(function) + "(";
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (i > 0)
            message += ", ";
        message += args[i].typeName();
    }
    return Value::error(message + ")");
}

std::optional<Value> callBuiltin(const Node& node, const std::vector<Value>& args) {
    const bool member = node.receiver;
    const std::size_t n = args.size();
    const std::string* s0 = str(args, 0);
    switch (node.builtin) {
        case Builtin::None:
            return std::nullopt;
        case Builtin::Size:
            return n == 1 ? size(args[0]) : std::nullopt;
        case Builtin::Int:
            return !member && n == 1 ? toInt(args[0]) : std::nullopt;
        case Builtin::Uint:
            return !member && n == 1 ? toUint(args[0]) : std::nullopt;
        case Builtin::Double:
            return !member && n == 1 ? toDouble(args[0]) : std::nullopt;
        case Builtin::String:
            return !member && n == 1 ? toStringValue(args[0]) : std::nullopt;
        case Builtin::Bytes:
            if (member || n != 1)
                return std::nullopt;
            if (args[0].is<Bytes>())
                return args[0];
            if (s0)
                return Value::bytes(*s0);
            return std::nullopt;
        case Builtin::Bool:
            return !member && n == 1 ? toBool(args[0]) : std::nullopt;
        case Builtin::Dyn:
            return !member && n == 1 ? std::optional<Value>(args[0]) : std::nullopt;
        case Builtin::Type:
            if (member || n != 1)
                return std::nullopt;
            return Value::type(args[0].typeName());
        case Builtin::Contains:
        case Builtin::StartsWith:
        case Builtin::EndsWith: {
            const std::string* s1 = str(args, 1);
            if (!member || n != 2 || !s0 || !s1)
                return std::nullopt;
            if (node.builtin == Builtin::Contains)
                return Value(s0->find(*s1) != std::string::npos);
            if (node.builtin == Builtin::StartsWith)
                return Value(s0->compare(0, s1->size(), *s1) == 0);
            return Value(s0->size() >= s1->size() &&
                         s0->compare(s0->size() - s1->size(), s1->size(), *s1) == 0);
        }
        case Builtin::Matches: {
            const std::string* s1 = str(args, 1);
            if (n != 2 || !s0 || !s1)
                return std::nullopt;
            return matches(node, *s0, *s1);
        }
        case Builtin::LowerAscii:
        case Builtin::UpperAscii:
            if (!member || n != 1 || !s0)
                return std::nullopt;
            return asciiCase(*s0, node.builtin == Builtin::UpperAscii);
        case Builtin::Trim:
            if (!member || n != 1 || !s0)
                return std::nullopt;
            return trim(*s0);
        case Builtin::Split: {
            const std::string* sep = str(args, 1);
            const std::int64_t* limit = integer(args, 2);
            if (!member || !s0 || !sep || !(n == 2 || (n == 3 && limit)))
                return std::nullopt;
            return split(*s0, *sep, limit ? *limit : -1);
        }
        case Builtin::Replace: {
            const std::string* from = str(args, 1);
            const std::string* to = str(args, 2);
            const std::int64_t* limit = integer(args, 3);
            if (!member || !s0 || !from || !to || !(n == 3 || (n == 4 && limit)))
                return std::nullopt;
            return replace(*s0, *from, *to, limit ? *limit : -1);
        }
        case Builtin::Substring: {
            const std::int64_t* start = integer(args, 1);
            const std::int64_t* end = integer(args, 2);
            if (!member || !s0 || !start || !(n == 2 || (n == 3 && end)))
                return std::nullopt;
            return substring(*s0, *start, end ? std::optional<std::int64_t>(*end) : std::nullopt);
        }
        case Builtin::IndexOf:
        case Builtin::LastIndexOf: {
            const std::string* sub = str(args, 1);
            const std::int64_t* offset = integer(args, 2);
            if (!member || !s0 || !sub || !(n == 2 || (n == 3 && offset)))
                return std::nullopt;
            return indexOf(*s0, *sub, offset ? std::optional<std::int64_t>(*offset) : std::nullopt,
                           node.builtin == Builtin::LastIndexOf);
        }
        case Builtin::Join: {
            const std::string* sep = str(args, 1);
            if (!member || !(n == 1 || (n == 2 && sep)))
                return std::nullopt;
            return join(args[0], sep ? *sep : std::string());
        }
        case Builtin::CharAt: {
            const std::int64_t* index = integer(args, 1);
            if (!member || n != 2 || !s0 || !index)
                return std::nullopt;
            return charAt(*s0, *index);
        }
        case Builtin::Format:  // the evaluator calls formatString(): it needs the host and budget
            return std::nullopt;
        case Builtin::HasValue:
        case Builtin::OptValue:
        case Builtin::OrValue:
        case Builtin::Or:
        case Builtin::OptionalOf:
        case Builtin::OptionalOfNonZero:
        case Builtin::OptionalNone:
            return optionalFunction(node.builtin, member, args);
    }
    return std::nullopt;
}

}  // namespace numadra::cel::detail
