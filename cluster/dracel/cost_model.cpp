// The static cost model of upstream's DRA environment: the Kubernetes libraries' call costs
// (k8s.io/apiserver/pkg/cel/library/cost.go, CostEstimator.EstimateCallCost) and the sizes of
// what `device` holds (k8s.io/dynamic-resource-allocation/cel sizeEstimator), ported so that
// Program::estimateCost gives the API server's worst-case cost.

#include "cost_model.hpp"

#include <cmath>
#include <limits>

#include "numadra/cel/cel.hpp"

namespace numadra::dracel::detail {

namespace {

using cel::CallEstimate;
using cel::CostEstimate;
using cel::CostNode;
using cel::SizeEstimate;

constexpr double kTraversal = cel::kStringTraversalCostFactor;
constexpr double kRegexFactor = cel::kRegexStringLengthCostFactor;
constexpr std::uint64_t kMaxFormatSize = 64;
constexpr double kMaxNameFormatRegexSize = 128;
constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

CallEstimate fixed(std::uint64_t cost) {
    return {{cost, cost}, std::nullopt};
}

bool isOneOf(std::string_view name, std::initializer_list<std::string_view> names) {
    for (std::string_view candidate : names)
        if (name == candidate)
            return true;
    return false;
}

}  // namespace

DeviceCostEstimator::DeviceCostEstimator(const cel::TypeEnvironment& environment) {
    for (const auto& [path, size] : environment.sizes())
        if (path == "device" || path.starts_with("device."))
            addSize(path, size);
}

void DeviceCostEstimator::addSize(const std::string& path, const cel::DeclaredSize& size) {
    SizeNode* node = &device_;
    std::string_view rest = std::string_view(path).substr(std::string_view("device").size());
    while (!rest.empty()) {
        rest.remove_prefix(1);  // '.'
        const std::size_t dot = rest.find('.');
        const std::string_view name = rest.substr(0, dot);
        auto it = node->children.find(name);
        if (it == node->children.end())
            it = node->children.emplace(std::string(name), SizeNode{}).first;
        node = &it->second;
        rest = dot == std::string_view::npos ? std::string_view{} : rest.substr(dot);
    }
    node->maxElements = size.maxElements;
    node->object = size.kind == "object";
    node->attribute = size.attribute;
}

// upstream's sizeEstimator: the declared limit of the value the path reaches from `device`.
std::optional<SizeEstimate> DeviceCostEstimator::estimateSize(const CostNode& node) const {
    if (node.path.empty() || node.path[0] != "device")
        return std::nullopt;
    const SizeNode* current = &device_;
    for (std::size_t i = 1; i < node.path.size() && current; ++i)
        current = step(*current, node.path[i]);
    if (!current)
        return std::nullopt;
    return SizeEstimate{0, current->maxElements};
}

const DeviceCostEstimator::SizeNode* DeviceCostEstimator::step(const SizeNode& current,
                                                               const std::string& name) const {
    const auto child = [&](std::string_view key) -> const SizeNode* {
        const auto it = current.children.find(key);
        return it == current.children.end() ? nullptr : &it->second;
    };
    if (name == "@items" || name == "@values") {
        if (const SizeNode* values = child("@values"))
            return values;
        return child("@items");
    }
    if (name == "@keys")
        return child("@keys");
    if (current.object)
        if (const SizeNode* field = child(name))
            return field;
    // Any name selected from a map of attributes reaches the attribute type.
    if (const SizeNode* values = child("@values"); values && values->attribute)
        return values;
    return nullptr;
}

SizeEstimate DeviceCostEstimator::sizeOf(const CostNode& node) const {
    if (node.computedSize)
        return *node.computedSize;
    return estimateSize(node).value_or(cel::unknownSize());
}

// The list's element as a node of its own (library.CostEstimator.listElementNode).
std::optional<CostNode> DeviceCostEstimator::listElement(const CostNode& list) {
    if (!list.type || list.type->params.empty())
        return std::nullopt;
    CostNode element;
    element.type = list.type->params[0];
    if (!list.path.empty()) {
        element.path = list.path;
        element.path.emplace_back("@items");
    }
    return element;
}

std::optional<CallEstimate> DeviceCostEstimator::estimateCallCost(
    std::string_view function, std::string_view overload, const CostNode* target,
    const std::vector<CostNode>& args) const {
    if (auto estimate = authorizationCost(function, args))
        return estimate;
    if (auto estimate = listFunctionCost(function, target))
        return estimate;
    if (auto estimate = stringFunctionCost(function, target, args))
        return estimate;
    if (auto estimate = networkFunctionCost(function, overload, args))
        return estimate;
    if (isOneOf(function, {"quantity", "isQuantity", "semver", "isSemver"}) && !args.empty())
        return CallEstimate{sizeOf(args[0]).multiplyByCostFactor(kTraversal), std::nullopt};
    if (function == "validate" && !args.empty())
        return CallEstimate{sizeOf(args[0])
                                .multiplyByCostFactor(kTraversal)
                                .multiplyByCostFactor(kMaxNameFormatRegexSize * kRegexFactor),
                            std::nullopt};
    if (isOneOf(function, {"format.named", "sign", "asInteger", "isInteger", "asApproximateFloat",
                           "isGreaterThan", "isLessThan", "compareTo", "add", "sub", "major",
                           "minor", "patch", "getScheme", "getHostname", "getHost", "getPort",
                           "getEscapedPath", "getQuery"}))
        return fixed(1);
    if (function == "_==_" && args.size() == 2)
        return equalityCost(args[0], args[1]);
    return std::nullopt;
}

// The authorizer library's (declared by the base environment; DRA has no authorizer variable).
std::optional<CallEstimate> DeviceCostEstimator::authorizationCost(
    std::string_view function, const std::vector<CostNode>& args) const {
    if (function == "check")
        return fixed(350000);
    if (isOneOf(function, {"serviceAccount", "path", "group", "resource", "subresource",
                           "namespace", "name", "allowed", "reason", "error", "errored"}))
        return fixed(1);
    if (isOneOf(function, {"fieldSelector", "labelSelector"}) && args.size() == 1) {
        const SizeEstimate length = sizeOf(args[0]);
        const CostEstimate parse = length.multiplyByCostFactor(kTraversal);
        const CostEstimate requirements = length.multiplyByCostFactor(0.5).multiplyByCostFactor(
            static_cast<double>(cel::kListCreateBaseCost + cel::kStructCreateBaseCost));
        return CallEstimate{
            CostEstimate{cel::kListCreateBaseCost, cel::kListCreateBaseCost}.add(parse).add(
                requirements),
            std::nullopt};
    }
    return std::nullopt;
}

std::optional<CallEstimate> DeviceCostEstimator::listFunctionCost(std::string_view function,
                                                                  const CostNode* target) const {
    if (!target ||
        !isOneOf(function, {"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes"}))
        return std::nullopt;
    CostEstimate elementCost{1, 1};
    if (auto element = listElement(*target)) {
        const cel::TypeKind kind = element->type->kind;
        if (kind == cel::TypeKind::String || kind == cel::TypeKind::Bytes)
            elementCost = elementCost.add(sizeOf(*element).multiplyByCostFactor(kTraversal));
        return CallEstimate{sizeOf(*target).multiplyByCost(elementCost), std::nullopt};
    }
    if (function == "includes")
        return CallEstimate{sizeOf(*target).multiplyByCost(elementCost), std::nullopt};
    return CallEstimate{sizeOf(*target).multiplyByCostFactor(kTraversal), std::nullopt};
}

std::optional<CallEstimate> DeviceCostEstimator::stringFunctionCost(
    std::string_view function, const CostNode* target, const std::vector<CostNode>& args) const {
    if (function == "url" && args.size() == 1) {
        const SizeEstimate size = sizeOf(args[0]);
        return CallEstimate{size.multiplyByCostFactor(kTraversal), size};
    }
    if (isOneOf(function, {"lowerAscii", "upperAscii", "substring", "trim"}) && target) {
        const SizeEstimate size = sizeOf(*target);
        return CallEstimate{size.multiplyByCostFactor(kTraversal), size};
    }
    if (function == "replace" && target && args.size() >= 2)
        return replaceCost(*target, args[0], args[1]);
    if (function == "split" && target) {
        const SizeEstimate size = sizeOf(*target);
        std::uint64_t max = size.max;
        if (args.size() > 1 && args[1].literal && args[1].literal->is<std::int64_t>())
            max = static_cast<std::uint64_t>(args[1].literal->as<std::int64_t>());
        return CallEstimate{size.multiplyByCostFactor(2 * kTraversal), SizeEstimate{0, max}};
    }
    if (function == "join" && target)
        return joinCost(*target, args);
    if (isOneOf(function, {"find", "findAll"}) && target && !args.empty()) {
        const SizeEstimate size = sizeOf(*target);
        const CostEstimate textCost = size.add({1, 1}).multiplyByCostFactor(kTraversal);
        const CostEstimate regexCost = sizeOf(args[0]).multiplyByCostFactor(kRegexFactor);
        return CallEstimate{textCost.multiply(regexCost), SizeEstimate{0, size.max}};
    }
    return std::nullopt;
}

CallEstimate DeviceCostEstimator::replaceCost(const CostNode& target, const CostNode& from,
                                              const CostNode& to) const {
    const SizeEstimate size = sizeOf(target);
    const SizeEstimate fromSize = sizeOf(from);
    const SizeEstimate toSize = sizeOf(to);
    SizeEstimate count;
    SizeEstimate retained;
    if (fromSize.min == 0) {
        count.max = size.max < kMax ? size.max + 1 : size.max;
        retained.max = size.max;
    } else if (toSize.max <= fromSize.min) {
        retained.max = size.max;
    } else {
        count.max = static_cast<std::uint64_t>(
            std::ceil(static_cast<double>(size.max) / static_cast<double>(fromSize.min)));
    }
    if (fromSize.max == 0) {
        count.min = size.min < kMax ? size.min + 1 : size.min;
        retained.min = size.min;
    } else if (fromSize.max <= toSize.min) {
        retained.min = size.min;
    } else {
        count.min = static_cast<std::uint64_t>(
            std::ceil(static_cast<double>(size.min) / static_cast<double>(fromSize.max)));
    }
    const SizeEstimate result = count.multiply(toSize).add(retained);
    return {size.multiplyByCostFactor(2 * kTraversal), result};
}

CallEstimate DeviceCostEstimator::joinCost(const CostNode& target,
                                           const std::vector<CostNode>& args) const {
    SizeEstimate size;
    const SizeEstimate listSize = sizeOf(target);
    if (auto element = listElement(target))
        size = listSize.multiply(sizeOf(*element));
    if (!args.empty()) {
        const SizeEstimate separators{listSize.min > 0 ? listSize.min - 1 : 0,
                                      listSize.max > 0 ? listSize.max - 1 : 0};
        size = size.add(sizeOf(args[0]).multiply(separators));
    }
    return {size.multiplyByCostFactor(kTraversal), size};
}

std::optional<CallEstimate> DeviceCostEstimator::networkFunctionCost(
    std::string_view function, std::string_view overload, const std::vector<CostNode>& args) const {
    if (isOneOf(function, {"cidr", "isIP", "isCIDR"}) && !args.empty())
        return CallEstimate{sizeOf(args[0]).multiplyByCostFactor(kTraversal), std::nullopt};
    if (function == "ip") {
        if (overload == "cidr_ip")
            return fixed(1);
        if (!args.empty())
            return CallEstimate{sizeOf(args[0]).multiplyByCostFactor(kTraversal), std::nullopt};
    }
    if (function == "ip.isCanonical" && !args.empty())
        return CallEstimate{sizeOf(args[0]).multiplyByCostFactor(2 * kTraversal), std::nullopt};
    if (isOneOf(function, {"masked", "prefixLength", "family", "isUnspecified", "isLoopback",
                           "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"}))
        return fixed(1);
    const SizeEstimate address{4, 16};
    if (function == "containsIP" && !args.empty()) {
        CostEstimate cost = address.add(address).multiplyByCostFactor(kTraversal);
        if (overload == "cidr_contains_ip_string")
            cost = cost.add(sizeOf(args[0]).multiplyByCostFactor(kTraversal));
        return CallEstimate{cost, std::nullopt};
    }
    if (function == "containsCIDR" && !args.empty()) {
        CostEstimate cost = address.add(address).multiplyByCostFactor(kTraversal);
        cost = cost.add(address.multiplyByCostFactor(kTraversal)).add({1, 1});
        if (overload == "cidr_contains_cidr_string")
            cost = cost.add(sizeOf(args[0]).multiplyByCostFactor(kTraversal));
        return CallEstimate{cost, std::nullopt};
    }
    return std::nullopt;
}

// Equality of two values of one Kubernetes type costs what comparing that type costs.
std::optional<CallEstimate> DeviceCostEstimator::equalityCost(const CostNode& left,
                                                              const CostNode& right) const {
    if (!left.type || !right.type || cel::typeName(*left.type) != cel::typeName(*right.type))
        return std::nullopt;
    const cel::CelType& type = *left.type;
    if (type.kind == cel::TypeKind::Opaque && isOneOf(type.name, {"net.IP", "net.CIDR"}))
        return fixed(1);
    if (type.kind != cel::TypeKind::Struct)
        return std::nullopt;
    if (isOneOf(type.name,
                {"kubernetes.Quantity", "kubernetes.Semver", "kubernetes.authorization.Authorizer",
                 "kubernetes.authorization.PathCheck", "kubernetes.authorization.GroupCheck",
                 "kubernetes.authorization.ResourceCheck", "kubernetes.authorization.Decision"}))
        return fixed(1);
    if (type.name == "kubernetes.NamedFormat")
        return CallEstimate{CostEstimate{1, kMaxFormatSize}.multiplyByCostFactor(kTraversal),
                            std::nullopt};
    if (type.name == "kubernetes.URL") {
        // Upstream takes both sizes from the right operand.
        SizeEstimate size{1, 1};
        if (right.computedSize)
            size = right.computedSize->unite(*right.computedSize);
        return CallEstimate{CostEstimate{1, size.max}.multiplyByCostFactor(kTraversal),
                            std::nullopt};
    }
    return std::nullopt;
}

}  // namespace numadra::dracel::detail
