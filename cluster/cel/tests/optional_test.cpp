// Optional types (cel-go OptionalTypes, enabled in Kubernetes): `x.?f`, `m[?k]`, `l[?i]`,
// optional.of/none/ofNonZeroValue, hasValue/value/orValue/or, optMap/optFlatMap, chaining and
// optional entries in list and map literals.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(OptionalConstructors,                               //
          {"optional.of(1)", "optional.of(1)"},               //
          {"optional.none()", "optional.none()"},             //
          {"optional.of(null).hasValue()", "true"},           //
          {"optional.of(1 / 0)", "error(division by zero)"},  //
          {"optional.of()", "error(no such overload: optional.of())"});

CEL_TABLE(OptionalOfNonZeroValue,                                 //
          {"optional.ofNonZeroValue(1)", "optional.of(1)"},       //
          {"optional.ofNonZeroValue(0)", "optional.none()"},      //
          {"optional.ofNonZeroValue(0u)", "optional.none()"},     //
          {"optional.ofNonZeroValue(0.0)", "optional.none()"},    //
          {"optional.ofNonZeroValue('')", "optional.none()"},     //
          {"optional.ofNonZeroValue(b'')", "optional.none()"},    //
          {"optional.ofNonZeroValue(false)", "optional.none()"},  //
          {"optional.ofNonZeroValue(null)", "optional.none()"},   //
          {"optional.ofNonZeroValue([])", "optional.none()"},     //
          {"optional.ofNonZeroValue({})", "optional.none()"},     //
          {"optional.ofNonZeroValue([0])", "optional.of([0])"});

CEL_TABLE(OptionalAccessors,                                                  //
          {"optional.of(2).hasValue()", "true"},                              //
          {"optional.none().hasValue()", "false"},                            //
          {"optional.of(2).value()", "2"},                                    //
          {"optional.none().value()", "error(optional.none() dereference)"},  //
          {"optional.of(2).orValue(3)", "2"},                                 //
          {"optional.none().orValue(3)", "3"},                                //
          {"optional.of(2).or(optional.of(3))", "optional.of(2)"},            //
          {"optional.none().or(optional.of(3))", "optional.of(3)"},           //
          {"optional.none().or(optional.none())", "optional.none()"},         //
          {"1.hasValue()", "error(no such overload: hasValue(int))"},         //
          {"optional.none().or(3)", "error(no such overload: or(optional_type, int))"});

CEL_TABLE(OptionalOrIsLazy,                                             //
          {"optional.of(2).orValue(1 / 0)", "2"},                       //
          {"optional.of(2).or(optional.of(1 / 0))", "optional.of(2)"},  //
          {"optional.none().orValue(1 / 0)", "error(division by zero)"});

CEL_TABLE(OptionalFieldSelection,                                 //
          {"{'a': 1}.?a", "optional.of(1)"},                      //
          {"{'a': 1}.?b", "optional.none()"},                     //
          {"{'a': 1}.?a.orValue(5)", "1"},                        //
          {"{'a': 1}.?b.orValue(5)", "5"},                        //
          {"{'null_key': null}.?null_key", "optional.of(null)"},  //
          {"1.?a", "error(type 'int' does not support field selection)"});

CEL_TABLE(OptionalIndex,                                                   //
          {"{'a': 1}[?'a']", "optional.of(1)"},                            //
          {"{'a': 1}[?'b']", "optional.none()"},                           //
          {"{1u: 'x'}[?1]", "optional.of(\"x\")"},                         //
          {"{1: 'x'}[?1.0]", "optional.of(\"x\")"},                        //
          {"['a'][?0]", "optional.of(\"a\")"},                             //
          {"['a'][?1]", "optional.none()"},                                //
          {"['a'][?-1]", "optional.none()"},                               //
          {"['a'][?'x']", "error(no such overload: _[_](list, string))"},  //
          {"{'a': 1}[?null]", "error(unsupported key type: null_type)"});

// a.?b.c selects c within the optional; a.?b.?c stays optional too.
CEL_TABLE(OptionalChaining,                                   //
          {"{'a': {'b': 1}}.?a.b", "optional.of(1)"},         //
          {"{'a': {'b': 1}}.?a.?b", "optional.of(1)"},        //
          {"{'a': {}}.?a.b", "optional.none()"},              //
          {"{}.?a.b", "optional.none()"},                     //
          {"{}.?a.?b.c", "optional.none()"},                  //
          {"{'a': [5]}.?a[0]", "optional.of(5)"},             //
          {"{'a': []}.?a[0]", "optional.none()"},             //
          {"optional.of({'c': 1}).c", "optional.of(1)"},      //
          {"optional.of({'c': 1})['d']", "optional.none()"},  //
          {"{'a': 0}.?a.b", "error(type 'int' does not support field selection)"});

CEL_TABLE(OptionalHas,                                //
          {"has({'a': {'b': 1}}.?a.b)", "true"},      //
          {"has({'a': {}}.?a.b)", "false"},           //
          {"has({}.?a.b)", "false"},                  //
          {"has({'a': optional.none()}.a)", "true"},  //
          {"has(optional.of({'a': 1}).a)", "true"},   //
          {"has({'a': 1}.?a)", "compile error: line 1, column 1: invalid argument to has() macro"});

CEL_TABLE(OptionalListEntries,                                              //
          {"[?optional.of(1), 2]", "[1, 2]"},                               //
          {"[?optional.none(), 2]", "[2]"},                                 //
          {"[?{}.?a, ?{'a': 3}.?a]", "[3]"},                                //
          {"[?1]", "error(no such overload: optional entry of type int)"},  //
          {"[?optional.of(1 / 0)]", "error(division by zero)"});

CEL_TABLE(OptionalMapEntries,                                          //
          {"{?'a': optional.of(1), 'b': 2}", "{\"a\": 1, \"b\": 2}"},  //
          {"{?'a': optional.none(), 'b': 2}", "{\"b\": 2}"},           //
          {"has({?'a': optional.none()}.a)", "false"},                 //
          {"{?'a': 1}", "error(no such overload: optional entry of type int)"});

CEL_TABLE(OptionalMap,                                                     //
          {"optional.of(2).optMap(x, x * 10)", "optional.of(20)"},         //
          {"optional.none().optMap(x, x * 10)", "optional.none()"},        //
          {"optional.of(0).optMap(x, 1 / x)", "error(division by zero)"},  //
          {"1.optMap(x, x)", "error(no such overload: optMap(int))"},      //
          {"{'a': {'b': 1}}.?a.optFlatMap(m, m.?b)", "optional.of(1)"},    //
          {"{'a': {}}.?a.optFlatMap(m, m.?b)", "optional.none()"},         //
          {"optional.of(1).optFlatMap(x, x)", "error(no such overload: optFlatMap(int))"});

CEL_TABLE(OptionalEquality,                                //
          {"optional.none() == optional.none()", "true"},  //
          {"optional.of(1) == optional.of(1u)", "true"},   //
          {"optional.of(1) == optional.of(2)", "false"},   //
          {"optional.of(1) == optional.none()", "false"},  //
          {"optional.of(1) == 1", "false"},                //
          {"optional.of(1) in [optional.of(1)]", "true"});

CEL_TABLE(OptionalType,                                       //
          {"type(optional.none())", "optional_type"},         //
          {"type(optional.of(1)) == optional_type", "true"},  //
          {"optional.of(1) + 1", "error(no such overload: _+_(optional_type, int))"});

TEST(Optional, HostFunctionNamedValueStillWorksOnOtherTypes) {
    // value() and or() are optional members only; other receivers reach the host.
    Environment env;
    env.memberFunctions["value"] = [](const std::vector<Value>& args) -> Value {
        return Value(args[0].typeName());
    };
    EXPECT_EQ(testing::evalText("'x'.value()", {}, env), "\"string\"");
    EXPECT_EQ(testing::evalText("optional.of(1).value()", {}, env), "1");
}

TEST(Optional, OrWithANonOptionalReceiverCallsTheHost) {
    Environment env;
    env.memberFunctions["or"] = [](const std::vector<Value>& args) -> Value {
        return Value(static_cast<std::int64_t>(args.size()));
    };
    EXPECT_EQ(testing::evalText("1.or(2)", {}, env), "2");
}

TEST(Optional, VariableOptionalsChainLikeLiterals) {
    Activation activation;
    Map attributes;
    attributes.emplace(MapKey{std::string("model")}, Value(std::string("A100")));
    activation.bind("attrs", Value::map(attributes));
    EXPECT_EQ(testing::evalText("attrs.?model.orValue('') == 'A100'", activation), "true");
    EXPECT_EQ(testing::evalText("attrs.?missing.orValue('none')", activation), "\"none\"");
}

}  // namespace
}  // namespace numadra::cel
