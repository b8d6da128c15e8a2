// String functions: the standard ones (contains, startsWith, endsWith, matches with RE2) and the
// cel-go strings extension (version 2). Indices count Unicode code points.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(Contains,                                                               //
          {"'hello'.contains('ell')", "true"},                                    //
          {"'hello'.contains('')", "true"},                                       //
          {"'hello'.contains('xyz')", "false"},                                   //
          {"'hello'.startsWith('he')", "true"},                                   //
          {"'hello'.startsWith('lo')", "false"},                                  //
          {"'hello'.startsWith('')", "true"},                                     //
          {"'hi'.startsWith('hello')", "false"},                                  //
          {"'hello'.endsWith('lo')", "true"},                                     //
          {"'hello'.endsWith('he')", "false"},                                    //
          {"'lo'.endsWith('hello')", "false"},                                    //
          {"'a'.contains(1)", "error(no such overload: contains(string, int))"},  //
          {"contains('a', 'a')", "error(no such overload: contains(string, string))"});

CEL_TABLE(Matches,                                                                             //
          {"'hello'.matches('l+')", "true"},                                                   //
          {"'hello'.matches('^h.*o$')", "true"},                                               //
          {"'hello'.matches('^l')", "false"},                                                  //
          {"matches('abc123', '[0-9]+')", "true"},                                             //
          {"'sym'.matches('[^a]?sym')", "true"},                                               //
          {"'é'.matches('^.$')", "true"},                                                      //
          {"'abc'.matches('a' + 'b')", "true"},                                                //
          {"'abc'.matches('(')", "error(invalid regular expression '(': missing ): ()"},       //
          {"'abc'.matches('(' + '')", "error(invalid regular expression '(': missing ): ()"},  //
          {"'abc'.matches(1)", "error(no such overload: matches(string, int))"},               //
          {"matches()", "error(no such overload: matches())"});  // found by the fuzzer

CEL_TABLE(Case,                                               //
          {"'Hello World'.lowerAscii()", "\"hello world\""},  //
          {"'Hello World'.upperAscii()", "\"HELLO WORLD\""},  //
          {"'ÉTÉ'.lowerAscii()", "\"ÉtÉ\""},                  //
          {"'été'.upperAscii()", "\"éTé\""});

CEL_TABLE(CharAt,                                                 //
          {"'hello'.charAt(1)", "\"e\""},                         //
          {"'hello'.charAt(5)", "\"\""},                          //
          {"'héllo'.charAt(1)", "\"é\""},                         //
          {"'hello'.charAt(6)", "error(index out of range: 6)"},  //
          {"'hello'.charAt(-1)", "error(index out of range: -1)"});

CEL_TABLE(IndexOf,                               //
          {"'tacocat'.indexOf('')", "0"},        //
          {"'tacocat'.indexOf('ac')", "1"},      //
          {"'tacocat'.indexOf('none')", "-1"},   //
          {"'tacocat'.indexOf('', 3)", "3"},     //
          {"'tacocat'.indexOf('a', 3)", "5"},    //
          {"'tacocat'.indexOf('at', 3)", "5"},   //
          {"'ta©o©αT'.indexOf('©')", "2"},       //
          {"'ta©o©αT'.indexOf('©', 3)", "4"},    //
          {"'ta©o©αT'.indexOf('©αT', 3)", "4"},  //
          {"'ta©o©αT'.indexOf('©α', 5)", "-1"},  //
          {"''.indexOf('a')", "-1"},             //
          {"'abc'.indexOf('abcd')", "-1"},       //
          {"'tacocat'.indexOf('a', -1)", "error(index out of range: -1)"});

CEL_TABLE(LastIndexOf,                              //
          {"'tacocat'.lastIndexOf('')", "7"},       //
          {"'tacocat'.lastIndexOf('at')", "5"},     //
          {"'tacocat'.lastIndexOf('none')", "-1"},  //
          {"'tacocat'.lastIndexOf('', 3)", "3"},    //
          {"'tacocat'.lastIndexOf('a', 3)", "1"},   //
          {"'ta©o©αT'.lastIndexOf('©')", "4"},      //
          {"'ta©o©αT'.lastIndexOf('©', 3)", "2"},   //
          {"'ta©o©αT'.lastIndexOf('©α', 4)", "4"},  //
          {"''.lastIndexOf('a')", "-1"},            //
          {"'tacocat'.lastIndexOf('a', -1)", "error(index out of range: -1)"});

// cel-go v0.29 (Strings v2 as Kubernetes pins it): an offset past the end finds nothing, or ''
// at the end; a negative offset is an error even for ''.
CEL_TABLE(IndexOfOffsetOutOfRange,                                         //
          {"'tacocat'.indexOf('a', 30)", "-1"},                            //
          {"'tacocat'.indexOf('a', 7)", "-1"},                             //
          {"'tacocat'.indexOf('', 30)", "7"},                              //
          {"'tacocat'.indexOf('', 7)", "7"},                               //
          {"'tacocat'.indexOf('', -1)", "error(index out of range: -1)"},  //
          {"''.indexOf('', 0)", "0"},                                      //
          {"'tacocat'.lastIndexOf('a', 30)", "-1"},                        //
          {"'tacocat'.lastIndexOf('', 30)", "7"},                          //
          {"'tacocat'.lastIndexOf('', -1)", "error(index out of range: -1)"});

CEL_TABLE(Replace,                                                       //
          {"'hello hello'.replace('he', 'we')", "\"wello wello\""},      //
          {"'hello hello'.replace('he', 'we', -1)", "\"wello wello\""},  //
          {"'hello hello'.replace('he', 'we', 1)", "\"wello hello\""},   //
          {"'hello hello'.replace('he', 'we', 0)", "\"hello hello\""},   //
          {"'hello'.replace('', '_')", "\"_h_e_l_l_o_\""},               //
          {"'hé'.replace('', '_', 2)", "\"_h_é\""},                      //
          {"'ta©o©αT'.replace('©', 'C')", "\"taCoCαT\""},                //
          {"'abc'.replace('x', 'y')", "\"abc\""});

CEL_TABLE(Split,                                                //
          {"'a,b,c'.split(',')", "[\"a\", \"b\", \"c\"]"},      //
          {"'a,b,c'.split(',', 2)", "[\"a\", \"b,c\"]"},        //
          {"'a,b,c'.split(',', 0)", "[]"},                      //
          {"'a,b,c'.split(',', -1)", "[\"a\", \"b\", \"c\"]"},  //
          {"'a,b,c'.split(',', 1)", "[\"a,b,c\"]"},             //
          {"'abc'.split('')", "[\"a\", \"b\", \"c\"]"},         //
          {"'héllo'.split('', 3)", "[\"h\", \"é\", \"llo\"]"},  //
          {"''.split(',')", "[\"\"]"},                          //
          {"',a,'.split(',')", "[\"\", \"a\", \"\"]"},          //
          {"'a--b'.split('--')", "[\"a\", \"b\"]"});

CEL_TABLE(Substring,                                                      //
          {"'tacocat'.substring(4)", "\"cat\""},                          //
          {"'tacocat'.substring(7)", "\"\""},                             //
          {"'tacocat'.substring(0, 4)", "\"taco\""},                      //
          {"'tacocat'.substring(4, 4)", "\"\""},                          //
          {"'ta©o©αT'.substring(2, 6)", "\"©o©α\""},                      //
          {"'tacocat'.substring(8)", "error(index out of range: 8)"},     //
          {"'tacocat'.substring(-1)", "error(index out of range: -1)"},   //
          {"'tacocat'.substring(0, 8)", "error(index out of range: 8)"},  //
          {"'tacocat'.substring(4, 3)", "error(invalid substring range. start: 4, end: 3)"});

CEL_TABLE(Trim,                                              //
          {"'  \\t hi there \\n '.trim()", "\"hi there\""},  //
          {"'\\u00a0\\u2003hi\\u3000'.trim()", "\"hi\""},    //
          {"'hi'.trim()", "\"hi\""},                         //
          {"'   '.trim()", "\"\""});

CEL_TABLE(Join,                                                                       //
          {"['a', 'b', 'c'].join()", "\"abc\""},                                      //
          {"['a', 'b', 'c'].join(', ')", "\"a, b, c\""},                              //
          {"[].join('-')", "\"\""},                                                   //
          {"['a', 1].join()", "error(join: list element 1 is a int, not a string)"},  //
          {"'abc'.join()", "error(no such overload: join(string))"});

CEL_TABLE(StringComposition,                                    //
          {"'a.b.c'.split('.').size() >= 2", "true"},           //
          {"'Hello'.lowerAscii().startsWith('he')", "true"},    //
          {"'x-y'.replace('-', '_').upperAscii()", "\"X_Y\""},  //
          {"['b', 'a'].map(s, s + '!').join(' ')", "\"b! a!\""});

}  // namespace
}  // namespace numadra::cel
