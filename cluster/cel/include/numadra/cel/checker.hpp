#pragma once
// Static checking as cel-go does it: a type environment (cel-go's declarations: functions with
// their overloads, variables, object fields), the type checker that resolves every call to its
// overloads, and the static cost estimate built on the checked expression (cel-go's
// checker.Cost). A host that declares the same environment as a Kubernetes API server gets the
// same compile errors and the same worst-case cost.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/cel/types.hpp"
#include "numadra/common/result.hpp"

namespace numadra::cel {

struct Value;

struct OverloadDeclaration {
    std::string id;
    bool member = false;
    TypePtr result;
    std::vector<TypePtr> args;  // the receiver first for a member overload
    std::vector<std::string> typeParams;
};

// The size limit of a declared value reachable from a variable (a string's characters, a
// list's or map's entries), by path: "device.attributes.@values.@keys". `attribute`: any field
// selected from the map that holds this type reaches it (a map of attributes).
struct DeclaredSize {
    std::uint64_t maxElements = 0;
    std::string kind;  // object, map, list, scalar
    bool attribute = false;
};

class TypeEnvironment {
  public:
    // Reads declarations as tests/upstream/cel/declarations.go writes them: one per line,
    // `overload`, `variable`, `field` and `size` lines (tab-separated), '#' comments.
    static Result<TypeEnvironment> parse(std::string_view text);

    void addField(const std::string& object, const std::string& field, TypePtr type);
    void addVariable(const std::string& name, TypePtr type);
    void addOverload(const std::string& function, OverloadDeclaration overload);
    void addSize(const std::string& path, DeclaredSize size);

    const std::vector<OverloadDeclaration>* function(std::string_view name) const;
    const TypePtr* variable(std::string_view name) const;
    bool hasObject(std::string_view object) const;
    const TypePtr* field(std::string_view object, std::string_view field) const;
    const DeclaredSize* size(std::string_view path) const;
    const std::map<std::string, DeclaredSize, std::less<>>& sizes() const { return sizes_; }

  private:
    std::map<std::string, std::vector<OverloadDeclaration>, std::less<>> functions_;
    std::map<std::string, TypePtr, std::less<>> variables_;
    std::map<std::string, std::map<std::string, TypePtr, std::less<>>, std::less<>> fields_;
    std::map<std::string, DeclaredSize, std::less<>> sizes_;
};

// Saturating estimates, as cel-go's checker.SizeEstimate and checker.CostEstimate.
struct CostEstimate {
    std::uint64_t min = 0;
    std::uint64_t max = 0;
    CostEstimate add(const CostEstimate& other) const;
    CostEstimate multiply(const CostEstimate& other) const;
    CostEstimate multiplyByCostFactor(double factor) const;
    CostEstimate unite(const CostEstimate& other) const;  // the range covering both
};

struct SizeEstimate {
    std::uint64_t min = 0;
    std::uint64_t max = 0;
    SizeEstimate add(const SizeEstimate& other) const;
    SizeEstimate multiply(const SizeEstimate& other) const;
    CostEstimate multiplyByCostFactor(double factor) const;
    CostEstimate multiplyByCost(const CostEstimate& cost) const;
    SizeEstimate unite(const SizeEstimate& other) const;
    CostEstimate asCost() const { return multiplyByCostFactor(1); }
};

SizeEstimate unknownSize();  // 0 .. 2^64-1

struct CallEstimate {
    CostEstimate cost;
    std::optional<SizeEstimate> resultSize;
};

// An expression as the cost estimator shows it to a host (cel-go's checker.AstNode).
struct CostNode {
    std::vector<std::string> path;  // variable, then fields, @items, @keys, @values; or empty
    TypePtr type;
    const Value* literal = nullptr;  // the value of a literal expression
    std::optional<SizeEstimate> computedSize;
};

// The host's part of the estimate (cel-go's checker.CostEstimator): sizes of declared values
// and costs of its functions; nullopt leaves the decision to the standard rules.
class CostEstimator {
  public:
    virtual ~CostEstimator() = default;
    virtual std::optional<SizeEstimate> estimateSize(const CostNode& node) const = 0;
    virtual std::optional<CallEstimate> estimateCallCost(
        std::string_view function, std::string_view overload, const CostNode* target,
        const std::vector<CostNode>& args) const = 0;
};

// cel-go's common cost constants.
inline constexpr double kStringTraversalCostFactor = 0.1;
inline constexpr double kRegexStringLengthCostFactor = 0.25;
inline constexpr std::uint64_t kListCreateBaseCost = 10;
inline constexpr std::uint64_t kMapCreateBaseCost = 30;
inline constexpr std::uint64_t kStructCreateBaseCost = 40;

}  // namespace numadra::cel
