// The tree-walking evaluator. All state of one evaluation lives in an Evaluator on the caller's
// stack; the tree is shared and read-only, which is what makes a Program thread-safe.

#include <cmath>
#include <limits>

#include "ast.hpp"
#include "functions.hpp"

namespace numadra::cel {

struct Program::Impl {
    std::string source;
    detail::NodePtr root;
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

bool isTypeName(std::string_view name) {
    return name == "int" || name == "uint" || name == "double" || name == "string" ||
           name == "bytes" || name == "bool" || name == "list" || name == "map" ||
           name == "null_type" || name == "type";
}

const Value kTrue{true};
const Value kFalse{false};

Value intOverflow() {
    return Value::error("integer overflow");
}
Value uintOverflow() {
    return Value::error("unsigned integer overflow");
}

std::optional<Value> intArithmetic(BinaryOp op, std::int64_t a, std::int64_t b) {
    std::int64_t r = 0;
    switch (op) {
        case BinaryOp::Add:
            return __builtin_add_overflow(a, b, &r) ? intOverflow() : Value(r);
        case BinaryOp::Sub:
            return __builtin_sub_overflow(a, b, &r) ? intOverflow() : Value(r);
        case BinaryOp::Mul:
            return __builtin_mul_overflow(a, b, &r) ? intOverflow() : Value(r);
        case BinaryOp::Div:
            if (b == 0)
                return Value::error("division by zero");
            if (a == std::numeric_limits<std::int64_t>::min() && b == -1)
                return intOverflow();
            return Value(a / b);
        case BinaryOp::Mod:
            if (b == 0)
                return Value::error("modulus by zero");
            if (a == std::numeric_limits<std::int64_t>::min() && b == -1)
                return intOverflow();
            return Value(a % b);
        default:
            return std::nullopt;
    }
}

std::optional<Value> uintArithmetic(BinaryOp op, std::uint64_t a, std::uint64_t b) {
    std::uint64_t r = 0;
    switch (op) {
        case BinaryOp::Add:
            return __builtin_add_overflow(a, b, &r) ? uintOverflow() : Value(r);
        case BinaryOp::Sub:
            return __builtin_sub_overflow(a, b, &r) ? uintOverflow() : Value(r);
        case BinaryOp::Mul:
            return __builtin_mul_overflow(a, b, &r) ? uintOverflow() : Value(r);
        case BinaryOp::Div:
            if (b == 0)
                return Value::error("division by zero");
            return Value(a / b);
        case BinaryOp::Mod:
            if (b == 0)
                return Value::error("modulus by zero");
            return Value(a % b);
        default:
            return std::nullopt;
    }
}

std::optional<Value> doubleArithmetic(BinaryOp op, double a, double b) {
    switch (op) {
        case BinaryOp::Add:
            return Value(a + b);
        case BinaryOp::Sub:
            return Value(a - b);
        case BinaryOp::Mul:
            return Value(a * b);
        case BinaryOp::Div:
            return Value(a / b);  // IEEE: x/0 is ±Inf or NaN, not an error
        default:
            return std::nullopt;
    }
}

// Arithmetic needs both operands of one type: CEL converts no numbers implicitly here.
std::optional<Value> arithmetic(BinaryOp op, const Value& a, const Value& b) {
    if (a.v.index() != b.v.index())
        return std::nullopt;
    if (const auto* x = std::get_if<std::int64_t>(&a.v))
        return intArithmetic(op, *x, b.as<std::int64_t>());
    if (const auto* x = std::get_if<std::uint64_t>(&a.v))
        return uintArithmetic(op, *x, b.as<std::uint64_t>());
    if (const auto* x = std::get_if<double>(&a.v))
        return doubleArithmetic(op, *x, b.as<double>());
    if (op != BinaryOp::Add)
        return std::nullopt;
    if (const auto* x = std::get_if<std::string>(&a.v))
        return Value(*x + b.as<std::string>());
    if (const auto* x = std::get_if<Bytes>(&a.v))
        return Value::bytes(x->data + b.as<Bytes>().data);
    if (const auto* x = std::get_if<std::shared_ptr<const List>>(&a.v)) {
        const auto& y = b.as<std::shared_ptr<const List>>();
        if (y->empty())
            return a;
        if ((*x)->empty())
            return b;
        List joined;
        joined.reserve((*x)->size() + y->size());
        joined.insert(joined.end(), (*x)->begin(), (*x)->end());
        joined.insert(joined.end(), y->begin(), y->end());
        return Value::list(std::move(joined));
    }
    return std::nullopt;
}

std::optional<Value> contains(const Value& item, const Value& container) {
    if (const auto* list = std::get_if<std::shared_ptr<const List>>(&container.v)) {
        for (const Value& element : **list)
            if (celEquals(item, element))
                return kTrue;
        return kFalse;
    }
    if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&container.v)) {
        if (!toMapKey(item) && !item.is<double>())
            return std::nullopt;
        return Value(mapLookup(**map, item) != nullptr);
    }
    return std::nullopt;
}

std::optional<Value> binary(BinaryOp op, const Value& a, const Value& b) {
    switch (op) {
        case BinaryOp::Eq:
            return Value(celEquals(a, b));
        case BinaryOp::NotEq:
            return Value(!celEquals(a, b));
        case BinaryOp::In:
            return contains(a, b);
        case BinaryOp::Less:
        case BinaryOp::LessEq:
        case BinaryOp::Greater:
        case BinaryOp::GreaterEq: {
            const auto order = compareValues(a, b);
            if (!order) {
                // NaN compares false with every number; other pairs have no ordering overload.
                const bool nan = (a.is<double>() && std::isnan(a.as<double>())) ||
                                 (b.is<double>() && std::isnan(b.as<double>()));
                const auto numeric = [](const Value& v) {
                    return v.is<std::int64_t>() || v.is<std::uint64_t>() || v.is<double>();
                };
                if (nan && numeric(a) && numeric(b))
                    return kFalse;
                return std::nullopt;
            }
            const int c = *order;
            return Value(op == BinaryOp::Less      ? c < 0
                         : op == BinaryOp::LessEq  ? c <= 0
                         : op == BinaryOp::Greater ? c > 0
                                                   : c >= 0);
        }
        default:
            return arithmetic(op, a, b);
    }
}

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

    static Value field(const Value& operand, const std::string& name) {
        if (operand.isError())
            return operand;
        if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&operand.v)) {
            if (const Value* found = mapLookup(**map, Value(name)))
                return *found;
            return Value::error("no such key: " + name);
        }
        return Value::error("type '" + operand.typeName() + "' does not support field selection");
    }

    Value select(const Node& node, const Scope* scope) {
        // Qualified-name resolution: the longest bound dotted prefix wins.
        if (!node.qualified.empty() && !isLocal(node, scope))
            if (const Value* bound = activation_.find(node.qualified))
                return *bound;
        return field(eval(*node.children[0], scope), node.name);
    }

    Value has(const Node& node, const Scope* scope) {
        Value operand = eval(*node.children[0], scope);
        if (operand.isError())
            return operand;
        if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&operand.v))
            return Value(mapLookup(**map, Value(node.name)) != nullptr);
        return Value::error("invalid type for has(): " + operand.typeName());
    }

    Value index(const Node& node, const Scope* scope) {
        Value container = eval(*node.children[0], scope);
        if (container.isError())
            return container;
        Value key = eval(*node.children[1], scope);
        if (key.isError())
            return key;
        if (const auto* list = std::get_if<std::shared_ptr<const List>>(&container.v)) {
            std::optional<std::int64_t> i;
            if (const auto* x = std::get_if<std::int64_t>(&key.v))
                i = *x;
            else if (const auto* u = std::get_if<std::uint64_t>(&key.v))
                i = *u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                        ? std::numeric_limits<std::int64_t>::max()
                        : static_cast<std::int64_t>(*u);
            else if (const auto* d = std::get_if<double>(&key.v)) {
                if (std::trunc(*d) != *d || !(std::fabs(*d) < 9.2e18))
                    return Value::error("unsupported index value " + formatDouble(*d));
                i = static_cast<std::int64_t>(*d);
            } else {
                return noSuchOverload("_[_]", {container, key});
            }
            if (*i < 0 || *i >= static_cast<std::int64_t>((*list)->size()))
                return Value::error("index out of bounds: " + std::to_string(*i));
            return (**list)[static_cast<std::size_t>(*i)];
        }
        if (const auto* map = std::get_if<std::shared_ptr<const Map>>(&container.v)) {
            if (const Value* found = mapLookup(**map, key))
                return *found;
            if (!toMapKey(key) && !key.is<double>())
                return Value::error("unsupported key type: " + key.typeName());
            const auto* text = std::get_if<std::string>(&key.v);
            return Value::error("no such key: " + (text ? *text : toString(key)));
        }
        return noSuchOverload("_[_]", {container, key});
    }

    Value callHost(const std::map<std::string, Function, std::less<>>& functions,
                   std::string_view name, const std::vector<Value>& args) {
        const auto it = functions.find(name);
        if (it == functions.end())
            return noSuchOverload(name, args);
        return it->second(args);
    }

    Value call(const Node& node, const Scope* scope) {
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
        if (qualifiedGlobal)
            return callHost(environment_.globalFunctions, node.qualified, args);
        if (node.builtin != Builtin::None) {
            std::int64_t scanned = 0;
            for (const Value& arg : args) {
                if (const auto* s = std::get_if<std::string>(&arg.v))
                    scanned += static_cast<std::int64_t>(s->size());
            }
            if (!charge(scanned / 16))
                return aborted();
            if (auto result = callBuiltin(node, args))
                return std::move(*result);
        }
        // A receiver that is an Opaque, or argument types the standard library does not cover.
        return callHost(node.receiver ? environment_.memberFunctions : environment_.globalFunctions,
                        node.name, args);
    }

    Value list(const Node& node, const Scope* scope) {
        List items;
        items.reserve(node.children.size());
        for (const auto& child : node.children) {
            Value item = eval(*child, scope);
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
        std::vector<Value> keys;  // a map iterates over its keys
        const List* items = nullptr;
        if (const auto* l = std::get_if<std::shared_ptr<const List>>(&range.v)) {
            items = l->get();
        } else if (const auto* m = std::get_if<std::shared_ptr<const Map>>(&range.v)) {
            keys.reserve((*m)->size());
            for (const auto& entry : **m)
                keys.push_back(std::visit([](const auto& k) { return Value(k); }, entry.first));
            items = &keys;
        } else {
            return Value::error("expected iterable type, got " + range.typeName());
        }

        std::optional<Value> pending;  // all/exists: an error that a later element may absorb
        std::int64_t count = 0;
        List results;
        for (const Value& item : *items) {
            if (!charge(1))
                return aborted();
            const Scope inner{scope, node.name, &item};
            Value step = eval(*node.children[1], &inner);
            if (aborted_)
                return step;
            const auto* decided = std::get_if<bool>(&step.v);
            switch (node.macro) {
                case Macro::All:
                case Macro::Exists: {
                    const bool deciding = node.macro == Macro::Exists;
                    if (decided && *decided == deciding)
                        return Value(deciding);
                    if (!decided && !pending)
                        pending = step.isError()
                                      ? step
                                      : noSuchOverload(deciding ? "_||_" : "_&&_", {step});
                    break;
                }
                case Macro::ExistsOne:
                    if (!decided)
                        return step.isError() ? step : noSuchOverload("exists_one", {step});
                    count += *decided ? 1 : 0;
                    break;
                case Macro::Map:
                    if (step.isError())
                        return step;
                    results.push_back(std::move(step));
                    break;
                case Macro::MapFilter:
                case Macro::Filter: {
                    if (!decided)
                        return step.isError() ? step : noSuchOverload("filter", {step});
                    if (!*decided)
                        break;
                    if (node.macro == Macro::Filter) {
                        results.push_back(item);
                        break;
                    }
                    Value mapped = eval(*node.children[2], &inner);
                    if (mapped.isError())
                        return mapped;
                    results.push_back(std::move(mapped));
                    break;
                }
            }
        }
        switch (node.macro) {
            case Macro::All:
                return pending ? *pending : kTrue;
            case Macro::Exists:
                return pending ? *pending : kFalse;
            case Macro::ExistsOne:
                return Value(count == 1);
            default:
                return Value::list(std::move(results));
        }
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

Result<Program> Program::compile(std::string_view expression) {
    auto root = detail::parse(expression);
    if (!root)
        return root.error();
    auto impl = std::make_shared<Impl>();
    impl->source = std::string(expression);
    impl->root = std::move(*root);
    return Program(std::move(impl));
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
