#pragma once
// Table-driven CEL tests: each row is an expression and the expected result written as
// toString() prints it ("3", "3u", "3.0", "\"s\"", "[1, 2]", "error(message)"), so a row
// checks the value and its CEL type at once. Compile errors print as "compile error: ...".

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numadra/cel/cel.hpp"

namespace numadra::cel::testing {

struct Case {
    std::string expr;
    std::string expected;
};

inline void PrintTo(const Case& c, std::ostream* os) {
    *os << c.expr;
}

inline std::string evalText(const std::string& expr, const Activation& activation = {},
                            const Environment& environment = {}) {
    auto program = Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    return toString(program->evaluate(activation, environment));
}

// A readable, unique test name: the row number and the expression's letters and digits.
inline std::string caseName(const ::testing::TestParamInfo<Case>& info) {
    std::string name = std::to_string(info.index) + "_";
    for (const char c : info.param.expr) {
        if (name.size() >= 48)
            break;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
            name.push_back(c);
        else if (name.back() != '_')
            name.push_back('_');
    }
    return name;
}

}  // namespace numadra::cel::testing

// Defines a parameterized suite `Suite` whose rows are the Case initializers that follow.
#define CEL_TABLE(Suite, ...)                                                                     \
    class Suite : public ::testing::TestWithParam<::numadra::cel::testing::Case> {};              \
    TEST_P(Suite, Evaluates) {                                                                    \
        EXPECT_EQ(::numadra::cel::testing::evalText(GetParam().expr), GetParam().expected)        \
            << GetParam().expr;                                                                   \
    }                                                                                             \
    INSTANTIATE_TEST_SUITE_P(                                                                     \
        Cel, Suite, ::testing::ValuesIn(std::vector<::numadra::cel::testing::Case>{__VA_ARGS__}), \
        ::numadra::cel::testing::caseName)
