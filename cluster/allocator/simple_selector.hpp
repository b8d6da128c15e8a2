#pragma once
// Device selectors of the shape most DeviceClasses and requests have, comparisons joined by `&&`:
//
//   device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].type == "gpu"
//   device.attributes["gpu.example.com"].index < 4
//
// (`==` and `!=` against a string, int or bool literal; `<`, `<=`, `>`, `>=` against an int)
// decided straight from the Device, without building its CEL `device` value: building those
// values and interpreting the selectors on every device of a node was nearly all of the
// allocator's first call (docs/PERFORMANCE.md, issue 15). Only what is certain is decided here.
// CEL's `&&` is false as soon as one side is false, whatever the others give (errors included),
// and true when every side is true; a comparison this class cannot settle (a missing attribute,
// a value of another type, a version, a list) leaves the whole answer to the CEL program, which
// also words the errors.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "numadra/allocator/model.hpp"

namespace numadra::allocator::detail {

class SimpleSelector {
  public:
    // nullopt when the text is not such a conjunction (the CEL program then decides every
    // device). Meant for text that compiled as a selector: the grammar accepted here is a strict
    // subset of CEL, read as CEL reads it.
    static std::optional<SimpleSelector> parse(std::string_view text);

    // The selector's result on a device of `driver`, when the comparisons settle it. The caller
    // makes sure the device's CEL value builds (dracel::deviceValue refuses invalid versions,
    // and then every selector fails on the device). `qualifiedDriverNames` false promises that
    // no attribute is named "<driver>/id", which spares that lookup.
    std::optional<bool> decide(std::string_view driver, const Device& device,
                               bool qualifiedDriverNames = true) const;

    using Literal = std::variant<bool, std::int64_t, std::string>;
    enum class Operator : std::int8_t { Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual };
    struct Comparison {
        bool onDriver = false;  // device.driver; otherwise device.attributes[domain].id
        std::string domain;
        std::string qualified;  // "domain/id": the explicit form wins in the driver's domain
        std::string bare;       // "id", also looked up when domain is the device's driver
        bool bareAllowed = false;
        Operator op = Operator::Equal;
        Literal literal;

        std::optional<bool> decide(std::string_view driver, const Device& device,
                                   bool qualifiedDriverNames) const;
        const AttributeValue* attribute(std::string_view driver, const Device& device,
                                        bool qualifiedDriverNames) const;
    };

  private:
    explicit SimpleSelector(std::vector<Comparison> comparisons)
        : comparisons_(std::move(comparisons)) {}

    std::vector<Comparison> comparisons_;
};

}  // namespace numadra::allocator::detail
