// Conversions: int(), uint(), double(), string(), bytes(), bool(), dyn() and type(), with the
// range checks and parse errors CEL defines (as error values).

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(ToInt,               //
          {"int(42)", "42"},   //
          {"int(42u)", "42"},  //
          {"int(18446744073709551615u)",
           "error(integer overflow: uint 18446744073709551615 out of int range)"},  //
          {"int(3.9)", "3"},                                                        //
          {"int(-3.9)", "-3"},                                                      //
          {"int(1e19)", "error(integer overflow: double 1e+19 out of int range)"},  //
          {"int(-9223372036854775808.0)",
           "error(integer overflow: double -9.223372036854776e+18 out of int range)"},  //
          {"int(0.0 / 0.0)", "error(integer overflow: double NaN out of int range)"},   //
          {"int('123')", "123"},                                                        //
          {"int('-123')", "-123"},                                                      //
          {"int('+7')", "7"},                                                           //
          {"int('9223372036854775808')",
           "error(cannot convert string '9223372036854775808' to int)"},  //
          {"int('1.5')", "error(cannot convert string '1.5' to int)"},    //
          {"int('')", "error(cannot convert string '' to int)"},          //
          {"int('0x10')", "error(cannot convert string '0x10' to int)"},  //
          {"int(true)", "error(no such overload: int(bool))"});

CEL_TABLE(ToUint,                                                                              //
          {"uint(42)", "42u"},                                                                 //
          {"uint(42u)", "42u"},                                                                //
          {"uint(-1)", "error(unsigned integer overflow: int -1 out of uint range)"},          //
          {"uint(3.7)", "3u"},                                                                 //
          {"uint(-0.5)", "error(unsigned integer overflow: double -0.5 out of uint range)"},   //
          {"uint(1e20)", "error(unsigned integer overflow: double 1e+20 out of uint range)"},  //
          {"uint('42')", "42u"},                                                               //
          {"uint('-1')", "error(cannot convert string '-1' to uint)"},                         //
          {"uint(null)", "error(no such overload: uint(null_type))"});

CEL_TABLE(ToDouble,                                                             //
          {"double(1)", "1.0"},                                                 //
          {"double(1u)", "1.0"},                                                //
          {"double(1.5)", "1.5"},                                               //
          {"double('1.5')", "1.5"},                                             //
          {"double('-1e3')", "-1000.0"},                                        //
          {"double('+2')", "2.0"},                                              //
          {"double('inf')", "+Inf"},                                            //
          {"double('-Infinity')", "-Inf"},                                      //
          {"double('NaN')", "NaN"},                                             //
          {"double('0x1p3')", "8.0"},                                           //
          {"double('abc')", "error(cannot convert string 'abc' to double)"},    //
          {"double('1.5x')", "error(cannot convert string '1.5x' to double)"},  //
          {"double(true)", "error(no such overload: double(bool))"});

CEL_TABLE(ToString,                                                                         //
          {"string('a')", "\"a\""},                                                         //
          {"string(-42)", "\"-42\""},                                                       //
          {"string(42u)", "\"42\""},                                                        //
          {"string(1.5)", "\"1.5\""},                                                       //
          {"string(2.0)", "\"2\""},                                                         //
          {"string(-0.0)", "\"-0\""},                                                       //
          {"string(123456.0)", "\"123456\""},                                               //
          {"string(1234567.0)", "\"1.234567e+06\""},                                        //
          {"string(0.0001)", "\"0.0001\""},                                                 //
          {"string(0.00001)", "\"1e-05\""},                                                 //
          {"string(1e100)", "\"1e+100\""},                                                  //
          {"string(1.0 / 0.0)", "\"+Inf\""},                                                //
          {"string(true)", "\"true\""},                                                     //
          {"string(b'abc')", "\"abc\""},                                                    //
          {"string(b'\\xff')", "error(invalid UTF-8 in bytes, cannot convert to string)"},  //
          {"string(null)", "error(no such overload: string(null_type))"},                   //
          {"string([1])", "error(no such overload: string(list))"});

CEL_TABLE(ToBytesAndBool,                                                 //
          {"bytes('abc')", "b\"abc\""},                                   //
          {"bytes('é')", "b\"\\xc3\\xa9\""},                              //
          {"bytes(b'\\x00')", "b\"\\x00\""},                              //
          {"bytes(1)", "error(no such overload: bytes(int))"},            //
          {"bool(true)", "true"},                                         //
          {"bool('true')", "true"},                                       //
          {"bool('TRUE')", "true"},                                       //
          {"bool('t')", "true"},                                          //
          {"bool('1')", "true"},                                          //
          {"bool('False')", "false"},                                     //
          {"bool('0')", "false"},                                         //
          {"bool('yes')", "error(cannot convert string 'yes' to bool)"},  //
          {"bool(1)", "error(no such overload: bool(int))"});

CEL_TABLE(DynAndType,                                  //
          {"dyn(1) + 2", "3"},                         //
          {"dyn([1, 'a'])", "[1, \"a\"]"},             //
          {"type(1)", "int"},                          //
          {"type(1u)", "uint"},                        //
          {"type(1.0)", "double"},                     //
          {"type('a')", "string"},                     //
          {"type(b'a')", "bytes"},                     //
          {"type(true)", "bool"},                      //
          {"type(null)", "null_type"},                 //
          {"type([])", "list"},                        //
          {"type({})", "map"},                         //
          {"type(int)", "type"},                       //
          {"type(type(1))", "type"},                   //
          {"type(1) == type(2)", "true"},              //
          {"type(1) != type(1u)", "true"},             //
          {"type(1 / 0)", "error(division by zero)"},  //
          {"[int, uint, double, string, bytes, bool, list, map, null_type, type].size()", "10"});

CEL_TABLE(RoundTrips,                              //
          {"int(string(-17)) == -17", "true"},     //
          {"uint(string(17u)) == 17u", "true"},    //
          {"double(string(0.1)) == 0.1", "true"},  //
          {"string(bytes('héllo')) == 'héllo'", "true"});

}  // namespace
}  // namespace numadra::cel
