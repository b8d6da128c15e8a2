// The static cost estimate of upstream's DRA environment: the numbers the API server computes
// for these selectors (tests/upstream/cel compares every corpus expression's estimate with
// upstream's; these are pinned here so a change shows without Go).

#include <gtest/gtest.h>

#include "numadra/dracel/device.hpp"

namespace numadra::dracel {
namespace {

std::string costOf(std::string_view selector) {
    auto expression = Expression::compileSelector(selector);
    if (!expression)
        return expression.error().message;
    return std::to_string(expression->estimatedCost());
}

TEST(StaticCost, FieldsAndAttributesCostTheirSelectionsAndComparison) {
    EXPECT_EQ(costOf(R"(device.driver == "gpu.example.com")"), "4");
    EXPECT_EQ(costOf(R"(device.attributes["gpu.example.com"].model == "h100")"), "5");
    EXPECT_EQ(costOf(R"(device.attributes["gpu.example.com"].index in [1, 2, 3])"), "17");
}

TEST(StaticCost, StringFunctionsScaleWithTheDeclaredAttributeLength) {
    EXPECT_EQ(costOf(R"(device.attributes["gpu.example.com"].model.matches("^h1[0-9]+$"))"), "25");
    EXPECT_EQ(costOf(R"(device.attributes["gpu.example.com"].model.lowerAscii().startsWith("h"))"),
              "12");
}

TEST(StaticCost, AComprehensionMultipliesItsBodyByTheRangeSize) {
    EXPECT_EQ(costOf(R"(device.attributes["nic.example.com"].tags.exists(t, t == "rdma"))"), "389");
    EXPECT_EQ(costOf("[3, 1, 2].sortBy(x, -x)[0] == 3"), "106");
}

TEST(StaticCost, LibraryCallsCostWhatUpstreamCharges) {
    EXPECT_EQ(
        costOf(R"(device.capacity["gpu.example.com"].memory.compareTo(quantity("40Gi")) >= 0)"),
        "7");
    EXPECT_EQ(costOf(R"(ip(device.attributes["gpu.example.com"].address).family() == 4)"), "13");
    EXPECT_EQ(costOf(R"(sets.contains(device.attributes["nic.example.com"].tags, ["rdma"]))"),
              "79");
}

TEST(StaticCost, BindAndConditionalsCountEachBranchOnce) {
    EXPECT_EQ(
        costOf(R"(cel.bind(m, device.attributes["gpu.example.com"].model, m == "a" || m == "b"))"),
        "18");
    EXPECT_EQ(costOf(R"(has(device.attributes["gpu.example.com"].model) ? )"
                     R"(device.attributes["gpu.example.com"].model.size() > 2 : false)"),
              "9");
}

TEST(StaticCost, AnUnboundedWorstCaseIsRefusedWhenCompiled) {
    // split() of a literal has no bound on its parts as upstream estimates it.
    EXPECT_EQ(costOf(R"("a,b,c".split(",").join("-") == "a-b-c")"),
              "too complex, exceeds cost limit (estimated worst-case cost "
              "1844674407370955266, limit 1000000)");
    EXPECT_EQ(costOf(R"(device.attributes["nic.example.com"].tags.all(a, )"
                     R"(device.attributes["nic.example.com"].tags.all(b, a != b || a == b)))"),
              "too complex, exceeds cost limit (estimated worst-case cost "
              "18446744073709551615, limit 1000000)");
}

TEST(StaticCost, DerivedAttributesReadTheNameWithItsDnsLabelBound) {
    auto derived = Expression::compileDerived(R"(device.name.replace("gpu-", ""))");
    ASSERT_TRUE(derived.ok()) << derived.error().message;
    EXPECT_EQ(derived->estimatedCost(), 15U);
}

}  // namespace
}  // namespace numadra::dracel
