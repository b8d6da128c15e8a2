#pragma once
// The DRA CEL `device` variable and the expressions evaluated against it: device selectors
// (bool) and derived attributes.
//
//   device.driver                     string
//   device.attributes[domain][id]     bool, int, string, kubernetes.Semver, or a list of those
//   device.capacity[domain][id]       kubernetes.Quantity
//   device.allowMultipleAllocations   bool
//   device.name                       string, in derived-attribute expressions only
//
// Attribute and capacity names are split at the first '/' into domain and id; a name without
// '/' belongs to the driver's domain. An unknown domain reads as an empty map (so
// `device.attributes["nope"].x` is "no such key: x"), while `in`, size() and comprehensions see
// only the domains the device has.
//
// device.name (the device's name in its slice) is ours: KEP-6080's naming-convention story
// derives a hardware index from it (`device.name.replace('gpu', '')`). Selectors keep upstream's
// environment, which has no name: there it is a compile error saying where name is available.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "numadra/api/resource_slice.hpp"
#include "numadra/cel/cel.hpp"
#include "numadra/common/result.hpp"
#include "numadra/dracel/quantity.hpp"

namespace numadra::dracel {

// What an expression sees of a device; the pointed-to maps only need to live during
// deviceValue() (null means none).
struct DeviceView {
    std::string_view driver;
    const std::map<std::string, api::AttributeValue>* attributes = nullptr;
    const std::map<std::string, api::Quantity>* capacity = nullptr;
    bool allowMultipleAllocations = false;
};

// The `device` value, built once per device and shared by every evaluation. Versions are parsed
// strictly; an attribute that is not valid semver 2.0.0 is an error naming it (upstream then fails
// every evaluation on the device: the caller turns this error into each evaluation's error).
// When a device has both `id` and `<driver>/id`, the qualified one is used.
Result<cel::Value> deviceValue(const DeviceView& device);

// The `device` value of a derived-attribute expression: deviceValue()'s value (its maps are
// shared, not copied) plus `name`.
cel::Value derivedDeviceValue(const cel::Value& device, std::string_view name);

enum class ExpressionKind { Selector, DerivedAttribute };

// {"device": {driver, attributes, capacity, allowMultipleAllocations}}, plus name for a derived
// attribute.
cel::Declarations deviceDeclarations(ExpressionKind kind);
// Upstream's declarations of the DRA environment (functions, `device` and its fields, size
// limits), with `name` for derived attributes.
const std::shared_ptr<const cel::TypeEnvironment>& typeEnvironment(ExpressionKind kind);

// The largest worst-case cost the API server accepts (resource.k8s.io
// CELSelectorExpressionMaxCost), estimated statically when an expression is compiled.
inline constexpr std::uint64_t kMaxEstimatedCost = 1'000'000;

// The longest expression accepted (resource.k8s.io CELSelectorExpressionMaxLength).
inline constexpr std::size_t kMaxExpressionLength = std::size_t{10} * 1024;

// A compiled expression over `device`; immutable, safe to evaluate from several threads.
class Expression {
  public:
    // A device selector: at most kMaxExpressionLength bytes, only `device` declared (without
    // name), and a result that is bool or unknown at compile time ("must evaluate to bool or the
    // unknown type, not int" otherwise).
    static Result<Expression> compileSelector(std::string_view text);
    // A derived attribute: the result must be bool, int, string, list or unknown at compile time.
    static Result<Expression> compileDerived(std::string_view text);

    // Evaluates a selector against deviceValue()'s value. Runtime errors (a missing key, a type
    // mismatch, the cost limit, ...) are errors carrying the CEL message; a "no such key" error
    // also suggests has() / optional chaining. A non-bool result is an error ("CEL result of type
    // list could not be converted to bool"). `cost`, when given, receives the evaluation's cost.
    Result<bool> matches(const cel::Value& device, std::int64_t* cost = nullptr) const;
    // Evaluates a derived attribute against derivedDeviceValue()'s value: a string, int, bool or
    // semver, or a non-empty list of one of them; anything else is an error naming the type.
    Result<api::AttributeValue> derive(const cel::Value& device,
                                       std::int64_t* cost = nullptr) const;

    const std::string& source() const { return program_.source(); }
    const std::string& resultType() const { return program_.resultType(); }
    // The static worst-case cost upstream's API server estimates for it (at most
    // kMaxEstimatedCost: a costlier one does not compile).
    std::uint64_t estimatedCost() const { return estimatedCost_; }

  private:
    Expression(cel::Program program, std::uint64_t estimatedCost)
        : program_(std::move(program)), estimatedCost_(estimatedCost) {}
    static Result<Expression> compile(std::string_view text, ExpressionKind kind);
    cel::Value evaluate(const cel::Value& device, std::int64_t* cost) const;

    cel::Program program_;
    std::uint64_t estimatedCost_ = 0;
};

}  // namespace numadra::dracel
