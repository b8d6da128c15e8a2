// string.format() as Kubernetes has it (cel-go's strings extension version 2, whose formatter
// is ext/formatting.go): every clause, how each type prints, the en_US number forms of %f and
// %e, the quirks of precision and width, the errors, and the compile-time check of a literal
// format string with a list literal.

#include <gtest/gtest.h>

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

CEL_TABLE(FormatString,                                     //
          {"'%s and %d'.format(['a', 1])", "\"a and 1\""},  //
          {"'%s'.format([true])", "\"true\""},              //
          {"'%s'.format([7u])", "\"7\""},                   //
          {"'%s'.format([null])", "\"null\""},              //
          {"'%s'.format([b'abc'])", "\"abc\""},             //
          {"'%s'.format([int])", "\"int\""},                //
          {"'%s'.format([1.5])", "\"1.5\""},                //
          {"'%s'.format([1e100])", "\"1e+100\""},           //
          {"'%s'.format([-0.0])", "\"-0\""},                //
          {"'%s'.format([double('-inf')])", "\"-Inf\""},    //
          {"'%s'.format([''])", "\"\""},                    //
          {"'no clauses'.format([])", "\"no clauses\""},    //
          {"'100%% %s'.format(['x'])", "\"100% x\""},       //
          {"'%.3s'.format(['abcdef'])", "\"abcdef\""},      //
          {"'%s'.format([b'\\xff'])",                       //
           "error(error during formatting: could not convert argument \"invalid UTF-8 in "
           "bytes, cannot convert to string\" to string)"});

// Inside lists and maps values print as CEL literals: strings quoted as Go's strconv.Quote
// quotes them, doubles with six decimals, map entries sorted by the key's text.
CEL_TABLE(FormatAggregates,                                                                  //
          {"'%s'.format([[1, 'a']])", "\"[1, \\\"a\\\"]\""},                                 //
          {"'%s'.format([[2.5, b'x', true, null, 3u, int]])",                                //
           "\"[2.500000, b\\\"x\\\", true, null, 3, int]\""},                                //
          {"'%s'.format([[double('NaN'), double('-inf')]])",                                 //
           "\"[\\\"NaN\\\", \\\"-Inf\\\"]\""},                                               //
          {"'%s'.format([['a\"b\\n', '\\u00ad', '\\x01', 'é']])",                            //
           "\"[\\\"a\\\\\\\"b\\\\n\\\", \\\"\\\\u00ad\\\", \\\"\\\\x01\\\", \\\"é\\\"]\""},  //
          {"'%s'.format([{'b': 1, 'a': 'x', 1: 2}])",                                        //
           "\"{\\\"a\\\":\\\"x\\\", \\\"b\\\":1, 1:2}\""},                                   //
          {"'%s'.format([{2: 'x', 10: 'y', -1: 'z'}])",                                      //
           "\"{-1:\\\"z\\\", 10:\\\"y\\\", 2:\\\"x\\\"}\""},                                 //
          {"'%s'.format([[[], {}, {true: [1e100]}]])",                                       //
           "\"[[], {}, {true:[10000000000000000159028911097599180468360808563945281389781"
           "327557747838772170381060813469985856815104.000000]}]\""});

CEL_TABLE(FormatIntegers,                                                        //
          {"'%d'.format([-9223372036854775808])", "\"-9223372036854775808\""},   //
          {"'%d'.format([18446744073709551615u])", "\"18446744073709551615\""},  //
          {"'%x %X'.format([255, 255])", "\"ff FF\""},                           //
          {"'%x'.format([-255])", "\"-ff\""},                                    //
          {"'%x'.format([-9223372036854775808])", "\"-8000000000000000\""},      //
          {"'%x'.format(['hello'])", "\"68656c6c6f\""},                          //
          {"'%X'.format([b'\\x01\\xff'])", "\"01FF\""},                          //
          {"'%o %o'.format([8, -8])", "\"10 -10\""},                             //
          {"'%b %b %b'.format([5, -5, 5u])", "\"101 -101 101\""},                //
          {"'%b%b'.format([true, false])", "\"10\""},                            //
          {"'%.3d'.format([5])", "\"5\""});

// %f and %e go through golang.org/x/text's en_US printer.
CEL_TABLE(FormatFixed,                                                        //
          {"'%.2f'.format([1.5])", "\"1.50\""},                               //
          {"'%f'.format([1234567.125])", "\"1,234,567.125000\""},             //
          {"'%.2f'.format([-1234.5])", "\"-1,234.50\""},                      //
          {"'%.2f'.format([-0.001])", "\"-0.00\""},                           //
          {"'%.0f'.format([-0.0])", "\"0\""},                                 //
          {"'%.0f'.format([2.5])", "\"2\""},                                  //
          {"'%.2f'.format([0.005])", "\"0.01\""},                             //
          {"'%.0f'.format([1e23])", "\"99,999,999,999,999,991,611,392\""},    //
          {"'%.30f'.format([0.1])", "\"0.100000000000000005551115123126\""},  //
          {"'%f'.format([double('inf')])", "\"∞\""},                          //
          {"'%f'.format(['-Infinity'])", "\"-∞\""},                           //
          {"'%f'.format(['NaN'])", "\"NaN\""},                                //
          {"'%f'.format(['nan'])",                                            //
           "error(error during formatting: fixed-point clause can only be used on doubles, "
           "was given string)"});

// The printer keeps the maximum fraction digits in an int16 and the minimum in a uint8.
CEL_TABLE(FormatFixedPrecisionWraps,                                          //
          {"'%.260f'.format([1.5])", "\"1.5000\""},                           //
          {"'%.256f'.format([0.1])",                                          //
           "\"0.1000000000000000055511151231257827021181583404541015625\""},  //
          {"'%.32768f'.format([0.1])", "\"0.1\""},                            //
          {"'%.65536f'.format([0.1])", "\"0\""},                              //
          {"'%.65537f'.format([1.25])", "\"1.2\""},                           //
          {"'%.10000010f'.format([0.1])", "\"%!(NOVERB)\""},                  //
          {"'%.99999999999999999999f'.format([1.5])",                         //
           "error(could not parse formatting clause: error while parsing precision: error "
           "while converting precision to integer: strconv.Atoi: parsing "
           "\"99999999999999999999\": value out of range)"});

// cel-go writes %e's precision where the printer reads a width: six digits always, padded.
CEL_TABLE(FormatScientific,                                       //
          {"'%e'.format([2.71828])", "\"2.718280×10⁰⁰\""},        //
          {"'%e'.format([-1234.5678])", "\"-1.234568×10⁰³\""},    //
          {"'%e'.format([2.5e-7])", "\"2.500000×10⁻⁰⁷\""},        //
          {"'%e'.format([5e-324])", "\"4.940656×10⁻³²⁴\""},       //
          {"'%e'.format([0.0])", "\"0.000000×10⁰⁰\""},            //
          {"'%e'.format([double('NaN')])", "\"   NaN\""},         //
          {"'%e'.format(['-Infinity'])", "\"    -∞\""},           //
          {"'%.20e'.format([1.5])", "\"       1.500000×10⁰⁰\""},  //
          {"'%.0e'.format([1.5])", "\"1.500000×10⁰⁰\""},          //
          {"'%.65542e'.format([double('NaN')])", "\"   NaN\""},   //
          {"'%e'.format([1])",                                    //
           "error(error during formatting: scientific clause can only be used on doubles, was "
           "given int)"});

CEL_TABLE(FormatErrors,                                                                        //
          {"'%d %d'.format([1])", "error(index 1 out of range)"},                              //
          {"'%'.format([1])", "error(unexpected end of string)"},                              //
          {"'%'.format([])", "error(index 0 out of range)"},                                   //
          {"'%q'.format([1])",                                                                 //
           "error(could not parse formatting clause: unrecognized formatting clause \"q\")"},  //
          {"'%é'.format([1])",                                                                 //
           "error(could not parse formatting clause: unrecognized formatting clause \"Ã\")"},  //
          {"'%.f'.format([1.5])",                                                              //
           "error(could not parse formatting clause: error while parsing precision: error "
           "while converting precision to integer: strconv.Atoi: parsing \"\": invalid "
           "syntax)"},             //
          {"'%.3'.format([1.5])",  //
           "error(could not parse formatting clause: error while parsing precision: could "
           "not find end of precision specifier)"},  //
          {"'%d'.format([1.5])",                     //
           "error(error during formatting: decimal clause can only be used on integers, was "
           "given double)"},      //
          {"'%x'.format([1.5])",  //
           "error(error during formatting: only integers, byte buffers, and strings can be "
           "formatted as hex, was given double)"},  //
          {"'%o'.format(['a'])",                    //
           "error(error during formatting: octal clause can only be used on integers, was "
           "given string)"},      //
          {"'%b'.format([1.5])",  //
           "error(error during formatting: only integers and bools can be formatted as "
           "binary, was given double)"},     //
          {"'%s'.format([optional.of(1)])",  //
           "error(error during formatting: string clause can only be used on strings, bools, "
           "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
           "optional_type)"},                                                            //
          {"'%s'.format([[optional.none()]])",                                           //
           "error(error during formatting: no formatting function for optional_type)"},  //
          {"'%s'.format('a')", "error(no such overload: format(string, string))"});

// With declarations, a literal format string with a list literal is checked when compiled.
std::string compileChecked(std::string_view expr) {
    CompileOptions options;
    options.declarations = Declarations{};
    auto program = Program::compile(expr, options);
    return program ? "ok" : program.error().message;
}

TEST(FormatCheck, RefusesAnArgumentTheClauseCannotTake) {
    EXPECT_EQ(compileChecked("'%d'.format([1.5]) == ''"),
              "line 1, column 14: error during formatting: decimal clause can only be used on "
              "integers, was given double");
}

TEST(FormatCheck, RefusesTooManyArguments) {
    EXPECT_EQ(compileChecked("'%d'.format([1, 2])"),
              "line 1, column 6: too many arguments supplied to string.format (expected 1, got "
              "2)");
}

TEST(FormatCheck, RefusesTooFewArguments) {
    EXPECT_EQ(compileChecked("'%d %d'.format([1])"), "line 1, column 9: index 1 out of range");
}

TEST(FormatCheck, RefusesAMalformedClause) {
    EXPECT_EQ(compileChecked("'%q'.format([1])"),
              "line 1, column 6: could not parse formatting clause: unrecognized formatting "
              "clause \"q\"");
}

TEST(FormatCheck, RefusesAnOptionalInsideAListForString) {
    EXPECT_NE(compileChecked("'%s'.format([[optional.of(1)]])"), "ok");
}

TEST(FormatCheck, LeavesValuesOfUnknownTypeToEvaluation) {
    EXPECT_EQ(compileChecked("'%d'.format([dyn(1.5)])"), "ok");
}

TEST(FormatCheck, LeavesAListThatIsNotALiteralToEvaluation) {
    EXPECT_EQ(compileChecked("'%d %d'.format(dyn([1]))"), "ok");
}

TEST(FormatCheck, AcceptsStringsForFixedPoint) {
    EXPECT_EQ(compileChecked("'%f %e'.format(['NaN', 'x'])"), "ok");
}

TEST(FormatCheck, ExemptsItsListFromTheHomogeneousLiteralRule) {
    EXPECT_EQ(compileChecked("'%s %d'.format(['a', 1])"), "ok");
}

TEST(FormatCost, ChargesTheOutput) {
    auto program = Program::compile("'%.65535e%.65535e%.65535e'.format([1.0, 2.0, 3.0])");
    ASSERT_TRUE(program.ok());
    Environment environment;
    environment.costLimit = 1000;
    EXPECT_EQ(program->evaluate({}, environment), Value::error(std::string(kCostLimitExceeded)));
}

TEST(FormatCost, CostsAboutOneStepPerSixteenBytesWritten) {
    auto program = Program::compile("'%.16000e'.format([1.0])");
    ASSERT_TRUE(program.ok());
    std::int64_t cost = 0;
    const Value result = program->evaluate({}, Environment{}, &cost);
    ASSERT_TRUE(result.is<std::string>());
    EXPECT_GE(cost, 1000);
}

}  // namespace
}  // namespace numadra::cel
