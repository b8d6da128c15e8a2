// The type checker (cel-go's, ported): declarations read from text, overload resolution with type
// parameters, the homogeneous-literal rule on checked types, comprehension ranges, result types.
// Upstream's whole DRA environment is judged in tests/upstream/cel; these pin the rules.

#include <gtest/gtest.h>

#include "numadra/cel/cel.hpp"

namespace numadra::cel {
namespace {

// A small environment in the declarations' text form.
constexpr std::string_view kDeclarations =
    "# comment\n"
    "overload\t_+_\tadd_int64\tglobal\t-\tint\tint\tint\n"
    "overload\t_+_\tadd_string\tglobal\t-\tstring\tstring\tstring\n"
    "overload\t_+_\tadd_list\tglobal\tA\tlist(~A)\tlist(~A)\tlist(~A)\n"
    "overload\t_==_\tequals\tglobal\tA\tbool\t~A\t~A\n"
    "overload\t_&&_\tlogical_and\tglobal\t-\tbool\tbool\tbool\n"
    "overload\t@not_strictly_false\tnot_strictly_false\tglobal\t-\tbool\tbool\n"
    "overload\t_[_]\tindex_list\tglobal\tA\t~A\tlist(~A)\tint\n"
    "overload\t_[_]\tindex_map\tglobal\tA,B\t~B\tmap(~A,~B)\t~A\n"
    "overload\tsize\tlist_size\tmember\tA\tint\tlist(~A)\n"
    "overload\tsize\tsize_string\tglobal\t-\tint\tstring\n"
    "overload\tformat\tstring_format\tmember\t-\tstring\tstring\tlist(dyn)\n"
    "overload\tquantity\tstring_to_quantity\tglobal\t-\tstruct:kubernetes.Quantity\tstring\n"
    "variable\tdevice\tstruct:kubernetes.DRADevice\n"
    "field\tkubernetes.DRADevice\tdriver\tstring\n"
    "field\tkubernetes.DRADevice\tattributes\tmap(string,map(string,dyn))\n";

std::shared_ptr<const TypeEnvironment> environment() {
    auto parsed = TypeEnvironment::parse(kDeclarations);
    EXPECT_TRUE(parsed.ok()) << (parsed ? "" : parsed.error().message);
    return std::make_shared<const TypeEnvironment>(std::move(*parsed));
}

Result<Program> compile(std::string_view expression) {
    CompileOptions options;
    options.declarations.emplace();
    options.declarations->variables["device"] = std::nullopt;
    options.declarations->types = environment();
    return Program::compile(expression, options);
}

// The checker's result type, or the compile error.
std::string typeOf(std::string_view expression) {
    auto program = compile(expression);
    if (!program)
        return "error: " + program.error().message;
    return formatType(*program->checkedType());
}

TEST(TypeEnvironment, ReadsEveryKindOfLine) {
    const auto env = environment();
    ASSERT_NE(env->function("_+_"), nullptr);
    EXPECT_EQ(env->function("_+_")->size(), 3U);
    EXPECT_EQ(env->function("_+_")->at(2).typeParams, std::vector<std::string>{"A"});
    ASSERT_NE(env->variable("device"), nullptr);
    EXPECT_EQ(formatType(**env->field("kubernetes.DRADevice", "attributes")),
              "map(string, map(string, dyn))");
    EXPECT_EQ(env->field("kubernetes.DRADevice", "name"), nullptr);
}

TEST(TypeEnvironment, AMalformedLineIsAnErrorNamingIt) {
    auto unknown = TypeEnvironment::parse("variable\tx\tint\nfunction\tf\n");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().message, "declarations line 2: malformed 'function' line");
    auto badType = TypeEnvironment::parse("variable\tx\tlist(int\n");
    ASSERT_FALSE(badType.ok());
    EXPECT_EQ(badType.error().message, "declarations line 1: invalid type 'list(int'");
    auto badSize = TypeEnvironment::parse("size\tdevice\tmany\tobject\n");
    ASSERT_FALSE(badSize.ok());
    EXPECT_EQ(badSize.error().message, "declarations line 1: invalid size 'many'");
}

TEST(TypeParse, EveryEncodingRoundTrips) {
    for (const char* text : {"int", "list(~A)", "map(string,list(dyn))", "type(int)",
                             "opaque:optional_type(~V)", "struct:kubernetes.Quantity"})
        EXPECT_TRUE(parseType(text).has_value()) << text;
    EXPECT_EQ(formatType(**parseType("opaque:optional_type(list(int))")),
              "optional_type(list(int))");
    for (const char* text : {"", "list", "list(int", "map(int)", "int(x)", "float"})
        EXPECT_FALSE(parseType(text).has_value()) << text;
}

TEST(TypeCheck, OverloadsResolveByArgumentTypes) {
    EXPECT_EQ(typeOf("1 + 2"), "int");
    EXPECT_EQ(typeOf("'a' + 'b'"), "string");
    EXPECT_EQ(typeOf("[1] + [2]"), "list(int)");
    EXPECT_EQ(typeOf("1 + 'a'"),
              "error: line 1, column 3: found no matching overload for '_+_' applied to '(int, "
              "string)'");
}

TEST(TypeCheck, TypeParametersFlowThroughCalls) {
    EXPECT_EQ(typeOf("[1, 2][0]"), "int");
    EXPECT_EQ(typeOf("[[1]][0]"), "list(int)");
    EXPECT_EQ(typeOf("device.attributes['a']['b']"), "dyn");
    EXPECT_EQ(typeOf("[].size()"), "int");
}

TEST(TypeCheck, ADynArgumentMatchesEveryOverloadAndTheResultIsDyn) {
    EXPECT_EQ(typeOf("device.attributes['a']['b'] + 1"), "int");
    EXPECT_EQ(typeOf("device.attributes['a']['b'] + device.attributes['a']['c']"), "dyn");
}

TEST(TypeCheck, MemberAndGlobalStylesAreDifferentOverloads) {
    EXPECT_EQ(typeOf("size('abc')"), "int");
    EXPECT_EQ(typeOf("'abc'.size()"),
              "error: line 1, column 7: found no matching overload for 'size' applied to "
              "'string.()'");
}

TEST(TypeCheck, FieldsOfDeclaredObjects) {
    EXPECT_EQ(typeOf("device.driver"), "string");
    EXPECT_EQ(typeOf("device.name"), "error: line 1, column 8: undefined field 'name'");
    EXPECT_EQ(typeOf("device.driver.x"),
              "error: line 1, column 15: type 'string' does not support field selection");
    EXPECT_EQ(typeOf("has(device.driver)"), "bool");
}

TEST(TypeCheck, UndeclaredFunctionsAreErrors) {
    EXPECT_EQ(typeOf("nope(1)"),
              "error: line 1, column 1: undeclared reference to 'nope' (in "
              "container '')");
}

TEST(TypeCheck, ListAndMapLiteralsHoldOneType) {
    EXPECT_EQ(typeOf("[1, 'a'].size()"),
              "error: line 1, column 5: expected type 'int' but found 'string'");
    EXPECT_EQ(typeOf("[1, device.attributes['a']['b']].size()"),
              "error: line 1, column 27: expected type 'int' but found 'dyn'");
    EXPECT_EQ(typeOf("'%s %d'.format(['a', 1])"), "string");  // format()'s arguments are exempt
}

TEST(TypeCheck, ComprehensionsNeedAListMapOrDyn) {
    EXPECT_EQ(typeOf("[1, 2].all(x, x == 1)"), "bool");
    EXPECT_EQ(typeOf("device.attributes['a']['b'].all(x, x == 1)"), "bool");
    EXPECT_EQ(typeOf("1.all(x, x == 1)"),
              "error: line 1, column 1: expression of type 'int' cannot be range of a "
              "comprehension (must be list, map, or dynamic)");
    EXPECT_EQ(typeOf("[1, 2].all(x, x + 'a' == 'b')"),
              "error: line 1, column 17: found no matching overload for '_+_' applied to '(int, "
              "string)'");
}

TEST(TypeCheck, StructResultsKeepTheirName) {
    auto program = compile("quantity('1')");
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(program->resultType(), "kubernetes.Quantity");
    EXPECT_EQ(typeOf("quantity('1') == quantity('2')"), "bool");
}

TEST(TypeCheck, WithoutDeclaredTypesNothingIsChecked) {
    auto program = Program::compile("1 + 'a'");
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(program->checkedType(), nullptr);
}

// cel-go resolves a dotted chain as one declared name before selecting fields, the longest first.
TEST(TypeCheck, DottedVariableNamesResolveAsOneName) {
    auto types = std::make_shared<TypeEnvironment>(*environment());
    types->addVariable("a", mapType(makeType(TypeKind::String), makeType(TypeKind::Int)));
    types->addVariable("a.b", mapType(makeType(TypeKind::String), makeType(TypeKind::String)));
    CompileOptions options;
    options.declarations.emplace();
    options.declarations->variables["a"] = std::nullopt;
    options.declarations->variables["a.b"] = std::nullopt;
    options.declarations->types = types;
    auto type = [&](std::string_view expression) {
        auto program = Program::compile(expression, options);
        return program ? formatType(*program->checkedType()) : "error: " + program.error().message;
    };
    EXPECT_EQ(type("a.b"), "map(string, string)");
    EXPECT_EQ(type("a.b.c"), "string");
    EXPECT_EQ(type("a.c"), "int");

    Activation activation;
    activation.bind("a.b", Value::map({{MapKey{std::string("c")}, Value(std::string("yes"))}}));
    auto program = Program::compile("a.b.c", options);
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(toString(program->evaluate(activation, Environment{})), "\"yes\"");
}

// google.protobuf.Timestamp and google.protobuf.Duration name the types of timestamps and
// durations, as `type(t) == google.protobuf.Timestamp` uses them in Kubernetes.
TEST(TypeCheck, TimestampAndDurationTypeNames) {
    auto types = std::make_shared<TypeEnvironment>(*environment());
    types->addOverload("type", {"type", false, typeType(typeParam("A")), {typeParam("A")}, {"A"}});
    CompileOptions options;
    options.declarations.emplace();
    options.declarations->types = types;
    for (const char* name : {"google.protobuf.Timestamp", "google.protobuf.Duration"}) {
        auto program = Program::compile(name, options);
        ASSERT_TRUE(program.ok()) << name << ": " << program.error().message;
        EXPECT_EQ(formatType(*program->checkedType()), "type(" + std::string(name) + ")");
        EXPECT_EQ(toString(program->evaluate({}, Environment{})), name);
        auto unchecked = Program::compile(std::string("type(1) != ") + name);
        ASSERT_TRUE(unchecked.ok()) << unchecked.error().message;
        EXPECT_EQ(toString(unchecked->evaluate({}, Environment{})), "true");
    }
    EXPECT_EQ(typeOf("google.protobuf.Any"),
              "error: line 1, column 1: undeclared reference to 'google'");
}

// The standard library's operators as upstream's DRA environment declares them (a part of
// cluster/dracel/declarations.txt), with `device` a map whose values are dyn.
constexpr std::string_view kOperatorDeclarations =
    "overload\t!_\tlogical_not\tglobal\t-\tbool\tbool\n"
    "overload\t@in\tin_list\tglobal\tA\tbool\t~A\tlist(~A)\n"
    "overload\t@in\tin_map\tglobal\tA,B\tbool\t~A\tmap(~A,~B)\n"
    "overload\t_&&_\tlogical_and\tglobal\t-\tbool\tbool\tbool\n"
    "overload\t_+_\tadd_int64\tglobal\t-\tint\tint\tint\n"
    "overload\t_+_\tadd_string\tglobal\t-\tstring\tstring\tstring\n"
    "overload\t_+_\tadd_list\tglobal\tA\tlist(~A)\tlist(~A)\tlist(~A)\n"
    "overload\t_<_\tless_int64\tglobal\t-\tbool\tint\tint\n"
    "overload\t_<_\tless_int64_double\tglobal\t-\tbool\tint\tdouble\n"
    "overload\t_<_\tless_uint64_int64\tglobal\t-\tbool\tuint\tint\n"
    "overload\t_==_\tequals\tglobal\tA\tbool\t~A\t~A\n"
    "overload\tsize\tsize_string\tglobal\t-\tint\tstring\n"
    "overload\tsize\tsize_list\tglobal\tA\tint\tlist(~A)\n"
    "overload\tsize\tlist_size\tmember\tA\tint\tlist(~A)\n"
    "overload\tsize\tmap_size\tmember\tA,B\tint\tmap(~A,~B)\n"
    "overload\tformat\tstring_format\tmember\t-\tstring\tstring\tlist(dyn)\n"
    "variable\tdevice\tmap(string,dyn)\n";

// "ok" or the compile error's message, type-checked against kOperatorDeclarations.
std::string checkTyped(std::string_view expression) {
    auto types = TypeEnvironment::parse(kOperatorDeclarations);
    EXPECT_TRUE(types.ok()) << (types ? "" : types.error().message);
    CompileOptions options;
    options.declarations.emplace();
    options.declarations->variables["device"] = std::nullopt;
    options.declarations->types = std::make_shared<const TypeEnvironment>(std::move(*types));
    auto program = Program::compile(expression, options);
    return program ? "ok" : program.error().message;
}

TEST(TypeCheckOperators, ListLiteralsHoldOneKnownType) {
    EXPECT_EQ(checkTyped("[1, 'a'].size() == 2"),
              "line 1, column 5: expected type 'int' but found 'string'");
    EXPECT_EQ(checkTyped("[1, 2.0].size() == 2"),
              "line 1, column 5: expected type 'int' but found 'double'");
    EXPECT_EQ(checkTyped("[1, 2, 3].size() == 3"), "ok");
}

TEST(TypeCheckOperators, FormatArgumentsMayMixTypes) {
    // cel-go exempts format()'s list (and what is inside it) from the homogeneous-literal rule.
    EXPECT_EQ(checkTyped("'%s and %d'.format(['a', 1]) == 'a and 1'"), "ok");
    EXPECT_EQ(checkTyped("'%s'.format([[1, 'a']]) == ''"), "ok");
    EXPECT_EQ(checkTyped("['a', 1].size() == 2"),
              "line 1, column 7: expected type 'string' but found 'int'");
}

TEST(TypeCheckOperators, MapLiteralsHoldOneKeyTypeAndOneValueType) {
    EXPECT_EQ(checkTyped("{'a': 1, 'b': 'x'}.size() == 2"),
              "line 1, column 15: expected type 'int' but found 'string'");
    EXPECT_EQ(checkTyped("{1: 'a', 'b': 'c'}.size() == 2"),
              "line 1, column 10: expected type 'int' but found 'string'");
}

TEST(TypeCheckOperators, OperandsOfKnownTypesMustFitTheOperator) {
    EXPECT_EQ(checkTyped("true && 1"), "line 1, column 9: expected type 'bool' but found 'int'");
    EXPECT_EQ(checkTyped("!1"),
              "line 1, column 1: found no matching overload for '!_' applied to '(int)'");
    EXPECT_EQ(checkTyped("1 + 'a' == 'b'"),
              "line 1, column 3: found no matching overload for '_+_' applied to '(int, string)'");
    EXPECT_EQ(checkTyped("1 == 1.0"),
              "line 1, column 3: found no matching overload for '_==_' applied to '(int, double)'");
    EXPECT_EQ(checkTyped("null == 1"),
              "line 1, column 6: found no matching overload for '_==_' applied to '(null, int)'");
    EXPECT_EQ(checkTyped("1 in 'abc'"),
              "line 1, column 3: found no matching overload for '@in' applied to '(int, string)'");
    EXPECT_EQ(checkTyped("size(1) == 1"),
              "line 1, column 1: found no matching overload for 'size' applied to '(int)'");
    // Numbers of different kinds compare (cross-type numeric comparisons); dyn is not judged.
    EXPECT_EQ(checkTyped("1 < 1.5 && 1u < 2"), "ok");
    EXPECT_EQ(checkTyped("device.driver == 1 && device.driver && !device.driver"), "ok");
}

TEST(TypeUnification, AParameterBindsToTheFirstTypeAndRefusesAnother) {
    TypeMapping mapping;
    const TypePtr param = typeParam("A");
    EXPECT_TRUE(isAssignable(mapping, makeType(TypeKind::Int), param));
    EXPECT_EQ(formatType(*substitute(mapping, param, false)), "int");
    EXPECT_FALSE(isAssignable(mapping, makeType(TypeKind::String), param));
    EXPECT_TRUE(isAssignable(mapping, makeType(TypeKind::Dyn), param));
    EXPECT_EQ(formatType(*substitute(mapping, typeParam("B"), true)), "dyn");
}

TEST(TypeUnification, NullIsAssignableOnlyToNullableTypes) {
    TypeMapping mapping;
    EXPECT_TRUE(isAssignable(mapping, makeType(TypeKind::Null), structType("x.Y")));
    EXPECT_FALSE(isAssignable(mapping, makeType(TypeKind::Null), makeType(TypeKind::Int)));
}

}  // namespace
}  // namespace numadra::cel
