// The tree-walking evaluator. All state of one evaluation lives in an Evaluator on the caller's
// stack; the tree is shared and read-only, which is what makes a Program thread-safe.

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "ast.hpp"
#include "checked.hpp"
#include "functions.hpp"
#include "operators.hpp"

namespace numadra::cel {

struct Program::Impl {
    std::string source;
    detail::NodePtr root;
    const std::string* resultType = nullptr;  // checkedResultType, or deduceType()'s constant
    std::string checkedResultType;            // with declared types: the checker's result
    std::optional<detail::CheckedAst> checked;
};

namespace detail {

namespace {

// Comprehension variables and cel.bind names, innermost first; they shadow the activation.
struct Scope {
    const Scope* parent;
    std::string_view name;
    const Value* value;
};

const Value* findLocal(const Scope* scope, std::string_view name) {
    for (; scope; scope = scope->parent)
        if (scope->name == name)
            return scope->value;
    return nullptr;
}

const Value kTrue{true};
const Value kFalse{false};

// The state of a comprehension's loop.
struct Loop {
    std::optional<Value> pending;  // all/exists: an error that a later element may absorb
    std::int64_t count = 0;        // exists_one
    List list;                     // map, filter, transformList, sortBy (the elements)
    Map map;                       // transformMap, transformMapEntry
    List keys;                     // sortBy: each element's key
};

class Evaluator {
  public:
    Evaluator(const Activation& activation, const Environment& environment)
        : activation_(activation), environment_(environment) {}

    Value run(const Node& root) {
        Value result = eval(root, nullptr);
        if (aborted_)
            return Value::error(std::string(kCostLimitExceeded));
        return result;
    }
    std::int64_t cost() const { return cost_; }

  private:
    bool charge(std::int64_t amount) {
        cost_ += amount;
        if (cost_ > environment_.costLimit)
            aborted_ = true;
        return !aborted_;
    }
    Value aborted() const { return Value::error(std::string(kCostLimitExceeded)); }

    Value eval(const Node& node, const Scope* scope) {
        if (!charge(1))
            return aborted();
        switch (node.kind) {
            case NodeKind::Literal:
                return node.literal;
            case NodeKind::Ident:
                return ident(node, scope);
            case NodeKind::Select:
                return select(node, scope);
            case NodeKind::Has:
                return has(node, scope);
            case NodeKind::Index:
                return index(node, scope);
            case NodeKind::Call:
                return call(node, scope);
            case NodeKind::List:
                return list(node, scope);
            case NodeKind::Map:
                return map(node, scope);
            case NodeKind::Not:
                return logicalNot(node, scope);
            case NodeKind::Negate:
                return negate(node, scope);
            case NodeKind::Binary:
                return binaryNode(node, scope);
            case NodeKind::And:
                return logical(node, scope, false);
            case NodeKind::Or:
                return logical(node, scope, true);
            case NodeKind::Conditional:
                return conditional(node, scope);
            case NodeKind::Comprehension:
                return comprehension(node, scope);
            case NodeKind::Bind:
                return bind(node, scope);
        }
        return Value::error("unknown expression");
    }

    // Whether the first name of a qualified chain is a variable (then `a.b` selects a field
    // rather than naming "a.b" in the activation or a namespaced function).
    bool isLocal(const Node& node, const Scope* scope) const {
        return !node.absolute && findLocal(scope, node.rootName) != nullptr;
    }

    Value ident(const Node& node, const Scope* scope) {
        if (!node.absolute)
            if (const Value* local = findLocal(scope, node.name))
                return *local;
        if (const Value* bound = activation_.find(node.name))
            return *bound;
        if (isTypeName(node.name))
            return Value::type(node.name);
        return Value::error("undeclared reference to '" + node.name + "'");
    }

    Value select(const Node& node, const Scope* scope) {
        // Qualified-name resolution: the longest bound dotted prefix wins.
        if (!node.qualified.empty() && !isLocal(node, scope))
            if (const Value* bound = activation_.find(node.qualified))
                return *bound;
        if (!node.qualified.empty() && !isLocal(node, scope) && isQualifiedTypeName(node.qualified))
            return Value::type(node.qualified);
        Value operand = eval(*node.children[0], scope);
        if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&operand.v)) {
            // The common case, kept free of allocations: a field of a plain map.
            const auto it = (*map)->find(node.fieldKey);
            if (node.optional)
                return it == (*map)->end() ? noneOptional() : makeOptional(it->second);
            if (it == (*map)->end())
                return Value::error("no such key: " + node.name);
            return it->second;
        }
        if (operand.isError())
            return operand;
        // Selecting within an optional keeps it optional: a.?b.c is none when b is absent.
        if (const OptionalValue* opt = asOptional(operand))
            return opt->value() ? fieldValue(*opt->value(), node, true) : operand;
        return fieldValue(operand, node, node.optional);
    }

    Value has(const Node& node, const Scope* scope) {
        Value operand = eval(*node.children[0], scope);
        if (operand.isError())
            return operand;
        if (const OptionalValue* opt = asOptional(operand)) {
            if (!opt->value())
                return kFalse;
            Value inner = *opt->value();  // copied first: `operand` owns it
            operand = std::move(inner);
        }
        if (!mapEntries(operand))
            return Value::error("invalid type for has(): " + operand.typeName());
        return Value(lookupField(operand, node.fieldKey).has_value());
    }

    Value index(const Node& node, const Scope* scope) {
        Value container = eval(*node.children[0], scope);
        if (container.isError())
            return container;
        Value key = eval(*node.children[1], scope);
        if (key.isError())
            return key;
        if (const OptionalValue* opt = asOptional(container))
            return opt->value() ? indexValue(*opt->value(), key, true) : container;
        return indexValue(container, key, node.optional);
    }

    Value callHost(const std::map<std::string, Function, std::less<>>& functions,
                   std::string_view name, const std::vector<Value>& args) {
        const auto it = functions.find(name);
        if (it == functions.end())
            return noSuchOverload(name, args);
        return it->second(args);
    }

    // format() writes more than its format string (a %e width pads to 65535 characters), so its
    // output is charged as a scan of it; it stops writing once that would exceed the budget.
    std::optional<Value> format(const std::vector<Value>& args) {
        const std::int64_t left = std::max<std::int64_t>(environment_.costLimit - cost_, 0);
        const auto maxOutput = left > std::numeric_limits<std::int64_t>::max() / 16
                                   ? std::numeric_limits<std::size_t>::max()
                                   : static_cast<std::size_t>(left) * 16;
        const HostText hostText = [this](const Value& value) -> std::optional<std::string> {
            Value text = callHost(environment_.globalFunctions, "string", {value});
            if (const auto* s = std::get_if<std::string>(&text.v))
                return *s;
            return std::nullopt;
        };
        std::optional<Value> result = formatString(args, hostText, maxOutput);
        if (!result)
            return result;
        const auto* text = std::get_if<std::string>(&result->v);
        if (text && !charge(static_cast<std::int64_t>(text->size()) / 16))
            return aborted();
        if (!text && result->isError() && result->as<ErrorValue>().message == kCostLimitExceeded) {
            charge(left + 1);
            return aborted();
        }
        return result;
    }

    // or() and orValue() evaluate their argument only when the receiver is optional.none().
    Value optionalOr(const Node& node, const Scope* scope) {
        Value receiver = eval(*node.children[0], scope);
        if (receiver.isError())
            return receiver;
        const OptionalValue* opt = asOptional(receiver);
        if (!opt || node.children.size() != 2)
            return memberCall(node, scope, std::move(receiver));
        if (opt->value())
            return node.builtin == Builtin::Or ? receiver : *opt->value();
        Value alternative = eval(*node.children[1], scope);
        if (alternative.isError() || node.builtin == Builtin::OrValue || asOptional(alternative))
            return alternative;
        return noSuchOverload(node.name, {receiver, alternative});
    }

    // A host member function call whose receiver is evaluated already.
    Value memberCall(const Node& node, const Scope* scope, Value receiver) {
        std::vector<Value> args{std::move(receiver)};
        for (std::size_t i = 1; i < node.children.size(); ++i) {
            Value arg = eval(*node.children[i], scope);
            if (arg.isError())
                return arg;
            args.push_back(std::move(arg));
        }
        return callHost(environment_.memberFunctions, node.name, args);
    }

    Value call(const Node& node, const Scope* scope) {
        if (node.receiver && (node.builtin == Builtin::Or || node.builtin == Builtin::OrValue))
            return optionalOr(node, scope);
        std::vector<Value> args;
        args.reserve(node.children.size());
        // `ns.f(x)` names a global function when `ns` is not a variable.
        const bool qualifiedGlobal = !node.qualified.empty() && !isLocal(node, scope) &&
                                     environment_.globalFunctions.count(node.qualified) > 0 &&
                                     activation_.find(node.rootName) == nullptr;
        for (std::size_t i = qualifiedGlobal ? 1 : 0; i < node.children.size(); ++i) {
            Value arg = eval(*node.children[i], scope);
            if (arg.isError())
                return arg;  // functions are strict in their arguments
            args.push_back(std::move(arg));
        }
        if (qualifiedGlobal) {
            // cel-go charges strings.quote a traversal of its argument (0.1 per code point,
            // rounded up: its runtime ExtQuoteString cost), which Kubernetes' estimator leaves
            // to it.
            if (node.qualified == "strings.quote" && args.size() == 1) {
                if (const auto* s = std::get_if<std::string>(&args[0].v)) {
                    const auto points = std::count_if(s->begin(), s->end(), [](char c) {
                        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
                    });
                    if (!charge((static_cast<std::int64_t>(points) + 9) / 10))
                        return aborted();
                }
            }
            return callHost(environment_.globalFunctions, node.qualified, args);
        }
        if (node.builtin != Builtin::None) {
            std::int64_t scanned = 0;
            for (const Value& arg : args) {
                if (const auto* s = std::get_if<std::string>(&arg.v))
                    scanned += static_cast<std::int64_t>(s->size());
            }
            if (!charge(scanned / 16))
                return aborted();
            if (node.builtin == Builtin::Format && node.receiver)
                if (auto result = format(args))
                    return std::move(*result);
            if (auto result = callBuiltin(node, args))
                return std::move(*result);
        }
        if (!node.overload.empty())
            return callHost(environment_.overloadFunctions, node.overload, args);
        // A receiver that is an Opaque, or argument types the standard library does not cover.
        return callHost(node.receiver ? environment_.memberFunctions : environment_.globalFunctions,
                        node.name, args);
    }

    // An entry written `?x` in a list or map literal: x must be an optional; optional.none()
    // leaves the entry out (false), optional.of(v) makes it v.
    static bool optionalEntry(Value& item) {
        const OptionalValue* opt = asOptional(item);
        if (!opt) {
            item = Value::error("no such overload: optional entry of type " + item.typeName());
            return true;
        }
        if (!opt->value())
            return false;
        Value inner = *opt->value();  // copied first: `item` owns it
        item = std::move(inner);
        return true;
    }

    bool isOptionalEntry(const Node& node, std::size_t entry) const {
        return entry < node.optionalEntries.size() && node.optionalEntries[entry];
    }

    Value list(const Node& node, const Scope* scope) {
        List items;
        items.reserve(node.children.size());
        for (std::size_t i = 0; i < node.children.size(); ++i) {
            Value item = eval(*node.children[i], scope);
            if (!item.isError() && isOptionalEntry(node, i) && !optionalEntry(item))
                continue;
            if (item.isError())
                return item;
            items.push_back(std::move(item));
        }
        return Value::list(std::move(items));
    }

    Value map(const Node& node, const Scope* scope) {
        Map entries;
        for (std::size_t i = 0; i + 1 < node.children.size(); i += 2) {
            Value key = eval(*node.children[i], scope);
            if (key.isError())
                return key;
            Value item = eval(*node.children[i + 1], scope);
            if (!item.isError() && isOptionalEntry(node, i / 2) && !optionalEntry(item))
                continue;
            if (item.isError())
                return item;
            auto mapKey = toMapKey(key);
            if (!mapKey)
                return Value::error("unsupported key type: " + key.typeName());
            if (mapLookup(entries, key))
                return Value::error("Failed with repeated key: " + toString(key));
            entries.emplace(std::move(*mapKey), std::move(item));
        }
        return Value::map(std::move(entries));
    }

    Value logicalNot(const Node& node, const Scope* scope) {
        Value operand = eval(*node.children[0], scope);
        if (operand.isError())
            return operand;
        if (const auto* b = std::get_if<bool>(&operand.v))
            return Value(!*b);
        return callHost(environment_.globalFunctions, "!_", {operand});
    }

    Value negate(const Node& node, const Scope* scope) {
        Value operand = eval(*node.children[0], scope);
        if (operand.isError())
            return operand;
        if (const auto* i = std::get_if<std::int64_t>(&operand.v)) {
            if (*i == std::numeric_limits<std::int64_t>::min())
                return intOverflow();
            return Value(-*i);
        }
        if (const auto* d = std::get_if<double>(&operand.v))
            return Value(-*d);
        return callHost(environment_.globalFunctions, "-_", {operand});
    }

    Value binaryNode(const Node& node, const Scope* scope) {
        Value a = eval(*node.children[0], scope);
        if (a.isError())
            return a;
        Value b = eval(*node.children[1], scope);
        if (b.isError())
            return b;
        if (auto result = binary(node.op, a, b)) {
            if (const auto* s = std::get_if<std::string>(&result->v))
                charge(static_cast<std::int64_t>(s->size()) / 16);
            else if (const auto* l = std::get_if<std::shared_ptr<const List>>(&result->v))
                charge(static_cast<std::int64_t>((*l)->size()) / 16);
            return std::move(*result);
        }
        return callHost(environment_.globalFunctions, binaryOpName(node.op), {a, b});
    }

    // CEL's commutative && and ||: a deciding operand (false for &&, true for ||) wins over an
    // error or a non-boolean on the other side, whichever side it is on.
    Value logical(const Node& node, const Scope* scope, bool isOr) {
        Value a = eval(*node.children[0], scope);
        if (aborted_)
            return a;
        const auto* ab = std::get_if<bool>(&a.v);
        if (ab && *ab == isOr)
            return a;
        Value b = eval(*node.children[1], scope);
        if (aborted_)
            return b;
        const auto* bb = std::get_if<bool>(&b.v);
        if (bb && *bb == isOr)
            return b;
        if (ab != nullptr && bb != nullptr)
            return Value(!isOr);
        const char* name = isOr ? "_||_" : "_&&_";
        if (a.isError())
            return a;
        if (!ab)
            return noSuchOverload(name, {a, b});
        if (b.isError())
            return b;
        return noSuchOverload(name, {a, b});
    }

    Value conditional(const Node& node, const Scope* scope) {
        Value condition = eval(*node.children[0], scope);
        if (condition.isError())
            return condition;
        const auto* b = std::get_if<bool>(&condition.v);
        if (!b)
            return noSuchOverload("_?_:_", {condition});
        return eval(*node.children[*b ? 1 : 2], scope);
    }

    Value comprehension(const Node& node, const Scope* scope) {
        Value range = eval(*node.children[0], scope);
        if (range.isError())
            return range;
        if (node.macro == Macro::OptMap || node.macro == Macro::OptFlatMap)
            return optionalMap(node, scope, range);
        if (node.macro == Macro::SortBy && !range.is<std::shared_ptr<const List>>())
            return noSuchOverload("sortBy", {range});
        const bool twoVars = !node.name2.empty();
        Loop loop;
        if (const auto* l = std::get_if<std::shared_ptr<const List>>(&range.v)) {
            // One variable: the element; two: the index and the element.
            for (std::size_t i = 0; i < (*l)->size(); ++i) {
                const Value& item = (**l)[i];
                const Value position(static_cast<std::int64_t>(i));
                auto done = twoVars ? step(node, scope, loop, position, &item)
                                    : step(node, scope, loop, item, nullptr);
                if (done)
                    return std::move(*done);
            }
        } else if (const Map* m = mapEntries(range)) {
            // One variable: the key; two: the key and the value.
            for (const auto& [k, item] : *m) {
                const Value key = keyValue(k);
                if (auto done = step(node, scope, loop, key, twoVars ? &item : nullptr))
                    return std::move(*done);
            }
        } else {
            return Value::error("expected iterable type, got " + range.typeName());
        }
        return finish(node, loop);
    }

    // One iteration with the variables bound to `first` (and `second`); a value when the
    // comprehension ends early (decided, an error, the cost limit).
    std::optional<Value> step(const Node& node, const Scope* scope, Loop& loop, const Value& first,
                              const Value* second) {
        if (!charge(1))
            return aborted();
        const Scope outer{scope, node.name, &first};
        const Scope inner{&outer, node.name2, second};
        const Scope* vars = second ? &inner : &outer;
        Value result = eval(*node.children[1], vars);
        if (aborted_)
            return result;
        const auto* decided = std::get_if<bool>(&result.v);
        switch (node.macro) {
            case Macro::All:
            case Macro::Exists: {
                const bool deciding = node.macro == Macro::Exists;
                if (decided && *decided == deciding)
                    return Value(deciding);
                if (!decided && !loop.pending)
                    loop.pending = result.isError()
                                       ? result
                                       : noSuchOverload(deciding ? "_||_" : "_&&_", {result});
                return std::nullopt;
            }
            case Macro::ExistsOne:
                if (!decided)
                    return result.isError() ? result : noSuchOverload("exists_one", {result});
                loop.count += *decided ? 1 : 0;
                return std::nullopt;
            case Macro::Map:
                if (result.isError())
                    return result;
                loop.list.push_back(std::move(result));
                return std::nullopt;
            case Macro::SortBy:
                if (result.isError())
                    return result;
                loop.list.push_back(first);
                loop.keys.push_back(std::move(result));
                return std::nullopt;
            case Macro::MapFilter:
            case Macro::Filter: {
                if (!decided)
                    return result.isError() ? result : noSuchOverload("filter", {result});
                if (!*decided)
                    return std::nullopt;
                if (node.macro == Macro::Filter) {
                    loop.list.push_back(first);
                    return std::nullopt;
                }
                Value mapped = eval(*node.children[2], vars);
                if (mapped.isError())
                    return mapped;
                loop.list.push_back(std::move(mapped));
                return std::nullopt;
            }
            default:
                return transform(node, vars, loop, first, std::move(result));
        }
    }

    // transformList / transformMap / transformMapEntry: `result` is the transform, or the filter
    // when there is one.
    std::optional<Value> transform(const Node& node, const Scope* vars, Loop& loop,
                                   const Value& key, Value result) {
        if (node.children.size() == 3) {
            const auto* keep = std::get_if<bool>(&result.v);
            if (!keep)
                return result.isError() ? result : noSuchOverload(transformName(node), {result});
            if (!*keep)
                return std::nullopt;
            result = eval(*node.children[2], vars);
        }
        if (result.isError())
            return result;
        if (node.macro == Macro::TransformList) {
            loop.list.push_back(std::move(result));
        } else if (node.macro == Macro::TransformMap) {
            loop.map.insert_or_assign(*toMapKey(key), std::move(result));
        } else {
            return mergeEntries(loop.map, result);
        }
        return std::nullopt;
    }

    static std::string_view transformName(const Node& node) {
        return node.macro == Macro::TransformList  ? "transformList"
               : node.macro == Macro::TransformMap ? "transformMap"
                                                   : "transformMapEntry";
    }

    // transformMapEntry: the transform yields a map whose entries join the result; a key may
    // be produced once only.
    static std::optional<Value> mergeEntries(Map& into, const Value& entries) {
        const Map* add = mapEntries(entries);
        if (!add)
            return noSuchOverload("transformMapEntry", {entries});
        for (const auto& [k, item] : *add) {
            if (mapLookup(into, keyValue(k)))
                return Value::error("insert failed: key " + toString(keyValue(k)) +
                                    " already exists");
            into.emplace(k, item);
        }
        return std::nullopt;
    }

    static Value finish(const Node& node, Loop& loop) {
        switch (node.macro) {
            case Macro::All:
                return loop.pending ? *loop.pending : kTrue;
            case Macro::Exists:
                return loop.pending ? *loop.pending : kFalse;
            case Macro::ExistsOne:
                return Value(loop.count == 1);
            case Macro::TransformMap:
            case Macro::TransformMapEntry:
                return Value::map(std::move(loop.map));
            case Macro::SortBy:
                return sortByKeys(loop);
            default:
                return Value::list(std::move(loop.list));
        }
    }

    // sortBy: the elements in the order of their keys (stable), which must all be of one
    // orderable kind: int, uint, double, string, bool, bytes, or a host type with an order
    // (timestamps, durations).
    static Value sortByKeys(Loop& loop) {
        const auto orderable = [](const Value& key) {
            const auto* host = std::get_if<std::shared_ptr<const Opaque>>(&key.v);
            return key.is<std::int64_t>() || key.is<std::uint64_t>() || key.is<double>() ||
                   key.is<std::string>() || key.is<bool>() || key.is<Bytes>() ||
                   (host && *host && (*host)->order(**host).has_value());
        };
        for (const Value& key : loop.keys)
            if (!orderable(key) || key.v.index() != loop.keys.front().v.index() ||
                key.typeName() != loop.keys.front().typeName())
                return Value::error("sortBy: the keys must be of one orderable type, found " +
                                    key.typeName());
        std::vector<std::size_t> order(loop.list.size());
        for (std::size_t i = 0; i < order.size(); ++i)
            order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return std::visit(
                [&](const auto& x) -> bool {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, Bytes>)
                        return x.data < loop.keys[b].template as<Bytes>().data;
                    else if constexpr (std::is_same_v<T, std::int64_t> ||
                                       std::is_same_v<T, std::uint64_t> ||
                                       std::is_same_v<T, double> || std::is_same_v<T, bool> ||
                                       std::is_same_v<T, std::string>)
                        return x < loop.keys[b].template as<T>();
                    else if constexpr (std::is_same_v<T, std::shared_ptr<const Opaque>>)
                        return x->order(*loop.keys[b].template as<T>()) == -1;
                    else
                        return false;
                },
                loop.keys[a].v);
        });
        List sorted;
        sorted.reserve(order.size());
        for (std::size_t i : order)
            sorted.push_back(std::move(loop.list[i]));
        return Value::list(std::move(sorted));
    }

    // opt.optMap(x, expr) is optional.of(expr) with x bound to opt's value; optFlatMap's expr
    // yields the optional itself. optional.none() maps to itself.
    Value optionalMap(const Node& node, const Scope* scope, const Value& target) {
        const bool flat = node.macro == Macro::OptFlatMap;
        const OptionalValue* opt = asOptional(target);
        if (!opt)
            return noSuchOverload(flat ? "optFlatMap" : "optMap", {target});
        if (!opt->value())
            return target;
        const Scope inner{scope, node.name, &*opt->value()};
        Value result = eval(*node.children[1], &inner);
        if (result.isError())
            return result;
        if (!flat)
            return makeOptional(std::move(result));
        return asOptional(result) ? result : noSuchOverload("optFlatMap", {result});
    }

    // cel.bind(name, init, body): `init` is evaluated once; an error in it matters only if the
    // body uses the name.
    Value bind(const Node& node, const Scope* scope) {
        Value init = eval(*node.children[0], scope);
        if (aborted_)
            return init;
        const Scope inner{scope, node.name, &init};
        return eval(*node.children[1], &inner);
    }

    const Activation& activation_;
    const Environment& environment_;
    std::int64_t cost_ = 0;
    bool aborted_ = false;
};

}  // namespace

}  // namespace detail

namespace {

using StaticCalls = std::map<const detail::Node*, std::string_view>;

void markStaticOverloads(detail::Node& node, const StaticCalls& calls) {
    if (const auto it = calls.find(&node); it != calls.end())
        node.overload = std::string(it->second);
    for (auto& child : node.children)
        markStaticOverloads(*child, calls);
}

// Sets Node::overload on each parsed call the checker resolved to exactly one of `overloads`.
void markStaticOverloads(detail::Node& root, const detail::CheckedAst& checked,
                         const std::set<std::string, std::less<>>& overloads) {
    StaticCalls calls;
    for (const auto& [source, id] : checked.sourceCalls) {
        const auto& resolved = checked.overloads[static_cast<std::size_t>(id)];
        if (resolved.size() == 1 && overloads.contains(resolved.front()))
            calls.emplace(source, resolved.front());
    }
    if (!calls.empty())
        markStaticOverloads(root, calls);
}

}  // namespace

Result<Program> Program::compile(std::string_view expression, const CompileOptions& options) {
    auto root = detail::parse(expression);
    if (!root)
        return root.error();
    if (options.declarations)
        if (auto error = detail::checkDeclarations(**root, *options.declarations))
            return *error;
    auto impl = std::make_shared<Impl>();
    impl->source = std::string(expression);
    if (options.declarations && options.declarations->types) {
        auto checked = detail::typeCheck(**root, options.declarations->types);
        if (!checked)
            return checked.error();
        impl->checkedResultType = resultTypeName(*checked->types[checked->root->id]);
        markStaticOverloads(**root, *checked, options.declarations->staticOverloads);
        impl->resultType = &impl->checkedResultType;
        impl->checked = std::move(*checked);
    } else {
        // No types to check against: the type the parsed tree shows.
        impl->resultType = &detail::deduceType(**root);
    }
    impl->root = std::move(*root);
    return Program(std::move(impl));
}

// The checker's result type in resultType()'s words: "dyn" for what values decide, else the
// type's name (bool, int, list, map, null_type, kubernetes.Quantity, ...).
std::string Program::resultTypeName(const CelType& type) {
    const bool dynamic = type.kind == TypeKind::Dyn || type.kind == TypeKind::Any ||
                         type.kind == TypeKind::Error || type.kind == TypeKind::TypeParam;
    return dynamic ? "dyn" : typeName(type);
}

const std::string& Program::resultType() const {
    return *impl_->resultType;
}

namespace {

bool isConversion(const detail::Node& node) {
    static const std::set<std::string, std::less<>> conversions = {
        "bool", "bytes", "double", "duration", "dyn", "int", "string", "timestamp", "type", "uint"};
    return node.kind == detail::NodeKind::Call && !node.receiver && node.children.size() == 1 &&
           conversions.contains(node.name);
}

// Whether the node is a constant once cel-go's planner has folded it (literals, list and map
// literals of constants, conversions of constants); a failed conversion sets `error`.
bool foldConstant(const detail::Node& node, const Environment& environment,
                  std::optional<Error>& error) {
    bool constantChildren = true;
    for (const auto& child : node.children)
        constantChildren = foldConstant(*child, environment, error) && constantChildren;
    if (error)
        return false;
    switch (node.kind) {
        case detail::NodeKind::Literal:
            return true;
        case detail::NodeKind::List:
        case detail::NodeKind::Map:
            return constantChildren;
        default:
            break;
    }
    if (!isConversion(node) || !constantChildren)
        return false;
    const Activation none;
    const Value value = detail::Evaluator(none, environment).run(node);
    if (const auto* failure = std::get_if<ErrorValue>(&value.v))
        error = Error{"line " + std::to_string(node.line) + ", column " +
                      std::to_string(node.column) + ": type conversion error: " + failure->message};
    return true;
}

}  // namespace

std::optional<Error> Program::checkConstantConversions(const Environment& environment) const {
    std::optional<Error> error;
    foldConstant(*impl_->root, environment, error);
    return error;
}

TypePtr Program::checkedType() const {
    return impl_->checked ? impl_->checked->types[impl_->checked->root->id] : nullptr;
}

std::optional<CostEstimate> Program::estimateCost(const CostEstimator& estimator) const {
    if (!impl_->checked)
        return std::nullopt;
    return detail::estimateCost(*impl_->checked, estimator);
}

Value Program::evaluate(const Activation& activation, const Environment& environment,
                        std::int64_t* cost) const {
    detail::Evaluator evaluator(activation, environment);
    Value result = evaluator.run(*impl_->root);
    if (cost)
        *cost = evaluator.cost();
    return result;
}

const std::string& Program::source() const {
    return impl_->source;
}

}  // namespace numadra::cel
