// Macros: has(), all, exists, exists_one, map (2 and 3 arguments), filter, and cel.bind;
// comprehension variables shadow the activation and errors are absorbed like && and ||.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(Has,                                                 //
          {"has({'a': 1}.a)", "true"},                         //
          {"has({'a': 1}.b)", "false"},                        //
          {"has({'a': {'b': 1}}.a.b)", "true"},                //
          {"has({'a': null}.a)", "true"},                      //
          {"has({'a': {}}.a.b)", "false"},                     //
          {"has({}.a.b)", "error(no such key: a)"},            //
          {"has(1.a)", "error(invalid type for has(): int)"},  //
          {"has({'a': 1}['a'])",
           "compile error: line 1, column 1: invalid argument to has() macro"});

// Lists v3 sortBy: stable, by each element's key; keys of one orderable type.
CEL_TABLE(SortBy,                                                                   //
          {"[3, 1, 2].sortBy(x, x)", "[1, 2, 3]"},                                  //
          {"[1, 2, 3].sortBy(x, x % 2)", "[2, 1, 3]"},                              //
          {"['bb', 'a', 'ccc'].sortBy(s, -s.size())", "[\"ccc\", \"bb\", \"a\"]"},  //
          {"[].sortBy(x, x)", "[]"},                                                //
          {"[1, 2].sortBy(x, x == 1 ? 'a' : 1)",
           "error(sortBy: the keys must be of one orderable type, found int)"},  //
          {"{'a': 1}.sortBy(k, k)", "error(no such overload: sortBy(map))"});

CEL_TABLE(All,                                                                      //
          {"[1, 2, 3].all(x, x > 0)", "true"},                                      //
          {"[1, 2, 3].all(x, x > 1)", "false"},                                     //
          {"[].all(x, x > 0)", "true"},                                             //
          {"{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])", "true"},                     //
          {"[0, 'a'].all(x, x > 0)", "false"},                                      //
          {"['a', 0].all(x, x > 0)", "false"},                                      //
          {"[1, 'a'].all(x, x > 0)", "error(no such overload: _>_(string, int))"},  //
          {"[1, 2].all(x, 'nope')", "error(no such overload: _&&_(string))"},       //
          {"1.all(x, true)", "error(expected iterable type, got int)"});

CEL_TABLE(Exists,                                                                      //
          {"[1, 2, 3].exists(x, x == 2)", "true"},                                     //
          {"[1, 2, 3].exists(x, x == 5)", "false"},                                    //
          {"[].exists(x, true)", "false"},                                             //
          {"['a', 2].exists(x, x == 2 && x > 1)", "true"},                             //
          {"[1, 'a'].exists(x, x > 5)", "error(no such overload: _>_(string, int))"},  //
          {"['a', 6].exists(x, x > 5)", "true"},                                       //
          {"{'a': 1}.exists(k, k == 'a')", "true"});

CEL_TABLE(ExistsOne,                                            //
          {"[1, 2, 3].exists_one(x, x > 2)", "true"},           //
          {"[1, 2, 3].exists_one(x, x > 1)", "false"},          //
          {"[].exists_one(x, true)", "false"},                  //
          {"[1, 'a'].exists_one(x, x == 1 && x > 0)", "true"},  //
          {"[1, 'a'].exists_one(x, x > 0)", "error(no such overload: _>_(string, int))"});

CEL_TABLE(MapMacro,                                                                    //
          {"[1, 2, 3].map(x, x * 2)", "[2, 4, 6]"},                                    //
          {"[].map(x, x * 2)", "[]"},                                                  //
          {"[1, 2, 3].map(x, x > 1, x * 10)", "[20, 30]"},                             //
          {"{'a': 1, 'b': 2}.map(k, k + '!')", "[\"a!\", \"b!\"]"},                    //
          {"[1, 0].map(x, 1 / x)", "error(division by zero)"},                         //
          {"[1, 'a'].map(x, x > 0, x)", "error(no such overload: _>_(string, int))"},  //
          {"[1, 2].map(x, 'no', x)", "error(no such overload: filter(string))"});

CEL_TABLE(Filter,                                               //
          {"[1, 2, 3, 4].filter(x, x % 2 == 0)", "[2, 4]"},     //
          {"[1, 2].filter(x, false)", "[]"},                    //
          {"{'a': 1, 'b': 2}.filter(k, k != 'a')", "[\"b\"]"},  //
          {"[1, 0].filter(x, 1 / x > 0)", "error(division by zero)"});

CEL_TABLE(NestedComprehensions,                                               //
          {"[[1, 2], [3]].all(l, l.all(x, x > 0))", "true"},                  //
          {"[1, 2].map(x, [10, 20].map(y, x + y))", "[[11, 21], [12, 22]]"},  //
          {"[1, 2].exists(x, [1, 2].exists(x, x == 2))", "true"},             //
          {"[1, 2].map(x, [3].map(y, x))", "[[1], [2]]"},                     //
          {"[1, 2, 3].filter(x, x > 1).map(x, x * x)", "[4, 9]"},             //
          {"[1, 2, 3].map(x, x).size()", "3"});

CEL_TABLE(Bind,                                                  //
          {"cel.bind(x, 2, x * x)", "4"},                        //
          {"cel.bind(x, [1, 2], x + x)", "[1, 2, 1, 2]"},        //
          {"cel.bind(x, 1 / 0, true)", "true"},                  //
          {"cel.bind(x, 1 / 0, x)", "error(division by zero)"},  //
          {"cel.bind(a, 1, cel.bind(b, a + 1, a + b))", "3"});

// cel-go refuses an iteration variable named as the accumulator (__result__) in every
// comprehension macro, one- and two-variable forms and sortBy alike.
CEL_TABLE(IterationVariableNamedAsTheAccumulator,  //
          {"[].exists(__result__, true)",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"},
          {"[].map(__result__, true, 1)",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"},
          {"[].filter(__result__, true)",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"},
          {"[].sortBy(__result__, 1)",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"},
          {"[].all(i, __result__, true)",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"},
          {"{}.transformMapEntry(__result__, v, {})",
           "compile error: line 1, column 4: iteration variable overwrites accumulator variable"});

// cel.bind, optMap and optFlatMap bind a value instead of iterating: upstream allows the name.
CEL_TABLE(BoundVariableNamedAsTheAccumulator,                                  //
          {"cel.bind(__result__, 1, __result__ + 1)", "2"},                    //
          {"optional.of(1).optMap(__result__, __result__ + 1).value()", "2"},  //
          {"optional.of(1).optFlatMap(__result__, optional.of(__result__)).value()", "1"});

CEL_TABLE(MacroLikeCalls,                                             //
          {"[1].all(1)", "error(no such overload: all(list, int))"},  //
          {"[1].exists(x, y, true, false)", "error(undeclared reference to 'x')"});

TEST(Macros, LoopVariableShadowsTheActivation) {
    Activation activation;
    activation.bind("x", Value(std::int64_t{100}));
    EXPECT_EQ(testing::evalText("[1, 2].map(x, x)", activation), "[1, 2]");
    EXPECT_EQ(testing::evalText("[1, 2].map(y, x)", activation), "[100, 100]");
}

TEST(Macros, LoopVariableShadowsADottedName) {
    Activation activation;
    activation.bind("x.y", Value(std::int64_t{100}));
    EXPECT_EQ(testing::evalText("[{'y': 1}].map(x, x.y)", activation), "[1]");
    EXPECT_EQ(testing::evalText("x.y", activation), "100");
}

}  // namespace
}  // namespace numadra::cel
