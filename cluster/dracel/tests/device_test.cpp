// The `device` variable and selector / derived-attribute expressions: the selector examples of
// the DRA documentation, name resolution (domains, the empty-map default, `in`), the error
// behaviour (compile-time checks, runtime errors, the no-such-key hint) and derived values.

#include "numadra/dracel/device.hpp"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "numadra/dracel/environment.hpp"

namespace numadra::dracel {
namespace {

using api::AttributeValue;

constexpr const char* kDriver = "dra.example.com";

// dra.example.com's test device: model "A100", numa 1, driverVersion 1.2.3, services "xsym",
// names [1, 2, 3], models ["some-model", "other-model"], a and b true, a family in
// other.example.com, and 80Gi of memory.
struct TestDevice {
    std::map<std::string, AttributeValue> attributes{
        {"model", std::string("A100")},
        {"numa", std::int64_t{1}},
        {"driverVersion", api::Version{"1.2.3"}},
        {"services", std::string("xsym")},
        {"names", std::vector<std::int64_t>{1, 2, 3}},
        {"models", std::vector<std::string>{"some-model", "other-model"}},
        {"a", true},
        {"b", true},
        {"other.example.com/family", std::string("hopper")},
    };
    std::map<std::string, api::Quantity> capacity{{"memory", *api::Quantity::parse("80Gi")}};
    std::string driver = kDriver;
    bool allowMultipleAllocations = true;

    DeviceView view() const { return {driver, &attributes, &capacity, allowMultipleAllocations}; }
    cel::Value value() const {
        auto v = deviceValue(view());
        EXPECT_TRUE(v.ok()) << (v.ok() ? "" : v.error().message);
        return v.ok() ? *v : cel::Value();
    }
};

// The selector's verdict on the device: "true", "false" or "error: ...".
std::string select(const std::string& expr, const cel::Value& device = TestDevice().value()) {
    auto expression = Expression::compileSelector(expr);
    if (!expression)
        return "compile error: " + expression.error().message;
    auto result = expression->matches(device);
    if (!result)
        return "error: " + result.error().message;
    return *result ? "true" : "false";
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

// cel-go's planner calls the one sum() overload the checker resolved, so an empty list keeps its
// element type's zero; a list the checker cannot type (`[]`) sums to int 0.
TEST(Selector, SumOfAnEmptyTypedListIsTheElementTypesZero) {
    EXPECT_EQ(select(R"([duration("1s")].filter(d, false).sum() == duration("0s"))"), "true");
    // Arithmetic does not mix types, so `+` tells the zero's type.
    EXPECT_EQ(select("[1.5].filter(x, false).sum() + 1.0 == 1.0"), "true");
    EXPECT_EQ(select("[1u].filter(x, false).sum() + 1u == 1u"), "true");
    EXPECT_EQ(select("[1].filter(x, false).sum() + 1 == 1"), "true");
    EXPECT_EQ(select("[].sum() + 1 == 1"), "true");
}

// ---- The documented selector examples ----------------------------------------------------------

class SelectorExample : public ::testing::TestWithParam<std::string> {};

TEST_P(SelectorExample, MatchesTheTestDevice) {
    EXPECT_EQ(select(GetParam()), "true") << GetParam();
}

INSTANTIATE_TEST_SUITE_P(
    AllocatorSpec, SelectorExample,
    ::testing::Values(
        R"(device.driver == "dra.example.com")",
        R"(device.attributes["dra.example.com"].model == "A100")",
        R"(device.attributes["dra.example.com"]["model"] == "A100")",
        R"(device.attributes["dra.example.com"].numa > 0)",
        R"(device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.0.0")))",
        R"(device.attributes["dra.example.com"].driverVersion.major() >= 1)",
        R"(device.capacity["dra.example.com"].memory.compareTo(quantity("1Gi")) >= 0)",
        R"(device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Mi")))",
        R"("dra.example.com" in device.attributes)",
        R"("memory" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Ki")))",
        R"(has(device.attributes["dra.example.com"].model))",
        R"(device.attributes["dra.example.com"].?model.orValue("") == "A100")",
        R"(cel.bind(dra, device.attributes["dra.example.com"], dra.a && dra.b))",
        R"(device.attributes["dra.example.com"].services.matches("[^a]?sym"))",
        R"(device.attributes["dra.example.com"].names.exists(x, x > 0))",
        R"(1 in device.attributes["dra.example.com"].names)",
        R"(device.attributes["dra.example.com"].models.includes("some-model"))",
        R"(device.allowMultipleAllocations == true)",
        R"(device.attributes.exists_one(x, x == "dra.example.com"))"),
    [](const ::testing::TestParamInfo<std::string>& param) {
        return "Example" + std::to_string(param.index);
    });

TEST(Selector, ExamplesCanAlsoBeFalse) {
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].model == "H100")"), "false");
    EXPECT_EQ(
        select(R"(device.capacity["dra.example.com"].memory.isGreaterThan(quantity("80Gi")))"),
        "false");
    EXPECT_EQ(
        select(
            R"(device.attributes["dra.example.com"].driverVersion.isGreaterThan(semver("1.2.3")))"),
        "false");
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].models.includes("h100"))"), "false");
}

TEST(Selector, QuantityAndSemverCompareSemantically) {
    EXPECT_EQ(select(R"(device.capacity["dra.example.com"].memory == quantity("81920Mi"))"),
              "true");
    EXPECT_EQ(
        select(R"(device.attributes["dra.example.com"].driverVersion == semver("1.2.3+build"))"),
        "true");
}

// ---- Name resolution (allocator.md §2.2, trap 16) ----------------------------------------------

TEST(NameResolution, UnqualifiedNamesLiveInTheDriversDomain) {
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].model == "A100")"), "true");
    EXPECT_EQ(select(R"(device.attributes["other.example.com"].family == "hopper")"), "true");
    EXPECT_EQ(select(R"(!has(device.attributes["dra.example.com"].family))"), "true");
}

TEST(NameResolution, NamesSplitAtTheFirstSlash) {
    TestDevice device;
    device.attributes = {{"example.com/a/b", std::string("x")}};
    EXPECT_EQ(select(R"(device.attributes["example.com"]["a/b"] == "x")", device.value()), "true");
}

TEST(NameResolution, AnEmptyDriverUsesTheEmptyDomain) {
    TestDevice device;
    device.driver = "";
    EXPECT_EQ(select(R"(device.attributes[""].model == "A100")", device.value()), "true");
    EXPECT_EQ(select(R"(device.capacity[""].memory == quantity("80Gi"))", device.value()), "true");
}

TEST(NameResolution, TheQualifiedNameWinsACollision) {
    TestDevice device;
    device.attributes = {{"model", std::string("bare")},
                         {"dra.example.com/model", std::string("qualified")}};
    EXPECT_EQ(
        select(R"(device.attributes["dra.example.com"].model == "qualified")", device.value()),
        "true");
}

TEST(NameResolution, AnUnknownDomainIsAnEmptyMap) {
    EXPECT_EQ(select(R"(size(device.attributes["nope.example.com"]) == 0)"), "true");
    EXPECT_EQ(select(R"(device.capacity["nope.example.com"] == {})"), "true");
    EXPECT_EQ(select(R"(has(device.attributes["nope.example.com"].x))"), "false");
    EXPECT_EQ(select(R"(device.attributes["nope.example.com"].?x.orValue(7) == 7)"), "true");
}

TEST(NameResolution, AnUnknownIdIsANoSuchKeyErrorWithAHint) {
    const std::string result = select(R"(device.attributes["nope.example.com"].x == 1)");
    EXPECT_TRUE(contains(result, "error: ")) << result;
    EXPECT_TRUE(contains(result, "no such key: x")) << result;
    EXPECT_TRUE(contains(result,
                         "no such key: x. consider using CEL optional chaining (.? followed by "
                         "orValue()) or guarding the check with has() for optional fields"))
        << result;
    EXPECT_TRUE(
        contains(select(R"(device.attributes["dra.example.com"].nope == 1)"), "no such key: nope"));
}

TEST(NameResolution, InSizeAndComprehensionsSeeOnlyPresentDomains) {
    EXPECT_EQ(select(R"("other.example.com" in device.attributes)"), "true");
    EXPECT_EQ(select(R"("nope.example.com" in device.attributes)"), "false");
    EXPECT_EQ(select(R"(size(device.attributes) == 2)"), "true");
    EXPECT_EQ(select(R"(size(device.capacity) == 1)"), "true");
    EXPECT_EQ(select(R"(device.attributes.all(d, d.endsWith("example.com")))"), "true");
    EXPECT_EQ(select(R"(device.attributes.exists(d, d == "nope.example.com"))"), "false");
}

TEST(NameResolution, ADeviceWithoutAttributesOrCapacity) {
    const auto value = deviceValue(DeviceView{kDriver, nullptr, nullptr, false});
    ASSERT_TRUE(value.ok());
    EXPECT_EQ(select(R"(size(device.attributes) == 0 && size(device.capacity) == 0)", *value),
              "true");
    EXPECT_EQ(select(R"(device.allowMultipleAllocations)", *value), "false");
}

// ---- Attribute values ---------------------------------------------------------------------------

TEST(DeviceValue, AttributeTypes) {
    TestDevice device;
    device.attributes = {
        {"flag", true},
        {"flags", std::vector<bool>{true, false}},
        {"versions", std::vector<api::Version>{{"1.0.0"}, {"2.0.0-rc.1"}}},
    };
    const cel::Value value = device.value();
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].flag)", value), "true");
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].flags == [true, false])", value),
              "true");
    EXPECT_EQ(
        select(R"(device.attributes["dra.example.com"].versions[1].isLessThan(semver("2.0.0")))",
               value),
        "true");
    EXPECT_EQ(
        select(R"(device.attributes["dra.example.com"].versions.includes(semver("1.0.0")))", value),
        "true");
}

TEST(DeviceValue, ABadVersionFailsTheDeviceNamingTheAttribute) {
    TestDevice device;
    device.attributes["driverVersion"] = api::Version{"v1.0"};
    const auto value = deviceValue(device.view());
    ASSERT_FALSE(value.ok());
    EXPECT_TRUE(contains(value.error().message, "driverVersion")) << value.error().message;
    EXPECT_TRUE(contains(value.error().message, "\"v1.0\"")) << value.error().message;
}

TEST(DeviceValue, ABadVersionInAListFailsTheDevice) {
    TestDevice device;
    device.attributes["versions"] = std::vector<api::Version>{{"1.0.0"}, {"1.0"}};
    EXPECT_FALSE(deviceValue(device.view()).ok());
}

// ---- Runtime errors (allocator.md §2.4, traps 15-19) -------------------------------------------

TEST(RuntimeErrors, IncludesOnMoreThan48ElementsIsAnError) {
    TestDevice device;
    device.attributes["big"] = std::vector<std::int64_t>(49, 7);
    device.attributes["full"] = std::vector<std::int64_t>(48, 7);
    const cel::Value value = device.value();
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].full.includes(7))", value), "true");
    EXPECT_TRUE(contains(select(R"(device.attributes["dra.example.com"].big.includes(7))", value),
                         "error: includes()"));
}

// Semver has no `<` overload; an attribute is dyn, so the checker cannot rule it out, and it
// fails when evaluated.
TEST(RuntimeErrors, SemverHasNoLessThan) {
    const std::string result =
        select(R"(device.attributes["dra.example.com"].driverVersion < semver("2.0.0").major())");
    EXPECT_TRUE(contains(result, "error: no such overload")) << result;
}

// Capacity values are declared Quantity: `<` on two is refused when compiled, as upstream does.
TEST(CompileErrors, QuantityHasNoLessThan) {
    EXPECT_EQ(select(R"(device.capacity["dra.example.com"].memory < quantity("1Gi"))"),
              "compile error: line 1, column 43: found no matching overload for '_<_' applied to "
              "'(kubernetes.Quantity, kubernetes.Quantity)'");
}

TEST(CompileErrors, SemverHasNoLessThan) {
    EXPECT_TRUE(contains(select(R"(semver("1.0.0") < semver("2.0.0"))"),
                         "compile error: line 1, column 17: found no matching overload for '_<_'"));
}

TEST(RuntimeErrors, TypeMismatchOnAnAttribute) {
    EXPECT_TRUE(contains(select(R"(device.attributes["dra.example.com"].model > 1)"),
                         "error: no such overload"));
    EXPECT_TRUE(contains(select(R"(device.attributes["dra.example.com"].model.exists(x, true))"),
                         "error: "));
}

TEST(RuntimeErrors, ErrorsAreAbsorbedByShortCircuits) {
    EXPECT_EQ(select(R"(false && device.attributes["dra.example.com"].nope == 1)"), "false");
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].nope == 1 || true)"), "true");
}

TEST(RuntimeErrors, ANonBoolResultIsAnError) {
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].names)"),
              "error: CEL result of type list could not be converted to bool");
    EXPECT_EQ(select(R"(device.attributes["dra.example.com"].model)"),
              "error: CEL result of type string could not be converted to bool");
}

// An expression whose worst case exceeds the limit is refused when compiled, with upstream's
// estimate (the runtime limit is the second guard: cluster/cel/tests/cost_test.cpp).
TEST(CompileErrors, AnExpressionCostlierThanTheLimitIsRefused) {
    std::string range = "[";
    for (int i = 0; i < 100; ++i)
        range += (i ? ", " : "") + std::to_string(i);
    range += "]";
    const std::string expr = range + ".all(a, " + range + ".all(b, " + range + ".all(c, " + range +
                             ".all(d, device.driver != '')))) ";
    EXPECT_EQ(select(expr),
              "compile error: too complex, exceeds cost limit (estimated worst-case cost "
              "514141411, limit 1000000)");
    EXPECT_EQ(select(range + ".all(a, " + range + ".all(b, device.driver != ''))"), "true");
}

TEST(RuntimeErrors, CostIsReported) {
    auto expression = Expression::compileSelector(R"(device.driver == "dra.example.com")");
    ASSERT_TRUE(expression.ok());
    std::int64_t cost = 0;
    ASSERT_TRUE(expression->matches(TestDevice().value(), &cost).ok());
    EXPECT_GT(cost, 0);
}

// ---- Compile-time checks ------------------------------------------------------------------------

TEST(CompileErrors, UndeclaredReference) {
    const std::string result = select("noSuchVar == 1");
    EXPECT_TRUE(contains(result, "compile error: ")) << result;
    EXPECT_TRUE(contains(result, "undeclared reference to 'noSuchVar'")) << result;
}

// cel-go charges strings.quote 0.1 per code point of its argument at run time.
TEST(RuntimeErrors, StringsQuoteIsChargedForTheLengthOfItsArgument) {
    auto cost = [](const std::string& text) {
        auto expression = Expression::compileSelector("strings.quote('" + text + "') != ''");
        EXPECT_TRUE(expression.ok());
        std::int64_t spent = 0;
        EXPECT_TRUE(expression->matches(TestDevice().value(), &spent).ok());
        return spent;
    };
    EXPECT_EQ(cost(std::string(1000, 'a')) - cost(""), 100);
    EXPECT_EQ(cost("\u00e9\u00e9\u00e9") - cost(""), 1);  // 3 code points, 6 bytes
}

TEST(Selector, StringsQuoteIsAFunctionOfTheStringsNamespace) {
    EXPECT_EQ(select(R"(strings.quote(device.driver) == '"dra.example.com"')"), "true");
}

TEST(CompileErrors, UndeclaredFunctionOfTheStringsNamespace) {
    const std::string result = select("strings.nope('a') == 'a'");
    EXPECT_TRUE(contains(result, "undeclared reference to 'strings'")) << result;
}

TEST(CompileErrors, UndefinedFieldOfDevice) {
    const std::string result = select("device.foo == 1");
    EXPECT_TRUE(contains(result, "compile error: ")) << result;
    EXPECT_TRUE(contains(result, "undefined field 'foo'")) << result;
}

TEST(CompileErrors, DeviceNameInASelectorSaysWhereItIsAvailable) {
    const std::string result = select("device.name == 'gpu0'");
    EXPECT_EQ(
        result,
        "compile error: line 1, column 8: undefined field 'name' (device.name is available in "
        "derived-attribute expressions only; upstream's selector environment has no name "
        "field)");
}

TEST(CompileErrors, OtherUndefinedFieldsGetNoDeviceNameHint) {
    const std::string result = select("device.nam == 'gpu0'");
    EXPECT_FALSE(contains(result, "derived-attribute")) << result;
}

TEST(CompileErrors, ResultTypeMustBeBoolOrUnknown) {
    EXPECT_EQ(select("1"), "compile error: must evaluate to bool or the unknown type, not int");
    EXPECT_EQ(select("'x'"),
              "compile error: must evaluate to bool or the unknown type, not string");
    EXPECT_EQ(select("device.driver == 'x'"), "false");
}

TEST(CompileErrors, SyntaxError) {
    EXPECT_TRUE(contains(select("device.driver =="), "compile error: "));
}

TEST(CompileErrors, ExpressionsAreLimitedTo10KiB) {
    std::string longest = "device.driver == '" + std::string(kMaxExpressionLength - 20, 'x') + "'";
    while (longest.size() < kMaxExpressionLength)
        longest.insert(longest.begin(), ' ');
    EXPECT_EQ(select(longest), "false");
    EXPECT_TRUE(contains(select(" " + longest), "compile error: expression too long (10241"));
}

TEST(Selector, TheStringsExtensionsReplaceIsAvailable) {
    EXPECT_EQ(select("device.driver.replace('.example.com', '') == 'dra'"), "true");
}

TEST(Selector, TheDeviceValueCarriesNoName) {
    // Upstream's selector `device` has no name field; it is an object, not a map to enumerate.
    EXPECT_TRUE(contains(select("has(device.name)"), "undefined field 'name'"));
    EXPECT_TRUE(contains(select("'name' in device"),
                         "found no matching overload for '@in' applied to '(string, "
                         "kubernetes.DRADevice)'"));
}

TEST(Selector, ConcurrentEvaluation) {
    auto expression = Expression::compileSelector(
        R"(device.capacity["dra.example.com"].memory.isGreaterThan(quantity("1Gi")) && device.attributes["dra.example.com"].services.find("s.m") == "sym")");
    ASSERT_TRUE(expression.ok()) << expression.error().message;
    const cel::Value device = TestDevice().value();
    std::vector<std::thread> threads;
    std::vector<int> matched(4, 0);
    for (std::size_t t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < 200; ++i) {
                auto result = expression->matches(device);
                matched[t] += result.ok() && *result ? 1 : 0;
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    EXPECT_EQ(matched, std::vector<int>(4, 200));
}

// ---- Derived attributes -------------------------------------------------------------------------

Result<AttributeValue> derive(const std::string& expr) {
    auto expression = Expression::compileDerived(expr);
    if (!expression)
        return Error{"compile error: " + expression.error().message};
    return expression->derive(TestDevice().value());
}

TEST(Derived, Scalars) {
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].model)"),
              AttributeValue(std::string("A100")));
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].numa + 1)"),
              AttributeValue(std::int64_t{2}));
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].numa > 0)"), AttributeValue(true));
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].driverVersion)"),
              AttributeValue(api::Version{"1.2.3"}));
    EXPECT_EQ(*derive(R"(semver("v2", true))"), AttributeValue(api::Version{"2.0.0"}));
}

TEST(Derived, Lists) {
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].names)"),
              AttributeValue(std::vector<std::int64_t>{1, 2, 3}));
    EXPECT_EQ(*derive(R"(device.attributes["dra.example.com"].names.map(n, n * 2))"),
              AttributeValue(std::vector<std::int64_t>{2, 4, 6}));
    EXPECT_EQ(*derive(R"([semver("1.0.0"), semver("1.1.0")])"),
              AttributeValue(std::vector<api::Version>{{"1.0.0"}, {"1.1.0"}}));
    EXPECT_EQ(*derive(R"([true])"), AttributeValue(std::vector<bool>{true}));
}

TEST(Derived, OtherTypesAreErrorsNamingTheType) {
    const auto quantity = derive(R"(device.capacity["dra.example.com"].memory)");
    ASSERT_FALSE(quantity.ok());
    EXPECT_TRUE(contains(quantity.error().message, "kubernetes.Quantity"))
        << quantity.error().message;
    const auto mixed = derive(
        R"([device.attributes["dra.example.com"].numa, device.attributes["dra.example.com"].model])");
    ASSERT_FALSE(mixed.ok());
    EXPECT_TRUE(contains(mixed.error().message, "one type")) << mixed.error().message;
    const auto doubles = derive(R"(device.attributes["dra.example.com"].names.map(n, double(n)))");
    ASSERT_FALSE(doubles.ok());
    EXPECT_TRUE(contains(doubles.error().message, "double")) << doubles.error().message;
    EXPECT_FALSE(derive(R"(device.attributes["dra.example.com"].names.filter(n, n > 5))").ok());
}

TEST(Derived, ResultTypeIsCheckedAtCompileTime) {
    const auto result = derive("1.5");
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(
        result.error().message,
        "compile error: must evaluate to a primitive scalar (string, integer, boolean, semver) "
        "or a list of these scalars, not double");
    EXPECT_FALSE(derive("{'a': 1}").ok());
}

// KEP-6080's naming-convention story: gpu3 aligns with eth3.
Result<AttributeValue> deriveOnNamedDevice(const std::string& expr, const std::string& name) {
    auto expression = Expression::compileDerived(expr);
    if (!expression)
        return Error{"compile error: " + expression.error().message};
    return expression->derive(derivedDeviceValue(TestDevice().value(), name));
}

TEST(Derived, DeviceNameCompiles) {
    auto expression = Expression::compileDerived("device.name.replace('gpu', '')");
    EXPECT_TRUE(expression.ok()) << expression.error().message;
}

TEST(Derived, DeviceNameIsTheNameInTheSlice) {
    EXPECT_EQ(*deriveOnNamedDevice("device.name", "gpu3"), AttributeValue(std::string("gpu3")));
}

TEST(Derived, NamingConventionGivesTheHardwareIndex) {
    EXPECT_EQ(*deriveOnNamedDevice("device.name.replace('gpu', '')", "gpu3"),
              AttributeValue(std::string("3")));
    EXPECT_EQ(*deriveOnNamedDevice("device.name.replace('eth', '')", "eth3"),
              AttributeValue(std::string("3")));
}

TEST(Derived, TheNamedDeviceKeepsTheSelectorsFields) {
    EXPECT_EQ(*deriveOnNamedDevice(R"(device.driver + "/" + device.name)", "gpu3"),
              AttributeValue(std::string("dra.example.com/gpu3")));
    EXPECT_EQ(*deriveOnNamedDevice(R"(device.attributes["dra.example.com"].numa)", "gpu3"),
              AttributeValue(std::int64_t{1}));
}

TEST(Derived, RuntimeErrorsCarryTheCelMessage) {
    const auto result = derive(R"(device.attributes["dra.example.com"].nope)");
    ASSERT_FALSE(result.ok());
    EXPECT_TRUE(contains(result.error().message, "no such key: nope")) << result.error().message;
}

}  // namespace
}  // namespace numadra::dracel

namespace numadra::dracel {
namespace {

// Literal arguments that cannot succeed are refused when the selector is read, as upstream's
// compiler refuses them.
TEST(Selector, InvalidLiteralTimesAndRegexesAreCompileErrors) {
    for (const char* expression :
         {"timestamp('2026-13-01T00:00:00Z') < timestamp('2027-01-01T00:00:00Z')",
          "duration('1d') > duration('1h')", "device.driver.matches('[')",
          "device.driver.find('(') == ''", "math.abs(-1) == 1", "[1, 'a'].size() == 2",
          "true && 1"})
        EXPECT_FALSE(Expression::compileSelector(expression).ok()) << expression;
    EXPECT_TRUE(Expression::compileSelector("timestamp('2026-11-24T10:00:00Z') < "
                                            "timestamp('2027-01-01T00:00:00Z')")
                    .ok());
}

}  // namespace
}  // namespace numadra::dracel
