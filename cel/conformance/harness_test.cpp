// The conformance harness's own logic (JSON → cel::Value, strict comparison, unsupported-feature
// detection), checked on the hand-made files in cel/conformance/testdata without the network.

#include "harness.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace numadra::cel::conformance {
namespace {

using nlohmann::json;

const std::filesystem::path kTestdata =
    std::filesystem::path(NUMADRA_SOURCE_DIR) / "cel" / "conformance" / "testdata";

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

TEST(ConformanceValues, UnsupportedAndMalformed) {
    auto object = valueFromJson(json::parse(
        R"({"objectValue": {"@type": "type.googleapis.com/google.protobuf.Duration", "value": "1s"}})"));
    ASSERT_FALSE(object.ok());
    EXPECT_EQ(object.error().message,
              "unsupported: protobuf message value (objectValue "
              "type.googleapis.com/google.protobuf.Duration)");
    auto nested = valueFromJson(json::parse(R"({"listValue": {"values": [{"enumValue": {}}]}})"));
    ASSERT_FALSE(nested.ok());
    EXPECT_TRUE(nested.error().message.starts_with("unsupported: "));
    for (
        const char* bad :
        {R"({"int64Value": "9223372036854775808"})", R"({"uint64Value": -1})",
         R"({"int64Value": "1.5"})", R"({"doubleValue": "fast"})", R"({"bytesValue": "A"})",
         R"({})", R"({"boolValue": 1})",
         R"({"mapValue": {"entries": [{"key": {"doubleValue": 1}, "value": {"nullValue": null}}]}})"}) {
        auto v = valueFromJson(json::parse(bad));
        ASSERT_FALSE(v.ok()) << bad;
        EXPECT_FALSE(v.error().message.starts_with("unsupported: ")) << bad;
    }
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

TEST(ConformanceFeatures, ExpressionScan) {
    auto reason = [](const std::string& expr) { return unsupportedFeature(json{{"expr", expr}}); };
    EXPECT_EQ(reason("[1, 2].exists(x, x > 1) ? 'a' : 'b'"), std::nullopt);
    EXPECT_EQ(reason("'timestamp(0)'.size() + size(\"TestAllTypes{}\")"), std::nullopt);
    EXPECT_EQ(reason("r'a.?b' + R\"\"\"x.charAt(1)\"\"\" + b'google.protobuf'"), std::nullopt);
    EXPECT_EQ(reason("'a\\'.format(1)'.size() == 14"), std::nullopt);
    EXPECT_EQ(reason("'abc'.indexOf('b') + 'x'.lowerAscii().size()"), std::nullopt);
    EXPECT_EQ(reason("m.value == 1 && value(1) == 2 && 1.5 + .5 == 2.0 && 0x1fu > 1u"),
              std::nullopt);
    EXPECT_EQ(reason("x ? 1 : 2"), std::nullopt);
    EXPECT_EQ(reason("timestamp(1) > timestamp(0)"), "timestamps/durations (timestamp())");
    EXPECT_EQ(reason("x.getHours() == 1"), "timestamps/durations (getHours())");
    EXPECT_EQ(reason("m.?k.orValue({?'k': x}) == [1, ?optional.none()]"), std::nullopt);
    EXPECT_EQ(reason("x.transformList(i, v, v)"), std::nullopt);
    EXPECT_EQ(reason("42.charAt(1)"), "extension function charAt() is not implemented");
    EXPECT_EQ(reason("'a'.lastIndexOf('a')"),
              "extension function lastIndexOf() is not implemented");
    EXPECT_EQ(reason("math.least(1, 2)"), "extension function math.least() is not implemented");
    EXPECT_EQ(reason("strings.quote('a')"),
              "extension function strings.quote() is not implemented");
    EXPECT_EQ(reason("cel.bind(a, 1, a)"), std::nullopt);
    EXPECT_EQ(reason("cel.block([1], cel.index(0))"), "cel.* extension macros other than cel.bind");
    EXPECT_EQ(reason("{'a-b': 1}.`a-b`"),
              "backtick-quoted field names (not enabled in Kubernetes CEL)");
    EXPECT_EQ(reason("dyn(TestAllTypes{})"), "protobuf messages (TestAllTypes)");
    EXPECT_EQ(reason("google.protobuf.Value{} == null"), "protobuf messages (google.protobuf.*)");
}

TEST(ConformanceFeatures, ExpressionScanSkipsSpacingAndComments) {
    auto reason = [](const std::string& expr) { return unsupportedFeature(json{{"expr", expr}}); };
    EXPECT_EQ(reason("1 // TestAllTypes\n+ 1"), std::nullopt);
    EXPECT_EQ(reason("[\f.\fcel.\fexpr.T{}]"), "protobuf messages (cel.expr.*)");
    EXPECT_EQ(reason("[// c\n.cel.expr.T{}]"), "protobuf messages (cel.expr.*)");
}

TEST(ConformanceFeatures, LeadingDotIsNotAMemberAccess) {
    auto reason = [](const std::string& expr) { return unsupportedFeature(json{{"expr", expr}}); };
    EXPECT_EQ(reason("[.TestAllTypes{}]"), "protobuf messages (TestAllTypes)");
    EXPECT_EQ(reason("x.TestAllTypes"), std::nullopt);
    EXPECT_EQ(reason("(x).TestAllTypes"), std::nullopt);
}

TEST(ConformanceFeatures, CheckedTestsGetTheirDeclarations) {
    const auto test = json::parse(R"({"expr": "x", "typeEnv": [{"name": "x",
        "ident": {"type": {"primitive": "INT64"}}}, {"name": "a.b",
        "ident": {"type": {"mapType": {}}}}]})");
    const auto declarations = declarationsOf(test);
    ASSERT_TRUE(declarations.has_value());
    EXPECT_EQ(declarations->variables.size(), 2U);
    EXPECT_EQ(declarations->variables.count("a.b"), 1U);
}

TEST(ConformanceFeatures, UncheckedTestsHaveNoDeclarations) {
    EXPECT_EQ(declarationsOf(json::parse(R"({"expr": "x", "disableCheck": true, "typeEnv": [
                  {"name": "x", "ident": {"type": {"primitive": "INT64"}}}]})")),
              std::nullopt);
    EXPECT_EQ(declarationsOf(json{{"expr", "x"}}), std::nullopt);
}

TEST(ConformanceFeatures, ListedSectionsAreSkippedWithTheirReason) {
    const auto file = parseTestFile(json::parse(R"({"name": "fields", "sections": [
        {"name": "quoted_map_fields", "tests": [{"name": "t", "expr": "1 == 1"}]},
        {"name": "map_has", "tests": [{"name": "t", "expr": "1 == 1"}]}]})"));
    ASSERT_TRUE(file.ok());
    ASSERT_EQ(file->tests.size(), 2U);
    EXPECT_EQ(file->tests[0].unsupported, skippedSections().at({"fields", "quoted_map_fields"}));
    EXPECT_EQ(file->tests[1].unsupported, std::nullopt);
}

TEST(ConformanceFeatures, ListedTestsAreSkippedWithTheirReason) {
    const auto file = parseTestFile(json::parse(R"({"name": "string_ext", "sections": [
        {"name": "value_errors", "tests": [{"name": "indexof_out_of_range", "expr": "1 == 1"},
                                           {"name": "other", "expr": "1 == 1"}]}]})"));
    ASSERT_TRUE(file.ok());
    ASSERT_EQ(file->tests.size(), 2U);
    EXPECT_EQ(file->tests[0].unsupported,
              skippedTests().at({"string_ext", "value_errors", "indexof_out_of_range"}));
    EXPECT_EQ(file->tests[1].unsupported, std::nullopt);
}

TEST(ConformanceFeatures, DetectedExtensionsRun) {
    const Extensions supported = {"charAt", "strings.quote"};
    auto reason = [&](const std::string& expr) {
        return unsupportedFeature(json{{"expr", expr}}, supported);
    };
    EXPECT_EQ(reason("'abc'.charAt(1) == 'b'"), std::nullopt);
    EXPECT_EQ(reason("strings.quote('a') == '\"a\"'"), std::nullopt);
    EXPECT_EQ(reason("strings.quote('a').lastIndexOf('a') == 1"),
              "extension function lastIndexOf() is not implemented");
    EXPECT_EQ(reason("'%d'.format([1])"),
              "format() as Kubernetes has it (the strings extension version 2, cel-go's first "
              "formatter), not the cel-spec's");
    for (const auto& [name, probe] : extensionProbes()) {
        EXPECT_EQ(unsupportedFeature(json{{"expr", probe}}, Extensions{name}), std::nullopt)
            << name;
        EXPECT_NE(unsupportedFeature(json{{"expr", probe}}), std::nullopt) << name;
    }
}

TEST(ConformanceFeatures, TestFields) {
    EXPECT_EQ(unsupportedFeature(json{{"expr", "1"}, {"checkOnly", true}}),
              "check-only test (the interpreter has no type checker)");
    EXPECT_EQ(unsupportedFeature(json{{"expr", "x"}, {"container", "a.b"}}),
              "container (qualified name resolution in a.b)");
    EXPECT_EQ(unsupportedFeature(json{{"expr", "'%s'.format(['a'])"}, {"locale", "de"}}),
              "locale-dependent formatting");
    EXPECT_EQ(unsupportedFeature(json::parse(R"({"expr": "x", "typeEnv": [{"name": "x",
                  "ident": {"type": {"messageType": "cel.expr.conformance.proto3.TestAllTypes"}}}]})")),
              R"(variable x of type {"messageType":"cel.expr.conformance.proto3.TestAllTypes"})");
    EXPECT_EQ(unsupportedFeature(json::parse(R"({"expr": "x", "typeEnv": [{"name": "x",
                  "ident": {"type": {"primitive": "INT64"}}}]})")),
              std::nullopt);
}

TEST(ConformanceFiles, Selftest) {
    auto file = loadTestFile(kTestdata / "selftest.json");
    ASSERT_TRUE(file.ok()) << file.error().message;
    EXPECT_EQ(file->name, "selftest");
    ASSERT_EQ(file->tests.size(), 49U);
    int unsupported = 0;
    for (const auto& test : file->tests) {
        EXPECT_FALSE(test.malformed) << test.name << ": " << *test.malformed;
        EXPECT_EQ(test.unsupported.has_value(), test.section == "unsupported")
            << test.fullName("selftest") << ": " << test.unsupported.value_or("(supported)");
        unsupported += test.unsupported ? 1 : 0;
    }
    EXPECT_EQ(unsupported, 19);

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
    EXPECT_EQ(
        find("unsupported", "object_value").unsupported,
        "protobuf message value (objectValue type.googleapis.com/google.protobuf.Int64Value)");
}

TEST(ConformanceFiles, MalformedTestsAreFailuresNotSkips) {
    auto file = loadTestFile(kTestdata / "malformed.json");
    ASSERT_TRUE(file.ok()) << file.error().message;
    ASSERT_EQ(file->tests.size(), 10U);
    for (const auto& test : file->tests) {
        EXPECT_TRUE(test.malformed) << test.name;
        EXPECT_FALSE(test.unsupported) << test.name;
    }
}

TEST(ConformanceFiles, MissingOrInvalidFile) {
    EXPECT_FALSE(loadTestFile(kTestdata / "no-such-file.json").ok());
    EXPECT_FALSE(parseTestFile(json::parse(R"({"tests": []})")).ok());
}

}  // namespace
}  // namespace numadra::cel::conformance
