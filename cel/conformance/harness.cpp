#include "harness.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <type_traits>

namespace numadra::cel::conformance {
namespace {

using nlohmann::json;

constexpr std::string_view kUnsupported = "unsupported: ";

Error unsupported(const std::string& reason) {
    return Error{std::string(kUnsupported) + reason};
}

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

// Extension libraries reached through a namespace (`math.greatest(...)`).
const std::set<std::string, std::less<>>& extensionNamespaces() {
    static const std::set<std::string, std::less<>> names = {"strings", "math",  "sets", "base64",
                                                             "lists",   "proto", "ext"};
    return names;
}

// Member functions of CEL extension libraries outside the interpreter's required subset; a test
// using one runs only when the interpreter was found to implement it (see extensionProbes). The
// strings extension functions the subset requires (indexOf, lowerAscii, upperAscii, replace,
// split, substring, join, trim) are deliberately absent: their tests always run.
const std::set<std::string, std::less<>>& optionalMemberFunctions() {
    static const std::set<std::string, std::less<>> names = {
        "charAt", "lastIndexOf", "reverse", "slice", "flatten", "sort", "sortBy", "distinct"};
    return names;
}

const std::set<std::string, std::less<>>& timeFunctions() {
    static const std::set<std::string, std::less<>> names = {
        "getFullYear",  "getMonth", "getDayOfYear", "getDayOfMonth", "getDate",
        "getDayOfWeek", "getHours", "getMinutes",   "getSeconds",    "getMilliseconds"};
    return names;
}

const std::set<std::string, std::less<>>& protobufNames() {
    static const std::set<std::string, std::less<>> names = {
        "TestAllTypes", "NestedTestAllTypes", "GlobalEnum", "TestRequired", "google"};
    return names;
}

std::optional<std::string> unsupportedInExpression(std::string_view expr,
                                                   const Extensions& supported) {
    const auto tokens = tokenize(expr);
    auto punct = [&](std::size_t k, std::string_view p) {
        return k < tokens.size() && tokens[k].kind == Token::Punct && tokens[k].text == p;
    };
    for (std::size_t k = 0; k < tokens.size(); ++k) {
        const Token& t = tokens[k];
        if (t.kind == Token::Punct && t.text == "`") {
            return "backtick-quoted field names (not enabled in Kubernetes CEL)";
        }
        if (t.kind != Token::Ident) {
            continue;
        }
        // A '.' after an operand selects a member; elsewhere it starts an absolute name.
        const bool member = k > 1 && punct(k - 1, ".") &&
                            (tokens[k - 2].kind != Token::Punct || punct(k - 2, ")") ||
                             punct(k - 2, "]") || punct(k - 2, "}"));
        const bool call = punct(k + 1, "(");
        const bool qualifier = punct(k + 1, ".");
        if (!member && protobufNames().count(t.text) != 0) {
            return "protobuf messages (" + t.text + (t.text == "google" ? ".protobuf.*)" : ")");
        }
        if (!member && qualifier && t.text == "cel") {
            if (k + 2 < tokens.size() && tokens[k + 2].text == "expr") {
                return "protobuf messages (cel.expr.*)";
            }
            if (k + 2 >= tokens.size() || tokens[k + 2].text != "bind") {
                return "cel.* extension macros other than cel.bind";
            }
        }
        if (!member && qualifier && extensionNamespaces().count(t.text) != 0) {
            const std::string function =
                k + 2 < tokens.size() ? t.text + "." + tokens[k + 2].text : t.text;
            if (supported.count(function) == 0) {
                return "extension function " + function + "() is not implemented";
            }
            k += 2;  // the function name is not a member call
            continue;
        }
        if (!member && call && (t.text == "timestamp" || t.text == "duration")) {
            return "timestamps/durations (" + t.text + "())";
        }
        if (member && call && timeFunctions().count(t.text) != 0) {
            return "timestamps/durations (" + t.text + "())";
        }
        if (member && call && t.text == "format") {
            return "format() as Kubernetes has it (the strings extension version 2, cel-go's "
                   "first formatter), not the cel-spec's";
        }
        if (member && call && optionalMemberFunctions().count(t.text) != 0 &&
            supported.count(t.text) == 0) {
            return "extension function " + t.text + "() is not implemented";
        }
    }
    return std::nullopt;
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
        return unsupported("protobuf message value (objectValue " +
                           payload.value("@type", std::string("?")) + ")");
    }
    if (kind == "enumValue") {
        return unsupported("protobuf enum value");
    }
    return Error{"unknown cel.expr.Value kind \"" + kind + "\""};
}

const std::vector<std::pair<std::string, std::string>>& extensionProbes() {
    static const std::vector<std::pair<std::string, std::string>> probes = {
        {"charAt", "'abc'.charAt(1) == 'b'"},
        {"lastIndexOf", "'abcb'.lastIndexOf('b') == 3"},
        {"reverse", "'abc'.reverse() == 'cba'"},
        {"strings.quote", "strings.quote('a') == '\"a\"'"},
    };
    return probes;
}

const std::map<std::pair<std::string, std::string>, std::string>& skippedSections() {
    static const std::map<std::pair<std::string, std::string>, std::string> sections = {
        {{"fields", "quoted_map_fields"},
         "backtick-quoted field names (not enabled in Kubernetes CEL)"},
        {{"parse", "struct_field_names"}, "protobuf messages (message construction)"},
    };
    return sections;
}

const std::map<std::vector<std::string>, std::string>& skippedTests() {
    static const std::string pastTheEnd =
        "cel-go v0.29.2 (Kubernetes' Strings v2) finds nothing (-1) at an offset past the end; "
        "the cel-spec expects an error";
    static const std::map<std::vector<std::string>, std::string> tests = {
        {{"string_ext", "value_errors", "indexof_out_of_range"}, pastTheEnd},
        {{"string_ext", "value_errors", "lastindexof_out_of_range"}, pastTheEnd},
    };
    return tests;
}

std::optional<Declarations> declarationsOf(const json& test) {
    if (!test.contains("typeEnv") || test.value("disableCheck", false)) {
        return std::nullopt;
    }
    Declarations declarations;
    for (const auto& decl : test.at("typeEnv")) {
        if (decl.contains("ident")) {
            // Maps and primitives: any field may be selected (no object types without protobuf).
            declarations.variables.emplace(decl.value("name", std::string()), std::nullopt);
        }
    }
    return declarations;
}

std::optional<std::string> unsupportedFeature(const json& test, const Extensions& supported) {
    if (test.value("checkOnly", false)) {
        return "check-only test (the interpreter has no type checker)";
    }
    if (test.value("disableMacros", false)) {
        return "disableMacros (macros are always expanded)";
    }
    if (!test.value("locale", std::string()).empty()) {
        return "locale-dependent formatting";
    }
    for (const char* matcher : {"typedResult", "unknown", "anyUnknowns"}) {
        if (test.contains(matcher)) {
            return std::string(matcher) + " result matcher (" +
                   (std::string_view(matcher) == "typedResult" ? "needs a type checker"
                                                               : "unknown values") +
                   ")";
        }
    }
    if (auto reason = unsupportedInExpression(test.value("expr", std::string()), supported)) {
        return reason;
    }
    if (!test.value("container", std::string()).empty()) {
        return "container (qualified name resolution in " +
               test.at("container").get<std::string>() + ")";
    }
    if (test.contains("typeEnv")) {
        for (const auto& decl : test.at("typeEnv")) {
            if (decl.contains("function")) {
                return "declared host function " + decl.value("name", std::string("?"));
            }
            if (decl.contains("ident") && decl.at("ident").contains("type")) {
                const auto& type = decl.at("ident").at("type");
                if (type.contains("messageType") || type.contains("wellKnown") ||
                    type.contains("abstractType")) {
                    return "variable " + decl.value("name", std::string("?")) + " of type " +
                           type.dump();
                }
            }
        }
    }
    if (test.contains("bindings")) {
        for (const auto& [name, binding] : test.at("bindings").items()) {
            if (binding.contains("unknown")) {
                return "unknown value bound to " + name;
            }
        }
    }
    return std::nullopt;
}

TestCase parseTest(std::string section, const json& test, const Extensions& supported) {
    TestCase tc;
    tc.section = std::move(section);
    tc.name = test.value("name", std::string("(unnamed)"));
    tc.description = test.value("description", std::string());
    if (!test.contains("expr") || !test.at("expr").is_string()) {
        tc.malformed = "the test has no expr";
        return tc;
    }
    tc.expr = test.at("expr").get<std::string>();
    tc.unsupported = unsupportedFeature(test, supported);
    tc.declarations = declarationsOf(test);

    // Bindings and the expected value; an unsupported value kind is a skip reason as well.
    auto problem = [&](const Error& error) {
        std::string_view message = error.message;
        if (message.starts_with(kUnsupported)) {
            if (!tc.unsupported) {
                tc.unsupported = std::string(message.substr(kUnsupported.size()));
            }
        } else if (!tc.malformed) {
            tc.malformed = error.message;
        }
    };
    if (test.contains("bindings")) {
        for (const auto& [name, binding] : test.at("bindings").items()) {
            if (binding.contains("value")) {
                auto v = valueFromJson(binding.at("value"));
                if (v) {
                    tc.bindings.emplace_back(name, std::move(*v));
                } else {
                    problem(Error{v.error().message.starts_with(kUnsupported)
                                      ? v.error().message
                                      : "binding " + name + ": " + v.error().message});
                }
            } else if (binding.contains("error")) {
                tc.bindings.emplace_back(name, Value::error(errorText(binding.at("error"))));
            } else if (!binding.contains("unknown")) {
                problem(Error{"binding " + name + " has neither value nor error"});
            }
        }
    }
    if (test.contains("value")) {
        auto v = valueFromJson(test.at("value"));
        if (v) {
            tc.expected = std::move(*v);
        } else {
            problem(Error{v.error().message.starts_with(kUnsupported)
                              ? v.error().message
                              : "expected value: " + v.error().message});
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
    } else {
        // SimpleTest: "If no result matcher is given, the expected result is boolean true."
        tc.expected = Value(true);
    }
    return tc;
}

Result<TestFile> parseTestFile(const json& j, const Extensions& supported) {
    if (!j.is_object() || !j.contains("name") || !j.contains("sections")) {
        return Error{"a test file needs \"name\" and \"sections\""};
    }
    TestFile file;
    file.name = j.at("name").get<std::string>();
    for (const auto& section : j.at("sections")) {
        const auto sectionName = section.value("name", std::string("(unnamed)"));
        const auto skip = skippedSections().find({file.name, sectionName});
        for (const auto& test : section.value("tests", json::array())) {
            file.tests.push_back(parseTest(sectionName, test, supported));
            TestCase& added = file.tests.back();
            const auto skipTest = skippedTests().find({file.name, sectionName, added.name});
            if (skip != skippedSections().end() && !added.malformed) {
                added.unsupported = skip->second;
            } else if (skipTest != skippedTests().end() && !added.malformed) {
                added.unsupported = skipTest->second;
            }
        }
    }
    return file;
}

Result<TestFile> loadTestFile(const std::filesystem::path& path, const Extensions& supported) {
    std::ifstream in(path);
    if (!in) {
        return Error{"cannot open " + path.string()};
    }
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) {
        return Error{path.string() + " is not valid JSON"};
    }
    auto file = parseTestFile(j, supported);
    if (!file) {
        return Error{path.string() + ": " + file.error().message};
    }
    return file;
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
