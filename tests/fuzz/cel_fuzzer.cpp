// CEL parser, checker and evaluator. The input is the text of an expression, compiled
//  1. without declarations (names resolve at evaluation) and evaluated with `device` bound,
//  2. as a DRA selector and as a derived attribute (dracel::Expression: the DRA declarations,
//     the bool/value result-type checks), each evaluated against a few DRA devices,
// always in the DRA environment (quantity(), semver(), regex, sets, lists, optionals) and its
// cost limit. Beyond "no crash, no hang" it checks the documented contracts: a compile error
// says where ("line L, column C: ..."), an evaluation is a value or an error value, and the cost
// it reports stays within the limit.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "numadra/cel/cel.hpp"
#include "numadra/dracel/device.hpp"
#include "numadra/dracel/environment.hpp"

namespace {

using namespace numadra;
using api::AttributeValue;
using api::Quantity;

struct FuzzDevice {
    std::string driver;
    std::map<std::string, AttributeValue> attributes;
    std::map<std::string, Quantity> capacity;
    bool allowMultipleAllocations = false;
    cel::Value value;
};

// A GPU as this driver publishes it (scalar and list numaNode, versions, strings, bools,
// capacities), a CPU device with shared capacity, and a device of another driver with nothing.
std::vector<FuzzDevice> makeDevices() {
    std::vector<FuzzDevice> devices(3);
    auto& gpu = devices[0];
    gpu.driver = "numa.dra.dev";
    gpu.attributes = {
        {"type", std::string("gpu")},
        {"model", std::string("H100")},
        {"numaNode", std::int64_t{1}},
        {"resource.kubernetes.io/numaNode", std::vector<std::int64_t>{1, 0, 2, 3}},
        {"resource.kubernetes.io/pcieRoot", std::string("pci0000:20")},
        {"resource.kubernetes.io/pciBusID", std::string("0000:21:00.0")},
        {"driverVersion", api::Version{"550.54.15"}},
        {"versions", std::vector<api::Version>{api::Version{"1.2.3"}, api::Version{"2.0.0-rc.1"}}},
        {"names", std::vector<std::string>{"a", "b"}},
        {"flags", std::vector<bool>{true, false}},
        {"sriov", false},
        {"other.example.com/family", std::string("hopper")},
    };
    gpu.capacity = {{"memory", *Quantity::parse("80Gi")}, {"cores", *Quantity::parse("132")}};
    auto& cpu = devices[1];
    cpu.driver = "numa.dra.dev";
    cpu.attributes = {{"type", std::string("cpu")}, {"numaNode", std::int64_t{0}}};
    cpu.capacity = {{"cpu", *Quantity::parse("16")}, {"memory", *Quantity::parse("64Gi")}};
    cpu.allowMultipleAllocations = true;
    devices[2].driver = "other.example.com";
    for (auto& device : devices) {
        auto value = dracel::deviceValue(
            {device.driver, &device.attributes, &device.capacity, device.allowMultipleAllocations});
        if (!value)
            fuzz::fail("deviceValue: " + value.error().message);
        device.value = *value;
    }
    return devices;
}

const std::vector<FuzzDevice>& devices() {
    static const std::vector<FuzzDevice> all = makeDevices();
    return all;
}

void checkCompileError(const numadra::Error& error, std::string_view expression) {
    // "line L, column C: ..." (cel.hpp); dracel adds its own prefixes for length and type.
    if (error.message.empty())
        fuzz::fail("empty compile error for: " + std::string(expression));
}

void checkCost(std::int64_t cost, std::int64_t limit, std::string_view expression) {
    // One step may overshoot the limit before it is noticed, never by much.
    if (cost < 0 || cost > limit + limit / 10 + 1024)
        fuzz::fail("cost " + std::to_string(cost) + " beyond the limit " + std::to_string(limit) +
                   " for: " + std::string(expression));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    fuzz::quietLogs();
    (void)devices();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view expression(reinterpret_cast<const char*>(data), size);
    const auto& environment = dracel::draEnvironment();

    // 1. Plain CEL: no declarations; `device` bound.
    if (auto program = cel::Program::compile(expression)) {
        (void)program->resultType();
        for (const auto& device : devices()) {
            cel::Activation activation;
            activation.bind("device", device.value);
            std::int64_t cost = 0;
            const cel::Value result = program->evaluate(activation, environment, &cost);
            checkCost(cost, environment.costLimit, expression);
            (void)cel::toString(result);
            (void)result.typeName();
        }
    } else {
        checkCompileError(program.error(), expression);
        if (program.error().message.rfind("line ", 0) != 0)
            fuzz::fail("compile error without a position: \"" + program.error().message +
                       "\" for: " + std::string(expression));
    }

    // 2. As DRA expressions.
    if (auto selector = dracel::Expression::compileSelector(expression)) {
        for (const auto& device : devices()) {
            std::int64_t cost = 0;
            auto matched = selector->matches(device.value, &cost);
            checkCost(cost, dracel::kCostLimit, expression);
            if (!matched && matched.error().message.empty())
                fuzz::fail("empty selector error for: " + std::string(expression));
        }
    } else {
        checkCompileError(selector.error(), expression);
    }
    if (auto derived = dracel::Expression::compileDerived(expression)) {
        for (const auto& device : devices()) {
            std::int64_t cost = 0;
            auto value = derived->derive(device.value, &cost);
            checkCost(cost, dracel::kCostLimit, expression);
            if (value)
                (void)api::toJson(*value);
        }
    } else {
        checkCompileError(derived.error(), expression);
    }
    return 0;
}
