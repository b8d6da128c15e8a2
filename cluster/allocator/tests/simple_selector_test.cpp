// SimpleSelector against the CEL program it stands in for: whatever it decides, the program gives
// the same on that device (it only decides what is certain), and it decides the usual class
// selectors on the usual devices without the program.

#include "../simple_selector.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "numadra/allocator/allocator.hpp"
#include "numadra/dracel/device.hpp"

namespace numadra::allocator {
namespace {

using detail::SimpleSelector;

struct Sample {
    std::string driver;
    Device device;
};

std::vector<Sample> samples() {
    Device gpu;
    gpu.name = "gpu-0";
    gpu.attributes["type"] = AttributeValue(std::string("gpu"));
    gpu.attributes["drv/model"] = AttributeValue(std::string("H100"));
    gpu.attributes["other.io/numa"] = AttributeValue(std::int64_t{1});
    gpu.attributes["flag"] = AttributeValue(true);
    gpu.attributes["count"] = AttributeValue(std::int64_t{5});
    gpu.attributes["list"] = AttributeValue(std::vector<std::string>{"x", "y"});
    gpu.attributes["ver"] = AttributeValue(api::Version{"1.2.3"});
    gpu.attributes["a/b/c"] = AttributeValue(std::string("x"));

    Device nic = gpu;  // the qualified name wins over the bare one in the driver's domain
    nic.name = "nic-0";
    nic.attributes["drv/type"] = AttributeValue(std::string("nic"));

    Device bare;
    bare.name = "bare";
    Device plain;  // bare names only
    plain.name = "plain";
    plain.attributes["type"] = AttributeValue(std::string("gpu"));
    plain.attributes["count"] = AttributeValue(std::int64_t{5});
    plain.attributes["other.io/numa"] = AttributeValue(std::int64_t{1});
    return {{"drv", gpu},   {"drv", nic},      {"drv", bare},
            {"drv", plain}, {"other.io", gpu}, {"", bare}};
}

// Each expression, and whether SimpleSelector takes it: it declines what it cannot decide exactly
// as the program would (other literal forms, other operators, anything but a conjunction).
struct Expression {
    std::string text;
    bool simple;
};

const std::vector<Expression>& expressions() {
    static const std::vector<Expression> all{
        {R"(device.driver == "drv")", true},
        {R"(device.driver != "drv")", true},
        {R"(device.driver == 1)", true},
        {R"(device.attributes["drv"].type == "gpu")", true},
        {R"(device.attributes["drv"]["type"] == "gpu")", true},
        {R"(device.attributes["drv"].model == "H100")", true},
        {R"(device.attributes["drv"].model != "H100")", true},
        {R"(device.attributes["other.io"].numa == 1)", true},
        {R"(device.attributes["other.io"].numa == "1")", true},
        {R"(device.attributes["drv"].flag == true)", true},
        {R"(device.attributes["drv"].flag != false)", true},
        {R"(device.attributes["drv"].missing == "x")", true},
        {R"(device.attributes["nodomain"].x == "y")", true},
        {R"(device.attributes["drv"].list == "x")", true},
        {R"(device.attributes["drv"].ver == "1.2.3")", true},
        {R"(device.attributes["a"]["b/c"] == "x")", true},
        {R"(device.attributes["a/b"].c == "x")", false},
        {R"(device.attributes["drv"]["a/b/c"] == "x")", true},
        {R"(device.attributes["drv"].missing == "x" && device.driver == "nope")", true},
        {R"(device.driver == "drv" && device.attributes["drv"].missing == "x")", true},
        {R"(device.attributes["drv"].count == 5 && device.attributes["drv"].count != 6)", true},
        {"  device . driver==\"drv\"&&device.attributes [ \"drv\" ] . type\n ==  \"gpu\"  ", true},
        {R"(device.attributes["drv"].count == 0)", true},
        {R"(device.attributes["drv"].count < 5)", true},
        {R"(device.attributes["drv"].count <= 5)", true},
        {R"(device.attributes["drv"].count > 4 && device.attributes["drv"].count >= 5)", true},
        {R"(device.attributes["drv"].count >= 6 && device.attributes["drv"].missing < 1)", true},
        {R"(device.attributes["drv"].type < 5)", true},
        {R"(device.attributes["drv"].type < "h")", false},
        {R"(device.attributes["drv"].flag > false)", false},
        {R"(device.driver < "drw")", false},
        {R"(device.attributes["drv"].count == 05)", false},
        {R"(device.attributes["drv"].count == 0x5)", false},
        {R"(device.attributes["drv"].count == 5u)", false},
        {R"(device.attributes["drv"].count == 5.0)", false},
        {R"(device.attributes["drv"].count == 99999999999999999999)", false},
        {R"(device.attributes["drv"].type == "g\u0070u")", false},
        {R"(device.attributes["drv"].type == 'gpu')", false},
        {R"(device.attributes["drv"].type == "gpu" || true)", false},
        {R"((device.driver == "drv"))", false},
        {R"(device.driver == "drv" // a comment)", false},
        {R"(device.attributes["drv"].type.startsWith("g"))", false},
        {R"(devices.driver == "drv")", false},
        {R"(device.driver == "drv" &&)", false},
    };
    return all;
}

// As the allocator finds it out: some attribute is named "<driver>/...".
bool qualifiedDriverNames(const Sample& sample) {
    return std::any_of(
        sample.device.attributes.begin(), sample.device.attributes.end(),
        [&](const auto& entry) { return entry.first.starts_with(sample.driver + "/"); });
}

TEST(SimpleSelector, ParsesOnlyConjunctionsOfComparisons) {
    for (const auto& [text, simple] : expressions())
        EXPECT_EQ(SimpleSelector::parse(text).has_value(), simple) << text;
}

TEST(SimpleSelector, DecidesOnlyWhatTheProgramGives) {
    int decided = 0;
    for (const Expression& expression : expressions()) {
        const std::string& text = expression.text;
        auto program = dracel::Expression::compileSelector(text);
        auto simple = SimpleSelector::parse(text);
        if (!program || !simple)
            continue;  // the allocator only parses what compiled
        for (const Sample& sample : samples()) {
            dracel::DeviceView view{sample.driver, &sample.device.attributes, nullptr,
                                    sample.device.allowMultipleAllocations};
            auto value = dracel::deviceValue(view);
            ASSERT_TRUE(value) << value.error().message;
            const Result<bool> full = program->matches(*value);
            const std::optional<bool> quick =
                simple->decide(sample.driver, sample.device, qualifiedDriverNames(sample));
            if (!quick)
                continue;
            ++decided;
            ASSERT_TRUE(full) << text << " on " << sample.device.name << ": decided " << *quick
                              << ", the program fails: " << full.error().message;
            EXPECT_EQ(*full, *quick)
                << text << " on " << sample.device.name << " of driver " << sample.driver;
        }
    }
    EXPECT_GT(decided, 40);  // the fast path is taken, not only declined
}

TEST(SimpleSelector, DecidesTheUsualClassSelectors) {
    auto simple = SimpleSelector::parse(
        R"(device.driver == "drv" && device.attributes["drv"].type == "gpu")");
    ASSERT_TRUE(simple);
    const std::vector<Sample> all = samples();
    EXPECT_EQ(simple->decide(all[0].driver, all[0].device), true);
    EXPECT_EQ(simple->decide(all[1].driver, all[1].device), false);  // drv/type is nic
    EXPECT_EQ(simple->decide(all[3].driver, all[3].device, false), true);
    EXPECT_EQ(simple->decide(all[4].driver, all[4].device), false);  // another driver
}

// A device with an invalid version fails every selector, simple or not, as before.
TEST(SimpleSelector, InvalidVersionStillFailsTheSelector) {
    Device device;
    device.name = "dev-0";
    device.attributes["type"] = AttributeValue(std::string("gpu"));
    device.attributes["ver"] = AttributeValue(api::Version{"not-a-version"});
    Slice slice;
    slice.name = "slice-0";
    slice.driver = "drv";
    slice.pool = {"pool", 1, 1};
    slice.nodeName = "node-1";
    slice.devices = {device};
    DeviceClass deviceClass{"class",
                            {R"(device.driver == "drv" && device.attributes["drv"].type == "gpu")"},
                            {},
                            {},
                            {}};
    Claim claim;
    claim.namespace_ = "default";
    claim.name = "claim";
    Request request;
    request.name = "req";
    request.exactly.emplace();
    request.exactly->deviceClassName = "class";
    claim.requests = {request};
    auto allocator = Allocator::create({slice}, {deviceClass});
    auto outcome = allocator.allocate(Node{"node-1", {}}, std::span<const Claim>(&claim, 1));
    ASSERT_FALSE(outcome);
    EXPECT_NE(outcome.error().message.find("device attribute \"ver\""), std::string::npos)
        << outcome.error().message;
}

}  // namespace
}  // namespace numadra::allocator
