// `kubernetes.Quantity` as CEL sees it: the opaque wrapper around api::Quantity (its type name,
// its semantic equality, how it prints) and the values that reach expressions through it. The
// quantity itself (parsing, rounding, canonical text, arithmetic) is tested in common/api.

#include "numadra/dracel/quantity.hpp"

#include <gtest/gtest.h>

#include <string>

#include "numadra/dracel/environment.hpp"

namespace numadra::dracel {
namespace {

api::Quantity q(std::string_view text) {
    auto parsed = api::Quantity::parse(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
    return parsed.ok() ? *parsed : api::Quantity();
}

std::string eval(const std::string& expr) {
    auto program = cel::Program::compile(expr);
    if (!program)
        return "compile error: " + program.error().message;
    return cel::toString(program->evaluate(cel::Activation{}, draEnvironment()));
}

TEST(QuantityOpaque, TypeNameAndDebugString) {
    EXPECT_EQ(Quantity(q("1Gi")).typeName(), "kubernetes.Quantity");
    EXPECT_EQ(Quantity(q("1Gi")).debugString(), "quantity(\"1Gi\")");
    // The canonical text, as Kubernetes prints it.
    EXPECT_EQ(Quantity(q("1024Mi")).debugString(), "quantity(\"1Gi\")");
}

TEST(QuantityOpaque, EqualityIsSemantic) {
    EXPECT_TRUE(Quantity(q("1Gi")).equals(Quantity(q("1073741824"))));
    EXPECT_TRUE(Quantity(q("1")).equals(Quantity(q("1000m"))));
    EXPECT_FALSE(Quantity(q("1Gi")).equals(Quantity(q("1G"))));
}

TEST(QuantityOpaque, ValuesRoundTripThroughCel) {
    const cel::Value value = toValue(q("1.5Gi"));
    const api::Quantity* back = asQuantity(value);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(*back, q("1536Mi"));
    EXPECT_EQ(asQuantity(cel::Value(std::int64_t{1})), nullptr);
}

// The exact semantics reach expressions: no rounding to a unit before comparing or adding.
TEST(QuantityInCel, ExactValues) {
    EXPECT_EQ(eval("quantity('1') == quantity('1000m')"), "true");
    EXPECT_EQ(eval("quantity('1n').isGreaterThan(quantity('0'))"), "true");
    EXPECT_EQ(eval("quantity('1.0000000001').compareTo(quantity('1'))"), "1");
    EXPECT_EQ(eval("quantity('1n').add(quantity('-1n')) == quantity('0')"), "true");
    EXPECT_EQ(eval("quantity('1000m').isInteger()"), "false");
}

}  // namespace
}  // namespace numadra::dracel
