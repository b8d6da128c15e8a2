// Logic: `&&` and `||` are commutative and absorb errors (and non-booleans) when the other side
// decides the result; `!` and `?:` need booleans; errors in the taken branch only matter.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(And,                                                             //
          {"true && true", "true"},                                        //
          {"true && false", "false"},                                      //
          {"false && true", "false"},                                      //
          {"false && false", "false"},                                     //
          {"false && (1 / 0 == 1)", "false"},                              //
          {"(1 / 0 == 1) && false", "false"},                              //
          {"true && (1 / 0 == 1)", "error(division by zero)"},             //
          {"(1 / 0 == 1) && true", "error(division by zero)"},             //
          {"(1 / 0 == 1) && (1 % 0 == 1)", "error(division by zero)"},     //
          {"false && 'a'", "false"},                                       //
          {"'a' && false", "false"},                                       //
          {"true && 'a'", "error(no such overload: _&&_(bool, string))"},  //
          {"1 && true", "error(no such overload: _&&_(int, bool))"},       //
          {"true && true && true && false", "false"},                      //
          {"x && false", "false"},                                         //
          {"x && true", "error(undeclared reference to 'x')"});

CEL_TABLE(Or,                                                               //
          {"true || false", "true"},                                        //
          {"false || true", "true"},                                        //
          {"false || false", "false"},                                      //
          {"true || (1 / 0 == 1)", "true"},                                 //
          {"(1 / 0 == 1) || true", "true"},                                 //
          {"false || (1 / 0 == 1)", "error(division by zero)"},             //
          {"(1 / 0 == 1) || false", "error(division by zero)"},             //
          {"true || 'a'", "true"},                                          //
          {"'a' || true", "true"},                                          //
          {"false || 'a'", "error(no such overload: _||_(bool, string))"},  //
          {"false || false || false || true", "true"},                      //
          {"x || true", "true"});

CEL_TABLE(Not,                       //
          {"!true", "false"},        //
          {"!false", "true"},        //
          {"!!false", "false"},      //
          {"!!'a' == 'a'", "true"},  // an even run cancels out in the parser, as cel-go's
          {"!!!1", "error(no such overload: !_(int))"},  //
          // A number literal carries its sign (cel-go's grammar): `!!-2` is `-2`.
          {"!!-2 > 3", "false"},                         //
          {"!-2", "error(no such overload: !_(int))"},   //
          {"--'a' == 'a'", "true"},                      //
          {"!(1 / 0 == 1)", "error(division by zero)"},  //
          {"!1", "error(no such overload: !_(int))"},    //
          {"!null", "error(no such overload: !_(null_type))"});

CEL_TABLE(Conditional,                                               //
          {"true ? 1 : 2", "1"},                                     //
          {"false ? 1 : 2", "2"},                                    //
          {"true ? 1 : 1 / 0", "1"},                                 //
          {"false ? 1 / 0 : 'b'", "\"b\""},                          //
          {"true ? 1 / 0 : 2", "error(division by zero)"},           //
          {"(1 / 0 == 1) ? 1 : 2", "error(division by zero)"},       //
          {"1 ? 'a' : 'b'", "error(no such overload: _?_:_(int))"},  //
          {"true ? 'mixed' : 1", "\"mixed\""});

}  // namespace
}  // namespace numadra::cel
