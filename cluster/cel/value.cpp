// Values: CEL equality and ordering (with heterogeneous numeric comparison), literal text,
// map-key handling and the UTF-8 helpers shared by the evaluator and the standard library.

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <unordered_map>

#include "ast.hpp"

namespace numadra::cel {

using detail::celEquals;

std::string Value::typeName() const {
    struct Visitor {
        std::string operator()(const Null&) const { return "null_type"; }
        std::string operator()(bool) const { return "bool"; }
        std::string operator()(std::int64_t) const { return "int"; }
        std::string operator()(std::uint64_t) const { return "uint"; }
        std::string operator()(double) const { return "double"; }
        std::string operator()(const std::string&) const { return "string"; }
        std::string operator()(const Bytes&) const { return "bytes"; }
        std::string operator()(const std::shared_ptr<const List>&) const { return "list"; }
        std::string operator()(const std::shared_ptr<const Map>&) const { return "map"; }
        std::string operator()(const TypeValue&) const { return "type"; }
        std::string operator()(const ErrorValue&) const { return "error"; }
        std::string operator()(const std::shared_ptr<const Opaque>& o) const {
            return o ? o->typeName() : "null_type";
        }
    };
    return std::visit(Visitor{}, v);
}

bool operator==(const Value& a, const Value& b) {
    if (a.isError() || b.isError())
        return a.isError() && b.isError() && a.as<ErrorValue>() == b.as<ErrorValue>();
    return celEquals(a, b);
}

namespace {

void appendQuoted(std::string& out, std::string_view text, bool bytes) {
    out += bytes ? "b\"" : "\"";
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (u < 0x20 || u == 0x7F || (bytes && u >= 0x80)) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\x%02x", u);
                    out += buf;
                } else {
                    out.push_back(c);
                }
        }
    }
    out.push_back('"');
}

void appendValue(std::string& out, const Value& value);

void appendMap(std::string& out, const Map& map) {
    out.push_back('{');
    bool first = true;
    for (const auto& [key, item] : map) {
        if (!first)
            out += ", ";
        first = false;
        appendValue(out, detail::keyValue(key));
        out += ": ";
        appendValue(out, item);
    }
    out.push_back('}');
}

void appendValue(std::string& out, const Value& value) {
    struct Visitor {
        std::string& out;
        void operator()(const Null&) const { out += "null"; }
        void operator()(bool b) const { out += b ? "true" : "false"; }
        void operator()(std::int64_t i) const { out += std::to_string(i); }
        void operator()(std::uint64_t u) const { out += std::to_string(u) + "u"; }
        void operator()(double d) const {
            std::string text = detail::formatDouble(d);
            if (text.find_first_of(".eIN") == std::string::npos)
                text += ".0";
            out += text;
        }
        void operator()(const std::string& s) const { appendQuoted(out, s, false); }
        void operator()(const Bytes& b) const { appendQuoted(out, b.data, true); }
        void operator()(const std::shared_ptr<const List>& list) const {
            out.push_back('[');
            for (std::size_t i = 0; i < list->size(); ++i) {
                if (i > 0)
                    out += ", ";
                appendValue(out, (*list)[i]);
            }
            out.push_back(']');
        }
        void operator()(const std::shared_ptr<const Map>& map) const { appendMap(out, *map); }
        void operator()(const TypeValue& t) const { out += t.name; }
        void operator()(const ErrorValue& e) const { out += "error(" + e.message + ")"; }
        void operator()(const std::shared_ptr<const Opaque>& o) const {
            out += o ? o->debugString() : "null";
        }
    };
    std::visit(Visitor{out}, value.v);
}

// -1/0/1 of an int against a double, nullopt for NaN. As cel-go does: outside int64's range
// the double decides, inside it the int is compared as a double.
std::optional<int> compareIntDouble(std::int64_t i, double d) {
    if (std::isnan(d))
        return std::nullopt;
    if (d < -9223372036854775808.0)
        return 1;
    if (d > 9223372036854775808.0)
        return -1;
    const auto x = static_cast<double>(i);
    return x < d ? -1 : (x > d ? 1 : 0);
}

std::optional<int> compareUintDouble(std::uint64_t u, double d) {
    if (std::isnan(d))
        return std::nullopt;
    if (d < 0)
        return 1;
    if (d > 18446744073709551616.0)
        return -1;
    const auto x = static_cast<double>(u);
    return x < d ? -1 : (x > d ? 1 : 0);
}

template <class T>
int three(const T& a, const T& b) {
    return a < b ? -1 : (b < a ? 1 : 0);
}

std::optional<int> compareNumbers(const Value& a, const Value& b) {
    if (const auto* i = std::get_if<std::int64_t>(&a.v)) {
        if (const auto* j = std::get_if<std::int64_t>(&b.v))
            return three(*i, *j);
        if (const auto* u = std::get_if<std::uint64_t>(&b.v))
            return *i < 0 ? -1 : three(static_cast<std::uint64_t>(*i), *u);
        if (const auto* d = std::get_if<double>(&b.v))
            return compareIntDouble(*i, *d);
    } else if (const auto* u = std::get_if<std::uint64_t>(&a.v)) {
        if (const auto* j = std::get_if<std::int64_t>(&b.v))
            return *j < 0 ? 1 : three(*u, static_cast<std::uint64_t>(*j));
        if (const auto* w = std::get_if<std::uint64_t>(&b.v))
            return three(*u, *w);
        if (const auto* d = std::get_if<double>(&b.v))
            return compareUintDouble(*u, *d);
    } else if (const auto* d = std::get_if<double>(&a.v)) {
        if (const auto* j = std::get_if<std::int64_t>(&b.v)) {
            auto r = compareIntDouble(*j, *d);
            return r ? std::optional<int>(-*r) : std::nullopt;
        }
        if (const auto* w = std::get_if<std::uint64_t>(&b.v)) {
            auto r = compareUintDouble(*w, *d);
            return r ? std::optional<int>(-*r) : std::nullopt;
        }
        if (const auto* e = std::get_if<double>(&b.v)) {
            if (std::isnan(*d) || std::isnan(*e))
                return std::nullopt;
            return three(*d, *e);
        }
    }
    return std::nullopt;
}

bool isNumber(const Value& v) {
    return v.is<std::int64_t>() || v.is<std::uint64_t>() || v.is<double>();
}

}  // namespace

std::string toString(const Value& value) {
    std::string out;
    appendValue(out, value);
    return out;
}

bool HostMap::equals(const Opaque& other) const {
    const auto* that = dynamic_cast<const HostMap*>(&other);
    return that && detail::mapsEqual(entries(), that->entries());
}

std::string HostMap::debugString() const {
    std::string out;
    appendMap(out, entries());
    return out;
}

const Value* Activation::find(std::string_view name) const {
    const auto it = values_.find(name);
    return it == values_.end() ? nullptr : &it->second;
}

namespace detail {

std::optional<int> compareValues(const Value& a, const Value& b) {
    if (isNumber(a) && isNumber(b))
        return compareNumbers(a, b);
    if (a.v.index() != b.v.index())
        return std::nullopt;
    if (const auto* s = std::get_if<std::string>(&a.v))
        return three(*s, b.as<std::string>());  // byte order of UTF-8 is code point order
    if (const auto* x = std::get_if<Bytes>(&a.v))
        return three(x->data, b.as<Bytes>().data);
    if (const auto* x = std::get_if<bool>(&a.v))
        return three(*x, b.as<bool>());
    return std::nullopt;
}

bool celEquals(const Value& a, const Value& b) {
    if (isNumber(a) && isNumber(b)) {
        const auto r = compareNumbers(a, b);
        return r && *r == 0;
    }
    if (a.v.index() != b.v.index()) {
        // A HostMap equals a Map with the same entries.
        const Map* x = asHostMap(a) || asHostMap(b) ? mapEntries(a) : nullptr;
        const Map* y = x ? mapEntries(b) : nullptr;
        return x && y && mapsEqual(*x, *y);
    }
    struct Visitor {
        const Value& b;
        bool operator()(const Null&) const { return true; }
        bool operator()(bool x) const { return x == b.as<bool>(); }
        bool operator()(std::int64_t) const { return false; }  // handled above
        bool operator()(std::uint64_t) const { return false; }
        bool operator()(double) const { return false; }
        bool operator()(const std::string& s) const { return s == b.as<std::string>(); }
        bool operator()(const Bytes& x) const { return x == b.as<Bytes>(); }
        bool operator()(const std::shared_ptr<const List>& list) const {
            const auto& other = *b.as<std::shared_ptr<const List>>();
            if (list->size() != other.size())
                return false;
            for (std::size_t i = 0; i < list->size(); ++i)
                if (!celEquals((*list)[i], other[i]))
                    return false;
            return true;
        }
        bool operator()(const std::shared_ptr<const Map>& map) const {
            return mapsEqual(*map, *b.as<std::shared_ptr<const Map>>());
        }
        bool operator()(const TypeValue& t) const { return t == b.as<TypeValue>(); }
        bool operator()(const ErrorValue& e) const { return e == b.as<ErrorValue>(); }
        bool operator()(const std::shared_ptr<const Opaque>& o) const {
            const auto& other = b.as<std::shared_ptr<const Opaque>>();
            if (!o || !other)
                return !o && !other;
            return o->typeName() == other->typeName() && o->equals(*other);
        }
    };
    return std::visit(Visitor{b}, a.v);
}

std::string formatDouble(double value) {
    if (std::isnan(value))
        return "NaN";
    if (std::isinf(value))
        return value > 0 ? "+Inf" : "-Inf";
    if (value == 0)
        return std::signbit(value) ? "-0" : "0";
    // The shortest round-tripping digits, laid out as Go's %g does: exponent form when the
    // decimal exponent is < -4 or >= 6, else plain decimal.
    char buf[64];
    const auto result =
        std::to_chars(buf, buf + sizeof buf, std::fabs(value), std::chars_format::scientific);
    const std::string_view text(buf, static_cast<std::size_t>(result.ptr - buf));
    const std::size_t e = text.find('e');
    std::string digits;
    for (const char c : text.substr(0, e))
        if (c != '.')
            digits.push_back(c);
    int exponent = 0;
    std::from_chars(text.data() + e + 1 + (text[e + 1] == '+' ? 1 : 0), text.data() + text.size(),
                    exponent);
    std::string out = value < 0 ? "-" : "";
    if (exponent < -4 || exponent >= 6) {
        out += digits.substr(0, 1);
        if (digits.size() > 1)
            out += "." + digits.substr(1);
        out += exponent < 0 ? "e-" : "e+";
        const int magnitude = std::abs(exponent);
        if (magnitude < 10)
            out += "0";
        out += std::to_string(magnitude);
        return out;
    }
    const int point = exponent + 1;  // digits before the decimal point
    if (point <= 0) {
        out += "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
    } else if (static_cast<std::size_t>(point) >= digits.size()) {
        out += digits + std::string(static_cast<std::size_t>(point) - digits.size(), '0');
    } else {
        out += digits.substr(0, static_cast<std::size_t>(point)) + "." +
               digits.substr(static_cast<std::size_t>(point));
    }
    return out;
}

std::optional<MapKey> toMapKey(const Value& value) {
    // Built in place: GCC 12 with the sanitizers reports a false "maybe uninitialized" when a
    // temporary MapKey is moved into the optional.
    if (const auto* i = std::get_if<std::int64_t>(&value.v))
        return std::optional<MapKey>(std::in_place, std::in_place_index<0>, *i);
    if (const auto* u = std::get_if<std::uint64_t>(&value.v))
        return std::optional<MapKey>(std::in_place, std::in_place_index<1>, *u);
    if (const auto* b = std::get_if<bool>(&value.v))
        return std::optional<MapKey>(std::in_place, std::in_place_index<2>, *b);
    if (const auto* s = std::get_if<std::string>(&value.v))
        return std::optional<MapKey>(std::in_place, std::in_place_index<3>, *s);
    return std::nullopt;
}

bool mapsEqual(const Map& a, const Map& b) {
    if (a.size() != b.size())
        return false;
    for (const auto& [key, item] : a) {
        const Value* found = mapLookup(b, keyValue(key));
        if (!found || !celEquals(item, *found))
            return false;
    }
    return true;
}

Value keyValue(const MapKey& key) {
    return std::visit([](const auto& k) { return Value(k); }, key);
}

const HostMap* asHostMap(const Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const Opaque>>(&value.v);
    return opaque ? dynamic_cast<const HostMap*>(opaque->get()) : nullptr;
}

const Map* mapEntries(const Value& value) {
    if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&value.v))
        return map->get();
    const HostMap* host = asHostMap(value);
    return host ? &host->entries() : nullptr;
}

namespace {

// The keys a lookup tries, in order: numerically equal int, uint and integral double keys name
// the same entry. Returns how many of `out` are set.
std::size_t candidateKeys(const Value& key, std::array<MapKey, 2>& out) {
    if (const auto* i = std::get_if<std::int64_t>(&key.v)) {
        out[0] = *i;
        out[1] = static_cast<std::uint64_t>(*i);
        return *i >= 0 ? 2 : 1;
    }
    if (const auto* u = std::get_if<std::uint64_t>(&key.v)) {
        out[0] = *u;
        out[1] = static_cast<std::int64_t>(*u);
        return *u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) ? 2 : 1;
    }
    if (const auto* d = std::get_if<double>(&key.v)) {
        if (std::isnan(*d) || std::trunc(*d) != *d)
            return 0;
        if (*d >= -9223372036854775808.0 && *d < 9223372036854775808.0)
            return candidateKeys(Value(static_cast<std::int64_t>(*d)), out);
        if (*d >= 0 && *d < 18446744073709551616.0)
            return candidateKeys(Value(static_cast<std::uint64_t>(*d)), out);
        return 0;
    }
    auto k = toMapKey(key);
    if (!k)
        return 0;
    out[0] = std::move(*k);
    return 1;
}

bool keyType(const Value& key) {
    return toMapKey(key).has_value() || key.is<double>();
}

}  // namespace

std::optional<Value> lookupKey(const Value& map, const Value& key, bool* unsupported) {
    if (unsupported)
        *unsupported = !keyType(key);
    if (const auto* m = std::get_if<std::shared_ptr<const Map>>(&map.v)) {
        const Value* found = mapLookup(**m, key);
        return found ? std::optional<Value>(*found) : std::nullopt;
    }
    const HostMap* host = asHostMap(map);
    if (!host)
        return std::nullopt;
    std::array<MapKey, 2> keys;
    const std::size_t n = candidateKeys(key, keys);
    for (std::size_t i = 0; i < n; ++i)
        if (auto found = host->lookup(keys[i]))
            return found;
    return std::nullopt;
}

std::optional<Value> lookupField(const Value& map, const MapKey& key) {
    if (const auto* m = std::get_if<std::shared_ptr<const Map>>(&map.v)) {
        const auto it = (*m)->find(key);
        return it == (*m)->end() ? std::nullopt : std::optional<Value>(it->second);
    }
    const HostMap* host = asHostMap(map);
    return host ? host->lookup(key) : std::nullopt;
}

bool OptionalValue::equals(const Opaque& other) const {
    const auto* that = dynamic_cast<const OptionalValue*>(&other);
    if (!that || value_.has_value() != that->value_.has_value())
        return false;
    return !value_ || celEquals(*value_, *that->value_);
}

std::string OptionalValue::debugString() const {
    return value_ ? "optional.of(" + toString(*value_) + ")" : "optional.none()";
}

Value makeOptional(Value value) {
    return Value(std::shared_ptr<const Opaque>(std::make_shared<OptionalValue>(std::move(value))));
}

Value noneOptional() {
    static const Value none(
        std::shared_ptr<const Opaque>(std::make_shared<OptionalValue>(std::nullopt)));
    return none;
}

Value optionalOf(std::optional<Value> value) {
    return value ? makeOptional(std::move(*value)) : noneOptional();
}

}  // namespace detail

Value optionalValue(std::optional<Value> value) {
    return detail::optionalOf(std::move(value));
}

namespace detail {

const OptionalValue* asOptional(const Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const Opaque>>(&value.v);
    return opaque ? dynamic_cast<const OptionalValue*>(opaque->get()) : nullptr;
}

bool isZeroValue(const Value& value) {
    struct Visitor {
        bool operator()(const Null&) const { return true; }
        bool operator()(bool b) const { return !b; }
        bool operator()(std::int64_t i) const { return i == 0; }
        bool operator()(std::uint64_t u) const { return u == 0; }
        bool operator()(double d) const { return d == 0; }
        bool operator()(const std::string& s) const { return s.empty(); }
        bool operator()(const Bytes& b) const { return b.data.empty(); }
        bool operator()(const std::shared_ptr<const List>& l) const { return l->empty(); }
        bool operator()(const std::shared_ptr<const Map>& m) const { return m->empty(); }
        bool operator()(const TypeValue&) const { return false; }
        bool operator()(const ErrorValue&) const { return false; }
        bool operator()(const std::shared_ptr<const Opaque>& o) const {
            return !o || o->isZeroValue();
        }
    };
    return std::visit(Visitor{}, value.v);
}

const Value* mapLookup(const Map& map, const Value& key) {
    auto find = [&](const MapKey& k) -> const Value* {
        const auto it = map.find(k);
        return it == map.end() ? nullptr : &it->second;
    };
    // Numerically equal int, uint and integral double keys name the same entry.
    if (const auto* i = std::get_if<std::int64_t>(&key.v)) {
        if (const Value* v = find(MapKey(*i)))
            return v;
        return *i >= 0 ? find(MapKey(static_cast<std::uint64_t>(*i))) : nullptr;
    }
    if (const auto* u = std::get_if<std::uint64_t>(&key.v)) {
        if (const Value* v = find(MapKey(*u)))
            return v;
        return *u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                   ? find(MapKey(static_cast<std::int64_t>(*u)))
                   : nullptr;
    }
    if (const auto* d = std::get_if<double>(&key.v)) {
        if (std::isnan(*d) || std::trunc(*d) != *d)
            return nullptr;
        if (*d >= -9223372036854775808.0 && *d < 9223372036854775808.0)
            return mapLookup(map, Value(static_cast<std::int64_t>(*d)));
        if (*d >= 0 && *d < 18446744073709551616.0)
            return mapLookup(map, Value(static_cast<std::uint64_t>(*d)));
        return nullptr;
    }
    const auto k = toMapKey(key);
    return k ? find(*k) : nullptr;
}

const char* binaryOpName(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add:
            return "_+_";
        case BinaryOp::Sub:
            return "_-_";
        case BinaryOp::Mul:
            return "_*_";
        case BinaryOp::Div:
            return "_/_";
        case BinaryOp::Mod:
            return "_%_";
        case BinaryOp::Less:
            return "_<_";
        case BinaryOp::LessEq:
            return "_<=_";
        case BinaryOp::Greater:
            return "_>_";
        case BinaryOp::GreaterEq:
            return "_>=_";
        case BinaryOp::Eq:
            return "_==_";
        case BinaryOp::NotEq:
            return "_!=_";
        case BinaryOp::In:
            return "@in";
    }
    return "?";
}

Builtin lookupBuiltin(std::string_view name) {
    static const std::unordered_map<std::string_view, Builtin> kBuiltins{
        {"size", Builtin::Size},
        {"int", Builtin::Int},
        {"uint", Builtin::Uint},
        {"double", Builtin::Double},
        {"string", Builtin::String},
        {"bytes", Builtin::Bytes},
        {"bool", Builtin::Bool},
        {"dyn", Builtin::Dyn},
        {"type", Builtin::Type},
        {"contains", Builtin::Contains},
        {"startsWith", Builtin::StartsWith},
        {"endsWith", Builtin::EndsWith},
        {"matches", Builtin::Matches},
        {"lowerAscii", Builtin::LowerAscii},
        {"upperAscii", Builtin::UpperAscii},
        {"split", Builtin::Split},
        {"replace", Builtin::Replace},
        {"substring", Builtin::Substring},
        {"indexOf", Builtin::IndexOf},
        {"lastIndexOf", Builtin::LastIndexOf},
        {"join", Builtin::Join},
        {"trim", Builtin::Trim},
        {"charAt", Builtin::CharAt},
        {"format", Builtin::Format},
        {"hasValue", Builtin::HasValue},
        {"value", Builtin::OptValue},
        {"orValue", Builtin::OrValue},
        {"or", Builtin::Or},
        {"optional.of", Builtin::OptionalOf},
        {"optional.ofNonZeroValue", Builtin::OptionalOfNonZero},
        {"optional.none", Builtin::OptionalNone},
    };
    const auto it = kBuiltins.find(name);
    return it == kBuiltins.end() ? Builtin::None : it->second;
}

// UTF-8 decoding is lenient: a byte that does not start a valid sequence counts as one code
// point, so malformed text (only reachable through host values) never breaks indexing.
namespace {
std::size_t sequenceLength(std::string_view text, std::size_t i) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xE  ? 3
                      : (c >> 3) == 0x1E ? 4
                                         : 0;
    if (len == 0 || i + len > text.size())
        return 0;
    for (std::size_t k = 1; k < len; ++k)
        if ((static_cast<unsigned char>(text[i + k]) & 0xC0) != 0x80)
            return 0;
    return len;
}
}  // namespace

std::vector<std::size_t> codePointOffsets(std::string_view text) {
    std::vector<std::size_t> offsets;
    offsets.reserve(text.size() + 1);
    for (std::size_t i = 0; i < text.size();) {
        offsets.push_back(i);
        const std::size_t len = sequenceLength(text, i);
        i += len == 0 ? 1 : len;
    }
    offsets.push_back(text.size());
    return offsets;
}

std::size_t codePointCount(std::string_view text) {
    std::size_t count = 0;
    for (std::size_t i = 0; i < text.size(); ++count) {
        const std::size_t len = sequenceLength(text, i);
        i += len == 0 ? 1 : len;
    }
    return count;
}

bool validUtf8(std::string_view text) {
    for (std::size_t i = 0; i < text.size();) {
        const std::size_t len = sequenceLength(text, i);
        if (len == 0)
            return false;
        const auto c0 = static_cast<unsigned char>(text[i]);
        if (len > 1) {
            // Reject overlong forms, surrogates and values above U+10FFFF.
            const auto c1 = static_cast<unsigned char>(text[i + 1]);
            if ((len == 2 && c0 < 0xC2) || (len == 3 && c0 == 0xE0 && c1 < 0xA0) ||
                (len == 3 && c0 == 0xED && c1 >= 0xA0) || (len == 4 && c0 == 0xF0 && c1 < 0x90) ||
                (len == 4 && (c0 > 0xF4 || (c0 == 0xF4 && c1 >= 0x90))))
                return false;
        }
        i += len;
    }
    return true;
}

void appendUtf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

}  // namespace detail

}  // namespace numadra::cel
