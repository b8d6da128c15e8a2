// Arithmetic: int64 and uint64 are overflow-checked, division and modulus by zero are errors,
// doubles follow IEEE 754, and no operator converts between numeric types implicitly.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(IntArithmetic,     //
          {"1 + 2", "3"},    //
          {"1 - 2", "-1"},   //
          {"6 * 7", "42"},   //
          {"7 / 2", "3"},    //
          {"-7 / 2", "-3"},  //
          {"7 % 3", "1"},    //
          {"-7 % 3", "-1"},  //
          {"7 % -3", "1"},   //
          {"-(-5)", "5"},    //
          {"0 - 9223372036854775807 - 1", "-9223372036854775808"});

CEL_TABLE(IntOverflow,                                               //
          {"9223372036854775807 + 1", "error(integer overflow)"},    //
          {"-9223372036854775808 - 1", "error(integer overflow)"},   //
          {"9223372036854775807 * 2", "error(integer overflow)"},    //
          {"-9223372036854775808 / -1", "error(integer overflow)"},  //
          {"-9223372036854775808 % -1", "error(integer overflow)"},  //
          {"-(-9223372036854775808)", "error(integer overflow)"},    //
          {"1 / 0", "error(division by zero)"},                      //
          {"1 % 0", "error(modulus by zero)"});

CEL_TABLE(UintArithmetic,                                                      //
          {"1u + 2u", "3u"},                                                   //
          {"5u - 2u", "3u"},                                                   //
          {"6u * 7u", "42u"},                                                  //
          {"7u / 2u", "3u"},                                                   //
          {"7u % 3u", "1u"},                                                   //
          {"18446744073709551615u + 1u", "error(unsigned integer overflow)"},  //
          {"0u - 1u", "error(unsigned integer overflow)"},                     //
          {"9223372036854775808u * 2u", "error(unsigned integer overflow)"},   //
          {"1u / 0u", "error(division by zero)"},                              //
          {"1u % 0u", "error(modulus by zero)"},                               //
          {"-(1u)", "error(no such overload: -_(uint))"});

CEL_TABLE(DoubleArithmetic,          //
          {"1.5 + 2.25", "3.75"},    //
          {"1.5 - 2.0", "-0.5"},     //
          {"1.5 * 2.0", "3.0"},      //
          {"1.0 / 4.0", "0.25"},     //
          {"1.0 / 0.0", "+Inf"},     //
          {"-1.0 / 0.0", "-Inf"},    //
          {"0.0 / 0.0", "NaN"},      //
          {"-(2.5)", "-2.5"},        //
          {"1e308 * 10.0", "+Inf"},  //
          {"5.0 % 2.0", "error(no such overload: _%_(double, double))"});

CEL_TABLE(NoImplicitConversion,                                                   //
          {"1 + 1u", "error(no such overload: _+_(int, uint))"},                  //
          {"1 + 1.0", "error(no such overload: _+_(int, double))"},               //
          {"1u * 2.0", "error(no such overload: _*_(uint, double))"},             //
          {"'a' + 1", "error(no such overload: _+_(string, int))"},               //
          {"[1] + 'a'", "error(no such overload: _+_(list, string))"},            //
          {"true + true", "error(no such overload: _+_(bool, bool))"},            //
          {"null + null", "error(no such overload: _+_(null_type, null_type))"},  //
          {"{} + {}", "error(no such overload: _+_(map, map))"},                  //
          {"-'a'", "error(no such overload: -_(string))"},                        //
          {"'a' - 'a'", "error(no such overload: _-_(string, string))"});

CEL_TABLE(Concatenation,                   //
          {"'ab' + 'cd'", "\"abcd\""},     //
          {"'' + ''", "\"\""},             //
          {"b'ab' + b'cd'", "b\"abcd\""},  //
          {"[1, 2] + [3]", "[1, 2, 3]"},   //
          {"[] + [1]", "[1]"},             //
          {"[1] + []", "[1]"},             //
          {"['a'] + [1]", "[\"a\", 1]"});

CEL_TABLE(ErrorPropagation,                                  //
          {"(1 / 0) + 1", "error(division by zero)"},        //
          {"1 + (1 / 0)", "error(division by zero)"},        //
          {"(1 / 0) + (1 % 0)", "error(division by zero)"},  //
          {"-(1 / 0)", "error(division by zero)"},           //
          {"[1 / 0]", "error(division by zero)"},            //
          {"{'a': 1 / 0}", "error(division by zero)"},       //
          {"size(1 / 0)", "error(division by zero)"});

}  // namespace
}  // namespace numadra::cel
