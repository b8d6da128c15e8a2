// The CEL conformance harness (harness.hpp says what it does). Why one file of ~1,200 lines: the
// reader of the conformance tests' proto3 JSON, the conversion of their values to ours, the
// scope rules and the strict comparison are one translation of one format, used by nothing else.

#include "harness.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

#include "numadra/common/text.hpp"
#include "numadra/dracel/device.hpp"
#include "numadra/dracel/environment.hpp"

namespace numadra::cel::conformance {
namespace {

using nlohmann::json;

template <class Int>
Result<Int> parseInteger(const json& j, std::string_view what) {
    if (j.is_number_integer()) {
        if constexpr (std::is_signed_v<Int>) {
            if (j.is_number_unsigned() && j.get<std::uint64_t>() > std::uint64_t{INT64_MAX}) {
                return Error{std::string(what) + " out of range: " + j.dump()};
            }
            return static_cast<Int>(j.get<std::int64_t>());
        } else {
            if (!j.is_number_unsigned()) {
                return Error{std::string(what) + " out of range: " + j.dump()};
            }
            return static_cast<Int>(j.get<std::uint64_t>());
        }
    }
    if (!j.is_string()) {
        return Error{std::string(what) + " is neither a number nor a string: " + j.dump()};
    }
    const auto& text = j.get_ref<const std::string&>();
    Int value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) {
        return Error{std::string(what) + " is not a valid integer: \"" + text + "\""};
    }
    return value;
}

Result<double> parseDouble(const json& j) {
    if (j.is_number()) {
        return j.get<double>();
    }
    if (!j.is_string()) {
        return Error{"doubleValue is neither a number nor a string: " + j.dump()};
    }
    const auto& text = j.get_ref<const std::string&>();
    if (text == "NaN") {
        return std::nan("");
    }
    if (text == "Infinity") {
        return HUGE_VAL;
    }
    if (text == "-Infinity") {
        return -HUGE_VAL;
    }
    // proto3 JSON also allows a double written as a string of digits.
    std::istringstream in(text);
    in.imbue(std::locale::classic());
    double value = 0;
    in >> value;
    if (!in || in.peek() != std::char_traits<char>::eof()) {
        return Error{"doubleValue is not a valid number: \"" + text + "\""};
    }
    return value;
}

Result<MapKey> mapKeyFromValue(const Value& key) {
    if (const auto* i = std::get_if<std::int64_t>(&key.v)) {
        return MapKey{*i};
    }
    if (const auto* u = std::get_if<std::uint64_t>(&key.v)) {
        return MapKey{*u};
    }
    if (const auto* b = std::get_if<bool>(&key.v)) {
        return MapKey{*b};
    }
    if (const auto* s = std::get_if<std::string>(&key.v)) {
        return MapKey{*s};
    }
    return Error{"a map key must be an int, uint, bool or string, not " + describe(key)};
}

Value valueFromKey(const MapKey& key) {
    return std::visit([](const auto& k) { return Value(k); }, key);
}

// --- expression scan --------------------------------------------------------------------------

struct Token {
    enum Kind { Ident, Punct, Literal } kind;
    std::string text;
};

bool isIdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isIdentChar(char c) {
    return isIdentStart(c) || isDigit(c);
}
bool isHexDigit(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// Skips a quoted literal starting at `i` (at the quote); `raw` disables escapes.
std::size_t skipQuoted(std::string_view s, std::size_t i, bool raw) {
    const char quote = s[i];
    const bool triple = s.substr(i, 3) == std::string(3, quote);
    i += triple ? 3 : 1;
    while (i < s.size()) {
        if (!raw && s[i] == '\\') {
            i += 2;
            continue;
        }
        if (triple ? s.substr(i, 3) == std::string(3, quote) : s[i] == quote) {
            return i + (triple ? 3 : 1);
        }
        ++i;
    }
    return s.size();
}

// A rough CEL lexer: enough to see identifiers, calls and punctuation outside string literals.
std::vector<Token> tokenize(std::string_view s) {
    std::vector<Token> tokens;
    std::size_t i = 0;
    while (i < s.size()) {
        const char c = s[i];
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
            ++i;
        } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
            while (i < s.size() && s[i] != '\n') {
                ++i;
            }
        } else if (c == '"' || c == '\'') {
            i = skipQuoted(s, i, false);
            tokens.push_back({Token::Literal, "\"\""});
        } else if (c == '`') {
            // A backtick-quoted field name: one token, its dots and dashes are not syntax.
            const std::size_t close = s.find('`', i + 1);
            i = close == std::string_view::npos ? s.size() : close + 1;
            tokens.push_back({Token::Literal, "``"});
        } else if (isIdentStart(c)) {
            std::size_t end = i;
            while (end < s.size() && isIdentChar(s[end])) {
                ++end;
            }
            const std::string word(s.substr(i, end - i));
            const bool prefix =
                word.size() <= 2 && word.find_first_not_of("rRbB") == std::string::npos;
            if (prefix && end < s.size() && (s[end] == '"' || s[end] == '\'')) {
                const bool raw = word.find_first_of("rR") != std::string::npos;
                i = skipQuoted(s, end, raw);
                tokens.push_back({Token::Literal, "\"\""});
            } else {
                tokens.push_back({Token::Ident, word});
                i = end;
            }
        } else if (isDigit(c) || (c == '.' && i + 1 < s.size() && isDigit(s[i + 1]) &&
                                  (tokens.empty() || tokens.back().kind == Token::Punct))) {
            std::size_t end = i;
            if (s.substr(i, 2) == "0x" || s.substr(i, 2) == "0X") {
                end += 2;
                while (end < s.size() && isHexDigit(s[end])) {
                    ++end;
                }
            } else {
                while (end < s.size() && isDigit(s[end])) {
                    ++end;
                }
                if (end + 1 < s.size() && s[end] == '.' && isDigit(s[end + 1])) {
                    ++end;
                    while (end < s.size() && isDigit(s[end])) {
                        ++end;
                    }
                }
                if (end < s.size() && (s[end] == 'e' || s[end] == 'E')) {
                    std::size_t exp = end + 1;
                    if (exp < s.size() && (s[exp] == '+' || s[exp] == '-')) {
                        ++exp;
                    }
                    if (exp < s.size() && isDigit(s[exp])) {
                        end = exp;
                        while (end < s.size() && isDigit(s[end])) {
                            ++end;
                        }
                    }
                }
            }
            if (end < s.size() && (s[end] == 'u' || s[end] == 'U')) {
                ++end;
            }
            tokens.push_back({Token::Literal, std::string(s.substr(i, end - i))});
            i = end;
        } else {
            tokens.push_back({Token::Punct, std::string(1, c)});
            ++i;
        }
    }
    return tokens;
}

// Message and enum names of the conformance protos (cel.expr.conformance.proto2/proto3).
const std::set<std::string, std::less<>>& messageNames() {
    static const std::set<std::string, std::less<>> names = {"TestAllTypes", "NestedTestAllTypes",
                                                             "TestRequired"};
    return names;
}

const std::set<std::string, std::less<>>& enumNames() {
    static const std::set<std::string, std::less<>> names = {"GlobalEnum", "NestedEnum"};
    return names;
}

// Extension libraries reached through a namespace that Kubernetes' environment does not enable
// (it has optional.*, sets.*, lists.*, strings.quote, cel.bind), by namespace.
const std::map<std::string, std::string, std::less<>>& foreignNamespaces() {
    static const std::map<std::string, std::string, std::less<>> names = {
        {"math", "cel-go's ext.Math"}, {"base64", "cel-go's ext.Encoders"}};
    return names;
}

OutOfScope message(std::string detail) {
    return {std::string(kScopeProtobufMessage), std::move(detail)};
}

OutOfScope notInKubernetes(std::string detail) {
    return {std::string(kScopeNotInKubernetes), std::move(detail)};
}

bool isProtobuf(const OutOfScope& scope) {
    return scope.reasonClass == kScopeProtobufMessage || scope.reasonClass == kScopeProtobufEnum;
}

// The first protobuf message or enum the expression names, else the first feature Kubernetes'
// environment lacks (a test needing both is a protobuf test).
std::optional<OutOfScope> outOfScopeInExpression(std::string_view expr) {
    const auto tokens = tokenize(expr);
    std::optional<OutOfScope> lacking;
    auto punct = [&](std::size_t k, std::string_view p) {
        return k < tokens.size() && tokens[k].kind == Token::Punct && tokens[k].text == p;
    };
    auto text = [&](std::size_t k) { return k < tokens.size() ? tokens[k].text : std::string(); };
    for (std::size_t k = 0; k < tokens.size(); ++k) {
        const Token& t = tokens[k];
        if (t.kind != Token::Ident) {
            continue;
        }
        // A '.' after an operand selects a member; elsewhere it starts an absolute name.
        const bool member = k > 1 && punct(k - 1, ".") &&
                            (tokens[k - 2].kind != Token::Punct || punct(k - 2, ")") ||
                             punct(k - 2, "]") || punct(k - 2, "}"));
        if (member) {
            continue;
        }
        const bool qualifier = punct(k + 1, ".");
        if (enumNames().contains(t.text)) {
            return OutOfScope{std::string(kScopeProtobufEnum), "enum " + t.text};
        }
        if (messageNames().contains(t.text)) {
            return message("message " + t.text);
        }
        if (t.text == "google" && qualifier) {
            // google.protobuf.Timestamp and .Duration name CEL's timestamp and duration types
            // (the value of type(timestamp(...))); any other name, or a literal, is a message.
            const std::string name = text(k + 4);
            const bool typeName = text(k + 2) == "protobuf" && punct(k + 3, ".") &&
                                  (name == "Timestamp" || name == "Duration") && !punct(k + 5, "{");
            if (!typeName) {
                return message("message google.protobuf." + name);
            }
            k += 4;
            continue;
        }
        if (t.text == "proto" && qualifier) {
            return message("proto." + text(k + 2) + "() (protobuf extension fields)");
        }
        if (t.text == "cel" && qualifier) {
            if (text(k + 2) == "expr") {
                return message("message cel.expr.*");
            }
            if (text(k + 2) != "bind" && !lacking) {
                lacking = notInKubernetes("cel." + text(k + 2) +
                                          " (Kubernetes' cel.* macros are cel.bind only)");
            }
        }
        if (const auto it = foreignNamespaces().find(t.text);
            it != foreignNamespaces().end() && qualifier && !lacking) {
            lacking = notInKubernetes(t.text + "." + text(k + 2) + "() (" + it->second +
                                      ", which Kubernetes does not enable)");
        }
    }
    return lacking;
}

constexpr std::string_view kOutOfScope = "out of scope: ";

Error outOfScopeError(std::string_view reasonClass, const std::string& detail) {
    return Error{std::string(kOutOfScope) + std::string(reasonClass) + ": " + detail};
}

// The OutOfScope an outOfScopeError() carries, if `error` is one.
std::optional<OutOfScope> asOutOfScope(const Error& error) {
    std::string_view message = error.message;
    if (!message.starts_with(kOutOfScope)) {
        return std::nullopt;
    }
    message.remove_prefix(kOutOfScope.size());
    const auto colon = message.find(": ");
    return OutOfScope{
        std::string(message.substr(0, colon)),
        colon == std::string_view::npos ? std::string() : std::string(message.substr(colon + 2))};
}

// google.protobuf.Timestamp and Duration values are CEL's timestamps and durations (proto3 JSON
// gives them as RFC 3339 text and as "1.5s"): built by the environment's timestamp() and
// duration(). Every other message value is out of scope.
Result<Value> messageValue(const json& payload) {
    const std::string type = payload.value("@type", std::string("?"));
    const std::string_view prefix = "type.googleapis.com/google.protobuf.";
    const bool timestamp = type == std::string(prefix) + "Timestamp";
    if (!timestamp && type != std::string(prefix) + "Duration") {
        return outOfScopeError(kScopeProtobufMessage, "message value " + type);
    }
    if (!payload.contains("value") || !payload.at("value").is_string()) {
        return Error{type + " value is not a string: " + payload.dump()};
    }
    auto program = Program::compile(timestamp ? "timestamp(text)" : "duration(text)");
    if (!program) {
        return Error{"cannot build a " + type + ": " + program.error().message};
    }
    Activation activation;
    activation.bind("text", Value(payload.at("value").get<std::string>()));
    Value value = program->evaluate(activation, dracel::draEnvironment());
    if (value.isError()) {
        return Error{"invalid " + type + " " + payload.at("value").dump() + ": " +
                     value.as<ErrorValue>().message};
    }
    return value;
}

// The messages of a cel.expr.ErrorSet, joined.
std::string errorText(const json& errorSet) {
    std::string text;
    if (errorSet.contains("errors")) {
        for (const auto& e : errorSet.at("errors")) {
            if (!text.empty()) {
                text += "; ";
            }
            text += e.value("message", std::string("(no message)"));
        }
    }
    return text;
}

void appendEscaped(std::string& out, std::string_view s, bool bytes) {
    for (const unsigned char c : s) {
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
                if (c < 0x20 || c == 0x7f || (bytes && c >= 0x80)) {
                    std::array<char, 5> hex{};
                    std::snprintf(hex.data(), hex.size(), "\\x%02x", c);
                    out += hex.data();
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    for (const unsigned char c : text) {
        if (c < 0x20 && c != '\n' && c != '\t') {
            std::array<char, 5> hex{};
            std::snprintf(hex.data(), hex.size(), "\\x%02x", c);
            out += hex.data();
        } else {
            out += static_cast<char>(c);
        }
    }
    return out;
}

namespace {

std::string describeDouble(double d) {
    if (std::isnan(d)) {
        return "double(\"NaN\")";
    }
    if (std::isinf(d)) {
        return d > 0 ? "double(\"Infinity\")" : "double(\"-Infinity\")";
    }
    std::array<char, 64> buffer{};
    auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), d);
    std::string text(buffer.data(), ec == std::errc() ? end : buffer.data());
    if (text.find_first_of(".eE") == std::string::npos) {
        text += ".0";
    }
    return text;
}

}  // namespace

std::string TestCase::fullName(std::string_view file) const {
    return std::string(file) + "/" + section + "/" + name;
}

Result<std::string> decodeBase64(std::string_view text) {
    auto sextet = [](char c) -> int {
        if (c >= 'A' && c <= 'Z') {
            return c - 'A';
        }
        if (c >= 'a' && c <= 'z') {
            return c - 'a' + 26;
        }
        if (c >= '0' && c <= '9') {
            return c - '0' + 52;
        }
        if (c == '+' || c == '-') {
            return 62;
        }
        if (c == '/' || c == '_') {
            return 63;
        }
        return -1;
    };
    while (!text.empty() && text.back() == '=') {
        text.remove_suffix(1);
    }
    if (text.size() % 4 == 1) {
        return Error{"invalid base64 length"};
    }
    std::string out;
    std::uint32_t bits = 0;
    int count = 0;
    for (const char c : text) {
        const int v = sextet(c);
        if (v < 0) {
            return Error{std::string("invalid base64 character '") + c + "'"};
        }
        bits = (bits << 6) | static_cast<std::uint32_t>(v);
        count += 6;
        if (count >= 8) {
            count -= 8;
            out += static_cast<char>((bits >> count) & 0xffU);
        }
    }
    return out;
}

Result<Value> valueFromJson(const json& j) {
    if (!j.is_object() || j.size() != 1) {
        return Error{"a cel.expr.Value must be an object with exactly one kind: " + j.dump()};
    }
    const std::string kind = j.begin().key();
    const json& payload = j.begin().value();
    if (kind == "nullValue") {
        return Value(Null{});
    }
    if (kind == "boolValue") {
        if (!payload.is_boolean()) {
            return Error{"boolValue is not a boolean: " + payload.dump()};
        }
        return Value(payload.get<bool>());
    }
    if (kind == "int64Value") {
        auto i = parseInteger<std::int64_t>(payload, "int64Value");
        if (!i) {
            return i.error();
        }
        return Value(*i);
    }
    if (kind == "uint64Value") {
        auto u = parseInteger<std::uint64_t>(payload, "uint64Value");
        if (!u) {
            return u.error();
        }
        return Value(*u);
    }
    if (kind == "doubleValue") {
        auto d = parseDouble(payload);
        if (!d) {
            return d.error();
        }
        return Value(*d);
    }
    if (kind == "stringValue") {
        if (!payload.is_string()) {
            return Error{"stringValue is not a string: " + payload.dump()};
        }
        return Value(payload.get<std::string>());
    }
    if (kind == "bytesValue") {
        if (!payload.is_string()) {
            return Error{"bytesValue is not a string: " + payload.dump()};
        }
        auto data = decodeBase64(payload.get_ref<const std::string&>());
        if (!data) {
            return Error{"bytesValue: " + data.error().message};
        }
        return Value(Bytes{std::move(*data)});
    }
    if (kind == "typeValue") {
        if (!payload.is_string()) {
            return Error{"typeValue is not a string: " + payload.dump()};
        }
        return Value(TypeValue{payload.get<std::string>()});
    }
    if (kind == "listValue") {
        List items;
        if (payload.contains("values")) {
            for (const auto& item : payload.at("values")) {
                auto v = valueFromJson(item);
                if (!v) {
                    return v.error();
                }
                items.push_back(std::move(*v));
            }
        }
        return Value::list(std::move(items));
    }
    if (kind == "mapValue") {
        Map entries;
        if (payload.contains("entries")) {
            for (const auto& entry : payload.at("entries")) {
                if (!entry.contains("key") || !entry.contains("value")) {
                    return Error{"a map entry needs a key and a value: " + entry.dump()};
                }
                auto key = valueFromJson(entry.at("key"));
                if (!key) {
                    return key.error();
                }
                auto value = valueFromJson(entry.at("value"));
                if (!value) {
                    return value.error();
                }
                auto mapKey = mapKeyFromValue(*key);
                if (!mapKey) {
                    return mapKey.error();
                }
                if (!entries.emplace(std::move(*mapKey), std::move(*value)).second) {
                    return Error{"duplicate map key " + describe(*key)};
                }
            }
        }
        return Value::map(std::move(entries));
    }
    if (kind == "objectValue") {
        return messageValue(payload);
    }
    if (kind == "enumValue") {
        return outOfScopeError(kScopeProtobufEnum, "enum value");
    }
    return Error{"unknown cel.expr.Value kind \"" + kind + "\""};
}

Result<TypePtr> typeFromJson(const json& j) {
    if (!j.is_object() || j.size() != 1) {
        return Error{"a cel.expr.Type must be an object with exactly one kind: " + j.dump()};
    }
    const std::string kind = j.begin().key();
    const json& payload = j.begin().value();
    auto name = [&]() { return payload.is_string() ? payload.get<std::string>() : payload.dump(); };
    if (kind == "primitive") {
        static const std::map<std::string, TypeKind, std::less<>> primitives = {
            {"BOOL", TypeKind::Bool},     {"INT64", TypeKind::Int},     {"UINT64", TypeKind::Uint},
            {"DOUBLE", TypeKind::Double}, {"STRING", TypeKind::String}, {"BYTES", TypeKind::Bytes}};
        const auto it = primitives.find(name());
        if (it == primitives.end()) {
            return Error{"unknown primitive type " + name()};
        }
        return makeType(it->second);
    }
    if (kind == "wellKnown") {
        static const std::map<std::string, TypeKind, std::less<>> known = {
            {"ANY", TypeKind::Any},
            {"TIMESTAMP", TypeKind::Timestamp},
            {"DURATION", TypeKind::Duration}};
        const auto it = known.find(name());
        if (it == known.end()) {
            return Error{"unknown well-known type " + name()};
        }
        return makeType(it->second);
    }
    if (kind == "messageType") {
        // CEL's timestamp and duration are these messages; every other message is out of scope.
        if (name() == "google.protobuf.Timestamp") {
            return makeType(TypeKind::Timestamp);
        }
        if (name() == "google.protobuf.Duration") {
            return makeType(TypeKind::Duration);
        }
        return outOfScopeError(kScopeProtobufMessage, "message type " + name());
    }
    if (kind == "wrapper") {
        return outOfScopeError(kScopeProtobufMessage, "wrapper type " + name());
    }
    if (kind == "dyn") {
        return makeType(TypeKind::Dyn);
    }
    if (kind == "null") {
        return makeType(TypeKind::Null);
    }
    if (kind == "error") {
        return makeType(TypeKind::Error);
    }
    if (kind == "typeParam") {
        return typeParam(name());
    }
    if (kind == "type") {
        if (!payload.is_object() || payload.empty()) {
            return typeType();
        }
        auto of = typeFromJson(payload);
        return of ? Result<TypePtr>(typeType(*of)) : of;
    }
    if (kind == "listType") {
        auto element = typeFromJson(payload.value("elemType", json::object({{"dyn", {}}})));
        return element ? Result<TypePtr>(listType(*element)) : element;
    }
    if (kind == "mapType") {
        auto key = typeFromJson(payload.value("keyType", json::object({{"dyn", {}}})));
        if (!key) {
            return key;
        }
        auto value = typeFromJson(payload.value("valueType", json::object({{"dyn", {}}})));
        return value ? Result<TypePtr>(mapType(*key, *value)) : value;
    }
    if (kind == "abstractType") {
        std::vector<TypePtr> params;
        for (const auto& param : payload.value("parameterTypes", json::array())) {
            auto type = typeFromJson(param);
            if (!type) {
                return type;
            }
            params.push_back(*type);
        }
        const std::string abstractName = payload.value("name", std::string());
        if (abstractName == "optional_type" && params.size() == 1) {
            return optionalType(params[0]);
        }
        return opaqueType(abstractName, std::move(params));
    }
    return Error{"unknown cel.expr.Type kind \"" + kind + "\""};
}

namespace {

// A function the test declares (type_env), as the type checker reads declarations.
Result<std::pair<std::string, OverloadDeclaration>> overloadFromJson(const std::string& function,
                                                                     const json& overload) {
    OverloadDeclaration declaration;
    declaration.id = overload.value("overloadId", std::string());
    declaration.member = overload.value("isInstanceFunction", false);
    std::set<std::string> params;
    auto collectParams = [&](const auto& self, const json& type) -> void {
        if (type.contains("typeParam")) {
            params.insert(type.at("typeParam").get<std::string>());
        }
        for (const auto& [key, nested] : type.items()) {
            if (nested.is_object() || nested.is_array()) {
                self(self, nested);
            }
        }
    };
    for (const auto& param : overload.value("params", json::array())) {
        auto type = typeFromJson(param);
        if (!type) {
            return type.error();
        }
        declaration.args.push_back(*type);
        collectParams(collectParams, param);
    }
    auto result = typeFromJson(overload.value("resultType", json::object({{"dyn", {}}})));
    if (!result) {
        return result.error();
    }
    declaration.result = *result;
    declaration.typeParams.assign(params.begin(), params.end());
    return std::pair{function, std::move(declaration)};
}

}  // namespace

std::optional<OutOfScope> outOfScope(const json& test) {
    // Protobuf first: a test needing messages is a protobuf test whatever else it needs.
    const auto inExpression = outOfScopeInExpression(test.value("expr", std::string()));
    if (inExpression && isProtobuf(*inExpression)) {
        return inExpression;
    }
    const std::string container = test.value("container", std::string());
    if (container.starts_with("cel.expr.conformance") || container == "google.protobuf") {
        return message("names resolve in the container " + container + " of messages");
    }
    if (inExpression) {
        return inExpression;
    }
    if (!container.empty()) {
        return notInKubernetes("container " + container +
                               " (Kubernetes compiles without a container)");
    }
    if (test.value("disableMacros", false)) {
        return notInKubernetes("disable_macros (Kubernetes always expands the macros)");
    }
    if (!test.value("locale", std::string()).empty()) {
        return notInKubernetes("a format() locale (Kubernetes sets none)");
    }
    for (const char* matcher : {"unknown", "anyUnknowns"}) {
        if (test.contains(matcher)) {
            return notInKubernetes(std::string(matcher) +
                                   " result (Kubernetes evaluates without unknown values)");
        }
    }
    if (test.contains("bindings")) {
        for (const auto& [name, binding] : test.at("bindings").items()) {
            if (binding.contains("unknown")) {
                return notInKubernetes("unknown value bound to " + name +
                                       " (Kubernetes evaluates without unknown values)");
            }
        }
    }
    if (test.contains("typeEnv") && !test.value("checkOnly", false)) {
        for (const auto& decl : test.at("typeEnv")) {
            if (decl.contains("function")) {
                return OutOfScope{std::string(kScopeTestFunction),
                                  "evaluates function " + decl.value("name", std::string("?")) +
                                      ", which the test declares without code"};
            }
        }
    }
    return std::nullopt;
}

TestCase parseTest(std::string section, const json& test) {
    TestCase tc;
    tc.section = std::move(section);
    tc.name = test.value("name", std::string("(unnamed)"));
    tc.description = test.value("description", std::string());
    if (!test.contains("expr") || !test.at("expr").is_string()) {
        tc.malformed = "the test has no expr";
        return tc;
    }
    tc.expr = test.at("expr").get<std::string>();
    tc.outOfScope = outOfScope(test);
    tc.checked = !test.value("disableCheck", false);
    tc.checkOnly = test.value("checkOnly", false);

    // Declarations, bindings and the expected value; a message or enum among them makes the
    // test out of scope.
    auto problem = [&](const Error& error, const std::string& where) {
        if (auto scope = asOutOfScope(error)) {
            // A protobuf need outranks a missing Kubernetes feature: it is the first reason.
            if (!tc.outOfScope || (isProtobuf(*scope) && !isProtobuf(*tc.outOfScope))) {
                tc.outOfScope = std::move(scope);
            }
        } else if (!tc.malformed) {
            tc.malformed = where + error.message;
        }
    };
    for (const auto& decl : test.value("typeEnv", json::array())) {
        const std::string name = decl.value("name", std::string());
        if (decl.contains("ident")) {
            auto type = typeFromJson(decl.at("ident").value("type", json::object({{"dyn", {}}})));
            if (type) {
                tc.variables.emplace_back(name, *type);
            } else {
                problem(type.error(), "type_env " + name + ": ");
            }
        } else if (decl.contains("function")) {
            for (const auto& overload : decl.at("function").value("overloads", json::array())) {
                auto declared = overloadFromJson(name, overload);
                if (declared) {
                    tc.functions.push_back(std::move(*declared));
                } else {
                    problem(declared.error(), "type_env " + name + ": ");
                }
            }
        } else {
            problem(Error{"neither ident nor function"}, "type_env " + name + ": ");
        }
    }
    const json bindings = test.value("bindings", json::object());
    for (const auto& [name, binding] : bindings.items()) {
        if (binding.contains("value")) {
            auto v = valueFromJson(binding.at("value"));
            if (v) {
                tc.bindings.emplace_back(name, std::move(*v));
            } else {
                problem(v.error(), "binding " + name + ": ");
            }
        } else if (binding.contains("error")) {
            tc.bindings.emplace_back(name, Value::error(errorText(binding.at("error"))));
        } else if (!binding.contains("unknown")) {
            problem(Error{"neither value nor error"}, "binding " + name + ": ");
        }
    }
    if (test.contains("value")) {
        auto v = valueFromJson(test.at("value"));
        if (v) {
            tc.expected = std::move(*v);
        } else {
            problem(v.error(), "expected value: ");
        }
    } else if (test.contains("typedResult")) {
        const json& typed = test.at("typedResult");
        auto type = typeFromJson(typed.value("deducedType", json::object()));
        if (type) {
            tc.expectedType = *type;
        } else {
            problem(type.error(), "deduced type: ");
        }
        if (typed.contains("result")) {
            auto v = valueFromJson(typed.at("result"));
            if (v) {
                tc.expected = std::move(*v);
            } else {
                problem(v.error(), "expected value: ");
            }
        } else if (!tc.checkOnly) {
            problem(Error{"a typed result without a value needs check_only"}, "");
        }
    } else if (test.contains("evalError")) {
        tc.expectError = true;
        tc.expectedErrorText = errorText(test.at("evalError"));
    } else if (test.contains("anyEvalErrors")) {
        tc.expectError = true;
        for (const auto& set : test.at("anyEvalErrors").value("errors", json::array())) {
            if (!tc.expectedErrorText.empty()) {
                tc.expectedErrorText += " | ";
            }
            tc.expectedErrorText += errorText(set);
        }
    } else if (tc.checkOnly) {
        problem(Error{"check_only without a typed result"}, "");
    } else {
        // SimpleTest: "If no result matcher is given, the expected result is boolean true."
        tc.expected = Value(true);
    }
    return tc;
}

Result<TestFile> parseTestFile(const json& j) {
    if (!j.is_object() || !j.contains("name") || !j.contains("sections")) {
        return Error{"a test file needs \"name\" and \"sections\""};
    }
    TestFile file;
    file.name = j.at("name").get<std::string>();
    for (const auto& section : j.at("sections")) {
        const auto sectionName = section.value("name", std::string("(unnamed)"));
        for (const auto& test : section.value("tests", json::array())) {
            file.tests.push_back(parseTest(sectionName, test));
        }
    }
    return file;
}

namespace {

Result<json> readJson(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return Error{"cannot open " + path.string()};
    }
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) {
        return Error{path.string() + " is not valid JSON"};
    }
    return j;
}

Result<std::string> readText(const std::filesystem::path& path) {
    std::ifstream in(path);
    if (!in) {
        return Error{"cannot open " + path.string()};
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

}  // namespace

Result<TestFile> loadTestFile(const std::filesystem::path& path) {
    auto j = readJson(path);
    if (!j) {
        return j.error();
    }
    auto file = parseTestFile(*j);
    if (!file) {
        return Error{path.string() + ": " + file.error().message};
    }
    return file;
}

Result<std::vector<std::string>> loadIndex(const std::filesystem::path& dataDir) {
    auto j = readJson(dataDir / "index.json");
    if (!j) {
        return j.error();
    }
    std::vector<std::string> names;
    if (!j->is_array()) {
        return Error{(dataDir / "index.json").string() + " is not a list of files"};
    }
    for (const auto& entry : *j) {
        if (!entry.is_object() || !entry.contains("name") || !entry.at("name").is_string()) {
            return Error{(dataDir / "index.json").string() + ": an entry without a name"};
        }
        names.push_back(entry.at("name").get<std::string>());
    }
    return names;
}

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
        s.remove_suffix(1);
    }
    return s;
}

std::vector<std::string_view> splitOn(std::string_view s, std::string_view separator) {
    std::vector<std::string_view> parts;
    for (std::size_t at = s.find(separator); at != std::string_view::npos; at = s.find(separator)) {
        parts.push_back(trim(s.substr(0, at)));
        s.remove_prefix(at + separator.size());
    }
    parts.push_back(trim(s));
    return parts;
}

bool isCountClass(std::string_view name) {
    return name == "passed" || name == "unchecked" || name == "listed" ||
           name == kScopeProtobufMessage || name == kScopeProtobufEnum ||
           name == kScopeNotInKubernetes || name == kScopeTestFunction;
}

// The fields of an entry of an expectations file (tests/upstream/README.md, "Expectation
// files"), separated by " | ": `count` of them, the last taking the rest of the line, each
// trimmed and none empty. Returns what is wrong otherwise.
Result<std::vector<std::string_view>> splitEntry(std::string_view line, std::size_t count,
                                                 std::string_view layout) {
    std::vector<std::string_view> fields;
    while (fields.size() + 1 < count) {
        const std::size_t at = line.find(kEntrySeparator);
        if (at == std::string_view::npos) {
            break;
        }
        fields.push_back(trim(line.substr(0, at)));
        line.remove_prefix(at + kEntrySeparator.size());
    }
    fields.push_back(trim(line));
    if (fields.size() < count) {
        return Error{"want " + std::to_string(count) + " fields `" + std::string(layout) +
                     "`, got " + std::to_string(fields.size())};
    }
    if (std::ranges::any_of(fields, [](std::string_view field) { return field.empty(); })) {
        return Error{"a field is empty (want `" + std::string(layout) + "`)"};
    }
    return fields;
}

constexpr std::string_view kFileLayout = "file | <name> | passed=<n> [<class>=<n>]...";
constexpr std::string_view kSkipLayout =
    "skip | <file>/<section>/<test> | <class> | <answer start> | <why>";

// `file | <name> | passed=<n> <class>=<n>...`
std::optional<std::string> readFileEntry(std::string_view line, Expectations& out) {
    const auto fields = splitEntry(line, 3, kFileLayout);
    if (!fields) {
        return fields.error().message;
    }
    const std::string_view name = (*fields)[1];
    FileExpectation file;
    for (const std::string_view word : splitOn((*fields)[2], " ")) {
        if (word.empty()) {
            continue;
        }
        const auto equals = word.find('=');
        const std::string_view key = word.substr(0, equals);
        if (equals == std::string_view::npos || !isCountClass(key)) {
            return "\"" + std::string(word) +
                   "\" is not <class>=<count> with a class among passed, unchecked, listed, "
                   "protobuf-message, protobuf-enum, not-in-kubernetes, test-function";
        }
        const std::string_view number = word.substr(equals + 1);
        int count = -1;
        auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), count);
        if (ec != std::errc() || end != number.data() + number.size() || count < 0) {
            return "\"" + std::string(number) + "\" is not a count";
        }
        if (!file.counts.emplace(std::string(key), count).second) {
            return std::string(key) + " is given twice";
        }
    }
    if (!file.counts.contains("passed")) {
        return "a file entry needs passed=<n>";
    }
    if (!out.files.emplace(std::string(name), std::move(file)).second) {
        return "file " + std::string(name) + " is listed twice";
    }
    return std::nullopt;
}

// `skip | <file>/<section>/<test> | <class> | <answer start> | <why>`
std::optional<std::string> readSkipEntry(std::string_view line, Expectations& out) {
    const auto fields = splitEntry(line, 5, kSkipLayout);
    if (!fields) {
        return fields.error().message;
    }
    const std::string_view test = (*fields)[1];
    const std::string_view reasonClass = (*fields)[2];
    const std::string_view answer = (*fields)[3];
    const std::string_view reason = (*fields)[4];
    if (reasonClass != kListedKubernetesDiffers && reasonClass != kListedKubernetesRefuses &&
        reasonClass != kListedEngineGap) {
        return "the class of a listed skip is kubernetes-differs, kubernetes-refuses or "
               "engine-gap, not \"" +
               std::string(reasonClass) + "\"";
    }
    if (std::count(test.begin(), test.end(), '/') < 2) {
        return "\"" + std::string(test) + "\" is not <file>/<section>/<test>";
    }
    ListedSkip skip{std::string(reasonClass), std::string(reason), std::string(answer)};
    if (!out.skips.emplace(std::string(test), std::move(skip)).second) {
        return std::string(test) + " is listed twice";
    }
    return std::nullopt;
}

// One entry: its first field says which kind.
std::optional<std::string> readEntry(std::string_view line, Expectations& out) {
    const std::string_view kind = trim(line.substr(0, line.find(kEntrySeparator)));
    if (kind == "file") {
        return readFileEntry(line, out);
    }
    if (kind == "skip") {
        return readSkipEntry(line, out);
    }
    return "unknown entry \"" + std::string(kind) + "\" (want `" + std::string(kFileLayout) +
           "` or `" + std::string(kSkipLayout) + "`)";
}

}  // namespace

Result<Expectations> parseExpectations(std::string_view text, std::string_view source) {
    Expectations out;
    int number = 0;
    while (!text.empty()) {
        const std::size_t end = text.find('\n');
        const std::string_view raw = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        ++number;
        const std::string_view line = trim(raw);
        std::optional<std::string> problem;
        if (numadra::text::escapeInvalidUtf8(raw) != raw) {
            problem = "not UTF-8";
        } else if (!line.empty() && line.front() != '#') {
            problem = readEntry(line, out);
        }
        if (problem) {
            return Error{std::string(source) + ":" + std::to_string(number) + ": " + *problem};
        }
    }
    return out;
}

Result<Expectations> loadExpectations(const std::filesystem::path& path) {
    auto text = readText(path);
    if (!text) {
        return text.error();
    }
    return parseExpectations(*text, path.string());
}

CompileOptions compileOptionsFor(const TestCase& test) {
    CompileOptions options;
    if (!test.checked) {
        return options;
    }
    Declarations declarations = dracel::deviceDeclarations(dracel::ExpressionKind::Selector);
    auto types = std::make_shared<TypeEnvironment>(*declarations.types);
    for (const auto& [name, type] : test.variables) {
        types->addVariable(name, type);
        declarations.variables.insert_or_assign(name, std::nullopt);
    }
    for (const auto& [name, overload] : test.functions) {
        types->addOverload(name, overload);
    }
    declarations.types = std::move(types);
    options.declarations = std::move(declarations);
    return options;
}

bool sameValue(const Value& a, const Value& b) {
    if (a.v.index() != b.v.index()) {
        return false;
    }
    return std::visit(
        [&](const auto& x) -> bool {
            using T = std::decay_t<decltype(x)>;
            const auto& y = std::get<T>(b.v);
            if constexpr (std::is_same_v<T, double>) {
                return (std::isnan(x) && std::isnan(y)) || x == y;
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const List>>) {
                if (!x || !y) {
                    return !x && !y;
                }
                if (x->size() != y->size()) {
                    return false;
                }
                for (std::size_t i = 0; i < x->size(); ++i) {
                    if (!sameValue((*x)[i], (*y)[i])) {
                        return false;
                    }
                }
                return true;
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const Map>>) {
                if (!x || !y) {
                    return !x && !y;
                }
                if (x->size() != y->size()) {
                    return false;
                }
                for (auto i = x->begin(), k = y->begin(); i != x->end(); ++i, ++k) {
                    if (!(i->first == k->first) || !sameValue(i->second, k->second)) {
                        return false;
                    }
                }
                return true;
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const Opaque>>) {
                return x && y && x->equals(*y);
            } else if constexpr (std::is_same_v<T, ErrorValue>) {
                return true;
            } else {
                return x == y;
            }
        },
        a.v);
}

std::string describe(const Value& value) {
    return std::visit(
        [](const auto& x) -> std::string {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, Null>) {
                return "null";
            } else if constexpr (std::is_same_v<T, bool>) {
                return x ? "true" : "false";
            } else if constexpr (std::is_same_v<T, std::int64_t>) {
                return std::to_string(x);
            } else if constexpr (std::is_same_v<T, std::uint64_t>) {
                return std::to_string(x) + "u";
            } else if constexpr (std::is_same_v<T, double>) {
                return describeDouble(x);
            } else if constexpr (std::is_same_v<T, std::string>) {
                std::string out = "\"";
                appendEscaped(out, x, false);
                return out + "\"";
            } else if constexpr (std::is_same_v<T, Bytes>) {
                std::string out = "b\"";
                appendEscaped(out, x.data, true);
                return out + "\"";
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const List>>) {
                std::string out = "[";
                if (x) {
                    for (std::size_t i = 0; i < x->size(); ++i) {
                        out += (i == 0 ? "" : ", ") + describe((*x)[i]);
                    }
                }
                return out + "]";
            } else if constexpr (std::is_same_v<T, std::shared_ptr<const Map>>) {
                std::string out = "{";
                if (x) {
                    bool first = true;
                    for (const auto& [k, v] : *x) {
                        out += (first ? "" : ", ") + describe(valueFromKey(k)) + ": " + describe(v);
                        first = false;
                    }
                }
                return out + "}";
            } else if constexpr (std::is_same_v<T, TypeValue>) {
                return "type " + x.name;
            } else if constexpr (std::is_same_v<T, ErrorValue>) {
                std::string out = "error(\"";
                appendEscaped(out, x.message, false);
                return out + "\")";
            } else {
                return x ? "<" + x->typeName() + ">" : "<null opaque>";
            }
        },
        value.v);
}

}  // namespace numadra::cel::conformance
