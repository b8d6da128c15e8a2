// dracel-eval: the DRA CEL environment (numadra::dracel) over a pipe, for judges outside the
// C++ build (tests/upstream/cel compares it with upstream's
// k8s.io/dynamic-resource-allocation/cel). One JSON object per input line, one answer per output
// line, in order:
//
//   in:  {"expression": "...", "kind": "selector" | "derived",
//         "device": {"driver": "d", "name": "n", "allowMultipleAllocations": false,
//                    "attributes": {"d/x": {"int": 1}, ...},      // the API's attribute form
//                    "capacity": {"d/mem": {"value": "1Gi"}, ...}}}
//   out: {"compileError": "..."}                                  // refused when read
//        {"value": true}  or  {"value": {"int": 3}}               // selector / derived result
//        {"error": "..."}                                          // evaluation error
//        with "maxCost": the static worst-case cost, when the expression compiled
//
// A line that is not such an object gets {"inputError": "..."}; the program never stops early.

#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "numadra/api/resource_slice.hpp"
#include "numadra/dracel/device.hpp"
#include "numadra/dracel/quantity.hpp"

namespace {

using Json = nlohmann::json;
using numadra::api::AttributeValue;

template <class T>
std::vector<T> listOf(const Json& values) {
    return values.get<std::vector<T>>();
}

// The API's {"int": 1} / {"strings": [...]} form of one attribute.
AttributeValue attributeOf(const Json& attribute) {
    if (attribute.contains("bool"))
        return attribute.at("bool").get<bool>();
    if (attribute.contains("int"))
        return attribute.at("int").get<std::int64_t>();
    if (attribute.contains("string"))
        return attribute.at("string").get<std::string>();
    if (attribute.contains("version"))
        return numadra::api::Version{attribute.at("version").get<std::string>()};
    if (attribute.contains("bools"))
        return listOf<bool>(attribute.at("bools"));
    if (attribute.contains("ints"))
        return listOf<std::int64_t>(attribute.at("ints"));
    if (attribute.contains("strings"))
        return listOf<std::string>(attribute.at("strings"));
    if (attribute.contains("versions")) {
        std::vector<numadra::api::Version> versions;
        for (const auto& text : attribute.at("versions"))
            versions.push_back({text.get<std::string>()});
        return versions;
    }
    throw std::invalid_argument("attribute " + attribute.dump() + " has no known value field");
}

// A member object, or an empty one (a named empty object, not a temporary: iterating a
// temporary's items() trips GCC 12's -Wmaybe-uninitialized inside nlohmann).
const Json& objectField(const Json& object, const char* name) {
    static const Json empty = Json::object();
    const auto it = object.find(name);
    return it == object.end() ? empty : *it;
}

Json evaluate(const Json& question, const numadra::dracel::Expression& compiled, bool derived);

Json answerFor(const Json& question) {
    const std::string expression = question.at("expression").get<std::string>();
    const bool derived = question.value("kind", "selector") == "derived";
    auto compiled = derived ? numadra::dracel::Expression::compileDerived(expression)
                            : numadra::dracel::Expression::compileSelector(expression);
    if (!compiled)
        return {{"compileError", compiled.error().message}};
    Json answer = evaluate(question, *compiled, derived);
    answer["maxCost"] = compiled->estimatedCost();
    return answer;
}

Json evaluate(const Json& question, const numadra::dracel::Expression& compiled, bool derived) {
    const Json& device = objectField(question, "device");
    std::map<std::string, AttributeValue> attributes;
    for (const auto& [name, attribute] : objectField(device, "attributes").items())
        attributes.emplace(name, attributeOf(attribute));
    std::map<std::string, numadra::api::Quantity> capacity;
    for (const auto& [name, entry] : objectField(device, "capacity").items()) {
        auto quantity = numadra::api::Quantity::parse(entry.at("value").get<std::string>());
        if (!quantity)
            return {{"inputError", "capacity " + name + ": " + quantity.error().message}};
        capacity.emplace(name, *quantity);
    }
    const std::string driver = device.value("driver", "");
    numadra::dracel::DeviceView view{driver, &attributes, &capacity,
                                     device.value("allowMultipleAllocations", false)};
    auto value = numadra::dracel::deviceValue(view);
    if (!value)
        return {{"error", value.error().message}};
    if (!derived) {
        auto matched = compiled.matches(*value);
        if (!matched)
            return {{"error", matched.error().message}};
        return {{"value", *matched}};
    }
    auto result =
        compiled.derive(numadra::dracel::derivedDeviceValue(*value, device.value("name", "")));
    if (!result)
        return {{"error", result.error().message}};
    return {{"value", numadra::api::toJson(*result)}};
}

}  // namespace

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        Json answer;
        try {
            answer = answerFor(Json::parse(line));
        } catch (const std::exception& e) {
            answer = {{"inputError", e.what()}};
        }
        std::cout << answer.dump() << '\n' << std::flush;
    }
    return 0;
}
