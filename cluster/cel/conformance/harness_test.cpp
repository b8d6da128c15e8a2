// The conformance harness's own logic (JSON → cel::Value, strict comparison, out-of-scope
// detection), checked on the hand-made files in cluster/cel/conformance/testdata without the
// network.

#include "harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "numadra/dracel/environment.hpp"

namespace numadra::cel::conformance {
namespace {

using nlohmann::json;

const std::filesystem::path kTestdata =
    std::filesystem::path(NUMADRA_SOURCE_DIR) / "cluster" / "cel" / "conformance" / "testdata";

Value convert(const char* text) {
    auto v = valueFromJson(json::parse(text));
    EXPECT_TRUE(v.ok()) << text << ": " << (v.ok() ? "" : v.error().message);
    return v.ok() ? *v : Value::error("conversion failed");
}

TEST(ConformanceValues, Scalars) {
    EXPECT_TRUE(sameValue(convert(R"({"int64Value": "-9223372036854775808"})"),
                          Value(std::int64_t{INT64_MIN})));
    EXPECT_TRUE(sameValue(convert(R"({"int64Value": 42})"), Value(std::int64_t{42})));
    EXPECT_TRUE(sameValue(convert(R"({"uint64Value": "18446744073709551615"})"),
                          Value(std::uint64_t{UINT64_MAX})));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": -2.5})"), Value(-2.5)));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": 9223372036854776000})"), Value(0x1p63)));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": 18446744073709552000})"), Value(0x1p64)));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": "1e3"})"), Value(1000.0)));
    EXPECT_TRUE(std::isnan(std::get<double>(convert(R"({"doubleValue": "NaN"})").v)));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": "Infinity"})"), Value(HUGE_VAL)));
    EXPECT_TRUE(sameValue(convert(R"({"doubleValue": "-Infinity"})"), Value(-HUGE_VAL)));
    EXPECT_TRUE(sameValue(convert(R"({"stringValue": "h\u00e9 \ud83d\udc31"})"),
                          Value(std::string("h\xc3\xa9 \xf0\x9f\x90\xb1"))));
    EXPECT_TRUE(
        sameValue(convert(R"({"bytesValue": "AP8="})"), Value(Bytes{std::string("\0\xff", 2)})));
    EXPECT_TRUE(sameValue(convert(R"({"boolValue": false})"), Value(false)));
    EXPECT_TRUE(sameValue(convert(R"({"nullValue": null})"), Value(Null{})));
    EXPECT_TRUE(sameValue(convert(R"({"nullValue": "NULL_VALUE"})"), Value(Null{})));
    EXPECT_TRUE(sameValue(convert(R"({"typeValue": "null_type"})"), Value(TypeValue{"null_type"})));
}

TEST(ConformanceValues, ListsAndMaps) {
    EXPECT_TRUE(sameValue(convert(R"({"listValue": {}})"), Value::list({})));
    EXPECT_TRUE(sameValue(convert(R"({"mapValue": {}})"), Value::map({})));
    const Value list = convert(
        R"({"listValue": {"values": [{"int64Value": "1"}, {"listValue": {"values": [{"uint64Value": "2"}]}}]}})");
    EXPECT_TRUE(sameValue(
        list, Value::list({Value(std::int64_t{1}), Value::list({Value(std::uint64_t{2})})})));
    const Value map = convert(R"({"mapValue": {"entries": [
        {"key": {"stringValue": "a"}, "value": {"int64Value": "1"}},
        {"key": {"int64Value": "2"}, "value": {"boolValue": true}},
        {"key": {"uint64Value": "3"}, "value": {"nullValue": null}},
        {"key": {"boolValue": false}, "value": {"doubleValue": 0.5}}]}})");
    Map expected;
    expected.emplace(MapKey{std::string("a")}, Value(std::int64_t{1}));
    expected.emplace(MapKey{std::int64_t{2}}, Value(true));
    expected.emplace(MapKey{std::uint64_t{3}}, Value(Null{}));
    expected.emplace(MapKey{false}, Value(0.5));
    EXPECT_TRUE(sameValue(map, Value::map(expected)));
    expected.erase(MapKey{false});
    EXPECT_FALSE(sameValue(map, Value::map(expected)));
}

TEST(ConformanceValues, OutOfScopeAndMalformed) {
    auto object = valueFromJson(json::parse(
        R"({"objectValue": {"@type": "type.googleapis.com/google.protobuf.Int64Value", "value": "1"}})"));
    ASSERT_FALSE(object.ok());
    EXPECT_EQ(object.error().message,
              "out of scope: protobuf-message: message value "
              "type.googleapis.com/google.protobuf.Int64Value");
    auto nested = valueFromJson(json::parse(R"({"listValue": {"values": [{"enumValue": {}}]}})"));
    ASSERT_FALSE(nested.ok());
    EXPECT_EQ(nested.error().message, "out of scope: protobuf-enum: enum value");
    for (
        const char* bad :
        {R"({"int64Value": "9223372036854775808"})", R"({"uint64Value": -1})",
         R"({"int64Value": "1.5"})", R"({"doubleValue": "fast"})", R"({"bytesValue": "A"})",
         R"({})", R"({"boolValue": 1})",
         R"({"objectValue": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1d"}})",
         R"({"mapValue": {"entries": [{"key": {"doubleValue": 1}, "value": {"nullValue": null}}]}})"}) {
        auto v = valueFromJson(json::parse(bad));
        ASSERT_FALSE(v.ok()) << bad;
        EXPECT_FALSE(v.error().message.starts_with("out of scope: ")) << bad;
    }
}

// google.protobuf.Timestamp and Duration values are CEL's timestamps and durations, built by the
// environment's timestamp() and duration().
TEST(ConformanceValues, TimestampsAndDurations) {
    const Value duration = convert(
        R"({"objectValue": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1.5s"}})");
    EXPECT_EQ(duration.typeName(), "google.protobuf.Duration");
    const Value timestamp = convert(
        R"({"objectValue": {"@type": "type.googleapis.com/google.protobuf.Timestamp", "value": "1970-01-01T00:00:01Z"}})");
    EXPECT_EQ(timestamp.typeName(), "google.protobuf.Timestamp");
    auto program = Program::compile("d == duration('1500ms') && t == timestamp(1)");
    ASSERT_TRUE(program.ok()) << program.error().message;
    Activation activation;
    activation.bind("d", duration);
    activation.bind("t", timestamp);
    EXPECT_TRUE(sameValue(program->evaluate(activation, dracel::draEnvironment()), Value(true)));
}

TEST(ConformanceTypes, FromJson) {
    auto type = [](const char* text) {
        auto t = typeFromJson(json::parse(text));
        return t.ok() ? formatType(**t) : "error: " + t.error().message;
    };
    EXPECT_EQ(type(R"({"primitive": "UINT64"})"), "uint");
    EXPECT_EQ(type(R"({"listType": {"elemType": {"mapType": {"keyType": {"primitive": "STRING"},
              "valueType": {"dyn": {}}}}}})"),
              "list(map(string, dyn))");
    EXPECT_EQ(
        type(R"({"abstractType": {"name": "optional_type", "parameterTypes": [{"null": null}]}})"),
        "optional_type(null_type)");
    EXPECT_EQ(
        type(R"({"abstractType": {"name": "tuple", "parameterTypes": [{"typeParam": "T"}]}})"),
        "tuple(T)");
    EXPECT_EQ(type(R"({"wellKnown": "DURATION"})"), "google.protobuf.Duration");
    EXPECT_EQ(type(R"({"messageType": "google.protobuf.Timestamp"})"), "google.protobuf.Timestamp");
    EXPECT_EQ(type(R"({"messageType": "cel.expr.conformance.proto3.TestAllTypes"})"),
              "error: out of scope: protobuf-message: message type "
              "cel.expr.conformance.proto3.TestAllTypes");
    EXPECT_EQ(type(R"({"wrapper": "INT64"})"),
              "error: out of scope: protobuf-message: wrapper type INT64");
    EXPECT_EQ(type(R"({"primitive": "INT128"})"), "error: unknown primitive type INT128");
}

TEST(ConformanceValues, Base64) {
    EXPECT_EQ(decodeBase64("").value(), "");
    EXPECT_EQ(decodeBase64("YWJj").value(), "abc");
    EXPECT_EQ(decodeBase64("YWI=").value(), "ab");
    EXPECT_EQ(decodeBase64("YQ==").value(), "a");
    EXPECT_EQ(decodeBase64("YQ").value(), "a");
    EXPECT_EQ(decodeBase64("/+8=").value(), "\xff\xef");
    EXPECT_EQ(decodeBase64("_-8").value(), "\xff\xef");
    EXPECT_FALSE(decodeBase64("Y").ok());
    EXPECT_FALSE(decodeBase64("Y*==").ok());
}

TEST(ConformanceValues, StrictEquality) {
    EXPECT_FALSE(sameValue(Value(std::int64_t{1}), Value(std::uint64_t{1})));
    EXPECT_FALSE(sameValue(Value(std::int64_t{1}), Value(1.0)));
    EXPECT_TRUE(sameValue(Value(std::nan("")), Value(std::nan(""))));
    EXPECT_TRUE(sameValue(Value(-0.0), Value(0.0)));
    EXPECT_FALSE(sameValue(Value(std::string("a")), Value(Bytes{"a"})));
    EXPECT_TRUE(sameValue(Value::error("x"), Value::error("y")));
    EXPECT_FALSE(sameValue(Value::error("x"), Value(Null{})));
    EXPECT_FALSE(sameValue(Value::list({Value(std::int64_t{1})}), Value::list({Value(1.0)})));
    EXPECT_FALSE(sameValue(Value(TypeValue{"int"}), Value(TypeValue{"uint"})));
}

TEST(ConformanceValues, Describe) {
    Map map;
    map.emplace(MapKey{std::string("k")}, Value(1.5));
    map.emplace(MapKey{std::uint64_t{2}}, Value(Null{}));
    const Value v = Value::list({Value(std::int64_t{-1}), Value(std::uint64_t{2}), Value(3.0),
                                 Value(std::string("a\"\n")),
                                 Value(Bytes{"\xff"
                                             "a"}),
                                 Value::map(map), Value(TypeValue{"int"}), Value(std::nan(""))});
    EXPECT_EQ(describe(v),
              R"([-1, 2u, 3.0, "a\"\n", b"\xffa", {2u: null, "k": 1.5}, type int, double("NaN")])");
    EXPECT_EQ(describe(Value::error("boom")), R"(error("boom"))");
    EXPECT_EQ(printable(std::string("b'\x00\x01'", 5)), R"(b'\x00\x01')");
}

std::string scopeOf(const json& test) {
    const auto scope = outOfScope(test);
    return scope ? scope->reasonClass + ": " + scope->detail : "in scope";
}

std::string exprScope(const std::string& expr) {
    return scopeOf(json{{"expr", expr}});
}

TEST(ConformanceScope, WhatKubernetesHasIsInScope) {
    for (const char* expr :
         {"[1, 2].exists(x, x > 1) ? 'a' : 'b'", "timestamp(1) > timestamp(0)", "x.getHours() == 1",
          "'abc'.charAt(1) + strings.quote('a') + '%d'.format([1])",
          "m.?k.orValue({?'k': x}) == [1, ?optional.none()]", "x.transformList(i, v, v)",
          "cel.bind(a, 1, a)", "{'a-b': 1}.`a-b` == 1", "sets.contains([1], [1])",
          "type(x) == google.protobuf.Timestamp || type(y) == google.protobuf.Duration",
          "'timestamp(0)'.size() + size(\"TestAllTypes{}\")", "x.TestAllTypes", "(x).GlobalEnum",
          "1 // TestAllTypes\n+ 1", "{'a': 1}.`cel.expr.conformance`"}) {
        EXPECT_EQ(exprScope(expr), "in scope") << expr;
    }
}

TEST(ConformanceScope, ProtobufMessagesAndEnums) {
    EXPECT_EQ(exprScope("dyn(TestAllTypes{})"), "protobuf-message: message TestAllTypes");
    EXPECT_EQ(exprScope("[.TestAllTypes{}]"), "protobuf-message: message TestAllTypes");
    EXPECT_EQ(exprScope("google.protobuf.Value{} == null"),
              "protobuf-message: message google.protobuf.Value");
    EXPECT_EQ(exprScope("google.protobuf.Timestamp{seconds: 1}"),
              "protobuf-message: message google.protobuf.Timestamp");
    EXPECT_EQ(exprScope("[\f.\fcel.\fexpr.T{}]"), "protobuf-message: message cel.expr.*");
    EXPECT_EQ(exprScope("proto.getExt(x, y)"),
              "protobuf-message: proto.getExt() (protobuf extension fields)");
    EXPECT_EQ(exprScope("GlobalEnum.GAZ"), "protobuf-enum: enum GlobalEnum");
    EXPECT_EQ(scopeOf(json{{"expr", "Int32Value{value: 1}"}, {"container", "google.protobuf"}}),
              "protobuf-message: names resolve in the container google.protobuf of messages");
    // A test needing messages is a protobuf test whatever else it needs.
    EXPECT_EQ(exprScope("math.least(TestAllTypes{}.x, 1)"),
              "protobuf-message: message TestAllTypes");
}

TEST(ConformanceScope, WhatKubernetesLacks) {
    EXPECT_EQ(exprScope("math.least(1, 2)"),
              "not-in-kubernetes: math.least() (cel-go's ext.Math, which Kubernetes does not "
              "enable)");
    EXPECT_EQ(exprScope("base64.decode('YQ==')"),
              "not-in-kubernetes: base64.decode() (cel-go's ext.Encoders, which Kubernetes does "
              "not enable)");
    EXPECT_EQ(exprScope("cel.block([1], cel.index(0))"),
              "not-in-kubernetes: cel.block (Kubernetes' cel.* macros are cel.bind only)");
    EXPECT_EQ(scopeOf(json{{"expr", "y"}, {"container", "x"}}),
              "not-in-kubernetes: container x (Kubernetes compiles without a container)");
    EXPECT_EQ(scopeOf(json{{"expr", "[1].all(x, x > 0)"}, {"disableMacros", true}}),
              "not-in-kubernetes: disable_macros (Kubernetes always expands the macros)");
    EXPECT_EQ(scopeOf(json{{"expr", "x"}, {"anyUnknowns", json::object()}}),
              "not-in-kubernetes: anyUnknowns result (Kubernetes evaluates without unknown "
              "values)");
}

TEST(ConformanceScope, DeclaredFunctionsRunOnlyWhenCheckOnly) {
    const auto declared = json::parse(R"({"name": "fn", "function": {"overloads": [
        {"overloadId": "fn_int", "params": [{"primitive": "INT64"}],
         "resultType": {"primitive": "INT64"}}]}})");
    EXPECT_EQ(scopeOf(json{{"expr", "fn(1)"}, {"typeEnv", json::array({declared})}}),
              "test-function: evaluates function fn, which the test declares without code");
    const auto checkOnly =
        parseTest("s", json{{"expr", "fn(1)"},
                            {"typeEnv", json::array({declared})},
                            {"checkOnly", true},
                            {"typedResult", {{"deducedType", {{"primitive", "INT64"}}}}}});
    EXPECT_FALSE(checkOnly.outOfScope);
    EXPECT_FALSE(checkOnly.malformed) << *checkOnly.malformed;
    ASSERT_EQ(checkOnly.functions.size(), 1U);
    EXPECT_EQ(checkOnly.functions[0].second.id, "fn_int");
    EXPECT_TRUE(checkOnly.checkOnly);
    ASSERT_TRUE(checkOnly.expectedType);
    EXPECT_EQ(formatType(*checkOnly.expectedType), "int");
}

TEST(ConformanceCompile, CheckedTestsGetKubernetesDeclarationsAndTheirVariables) {
    const auto test = parseTest("s", json::parse(R"({"expr": "x + 1", "typeEnv": [{"name": "x",
        "ident": {"type": {"primitive": "INT64"}}}, {"name": "a.b",
        "ident": {"type": {"mapType": {}}}}]})"));
    ASSERT_EQ(test.variables.size(), 2U);
    const auto options = compileOptionsFor(test);
    ASSERT_TRUE(options.declarations);
    ASSERT_TRUE(options.declarations->types);
    EXPECT_TRUE(options.declarations->types->variable("a.b"));
    EXPECT_TRUE(options.declarations->types->function("strings.quote"));
    auto program = Program::compile(test.expr, options);
    ASSERT_TRUE(program.ok()) << program.error().message;
    EXPECT_EQ(formatType(*program->checkedType()), "int");
    EXPECT_FALSE(Program::compile("y + 1", options).ok());    // undeclared
    EXPECT_FALSE(Program::compile("x + 'a'", options).ok());  // no overload
}

TEST(ConformanceCompile, UncheckedTestsHaveNoDeclarations) {
    const auto test = parseTest("s", json::parse(R"({"expr": "x", "disableCheck": true,
        "typeEnv": [{"name": "x", "ident": {"type": {"primitive": "INT64"}}}]})"));
    EXPECT_FALSE(test.checked);
    EXPECT_FALSE(compileOptionsFor(test).declarations);
}

TEST(ConformanceExpectations, Parse) {
    auto parsed = parseExpectations(
        "# a comment\n"
        "file | basic | passed=43\n"
        "  # an indented comment\n"
        "file | enums   | passed=0 protobuf-enum=24 protobuf-message=61\n"
        "\n"
        "   \n"
        "skip | string_ext/format/a name with spaces | kubernetes-differs | \"x\" | why\n"
        "skip | t/s/gap | engine-gap | 2 | why: a | b, the last field takes the rest\r\n");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->files.at("basic").counts.at("passed"), 43);
    EXPECT_EQ(parsed->files.at("enums").counts.at("protobuf-message"), 61);
    const auto& skip = parsed->skips.at("string_ext/format/a name with spaces");
    EXPECT_EQ(skip.reasonClass, "kubernetes-differs");
    EXPECT_EQ(skip.reason, "why");
    EXPECT_EQ(skip.answer, "\"x\"");
    const auto& gap = parsed->skips.at("t/s/gap");
    EXPECT_EQ(gap.answer, "2");
    EXPECT_EQ(gap.reason, "why: a | b, the last field takes the rest");
}

TEST(ConformanceExpectations, RefusesWhatItCannotRead) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"fil | basic | passed=1", ":1: unknown entry \"fil\" (want `file | <name> |"},
        {"file basic passed=1", ":1: unknown entry \"file basic passed=1\""},
        {"file | basic", ":1: want 3 fields `file | <name> | passed=<n>"},
        {"file | basic | skipped=2", ":1: \"skipped=2\" is not <class>=<count>"},
        {"file |  | passed=1", ":1: a field is empty (want `file | <name> |"},
        {"file | basic | unchecked=1", ":1: a file entry needs passed=<n>"},
        {"file | basic | passed=-1", ":1: \"-1\" is not a count"},
        {"# a comment\nfile | basic | passed=1\nfile | basic | passed=2",
         ":3: file basic is listed twice"},
        {"skip | a/b/c | whatever | 1 | why", ":1: the class of a listed skip is"},
        {"skip | a/b/c | kubernetes-differs | why",
         ":1: want 5 fields `skip | <file>/<section>/<test> | <class> | <answer start> | <why>`, "
         "got 4"},
        {"skip a/b/c | engine-gap | why | 2", ":1: unknown entry \"skip a/b/c\""},
        {"skip | a/b | engine-gap | 2 | why", ":1: \"a/b\" is not <file>/<section>/<test>"},
        {"skip | a/b/c | engine-gap | 2 | why\nskip | a/b/c | engine-gap | 3 | again",
         ":2: a/b/c is listed twice"},
        {"file | basic | passed=1\n# \xff\n", ":2: not UTF-8"},
    };
    for (const auto& [text, message] : cases) {
        auto parsed = parseExpectations(text, "x.txt");
        ASSERT_FALSE(parsed.ok()) << text;
        EXPECT_TRUE(parsed.error().message.starts_with("x.txt" + message))
            << text << ": " << parsed.error().message;
    }
}

TEST(ConformanceExpectations, TheCommittedFileReads) {
    auto committed = loadExpectations(std::filesystem::path(NUMADRA_SOURCE_DIR) / "cluster" /
                                      "cel" / "conformance" / "expectations.txt");
    ASSERT_TRUE(committed.ok()) << committed.error().message;
    EXPECT_EQ(committed->files.size(), 29U);  // every file of @bufbuild/cel-spec 0.6.1
}

TEST(ConformanceFiles, Selftest) {
    auto file = loadTestFile(kTestdata / "selftest.json");
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->name, "selftest");
    ASSERT_EQ(file->tests.size(), 61U);
    int outOfScope = 0;
    for (const auto& test : file->tests) {
        EXPECT_FALSE(test.malformed) << test.name << ": " << *test.malformed;
        EXPECT_EQ(test.outOfScope.has_value(), test.section == "out_of_scope")
            << test.fullName("selftest") << ": "
            << (test.outOfScope ? test.outOfScope->detail : "(in scope)");
        outOfScope += test.outOfScope ? 1 : 0;
    }
    EXPECT_EQ(outOfScope, 16);

    auto find = [&](std::string_view section, std::string_view name) -> const TestCase& {
        for (const auto& test : file->tests) {
            if (test.section == section && test.name == name) {
                return test;
            }
        }
        ADD_FAILURE() << "no test " << section << "/" << name;
        static const TestCase none;
        return none;
    };
    EXPECT_TRUE(sameValue(find("values", "uint_max").expected, Value(std::uint64_t{UINT64_MAX})));
    EXPECT_TRUE(sameValue(find("values", "no_matcher_means_true").expected, Value(true)));
    EXPECT_EQ(describe(find("values", "list").expected),
              R"([1, 2u, 3.5, "a", b"\xff", null, true, []])");
    EXPECT_EQ(describe(find("values", "map").expected), R"({2: "b", 4u: {}, true: 3u, "a": 1})");
    const auto& bound = find("bindings", "int");
    ASSERT_EQ(bound.bindings.size(), 1U);
    EXPECT_EQ(bound.bindings[0].first, "x");
    EXPECT_TRUE(sameValue(bound.bindings[0].second, Value(std::int64_t{41})));
    const auto& boundError = find("bindings", "error_absorbed");
    ASSERT_EQ(boundError.bindings.size(), 1U);
    EXPECT_TRUE(boundError.bindings[0].second.isError());
    EXPECT_TRUE(find("errors", "eval_error").expectError);
    EXPECT_EQ(find("errors", "eval_error").expectedErrorText, "divide by zero");
    EXPECT_TRUE(find("errors", "any_eval_errors").expectError);
    EXPECT_EQ(find("errors", "any_eval_errors").expectedErrorText,
              "index out of range | invalid_argument");
    const auto& objectValue = find("out_of_scope", "object_value");
    ASSERT_TRUE(objectValue.outOfScope);
    EXPECT_EQ(objectValue.outOfScope->reasonClass, "protobuf-message");
    EXPECT_EQ(objectValue.outOfScope->detail,
              "message value type.googleapis.com/google.protobuf.Int64Value");
    EXPECT_FALSE(find("values", "list").checked);
    EXPECT_TRUE(find("checked", "check_only").checkOnly);
}

TEST(ConformanceFiles, MalformedTestsAreFailuresNotSkips) {
    auto file = loadTestFile(kTestdata / "malformed.json");
    ASSERT_TRUE(file.ok()) << file.error().message;
    ASSERT_EQ(file->tests.size(), 10U);
    for (const auto& test : file->tests) {
        EXPECT_TRUE(test.malformed) << test.name;
        EXPECT_FALSE(test.outOfScope) << test.name;
    }
}

TEST(ConformanceFiles, MissingOrInvalidFile) {
    EXPECT_FALSE(loadTestFile(kTestdata / "no-such-file.json").ok());
    EXPECT_FALSE(parseTestFile(json::parse(R"({"tests": []})")).ok());
}

}  // namespace
}  // namespace numadra::cel::conformance
