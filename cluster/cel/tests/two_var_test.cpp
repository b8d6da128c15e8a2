// Two-variable comprehensions (cel-go TwoVarComprehensions, in the Kubernetes environment):
// all/exists/existsOne(i, v, pred) and transformList/transformMap/transformMapEntry with and
// without a filter. Over a list the first variable is the index, over a map the key.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(TwoVarAll,                                                         //
          {"[1, 2, 3].all(i, v, v == i + 1)", "true"},                       //
          {"[1, 2, 4].all(i, v, v == i + 1)", "false"},                      //
          {"[].all(i, v, false)", "true"},                                   //
          {"{'a': 1, 'b': 2}.all(k, v, k.size() == v || v == 1)", "false"},  //
          {"[0, 'a'].all(i, v, v > 0)", "false"},                            //
          {"[1, 'a'].all(i, v, v > 0)", "error(no such overload: _>_(string, int))"});

CEL_TABLE(TwoVarExists,                                                   //
          {"[5, 6].exists(i, v, i == 1 && v == 6)", "true"},              //
          {"[5, 6].exists(i, v, i == 1 && v == 5)", "false"},             //
          {"{'a': 1, 'b': 2}.exists(k, v, k == 'b' && v == 2)", "true"},  //
          {"['a', 6].exists(i, v, v > 5)", "true"},                       //
          {"[1, 2].exists(i, v, v / i == 7)", "error(division by zero)"});

CEL_TABLE(TwoVarExistsOne,                                                             //
          {"[5, 7, 8].existsOne(i, v, v % 5 == i)", "true"},                           //
          {"[0, 1, 2].existsOne(i, v, v == i)", "false"},                              //
          {"[0, 1, 2].exists_one(i, v, i == 2)", "true"},                              //
          {"{6: 'six', 7: 'seven'}.existsOne(k, v, k == 7 && v == 'seven')", "true"},  //
          {"[3, 0].existsOne(i, v, v / i > 1)", "error(division by zero)"});

// existsOne is also a one-variable macro, the camel-case name of exists_one.
CEL_TABLE(ExistsOneCamelCase,                         //
          {"[1, 2, 3].existsOne(x, x > 2)", "true"},  //
          {"[1, 2, 3].existsOne(x, x > 1)", "false"});

CEL_TABLE(TransformList,                                                                //
          {"[2, 4, 6].transformList(i, v, v / 2 + i)", "[1, 3, 5]"},                    //
          {"[].transformList(i, v, v)", "[]"},                                          //
          {"[2, 4, 6].transformList(i, v, i != 1, v * 10)", "[20, 60]"},                //
          {"{'a': 1, 'b': 2}.transformList(k, v, k + string(v))", "[\"a1\", \"b2\"]"},  //
          {"{'a': 1, 'b': 2}.transformList(k, v, v > 1, k)", "[\"b\"]"},                //
          {"[1, 0].transformList(i, v, 1 / v)", "error(division by zero)"},             //
          {"[1].transformList(i, v, 'x', v)", "error(no such overload: transformList(string))"});

CEL_TABLE(TransformMap,                                                               //
          {"{'a': 1, 'b': 2}.transformMap(k, v, v * 10)", "{\"a\": 10, \"b\": 20}"},  //
          {"{'a': 1, 'b': 2}.transformMap(k, v, k == 'b', v * 10)", "{\"b\": 20}"},   //
          {"['x', 'y'].transformMap(i, v, v + v)", "{0: \"xx\", 1: \"yy\"}"},         //
          {"{}.transformMap(k, v, v)", "{}"},                                         //
          {"{'a': 0}.transformMap(k, v, 1 / v)", "error(division by zero)"});

CEL_TABLE(TransformMapEntry,  //
          {"{'a': 'x', 'b': 'y'}.transformMapEntry(k, v, {v: k})",
           "{\"x\": \"a\", \"y\": \"b\"}"},                                //
          {"[10, 20].transformMapEntry(i, v, {v: i})", "{10: 0, 20: 1}"},  //
          {"[10, 20].transformMapEntry(i, v, i > 0, {v: i})", "{20: 1}"},  //
          {"['a', 'a'].transformMapEntry(i, v, {v: i})",
           "error(insert failed: key \"a\" already exists)"},  //
          {"[1].transformMapEntry(i, v, v)", "error(no such overload: transformMapEntry(int))"});

CEL_TABLE(TwoVarMacroSyntax,  //
          {"[1].all(i, i, true)", "compile error: line 1, column 5: duplicate variable name: i"},
          {"[1].all(i, 1, true)",
           "compile error: line 1, column 5: argument 2 of 'all' must be a simple identifier"},
          {"[1].transformList(i, v)", "error(undeclared reference to 'i')"});

TEST(TwoVarComprehensions, VariablesShadowTheActivation) {
    Activation activation;
    activation.bind("i", Value(std::int64_t{100}));
    activation.bind("v", Value(std::int64_t{200}));
    EXPECT_EQ(testing::evalText("[7].transformList(i, v, [i, v])", activation), "[[0, 7]]");
    EXPECT_EQ(testing::evalText("[7].transformList(x, y, [i, v])", activation), "[[100, 200]]");
}

TEST(TwoVarComprehensions, NestedComprehensionsSeeOuterVariables) {
    EXPECT_EQ(testing::evalText("[1, 2].transformList(i, v, [10].transformList(j, w, i + v + w))"),
              "[[11], [13]]");
}

}  // namespace
}  // namespace numadra::cel
