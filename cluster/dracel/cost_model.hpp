#pragma once
// The static cost model of upstream's DRA CEL environment (see cost_model.cpp).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/cel/checker.hpp"

namespace numadra::dracel::detail {

class DeviceCostEstimator : public cel::CostEstimator {
  public:
    // Reads the declared sizes under `device` from the environment.
    explicit DeviceCostEstimator(const cel::TypeEnvironment& environment);

    std::optional<cel::SizeEstimate> estimateSize(const cel::CostNode& node) const override;
    std::optional<cel::CallEstimate> estimateCallCost(
        std::string_view function, std::string_view overload, const cel::CostNode* target,
        const std::vector<cel::CostNode>& args) const override;

  private:
    // The declared sizes under `device` as a tree, built once from the environment's paths.
    struct SizeNode {
        std::uint64_t maxElements = 0;
        bool object = false;
        bool attribute = false;
        std::map<std::string, SizeNode, std::less<>> children;  // fields, @keys, @values, @items
    };
    void addSize(const std::string& path, const cel::DeclaredSize& size);
    const SizeNode* step(const SizeNode& current, const std::string& name) const;
    cel::SizeEstimate sizeOf(const cel::CostNode& node) const;
    static std::optional<cel::CostNode> listElement(const cel::CostNode& list);
    std::optional<cel::CallEstimate> listFunctionCost(std::string_view function,
                                                      const cel::CostNode* target) const;
    std::optional<cel::CallEstimate> stringFunctionCost(
        std::string_view function, const cel::CostNode* target,
        const std::vector<cel::CostNode>& args) const;
    cel::CallEstimate replaceCost(const cel::CostNode& target, const cel::CostNode& from,
                                  const cel::CostNode& to) const;
    cel::CallEstimate joinCost(const cel::CostNode& target,
                               const std::vector<cel::CostNode>& args) const;
    std::optional<cel::CallEstimate> networkFunctionCost(
        std::string_view function, std::string_view overload,
        const std::vector<cel::CostNode>& args) const;
    std::optional<cel::CallEstimate> authorizationCost(
        std::string_view function, const std::vector<cel::CostNode>& args) const;
    std::optional<cel::CallEstimate> equalityCost(const cel::CostNode& left,
                                                  const cel::CostNode& right) const;

    SizeNode device_;
};

}  // namespace numadra::dracel::detail
