// HostMap: a map-like host value read through lookup() and entries(), modelled on the DRA
// device's `attributes`, where an unknown domain reads as an empty map (so
// device.attributes["nope"].x is "no such key: x") but `in`, size() and comprehensions see only
// the present domains.

#include <gtest/gtest.h>

#include "cel_test_util.hpp"

namespace numadra::cel {
namespace {

class Attributes : public HostMap {
  public:
    explicit Attributes(Map domains) : domains_(std::move(domains)) {}
    std::optional<Value> lookup(const MapKey& key) const override {
        ++lookups_;
        const auto it = domains_.find(key);
        if (it != domains_.end())
            return it->second;
        if (std::holds_alternative<std::string>(key))
            return Value::map({});  // every domain exists, an unknown one is empty
        return std::nullopt;
    }
    const Map& entries() const override { return domains_; }
    int lookups() const { return lookups_; }

  private:
    Map domains_;
    mutable int lookups_ = 0;
};

Value text(const char* s) {
    return Value(std::string(s));
}

std::shared_ptr<const Attributes> gpuAttributes() {
    Map gpu;
    gpu.emplace(MapKey{std::string("model")}, text("A100"));
    gpu.emplace(MapKey{std::string("numa")}, Value(std::int64_t{1}));
    Map other;
    other.emplace(MapKey{std::string("family")}, text("x"));
    Map domains;
    domains.emplace(MapKey{std::string("gpu.example.com")}, Value::map(gpu));
    domains.emplace(MapKey{std::string("other.example.com")}, Value::map(other));
    return std::make_shared<Attributes>(std::move(domains));
}

Value asValue(std::shared_ptr<const HostMap> map) {
    return Value(std::shared_ptr<const Opaque>(std::move(map)));
}

Activation deviceActivation() {
    Map device;
    device.emplace(MapKey{std::string("driver")}, text("gpu.example.com"));
    device.emplace(MapKey{std::string("attributes")}, asValue(gpuAttributes()));
    Activation activation;
    activation.bind("device", Value::map(std::move(device)));
    return activation;
}

std::string eval(const std::string& expr) {
    return testing::evalText(expr, deviceActivation());
}

TEST(HostMap, IndexGoesThroughLookup) {
    EXPECT_EQ(eval("device.attributes['gpu.example.com'].model"), "\"A100\"");
    EXPECT_EQ(eval("device.attributes['gpu.example.com']['numa']"), "1");
}

TEST(HostMap, UnknownKeyReadsAsWhatLookupReturns) {
    EXPECT_EQ(eval("device.attributes['nope']"), "{}");
    EXPECT_EQ(eval("device.attributes['nope'].x"), "error(no such key: x)");
}

TEST(HostMap, KeyLookupReturningNothingIsNoSuchKey) {
    EXPECT_EQ(eval("device.attributes[1]"), "error(no such key: 1)");
}

TEST(HostMap, UnsupportedKeyTypeIsAnError) {
    EXPECT_EQ(eval("device.attributes[null]"), "error(unsupported key type: null_type)");
}

TEST(HostMap, FieldSelectionGoesThroughLookup) {
    Activation activation;
    activation.bind("attrs", asValue(gpuAttributes()));
    EXPECT_EQ(testing::evalText("attrs.unknown", activation), "{}");
}

TEST(HostMap, HasOnTheValueOfAnUnknownKeyIsFalse) {
    EXPECT_EQ(eval("has(device.attributes['nope'].x)"), "false");
    EXPECT_EQ(eval("has(device.attributes['gpu.example.com'].model)"), "true");
}

TEST(HostMap, HasOnTheHostMapAsksLookup) {
    // As upstream: field syntax on the outer map finds any name, since lookup() does.
    Activation activation;
    activation.bind("attrs", asValue(gpuAttributes()));
    EXPECT_EQ(testing::evalText("has(attrs.anything)", activation), "true");
}

TEST(HostMap, InSeesOnlyEntries) {
    EXPECT_EQ(eval("'gpu.example.com' in device.attributes"), "true");
    EXPECT_EQ(eval("'nope' in device.attributes"), "false");
}

TEST(HostMap, SizeCountsOnlyEntries) {
    EXPECT_EQ(eval("size(device.attributes)"), "2");
    EXPECT_EQ(eval("device.attributes.size()"), "2");
}

TEST(HostMap, OptionalFieldAndIndex) {
    EXPECT_EQ(eval("device.attributes['gpu.example.com'].?model.orValue('')"), "\"A100\"");
    EXPECT_EQ(eval("device.attributes[?'gpu.example.com'].hasValue()"), "true");
    EXPECT_EQ(eval("device.attributes[?1].hasValue()"), "false");
    Activation activation;
    activation.bind("attrs", asValue(gpuAttributes()));
    EXPECT_EQ(testing::evalText("attrs.?unknown", activation), "optional.of({})");
}

TEST(HostMap, ComprehensionsIterateTheEntries) {
    EXPECT_EQ(eval("device.attributes.all(d, d.endsWith('.example.com'))"), "true");
    EXPECT_EQ(eval("device.attributes.exists(d, d == 'gpu.example.com')"), "true");
    EXPECT_EQ(eval("device.attributes.exists_one(x, x == 'gpu.example.com')"), "true");
    EXPECT_EQ(eval("device.attributes.map(d, d.size())"), "[15, 17]");
    EXPECT_EQ(eval("device.attributes.filter(d, d.startsWith('o'))"), "[\"other.example.com\"]");
}

TEST(HostMap, TwoVariableComprehensionsSeeKeysAndValues) {
    EXPECT_EQ(eval("device.attributes.exists(d, a, d == 'other.example.com' && 'family' in a)"),
              "true");
    EXPECT_EQ(eval("device.attributes.transformList(d, a, size(a))"), "[2, 1]");
    EXPECT_EQ(eval("device.attributes.transformMap(d, a, size(a))"),
              "{\"gpu.example.com\": 2, \"other.example.com\": 1}");
}

TEST(HostMap, EqualsAnotherHostMapWithTheSameEntries) {
    Activation activation;
    activation.bind("a", asValue(gpuAttributes()));
    activation.bind("b", asValue(gpuAttributes()));
    activation.bind("empty", asValue(std::make_shared<Attributes>(Map{})));
    EXPECT_EQ(testing::evalText("a == b", activation), "true");
    EXPECT_EQ(testing::evalText("a != empty", activation), "true");
}

TEST(HostMap, EqualsAMapWithTheSameEntries) {
    Activation activation;
    activation.bind("empty", asValue(std::make_shared<Attributes>(Map{})));
    EXPECT_EQ(testing::evalText("empty == {}", activation), "true");
    EXPECT_EQ(testing::evalText("{} == empty", activation), "true");
    EXPECT_EQ(testing::evalText("empty == {'a': 1}", activation), "false");
    EXPECT_EQ(testing::evalText("empty == []", activation), "false");
}

TEST(HostMap, TypeIsMap) {
    EXPECT_EQ(eval("type(device.attributes) == map"), "true");
}

TEST(HostMap, PrintsItsEntries) {
    EXPECT_EQ(
        toString(asValue(std::make_shared<Attributes>(Map{{MapKey{std::string("k")}, text("v")}}))),
        "{\"k\": \"v\"}");
}

TEST(HostMap, EmptyEntriesAreAZeroValue) {
    Activation activation;
    activation.bind("empty", asValue(std::make_shared<Attributes>(Map{})));
    EXPECT_EQ(testing::evalText("optional.ofNonZeroValue(empty).hasValue()", activation), "false");
}

class Thing : public Opaque {
  public:
    std::string typeName() const override { return "test.Thing"; }
    bool equals(const Opaque&) const override { return true; }
};

TEST(HostMap, OtherOpaqueValuesStillRefuseFieldSelection) {
    Activation activation;
    activation.bind("o", Value(std::shared_ptr<const Opaque>(std::make_shared<Thing>())));
    EXPECT_EQ(testing::evalText("o.x", activation),
              "error(type 'test.Thing' does not support field selection)");
    EXPECT_EQ(testing::evalText("has(o.x)", activation),
              "error(invalid type for has(): test.Thing)");
    EXPECT_EQ(testing::evalText("'x' in o", activation),
              "error(no such overload: @in(string, test.Thing))");
}

TEST(HostMap, FieldSelectionCallsLookupOnce) {
    auto attributes = gpuAttributes();
    Activation activation;
    activation.bind("attrs", asValue(attributes));
    EXPECT_EQ(testing::evalText("attrs['gpu.example.com'].model", activation), "\"A100\"");
    EXPECT_EQ(attributes->lookups(), 1);
}

}  // namespace
}  // namespace numadra::cel
