// Compile-time checks with declarations (undeclared references, undefined fields of declared
// objects, qualified-name resolution) and the static result type (Program::resultType).

#include <gtest/gtest.h>

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

Declarations draDeclarations() {
    Declarations declarations;
    declarations.variables["device"] =
        std::set<std::string>{"driver", "attributes", "capacity", "allowMultipleAllocations"};
    return declarations;
}

// "ok" or the compile error's message.
std::string check(std::string_view expr, const Declarations& declarations = draDeclarations()) {
    CompileOptions options;
    options.declarations = declarations;
    auto program = Program::compile(expr, options);
    return program ? "ok" : program.error().message;
}

Activation deviceActivation() {
    Map device;
    device.emplace(MapKey{std::string("driver")}, Value(std::string("gpu.example.com")));
    Activation activation;
    activation.bind("device", Value::map(std::move(device)));
    return activation;
}

Value evaluateChecked(std::string_view expr, const Activation& activation,
                      const Declarations& declarations = draDeclarations()) {
    CompileOptions options;
    options.declarations = declarations;
    auto program = Program::compile(expr, options);
    EXPECT_TRUE(program.ok()) << expr;
    return program ? program->evaluate(activation, Environment{}) : Value::error("compile");
}

TEST(Check, OnlyDeclaredNamespacesNameFunctions) {
    Declarations declarations = draDeclarations();
    declarations.namespaces = std::set<std::string, std::less<>>{"sets"};
    EXPECT_EQ(check("sets.contains([1], [1])", declarations), "ok");
    EXPECT_EQ(check("math.abs(-1) == 1", declarations),
              "line 1, column 1: undeclared reference to 'math'");
    // Without a namespace list every undeclared single identifier may be one.
    EXPECT_EQ(check("math.abs(-1) == 1"), "ok");
}

// Types are judged by the type checker (typecheck_test.cpp); with declarations that carry no
// types, an element whose type depends on values is not judged (cel-go's checker, given
// types, refuses a list of a dyn and an int).
TEST(Check, WithoutTypesAListOfUnknownAndKnownTypesCompiles) {
    EXPECT_EQ(check("[device.driver, 1].size() == 2"), "ok");
}

TEST(Check, ALiteralRegexThatDoesNotCompileIsRefused) {
    EXPECT_EQ(check("device.driver.matches('[')"), "line 1, column 23: invalid matches argument");
    EXPECT_EQ(check("device.driver.matches('[a-z]+')"), "ok");
    Declarations declarations = draDeclarations();
    declarations.regexMemberFunctions = {"find"};
    EXPECT_EQ(check("device.driver.find('(') == ''", declarations),
              "line 1, column 20: invalid find argument: missing ): (");
    // A pattern computed at run time is judged at run time.
    EXPECT_EQ(check("device.driver.find(device.driver) == ''", declarations), "ok");
}

TEST(Check, DeclaredVariableCompiles) {
    EXPECT_EQ(check("device.driver == 'x'"), "ok");
}

TEST(Check, UndeclaredIdentifierIsACompileError) {
    EXPECT_EQ(check("nope == 1"), "line 1, column 1: undeclared reference to 'nope'");
}

TEST(Check, ErrorPositionIsTheIdentifiers) {
    EXPECT_EQ(check("device.driver == 'a' &&\n  other"),
              "line 2, column 3: undeclared reference to 'other'");
}

TEST(Check, UndeclaredRootOfASelectionIsReported) {
    EXPECT_EQ(check("devce.driver == 'x'"), "line 1, column 1: undeclared reference to 'devce'");
}

TEST(Check, ComprehensionVariablesAreDeclaredInsideTheMacro) {
    EXPECT_EQ(check("[1, 2].all(x, x > 0)"), "ok");
    EXPECT_EQ(check("[1, 2].map(x, x > 0, x * 2)"), "ok");
    EXPECT_EQ(check("[1, 2].transformList(i, v, i + v)"), "ok");
    EXPECT_EQ(check("optional.of(1).optMap(x, x + 1)"), "ok");
}

TEST(Check, ComprehensionVariablesEndWithTheMacro) {
    EXPECT_EQ(check("[1].all(x, x > 0) && x"), "line 1, column 22: undeclared reference to 'x'");
}

TEST(Check, ComprehensionRangeIsOutsideTheVariables) {
    EXPECT_EQ(check("x.all(x, true)"), "line 1, column 1: undeclared reference to 'x'");
}

TEST(Check, BindVariableIsDeclaredInTheBody) {
    EXPECT_EQ(check("cel.bind(d, device.driver, d == 'x')"), "ok");
    EXPECT_EQ(check("cel.bind(d, d, true)"), "line 1, column 13: undeclared reference to 'd'");
}

TEST(Check, AbsoluteNameSkipsComprehensionVariables) {
    EXPECT_EQ(check("[1].all(x, .x > 0)"), "line 1, column 12: undeclared reference to 'x'");
}

TEST(Check, TypeNamesAreNotReferences) {
    EXPECT_EQ(check("type(1) == int && type(optional.none()) == optional_type"), "ok");
}

TEST(Check, NamespacedFunctionsAreNotReferences) {
    EXPECT_EQ(check("optional.none().hasValue()"), "ok");
    EXPECT_EQ(check("sets.contains([1], [1])"), "ok");
    EXPECT_EQ(check("semver('1.0.0').major() == 1"), "ok");
}

TEST(Check, NamespaceArgumentsAreChecked) {
    EXPECT_EQ(check("sets.contains([1], nope)"),
              "line 1, column 20: undeclared reference to 'nope'");
}

TEST(Check, ANamespaceIsOneIdentifier) {
    // Without function declarations a dotted receiver cannot be a namespace here.
    EXPECT_EQ(check("a.b.f()"), "line 1, column 1: undeclared reference to 'a'");
}

TEST(Check, UndefinedFieldOfADeclaredObject) {
    EXPECT_EQ(check("device.foo == 1"), "line 1, column 8: undefined field 'foo'");
}

TEST(Check, UndefinedFieldInHas) {
    EXPECT_EQ(check("has(device.foo)"), "line 1, column 1: undefined field 'foo'");
}

TEST(Check, UndefinedFieldInOptionalSelection) {
    EXPECT_EQ(check("device.?foo.hasValue()"), "line 1, column 9: undefined field 'foo'");
}

TEST(Check, FieldsBelowADeclaredFieldAreNotChecked) {
    EXPECT_EQ(check("device.attributes['d'].anything.more"), "ok");
}

TEST(Check, VariableWithoutFieldListAcceptsAnyField) {
    Declarations declarations;
    declarations.variables["m"] = std::nullopt;
    EXPECT_EQ(check("m.anything", declarations), "ok");
}

TEST(Check, LocalVariableShadowsADeclaredObject) {
    EXPECT_EQ(check("[{'foo': 1}].all(device, device.foo == 1)"), "ok");
}

TEST(Check, QualifiedNameResolvesToTheDeclaredPrefix) {
    Declarations declarations;
    declarations.variables["a.b"] = std::nullopt;
    EXPECT_EQ(check("a.b.c", declarations), "ok");
    EXPECT_EQ(check("a.x", declarations), "line 1, column 1: undeclared reference to 'a'");
}

TEST(Check, LongestDeclaredPrefixWins) {
    Declarations declarations;
    declarations.variables["a"] = std::set<std::string>{"x"};
    declarations.variables["a.b.c"] = std::nullopt;
    EXPECT_EQ(check("a.b.c", declarations), "ok");
    EXPECT_EQ(check("a.b", declarations), "line 1, column 3: undefined field 'b'");
}

TEST(Check, FieldOfADeclaredQualifiedObject) {
    Declarations declarations;
    declarations.variables["a.b"] = std::set<std::string>{"c"};
    EXPECT_EQ(check("a.b.c", declarations), "ok");
    EXPECT_EQ(check("a.b.d", declarations), "line 1, column 5: undefined field 'd'");
}

TEST(Check, WithoutDeclarationsNothingIsChecked) {
    auto program = Program::compile("nope.foo");
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(toString(program->evaluate({}, {})), "error(undeclared reference to 'nope')");
}

TEST(Check, CheckedProgramEvaluatesAsUnchecked) {
    EXPECT_EQ(evaluateChecked("device.driver == 'gpu.example.com'", deviceActivation()),
              Value(true));
}

TEST(Check, CheckedQualifiedNameEvaluatesFromItsBinding) {
    Declarations declarations;
    declarations.variables["a.b"] = std::nullopt;
    Activation activation;
    activation.bind("a.b", Value::map({{MapKey{std::string("c")}, Value(std::int64_t{7})}}));
    EXPECT_EQ(evaluateChecked("a.b.c", activation, declarations), Value(std::int64_t{7}));
}

TEST(Check, CheckedSelectionIgnoresUndeclaredDottedBindings) {
    // A type checker resolved device.driver to a field of `device`: a binding named
    // "device.driver" is not a declared variable, so it must not win.
    Activation activation = deviceActivation();
    activation.bind("device.driver", Value(std::string("shadow")));
    EXPECT_EQ(evaluateChecked("device.driver", activation), Value(std::string("gpu.example.com")));
    EXPECT_EQ(testing::evalText("device.driver", activation), "\"shadow\"");
}

// ---- resultType ---------------------------------------------------------------------------

std::string typeOf(std::string_view expr) {
    auto program = Program::compile(expr);
    EXPECT_TRUE(program.ok()) << expr;
    return program ? program->resultType() : "compile error";
}

TEST(ResultType, Literals) {
    EXPECT_EQ(typeOf("true"), "bool");
    EXPECT_EQ(typeOf("1"), "int");
    EXPECT_EQ(typeOf("1u"), "uint");
    EXPECT_EQ(typeOf("1.5"), "double");
    EXPECT_EQ(typeOf("'s'"), "string");
    EXPECT_EQ(typeOf("b's'"), "bytes");
    EXPECT_EQ(typeOf("null"), "null_type");
}

TEST(ResultType, CollectionLiterals) {
    EXPECT_EQ(typeOf("[1]"), "list");
    EXPECT_EQ(typeOf("{'a': 1}"), "map");
}

TEST(ResultType, LogicAndComparisonsAreBool) {
    for (const char* expr :
         {"x < 1", "x == y", "!x", "x && y", "x || y", "1 in x", "has(x.y)", "x.all(e, e)",
          "x.exists(e, e)", "x.exists_one(e, e)", "x.exists(i, v, v)"})
        EXPECT_EQ(typeOf(expr), "bool") << expr;
}

TEST(ResultType, StringPredicatesAreBool) {
    for (const char* expr : {"x.matches('a')", "x.startsWith('a')", "x.endsWith('a')",
                             "x.contains('a')", "matches(x, 'a')"})
        EXPECT_EQ(typeOf(expr), "bool") << expr;
}

TEST(ResultType, ConversionsAndSize) {
    EXPECT_EQ(typeOf("size(x)"), "int");
    EXPECT_EQ(typeOf("x.size()"), "int");
    EXPECT_EQ(typeOf("int(x)"), "int");
    EXPECT_EQ(typeOf("uint(x)"), "uint");
    EXPECT_EQ(typeOf("double(x)"), "double");
    EXPECT_EQ(typeOf("string(x)"), "string");
}

TEST(ResultType, StringFunctionsAreString) {
    for (const char* expr : {"x.lowerAscii()", "x.upperAscii()", "x.replace('a', 'b')",
                             "x.substring(1)", "x.trim()", "x.join(',')"})
        EXPECT_EQ(typeOf(expr), "string") << expr;
}

TEST(ResultType, ArithmeticOfOneTypeHasThatType) {
    EXPECT_EQ(typeOf("1 + 2 * 3"), "int");
    EXPECT_EQ(typeOf("1u - 2u"), "uint");
    EXPECT_EQ(typeOf("1.0 / 2.0"), "double");
    EXPECT_EQ(typeOf("'a' + 'b'"), "string");
    EXPECT_EQ(typeOf("[1] + [2]"), "list");
    EXPECT_EQ(typeOf("-1"), "int");
}

TEST(ResultType, MixedOrUnknownArithmeticIsDyn) {
    EXPECT_EQ(typeOf("1 + 1u"), "dyn");
    EXPECT_EQ(typeOf("x + 1"), "dyn");
    EXPECT_EQ(typeOf("1.0 % 2.0"), "dyn");
    EXPECT_EQ(typeOf("'a' * 'b'"), "dyn");
}

TEST(ResultType, ConditionalWithBranchesOfOneType) {
    EXPECT_EQ(typeOf("x ? 1 : 2"), "int");
    EXPECT_EQ(typeOf("x ? 1 : 'a'"), "dyn");
}

TEST(ResultType, ListMacrosAreList) {
    EXPECT_EQ(typeOf("x.map(e, e)"), "list");
    EXPECT_EQ(typeOf("x.map(e, true, e)"), "list");
    EXPECT_EQ(typeOf("x.filter(e, e)"), "list");
    EXPECT_EQ(typeOf("x.transformList(i, v, v)"), "list");
    EXPECT_EQ(typeOf("x.transformMap(i, v, v)"), "map");
}

TEST(ResultType, ValueDependentExpressionsAreDyn) {
    for (const char* expr : {"x", "x.y", "x[0]", "f(1)", "x.f()", "optional.of(1)",
                             "optional.none().orValue(1)", "{'a': 1}.?a", "dyn(1)"})
        EXPECT_EQ(typeOf(expr), "dyn") << expr;
}

TEST(ResultType, BindHasItsBodysType) {
    EXPECT_EQ(typeOf("cel.bind(x, 1, x > 0)"), "bool");
}

}  // namespace
}  // namespace numadra::cel
