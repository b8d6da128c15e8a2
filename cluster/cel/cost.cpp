// The static cost estimate, a port of cel-go v0.29.2's checker/cost.go (and of the Lists v3 and
// Sets libraries' overload estimators the Kubernetes environments enable), rule by rule: the
// same paths, size propagation and function costs, so a host declaring the API server's
// environment refuses exactly the expressions the API server refuses as too expensive.

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "checked.hpp"

namespace numadra::cel {

namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::uint64_t addSaturating(std::uint64_t x, std::uint64_t y) {
    return y > 0 && x > kMax - y ? kMax : x + y;
}

std::uint64_t multiplySaturating(std::uint64_t x, std::uint64_t y) {
    return y != 0 && x > kMax / y ? kMax : x * y;
}

std::uint64_t multiplyByFactor(std::uint64_t x, double factor) {
    const auto real = static_cast<double>(x);
    if (real > 0 && factor > 0 && real > static_cast<double>(kMax) / factor)
        return kMax;
    const double product = std::ceil(real * factor);
    if (product >= std::ldexp(1.0, 64))
        return kMax;
    return static_cast<std::uint64_t>(product);
}

}  // namespace

CostEstimate CostEstimate::add(const CostEstimate& other) const {
    return {addSaturating(min, other.min), addSaturating(max, other.max)};
}
CostEstimate CostEstimate::multiply(const CostEstimate& other) const {
    return {multiplySaturating(min, other.min), multiplySaturating(max, other.max)};
}
CostEstimate CostEstimate::multiplyByCostFactor(double factor) const {
    return {multiplyByFactor(min, factor), multiplyByFactor(max, factor)};
}
CostEstimate CostEstimate::unite(const CostEstimate& other) const {
    return {std::min(min, other.min), std::max(max, other.max)};
}
SizeEstimate SizeEstimate::add(const SizeEstimate& other) const {
    return {addSaturating(min, other.min), addSaturating(max, other.max)};
}
SizeEstimate SizeEstimate::multiply(const SizeEstimate& other) const {
    return {multiplySaturating(min, other.min), multiplySaturating(max, other.max)};
}
CostEstimate SizeEstimate::multiplyByCostFactor(double factor) const {
    return {multiplyByFactor(min, factor), multiplyByFactor(max, factor)};
}
CostEstimate SizeEstimate::multiplyByCost(const CostEstimate& cost) const {
    return {multiplySaturating(min, cost.min), multiplySaturating(max, cost.max)};
}
SizeEstimate SizeEstimate::unite(const SizeEstimate& other) const {
    return {std::min(min, other.min), std::max(max, other.max)};
}

SizeEstimate unknownSize() {
    return {0, kMax};
}

}  // namespace numadra::cel

namespace numadra::cel::detail {

namespace {

constexpr std::uint64_t kSelectAndIdentCost = 1;

enum class Container { Unknown, List, Map };

// The sizes of a container literal's keys (indexes) and values.
struct EntrySize {
    Container container = Container::Unknown;
    SizeEstimate key;
    SizeEstimate value;
};

std::optional<EntrySize> uniteEntries(const std::optional<EntrySize>& a,
                                      const std::optional<EntrySize>& b) {
    if (!a || !b)
        return std::nullopt;
    return EntrySize{a->container, a->key.unite(b->key), a->value.unite(b->value)};
}

struct LocalVar {
    std::vector<std::string> path;
    std::optional<SizeEstimate> size;
    std::optional<EntrySize> entrySize;
};

bool isAccumulatorVar(std::string_view name) {
    return name == "@result" || name == "__result__";
}

bool isScalar(const CelType& type) {
    switch (type.kind) {
        case TypeKind::Bool:
        case TypeKind::Double:
        case TypeKind::Duration:
        case TypeKind::Int:
        case TypeKind::Timestamp:
        case TypeKind::Uint:
            return true;
        case TypeKind::Opaque:
            return type.name == "optional_type" && isScalar(*type.params[0]);
        default:
            return false;
    }
}

// A literal int argument as an unsigned bound (cel-go ext's nodeAsUintValue).
std::uint64_t literalUint(const CostNode& node, std::uint64_t otherwise) {
    if (!node.literal || !node.literal->is<std::int64_t>())
        return otherwise;
    const std::int64_t value = node.literal->as<std::int64_t>();
    return value < 0 ? 0 : static_cast<std::uint64_t>(value);
}

class Coster {
  public:
    Coster(const CheckedAst& ast, const CostEstimator& estimator)
        : ast_(ast), estimator_(estimator) {}

    CostEstimate cost(const CheckedExpr& e) {
        switch (e.kind) {
            case CheckedKind::Literal:
                return {0, 0};
            case CheckedKind::Ident:
                return costIdent(e);
            case CheckedKind::Select:
                return costSelect(e);
            case CheckedKind::Call:
                return costCall(e);
            case CheckedKind::List:
                return costList(e);
            case CheckedKind::Map:
                return costMap(e);
            case CheckedKind::Comprehension:
                return isBind(e) ? costBind(e) : costComprehension(e);
        }
        return {};
    }

  private:
    const TypePtr& typeOf(const CheckedExpr& e) const {
        return ast_.types[static_cast<std::size_t>(e.id)];
    }

    // --- paths, local variables and sizes --------------------------------------------------

    const LocalVar* peekLocal(const std::string& name) const {
        const auto it = locals_.find(name);
        return it == locals_.end() || it->second.empty() ? nullptr : &it->second.back();
    }

    void pushLocal(const std::string& name, LocalVar var) {
        locals_[name].push_back(std::move(var));
    }
    void popLocal(const std::string& name) { locals_[name].pop_back(); }

    std::vector<std::string> pathOf(const CheckedExpr& e) const {
        if (e.kind == CheckedKind::Ident)
            if (const LocalVar* var = peekLocal(e.name))
                return var->path;
        const auto it = paths_.find(e.id);
        return it == paths_.end() ? std::vector<std::string>{} : it->second;
    }

    static std::vector<std::string> extended(std::vector<std::string> path, std::string part) {
        path.push_back(std::move(part));
        return path;
    }

    CostNode node(const CheckedExpr& e) {
        CostNode result;
        result.path = pathOf(e);
        if (!result.path.empty() && isAccumulatorVar(result.path[0]))
            result.path.clear();  // only paths from root variables
        result.type = typeOf(e);
        if (e.kind == CheckedKind::Literal)
            result.literal = &e.literal;
        result.computedSize = computeSize(e);
        return result;
    }

    static std::optional<SizeEstimate> exprSize(const CheckedExpr& e) {
        std::uint64_t size = 0;
        switch (e.kind) {
            case CheckedKind::Literal:
                if (e.literal.is<std::string>())
                    size = codePointCount(e.literal.as<std::string>());
                else if (e.literal.is<Bytes>())
                    size = e.literal.as<Bytes>().data.size();
                else
                    size = 1;
                break;
            case CheckedKind::List:
                size = e.args.size();
                break;
            case CheckedKind::Map:
                size = e.args.size() / 2;
                break;
            default:
                return std::nullopt;
        }
        return SizeEstimate{size, size};
    }

    std::optional<SizeEstimate> computeSize(const CheckedExpr& e) {
        if (const auto it = sizes_.find(e.id); it != sizes_.end())
            return it->second;
        if (auto size = exprSize(e))
            return size;
        CostNode view{pathOf(e), typeOf(e), nullptr, std::nullopt};
        if (auto size = estimator_.estimateSize(view)) {
            sizes_[e.id] = *size;
            return size;
        }
        if (typeOf(e) && isScalar(*typeOf(e)))
            return SizeEstimate{1, 1};
        if (e.kind == CheckedKind::Ident)
            if (const LocalVar* var = peekLocal(e.name); var && var->size)
                return var->size;
        return std::nullopt;
    }

    SizeEstimate sizeOrUnknown(const CheckedExpr& e) {
        return computeSize(e).value_or(unknownSize());
    }

    static SizeEstimate sizeOrUnknown(const CostNode& n) {
        return n.computedSize.value_or(unknownSize());
    }

    void setSize(const CheckedExpr& e, const std::optional<SizeEstimate>& size) {
        if (size)
            sizes_[e.id] = *size;
    }

    std::optional<EntrySize> entrySize(const CheckedExpr& e) const {
        if (const auto it = entrySizes_.find(e.id); it != entrySizes_.end())
            return it->second;
        if (e.kind == CheckedKind::Ident)
            if (const LocalVar* var = peekLocal(e.name); var && var->entrySize)
                return var->entrySize;
        return std::nullopt;
    }

    void setEntrySize(const CheckedExpr& e, const std::optional<EntrySize>& size) {
        if (size)
            entrySizes_[e.id] = *size;
    }

    void copySizes(const CheckedExpr& to, const CheckedExpr& from) {
        setSize(to, computeSize(from));
        setEntrySize(to, entrySize(from));
    }

    Container containerOf(const std::optional<EntrySize>& entries, const CheckedExpr& range) const {
        if (entries && entries->container != Container::Unknown)
            return entries->container;
        const TypePtr& type = typeOf(range);
        if (type && type->kind == TypeKind::List)
            return Container::List;
        if (type && type->kind == TypeKind::Map)
            return Container::Map;
        return Container::Unknown;
    }

    void pushIterKey(const std::string& name, const CheckedExpr& range) {
        const auto entries = entrySize(range);
        const bool list = containerOf(entries, range) == Container::List;
        pushLocal(name, {extended(pathOf(range), list ? "@indices" : "@keys"),
                         entries ? std::optional(entries->key) : std::nullopt, std::nullopt});
    }

    void pushIterValue(const std::string& name, const CheckedExpr& range) {
        const auto entries = entrySize(range);
        const bool list = containerOf(entries, range) == Container::List;
        pushLocal(name, {extended(pathOf(range), list ? "@items" : "@values"),
                         entries ? std::optional(entries->value) : std::nullopt, std::nullopt});
    }

    void pushIterSingle(const std::string& name, const CheckedExpr& range) {
        const auto entries = entrySize(range);
        const bool list = containerOf(entries, range) == Container::List;
        std::optional<SizeEstimate> size;
        if (entries)
            size = list ? entries->value : entries->key;
        pushLocal(name, {extended(pathOf(range), list ? "@items" : "@keys"), size, std::nullopt});
    }

    void pushLocalVar(const std::string& name, const CheckedExpr& e) {
        pushLocal(name, {pathOf(e), computeSize(e), entrySize(e)});
    }

    // --- costs -----------------------------------------------------------------------------

    CostEstimate costIdent(const CheckedExpr& e) {
        if (const LocalVar* var = peekLocal(e.name))
            paths_[e.id] = var->path;
        else
            paths_[e.id] = {e.name};
        return {kSelectAndIdentCost, kSelectAndIdentCost};
    }

    CostEstimate costSelect(const CheckedExpr& e) {
        const CheckedExpr& operand = *e.args[0];
        if (e.testOnly)  // the Kubernetes environments: has() itself costs nothing
            return cost(operand);
        CostEstimate sum = cost(operand);
        const TypePtr& target = typeOf(operand);
        if (target && (target->kind == TypeKind::Map || target->kind == TypeKind::Struct ||
                       target->kind == TypeKind::TypeParam))
            sum = sum.add({kSelectAndIdentCost, kSelectAndIdentCost});
        paths_[e.id] = extended(pathOf(operand), e.name);
        return sum;
    }

    CostEstimate costCall(const CheckedExpr& e) {
        if (e.name == "dyn" && !e.target && e.args.size() == 1) {
            const CostEstimate argCost = cost(*e.args[0]);
            copySizes(e, *e.args[0]);
            return CostEstimate{1, 1}.add(argCost);
        }
        std::vector<CostEstimate> argCosts;
        std::vector<CostNode> args;
        for (const auto& arg : e.args) {
            argCosts.push_back(cost(*arg));
            args.push_back(node(*arg));
        }
        const auto& overloads = ast_.overloads[static_cast<std::size_t>(e.id)];
        if (overloads.empty())
            return {};
        CostEstimate sum;
        std::optional<CostNode> target;
        if (e.target) {
            sum = sum.add(cost(*e.target));
            target = node(*e.target);
        }
        CostEstimate fnCost{kMax, 0};
        std::optional<SizeEstimate> resultSize;
        for (const std::string_view overload : overloads) {
            const CallEstimate estimate =
                functionCost(e, overload, target ? &*target : nullptr, args, argCosts);
            fnCost = fnCost.unite(estimate.cost);
            if (estimate.resultSize)
                resultSize =
                    resultSize ? resultSize->unite(*estimate.resultSize) : *estimate.resultSize;
            if ((overload == "index_list" || overload == "index_map") && !e.args.empty()) {
                const auto entries = entrySize(*e.args[0]);
                resultSize = entries ? std::optional(entries->value) : std::nullopt;
                paths_[e.id] =
                    extended(pathOf(*e.args[0]), overload == "index_list" ? "@items" : "@values");
            }
            if (!resultSize)
                resultSize = computeSize(e);
        }
        setSize(e, resultSize);
        return sum.add(fnCost);
    }

    CostEstimate costList(const CheckedExpr& e) {
        CostEstimate sum;
        SizeEstimate items{e.args.empty() ? 0 : kMax, 0};
        for (const auto& element : e.args) {
            sum = sum.add(cost(*element));
            items = items.unite(sizeOrUnknown(*element));
        }
        setEntrySize(e, EntrySize{Container::List, {1, 1}, items});
        return sum.add({kListCreateBaseCost, kListCreateBaseCost});
    }

    CostEstimate costMap(const CheckedExpr& e) {
        CostEstimate sum;
        const bool empty = e.args.empty();
        SizeEstimate keys{empty ? 0 : kMax, 0};
        SizeEstimate values{empty ? 0 : kMax, 0};
        for (std::size_t i = 0; i + 1 < e.args.size(); i += 2) {
            sum = sum.add(cost(*e.args[i]));
            sum = sum.add(cost(*e.args[i + 1]));
            keys = keys.unite(sizeOrUnknown(*e.args[i]));
            values = values.unite(sizeOrUnknown(*e.args[i + 1]));
        }
        setEntrySize(e, EntrySize{Container::Map, keys, values});
        return sum.add({kMapCreateBaseCost, kMapCreateBaseCost});
    }

    CostEstimate costComprehension(const CheckedExpr& e) {
        CostEstimate sum = cost(*e.iterRange);
        sum = sum.add(cost(*e.accuInit));
        pushLocalVar(e.accuVar, *e.accuInit);
        if (!e.iterVar2.empty()) {
            pushIterKey(e.iterVar, *e.iterRange);
            pushIterValue(e.iterVar2, *e.iterRange);
        } else {
            pushIterSingle(e.iterVar, *e.iterRange);
        }
        const CostEstimate loopCost = cost(*e.loopCondition);
        const CostEstimate stepCost = cost(*e.loopStep);
        popLocal(e.iterVar);
        if (!e.iterVar2.empty())
            popLocal(e.iterVar2);
        sum = sum.add(cost(*e.result));
        popLocal(e.accuVar);
        const SizeEstimate range = sizeOrUnknown(*e.iterRange);
        sum = sum.add(range.multiplyByCost(stepCost.add(loopCost)));
        switch (e.accuInit->kind) {
            case CheckedKind::Literal:
                setSize(e, computeSize(*e.accuInit));
                break;
            case CheckedKind::List:
            case CheckedKind::Map:
                setSize(e, range);
                if (auto stepEntries = entrySize(*e.loopStep))
                    setEntrySize(e, stepEntries);
                break;
            default:
                break;
        }
        return sum;
    }

    static bool isBind(const CheckedExpr& e) {
        return e.iterRange->kind == CheckedKind::List && e.iterRange->args.empty() &&
               e.loopCondition->kind == CheckedKind::Literal &&
               e.loopCondition->literal.is<bool>() && !e.loopCondition->literal.as<bool>() &&
               e.accuVar != "@result";
    }

    CostEstimate costBind(const CheckedExpr& e) {
        CostEstimate sum = cost(*e.iterRange);
        sum = sum.add(cost(*e.accuInit));
        pushLocalVar(e.accuVar, *e.accuInit);
        sum = sum.add(cost(*e.result));
        popLocal(e.accuVar);
        copySizes(e, *e.result);
        return sum;
    }

    // --- function costs ----------------------------------------------------------------------

    CallEstimate functionCost(const CheckedExpr& e, std::string_view overload,
                              const CostNode* target, const std::vector<CostNode>& args,
                              const std::vector<CostEstimate>& argCosts) {
        CostEstimate argSum;
        for (const auto& argCost : argCosts)
            argSum = argSum.add(argCost);
        if (auto estimate = libraryEstimate(overload, target, args))
            return {estimate->cost.add(argSum), estimate->resultSize};
        if (auto estimate = estimator_.estimateCallCost(e.name, overload, target, args))
            return {estimate->cost.add(argSum), estimate->resultSize};
        if (auto estimate = standardCost(e, overload, target, args, argCosts))
            return {estimate->cost.add(argSum), estimate->resultSize};
        if (overload == "logical_or" || overload == "logical_and")
            return {{argCosts[0].min, argCosts[0].add(argCosts[1]).max}, std::nullopt};
        if (overload == "conditional")
            return conditionalCost(e, args, argCosts);
        return {CostEstimate{1, 1}.add(argSum), std::nullopt};
    }

    CallEstimate conditionalCost(const CheckedExpr& e, const std::vector<CostNode>& args,
                                 const std::vector<CostEstimate>& argCosts) {
        const SizeEstimate size = sizeOrUnknown(args[1]).unite(sizeOrUnknown(args[2]));
        setEntrySize(e, uniteEntries(entrySize(*e.args[1]), entrySize(*e.args[2])));
        return {argCosts[0].add(argCosts[1].unite(argCosts[2])), size};
    }

    // The cost the standard rules give a function of the sizes of its arguments (nullopt: the
    // fixed cost of 1).
    std::optional<CallEstimate> standardCost(const CheckedExpr& e, std::string_view overload,
                                             const CostNode* target,
                                             const std::vector<CostNode>& args,
                                             const std::vector<CostEstimate>& argCosts) {
        (void)argCosts;
        const double traversal = kStringTraversalCostFactor;
        if (overload == "string_format" && target)
            return CallEstimate{sizeOrUnknown(*target).multiplyByCostFactor(traversal), {}};
        if (overload == "string_to_bytes" && args.size() == 1) {
            const SizeEstimate size = sizeOrUnknown(args[0]);
            return CallEstimate{size.multiplyByCostFactor(traversal),
                                SizeEstimate{size.min, multiplySaturatingSize(size.max, 4)}};
        }
        if (overload == "bytes_to_string" && args.size() == 1) {
            const SizeEstimate size = sizeOrUnknown(args[0]);
            return CallEstimate{size.multiplyByCostFactor(traversal),
                                SizeEstimate{size.min / 4, size.max}};
        }
        if (overload == "strings_quote" && args.size() == 1) {
            const SizeEstimate size = sizeOrUnknown(args[0]);
            return CallEstimate{size.multiplyByCostFactor(traversal),
                                SizeEstimate{size.min + 2, size.max * 2 + 2}};
        }
        if ((overload == "starts_with_string" || overload == "ends_with_string") &&
            args.size() == 1)
            return CallEstimate{sizeOrUnknown(args[0]).multiplyByCostFactor(traversal), {}};
        if (overload == "in_list" && args.size() == 2)
            return CallEstimate{sizeOrUnknown(args[1]).multiplyByCostFactor(1), {}};
        if (overload == "matches" || overload == "matches_string")
            return matchesCost(overload, target, args);
        if (overload == "contains_string" && target && args.size() == 1)
            return CallEstimate{sizeOrUnknown(*target).multiplyByCostFactor(traversal).multiply(
                                    sizeOrUnknown(args[0]).multiplyByCostFactor(traversal)),
                                {}};
        if ((overload == "add_string" || overload == "add_bytes" || overload == "add_list") &&
            args.size() == 2)
            return concatenationCost(e, overload, args);
        if (isSizeComparison(overload)) {
            const std::uint64_t smallestMax =
                std::min(sizeOrUnknown(args[0]).max, sizeOrUnknown(args[1]).max);
            return CallEstimate{
                CostEstimate{smallestMax > 0 ? 1U : 0U, smallestMax}.multiplyByCostFactor(
                    traversal),
                {}};
        }
        return std::nullopt;
    }

    static std::uint64_t multiplySaturatingSize(std::uint64_t x, std::uint64_t y) {
        // cel-go multiplies without saturation here (uint64 wraps).
        return x * y;
    }

    static bool isSizeComparison(std::string_view overload) {
        static const std::set<std::string, std::less<>> comparisons = {
            "less_string", "greater_string", "less_equals_string", "greater_equals_string",
            "less_bytes",  "greater_bytes",  "less_equals_bytes",  "greater_equals_bytes",
            "equals",      "not_equals"};
        return comparisons.contains(overload);
    }

    std::optional<CallEstimate> matchesCost(std::string_view overload, const CostNode* target,
                                            const std::vector<CostNode>& args) {
        const CostNode* text = nullptr;
        const CostNode* regex = nullptr;
        if (overload == "matches_string" && target && args.size() == 1) {
            text = target;
            regex = &args[0];
        } else if (overload == "matches" && !target && args.size() == 2) {
            text = &args[0];
            regex = &args[1];
        }
        if (!text)
            return std::nullopt;
        const CostEstimate textCost =
            sizeOrUnknown(*text).add({1, 1}).multiplyByCostFactor(kStringTraversalCostFactor);
        const CostEstimate regexCost =
            sizeOrUnknown(*regex).multiplyByCostFactor(kRegexStringLengthCostFactor);
        return CallEstimate{textCost.multiply(regexCost), {}};
    }

    CallEstimate concatenationCost(const CheckedExpr& e, std::string_view overload,
                                   const std::vector<CostNode>& args) {
        const SizeEstimate size = sizeOrUnknown(args[0]).add(sizeOrUnknown(args[1]));
        if (auto entries = uniteEntries(entrySize(*e.args[0]), entrySize(*e.args[1])))
            setEntrySize(e, entries);
        if (overload == "add_list")
            return {{1, 1}, size};
        return {size.multiplyByCostFactor(kStringTraversalCostFactor), size};
    }

    // The Lists v3 and Sets libraries' estimators (cel-go ext), which the Kubernetes
    // environments enable; they take precedence over the host's.
    std::optional<CallEstimate> libraryEstimate(std::string_view overload, const CostNode* target,
                                                const std::vector<CostNode>& args) {
        if (!overload.starts_with("list"))  // every one of these overloads' ids does
            return std::nullopt;
        if (overload == "list_sets_contains_list" || overload == "list_sets_intersects_list" ||
            overload == "list_sets_equivalent_list") {
            if (args.size() != 2)
                return std::nullopt;
            const double factor = overload == "list_sets_equivalent_list" ? 2 : 1;
            const CostEstimate cost = hostSize(args[0])
                                          .multiply(hostSize(args[1]))
                                          .multiplyByCostFactor(factor)
                                          .add({1, 1});
            return CallEstimate{cost, std::nullopt};
        }
        if (overload == "list_slice" && target && args.size() == 2) {
            const SizeEstimate size = hostSize(*target);
            const std::uint64_t start = literalUint(args[0], 0);
            const std::uint64_t end = literalUint(args[1], size.max);
            return allocatingList(1, {end - start, end - start});
        }
        if (overload == "lists_range" && !target && args.size() == 1) {
            const std::uint64_t end = literalUint(args[0], kMax);
            return allocatingList(1, {end, end});
        }
        if (overload == "list_reverse" && target && args.empty())
            return allocatingList(1, hostSize(*target));
        if ((overload == "list_flatten" || overload == "list_flatten_int") && target &&
            args.size() <= 1) {
            const std::uint64_t depth = args.empty() ? 1 : literalUint(args[0], kMax);
            return allocatingList(static_cast<double>(depth), hostSize(*target));
        }
        if (overload == "list_distinct" && target && args.empty()) {
            const SizeEstimate size = hostSize(*target);
            return allocatingList(2, size.multiply(size));
        }
        return sortEstimate(overload, target, args);
    }

    std::optional<CallEstimate> sortEstimate(std::string_view overload, const CostNode* target,
                                             const std::vector<CostNode>& args) {
        static const std::vector<std::string> comparable = {"int",
                                                            "uint",
                                                            "double",
                                                            "bool",
                                                            "google.protobuf.Duration",
                                                            "google.protobuf.Timestamp",
                                                            "string",
                                                            "bytes"};
        for (const std::string& type : comparable) {
            const bool text = type == "string" || type == "bytes";
            if (overload == "list_" + type + "_sort" && target && args.empty()) {
                const SizeEstimate size = hostSize(*target);
                return allocatingList(text ? 2 + kStringTraversalCostFactor : 2,
                                      size.multiply(size));
            }
            if (overload == "list_" + type + "_sortByAssociatedKeys" && target &&
                args.size() == 1) {
                const SizeEstimate size = hostSize(args[0]);
                return allocatingList(text ? 2 + kStringTraversalCostFactor : 2,
                                      size.multiply(size));
            }
        }
        return std::nullopt;
    }

    static CallEstimate allocatingList(double factor, SizeEstimate size) {
        const CostEstimate cost = size.multiplyByCostFactor(factor).add({1, 1}).add(
            {kListCreateBaseCost, kListCreateBaseCost});
        return {cost, size};
    }

    // cel-go ext's estimateSize: the computed size, else the host's, else unknown.
    SizeEstimate hostSize(const CostNode& n) const {
        if (n.computedSize)
            return *n.computedSize;
        return estimator_.estimateSize(n).value_or(unknownSize());
    }

    const CheckedAst& ast_;
    const CostEstimator& estimator_;
    std::map<int, std::vector<std::string>> paths_;
    std::map<std::string, std::vector<LocalVar>> locals_;
    std::map<int, SizeEstimate> sizes_;
    std::map<int, EntrySize> entrySizes_;
};

}  // namespace

CostEstimate estimateCost(const CheckedAst& ast, const CostEstimator& estimator) {
    return Coster(ast, estimator).cost(*ast.root);
}

}  // namespace numadra::cel::detail
