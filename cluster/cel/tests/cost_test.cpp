// Cost limit: every evaluated node and every comprehension iteration costs one step; over
// Environment::costLimit the evaluation stops with an error that nothing absorbs.

#include <gtest/gtest.h>

#include "numadra/cel/cel.hpp"

namespace numadra::cel {
namespace {

Value run(std::string_view expr, std::int64_t limit, std::int64_t* cost) {
    auto program = Program::compile(expr);
    EXPECT_TRUE(program.ok()) << expr;
    Environment environment;
    environment.costLimit = limit;
    return program->evaluate(Activation{}, environment, cost);
}

TEST(Cost, LiteralCostsOne) {
    std::int64_t cost = -1;
    EXPECT_EQ(run("1", 10, &cost), Value(std::int64_t{1}));
    EXPECT_EQ(cost, 1);
}

TEST(Cost, CountsEachNode) {
    std::int64_t cost = -1;
    run("1 + 2 * 3", 100, &cost);
    EXPECT_EQ(cost, 5);
}

TEST(Cost, ShortCircuitSkipsTheUnevaluatedSide) {
    std::int64_t cost = -1;
    run("false && (1 + 2 + 3 + 4 == 10)", 100, &cost);
    EXPECT_EQ(cost, 2);
}

TEST(Cost, CountsComprehensionIterations) {
    std::int64_t cost = -1;
    // The comprehension node, the list and its 3 elements, then per iteration one step plus the
    // predicate (one literal node): 1 + 1 + 3 + 3 × 2.
    run("[1, 2, 3].all(x, true)", 100, &cost);
    EXPECT_EQ(cost, 11);
}

TEST(Cost, ExactlyAtTheLimitSucceeds) {
    std::int64_t cost = -1;
    EXPECT_EQ(run("1 + 2 * 3", 5, &cost), Value(std::int64_t{7}));
}

TEST(Cost, OverTheLimitIsAnError) {
    std::int64_t cost = -1;
    const Value result = run("1 + 2 * 3", 4, &cost);
    ASSERT_TRUE(result.isError());
    EXPECT_EQ(result.as<ErrorValue>().message, kCostLimitExceeded);
    EXPECT_EQ(cost, 5);
}

TEST(Cost, TheErrorIsNotAbsorbedByLogicalOperators) {
    std::int64_t cost = -1;
    const Value result = run("[1, 2, 3, 4, 5, 6].all(x, x > 0) || true", 10, &cost);
    ASSERT_TRUE(result.isError());
    EXPECT_EQ(result.as<ErrorValue>().message, kCostLimitExceeded);
}

TEST(Cost, NestedComprehensionsAbortEarly) {
    // 100^4 iterations would take long; the limit stops them after about a million steps.
    std::int64_t cost = -1;
    const std::string range = "[" + [] {
        std::string items;
        for (int i = 0; i < 100; ++i)
            items += (i ? ", " : "") + std::to_string(i);
        return items;
    }() + "]";
    const std::string expr = range + ".all(a, " + range + ".all(b, " + range + ".all(c, " + range +
                             ".all(d, a + b + c + d >= 0))))";
    const Value result = run(expr, 1'000'000, &cost);
    ASSERT_TRUE(result.isError());
    EXPECT_EQ(result.as<ErrorValue>().message, kCostLimitExceeded);
    EXPECT_EQ(cost, 1'000'001);
}

TEST(Cost, LongStringsCostMoreInStringFunctions) {
    std::int64_t shortCost = -1;
    std::int64_t longCost = -1;
    run("'abc'.contains('b')", 1000, &shortCost);
    run("'" + std::string(1600, 'a') + "'.contains('b')", 1000, &longCost);
    EXPECT_EQ(longCost - shortCost, 100);
}

TEST(Cost, ReportedWithoutALimitBeingHit) {
    std::int64_t cost = -1;
    run("[1, 2].map(x, x * 2)", 1'000'000, &cost);
    EXPECT_EQ(cost, 3 + 1 + 2 * (1 + 3));
}

TEST(Cost, DefaultLimitIsOneMillion) {
    EXPECT_EQ(Environment{}.costLimit, 1'000'000);
}

}  // namespace
}  // namespace numadra::cel
