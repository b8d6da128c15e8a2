// Parsing: operator precedence and associativity as the CEL grammar defines them, and parse
// errors that point at the line and column of the offending token and quote it.

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(Precedence,                              //
          {"1 + 2 * 3", "7"},                      //
          {"(1 + 2) * 3", "9"},                    //
          {"10 - 4 - 3", "3"},                     //
          {"100 / 10 / 5", "2"},                   //
          {"7 % 4 * 2", "6"},                      //
          {"2 * 3 % 4", "2"},                      //
          {"-2 * 3", "-6"},                        //
          {"- -2", "2"},                           //
          {"--2", "2"},                            //
          {"-(2)", "-2"},                          //
          {"!true || true", "true"},               //
          {"!!true", "true"},                      //
          {"!(true || true)", "false"},            //
          {"1 + 1 == 2", "true"},                  //
          {"1 < 2 == true", "true"},               //
          {"2 in [1, 2] == true", "true"},         //
          {"true || false && false", "true"},      //
          {"(true || false) && false", "false"},   //
          {"false && true || true", "true"},       //
          {"1 == 1 && 2 == 2", "true"},            //
          {"true ? 1 : 2 + 10", "1"},              //
          {"false ? 1 : true ? 2 : 3", "2"},       //
          {"false ? 1 : false ? 2 : 3", "3"},      //
          {"true || false ? 'a' : 'b'", "\"a\""},  //
          {"[1, 2][0] + 1", "2"},                  //
          {"{'a': [1, 2]}.a[1]", "2"},             //
          {"'abc'.size() * 2", "6"},               //
          {"-'abc'.size()", "-3"},                 //
          {"1 + 2 < 4 && 'a' + 'b' == 'ab'", "true"});

CEL_TABLE(Whitespace,               //
          {" 1\t+\n2\r\n", "3"},    //
          {"1+2", "3"},             //
          {"[ 1 ,2 ] [ 1 ]", "2"},  //
          {"\f1", "1"});

CEL_TABLE(DeepNesting,  //
          {std::string(200, '(') + "1" + std::string(200, ')'), "1"},
          {std::string(300, '(') + "1" + std::string(300, ')'),
           "compile error: line 1, column 251: expression nested too deeply at '('"},
          // Long && / || chains are balanced, so they do not count as deep nesting.
          {"false" + std::string() +
               [] {
                   std::string s;
                   for (int i = 0; i < 1000; ++i)
                       s += " || false";
                   return s + " || true";
               }(),
           "true"});

CEL_TABLE(
    ParseErrors,                                                                      //
    {"", "compile error: line 1, column 1: unexpected end of input"},                 //
    {"1 +", "compile error: line 1, column 4: unexpected end of input"},              //
    {"1 + * 2", "compile error: line 1, column 5: unexpected '*'"},                   //
    {"(1 + 2", "compile error: line 1, column 7: expected ')', found end of input"},  //
    {"[1, 2", "compile error: line 1, column 6: expected ']', found end of input"},   //
    {"{'a' 1}", "compile error: line 1, column 6: expected ':', found '1'"},          //
    {"1 2", "compile error: line 1, column 3: unexpected '2'"},                       //
    {"a.1", "compile error: line 1, column 2: unexpected '.1'"},                      //
    {"a.",
     "compile error: line 1, column 3: expected a field name after '.', found end of input"},  //
    {"true ? 1", "compile error: line 1, column 9: expected ':', found end of input"},         //
    {"1 +\n  # 2", "compile error: line 2, column 3: unexpected character '#'"},               //
    {"'abc", "compile error: line 1, column 1: unterminated string literal"},                  //
    {"x + 'a\nb'", "compile error: line 1, column 5: unterminated string literal"},            //
    {"'\\q'", "compile error: line 1, column 2: invalid escape sequence"},                     //
    {"'\\uD800'", "compile error: line 1, column 2: invalid escape sequence"},                 //
    {"9223372036854775808",
     "compile error: line 1, column 1: integer literal '9223372036854775808' is out of range"},  //
    {"18446744073709551616u",
     "compile error: line 1, column 1: integer literal '18446744073709551616' is out of range"},  //
    {"0x", "compile error: line 1, column 1: invalid hexadecimal literal '0x'"},                  //
    {"a = 1", "compile error: line 1, column 3: unexpected character '='"},                       //
    {"a & b", "compile error: line 1, column 3: unexpected character '&'"},                       //
    {"'é' + é", "compile error: line 1, column 7: unexpected character 'é'"},                     //
    {"if", "compile error: line 1, column 1: reserved identifier 'if'"},                          //
    {"while(1)", "compile error: line 1, column 1: reserved identifier 'while'"},                 //
    {"has(a)", "compile error: line 1, column 1: invalid argument to has() macro"},               //
    {"[1].all(1, true)",
     "compile error: line 1, column 5: argument 1 of 'all' must be a simple identifier"},  //
    {"[1].map(x.y, x)",
     "compile error: line 1, column 5: argument 1 of 'map' must be a simple identifier"},     //
    {"Msg{a: 1}", "compile error: line 1, column 4: message construction is not supported"},  //
    {"a.?",
     "compile error: line 1, column 4: expected a field name after '.', found end of input"},  //
    {"f(1,)", "compile error: line 1, column 5: unexpected ')'"},                              //
    {"in", "compile error: line 1, column 1: unexpected 'in'"});

// cel-go's parser reads a field name in backticks (on by default, so in Kubernetes too): any
// of letters, digits, '_', '.', '-', '/' and ' ', in a selection, an optional selection or has().
CEL_TABLE(EscapedFieldNames,                                                          //
          {"{'content-type': 'json'}.`content-type`", "\"json\""},                    //
          {"{'a.b/c d_1': 1}.`a.b/c d_1`", "1"},                                      //
          {"has({'a-b': 1}.`a-b`)", "true"},                                          //
          {"has({'a-b': 1}.`a-c`)", "false"},                                         //
          {"{'a-b': {'c': 2}}.`a-b`.c", "2"},                                         //
          {"{'a-b': 1}.?`a-b`.orValue(0)", "1"},                                      //
          {"{'a': 1}.`a-b`", "error(no such key: a-b)"},                              //
          {"{'a': 1}.``",                                                             //
           "compile error: line 1, column 10: invalid escaped field name: a "         //
           "backtick-quoted name holds letters, digits, '_', '.', '-', '/' and ' ' "  //
           "and ends with a backtick"},                                               //
          {"{'a': 1}.`a",                                                             //
           "compile error: line 1, column 10: invalid escaped field name: a "         //
           "backtick-quoted name holds letters, digits, '_', '.', '-', '/' and ' ' "  //
           "and ends with a backtick"},                                               //
          {"{'a+b': 1}.`a+b`",                                                        //
           "compile error: line 1, column 12: invalid escaped field name: a "         //
           "backtick-quoted name holds letters, digits, '_', '.', '-', '/' and ' ' "  //
           "and ends with a backtick"},                                               //
          // Only a field: not a variable, nor a function.
          {"`a`", "compile error: line 1, column 1: unexpected '`a`'"},  //
          {"'a'.`size`()", "compile error: line 1, column 11: unexpected '('"});

TEST(ParseError, ColumnsCountCharactersNotBytes) {
    auto program = Program::compile("'ééé' + )");
    ASSERT_FALSE(program.ok());
    EXPECT_EQ(program.error().message, "line 1, column 9: unexpected ')'");
}

TEST(Program, KeepsItsSource) {
    auto program = Program::compile("1 + 2");
    ASSERT_TRUE(program.ok());
    EXPECT_EQ(program->source(), "1 + 2");
}

TEST(Program, ReservedWordsAreAllowedAsMapKeysAndStrings) {
    EXPECT_EQ(testing::evalText("{'if': 1}['if']"), "1");
}

}  // namespace
}  // namespace numadra::cel
