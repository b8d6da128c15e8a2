// Comparisons: heterogeneous numeric equality and ordering across int, uint and double;
// ordering of strings, bytes and bools; equality of every type; `in` on lists and maps.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(Equality,                                          //
          {"1 == 1", "true"},                                //
          {"1 != 2", "true"},                                //
          {"1 == 1u", "true"},                               //
          {"1 == 1.0", "true"},                              //
          {"1u == 1.0", "true"},                             //
          {"-1 == 18446744073709551615u", "false"},          //
          {"1 == 1.5", "false"},                             //
          {"'a' == 'a'", "true"},                            //
          {"'a' == 'b'", "false"},                           //
          {"b'a' == b'a'", "true"},                          //
          {"'a' == b'a'", "false"},                          //
          {"true == true", "true"},                          //
          {"null == null", "true"},                          //
          {"null == 0", "false"},                            //
          {"1 == 'a'", "false"},                             //
          {"1 != 'a'", "true"},                              //
          {"[1, 2] == [1, 2]", "true"},                      //
          {"[1, 2] == [1.0, 2u]", "true"},                   //
          {"[1, 2] == [2, 1]", "false"},                     //
          {"[1] == [1, 1]", "false"},                        //
          {"[[1]] == [[1]]", "true"},                        //
          {"{'a': 1, 'b': 2} == {'b': 2, 'a': 1}", "true"},  //
          {"{'a': 1} == {'a': 2}", "false"},                 //
          {"{'a': 1} == {'b': 1}", "false"},                 //
          {"{1: 'a'} == {1u: 'a'}", "true"},                 //
          {"{} == []", "false"},                             //
          {"int == int", "true"},                            //
          {"int == uint", "false"},                          //
          {"type(1) == int", "true"},                        //
          {"0.0 / 0.0 == 0.0 / 0.0", "false"},               //
          {"0.0 / 0.0 != 0.0 / 0.0", "true"},                //
          {"-0.0 == 0.0", "true"},                           //
          // cel-go compares an int with a double as doubles inside int64's range.
          {"9223372036854775807 == 9223372036854775808.0", "true"},  //
          {"18446744073709551615u == 18446744073709551616.0", "true"});

CEL_TABLE(Ordering,                                                 //
          {"1 < 2", "true"},                                        //
          {"2 <= 2", "true"},                                       //
          {"3 > 2", "true"},                                        //
          {"2 >= 3", "false"},                                      //
          {"1 < 1.5", "true"},                                      //
          {"2u > 1.5", "true"},                                     //
          {"-1 < 0u", "true"},                                      //
          {"18446744073709551615u > 9223372036854775807", "true"},  //
          {"1.5 < 2", "true"},                                      //
          {"1.0 >= 1u", "true"},                                    //
          {"-1.0 < -1", "false"},                                   //
          {"9223372036854775807 < 1e19", "true"},                   //
          {"-9223372036854775808 > -1e300", "true"},                //
          {"1 < 0.0 / 0.0", "false"},                               //
          {"0.0 / 0.0 >= 1.0", "false"},                            //
          {"'a' < 'b'", "true"},                                    //
          {"'abc' < 'abd'", "true"},                                //
          {"'ab' < 'abc'", "true"},                                 //
          {"'Z' < 'a'", "true"},                                    //
          {"'é' > 'z'", "true"},                                    //
          {"b'\\x00' < b'\\xff'", "true"},                          //
          {"false < true", "true"},                                 //
          {"true <= true", "true"});

CEL_TABLE(OrderingErrors,                                                         //
          {"1 < 'a'", "error(no such overload: _<_(int, string))"},               //
          {"'a' > 1", "error(no such overload: _>_(string, int))"},               //
          {"null < null", "error(no such overload: _<_(null_type, null_type))"},  //
          {"[1] < [2]", "error(no such overload: _<_(list, list))"},              //
          {"{} <= {}", "error(no such overload: _<=_(map, map))"},                //
          {"true >= 1", "error(no such overload: _>=_(bool, int))"},              //
          {"int < uint", "error(no such overload: _<_(type, type))"});

CEL_TABLE(InOperator,                                                            //
          {"1 in [1, 2]", "true"},                                               //
          {"3 in [1, 2]", "false"},                                              //
          {"1u in [1, 2]", "true"},                                              //
          {"2.0 in [1, 2]", "true"},                                             //
          {"'a' in ['a', 1]", "true"},                                           //
          {"[1] in [[1], [2]]", "true"},                                         //
          {"1 in []", "false"},                                                  //
          {"'a' in {'a': 1}", "true"},                                           //
          {"'b' in {'a': 1}", "false"},                                          //
          {"1 in {1u: 'x'}", "true"},                                            //
          {"1u in {1: 'x'}", "true"},                                            //
          {"1.0 in {1: 'x'}", "true"},                                           //
          {"1.5 in {1: 'x'}", "false"},                                          //
          {"true in {true: 1}", "true"},                                         //
          {"'a' in {1: 'a'}", "false"},                                          //
          {"null in {'a': 1}", "error(no such overload: @in(null_type, map))"},  //
          {"1 in 'abc'", "error(no such overload: @in(int, string))"},           //
          {"(1 / 0) in [1]", "error(division by zero)"});

}  // namespace
}  // namespace numadra::cel
