// Lists and maps: literals, indexing (with "no such key" and bounds errors), field selection on
// maps, size(), and qualified names resolved against the activation.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(ListIndex,                                                    //
          {"[7, 8, 9][0]", "7"},                                        //
          {"[7, 8, 9][2]", "9"},                                        //
          {"[7, 8, 9][1u]", "8"},                                       //
          {"[7, 8, 9][dyn(1.0)]", "8"},                                 //
          {"[7, 8, 9][1.5]", "error(unsupported index value 1.5)"},     //
          {"[7, 8, 9][3]", "error(index out of bounds: 3)"},            //
          {"[7, 8, 9][-1]", "error(index out of bounds: -1)"},          //
          {"[][0]", "error(index out of bounds: 0)"},                   //
          {"[1]['a']", "error(no such overload: _[_](list, string))"},  //
          {"[[1, 2], [3]][0][1]", "2"},                                 //
          {"[1, 1 / 0][0]", "error(division by zero)"});

CEL_TABLE(MapIndex,                                                       //
          {"{'a': 1}['a']", "1"},                                         //
          {"{'a': 1}.a", "1"},                                            //
          {"{'a': {'b': 2}}.a.b", "2"},                                   //
          {"{'a': 1}['b']", "error(no such key: b)"},                     //
          {"{'a': 1}.b", "error(no such key: b)"},                        //
          {"{1: 'x'}[2]", "error(no such key: 2)"},                       //
          {"{1: 'x'}[1u]", "\"x\""},                                      //
          {"{1u: 'x'}[1]", "\"x\""},                                      //
          {"{1: 'x'}[1.0]", "\"x\""},                                     //
          {"{true: 'x'}[true]", "\"x\""},                                 //
          {"{'a': 1}[null]", "error(unsupported key type: null_type)"},   //
          {"{'a': 1}[[1]]", "error(unsupported key type: list)"},         //
          {"1.a", "error(type 'int' does not support field selection)"},  //
          {"'s'['a']", "error(no such overload: _[_](string, string))"});

CEL_TABLE(MapLiterals,                                                     //
          {"{'a': 1, 'a': 2}", "error(Failed with repeated key: \"a\")"},  //
          {"{1: 1, 1u: 2}", "error(Failed with repeated key: 1u)"},        //
          {"{1.5: 1}", "error(unsupported key type: double)"},             //
          {"{null: 1}", "error(unsupported key type: null_type)"},         //
          {"{[1]: 1}", "error(unsupported key type: list)"},               //
          {"{'k' + 'ey': 1 + 1}", "{\"key\": 2}"},                         //
          {"{1 / 0: 1}", "error(division by zero)"});

CEL_TABLE(Size,                                               //
          {"size([1, 2, 3])", "3"},                           //
          {"[1, 2, 3].size()", "3"},                          //
          {"size([])", "0"},                                  //
          {"size({'a': 1})", "1"},                            //
          {"{'a': 1, 'b': 2}.size()", "2"},                   //
          {"size('hello')", "5"},                             //
          {"size('héllo')", "5"},                             //
          {"'😀'.size()", "1"},                                //
          {"size(b'h\\xc3\\xa9')", "3"},                      //
          {"size(1)", "error(no such overload: size(int))"},  //
          {"size()", "error(no such overload: size())"},      //
          {"size('a', 'b')", "error(no such overload: size(string, string))"});

TEST(Activation, BindsVariables) {
    Activation activation;
    activation.bind("x", Value(std::int64_t{40}));
    activation.bind("name", Value(std::string("gpu")));
    EXPECT_EQ(testing::evalText("x + 2", activation), "42");
    EXPECT_EQ(testing::evalText("name + '0'", activation), "\"gpu0\"");
}

TEST(Activation, UnboundVariableIsAnError) {
    EXPECT_EQ(testing::evalText("missing + 1"), "error(undeclared reference to 'missing')");
}

TEST(Activation, DottedNameResolvesToTheLongestBoundPrefix) {
    Activation activation;
    activation.bind("a.b", Value::map({{MapKey(std::string("c")), Value(std::int64_t{1})}}));
    activation.bind("a.b.d", Value(std::int64_t{2}));
    EXPECT_EQ(testing::evalText("a.b.c", activation), "1");
    EXPECT_EQ(testing::evalText("a.b.d", activation), "2");
    EXPECT_EQ(testing::evalText("a.b.e", activation), "error(no such key: e)");
    EXPECT_EQ(testing::evalText("a.x", activation), "error(undeclared reference to 'a')");
}

TEST(Activation, LeadingDotNamesTheActivationNotALoopVariable) {
    Activation activation;
    activation.bind("x", Value(std::int64_t{10}));
    EXPECT_EQ(testing::evalText("[1, 2].map(x, x + .x)", activation), "[11, 12]");
}

TEST(Activation, TypeNamesResolveUnlessBound) {
    Activation activation;
    EXPECT_EQ(testing::evalText("int", activation), "int");
    activation.bind("int", Value(std::int64_t{5}));
    EXPECT_EQ(testing::evalText("int", activation), "5");
}

TEST(Activation, MapVariableSupportsSelectionAndHas) {
    Activation activation;
    activation.bind(
        "device",
        Value::map({{MapKey(std::string("driver")), Value(std::string("gpu.example.com"))}}));
    EXPECT_EQ(testing::evalText("device.driver == 'gpu.example.com'", activation), "true");
    EXPECT_EQ(testing::evalText("has(device.driver) && !has(device.model)", activation), "true");
}

}  // namespace
}  // namespace numadra::cel
