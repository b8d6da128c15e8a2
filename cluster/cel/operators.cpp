// The evaluator's stateless operators (operators.hpp): CEL's int, uint and double arithmetic
// with its overflow and division errors, string/bytes/list concatenation, comparisons, `in`,
// indexing and field selection.

#include "operators.hpp"

#include <cmath>
#include <limits>

#include "functions.hpp"

namespace numadra::cel::detail {

namespace {

const Value kTrue{true};
const Value kFalse{false};

}  // namespace

Value intOverflow() {
    return Value::error("integer overflow");
}

namespace {

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
    // A HostMap's `in` sees its entries only, not what lookup() would make up.
    if (const Map* map = mapEntries(container)) {
        if (!toMapKey(item) && !item.is<double>())
            return std::nullopt;
        return Value(mapLookup(*map, item) != nullptr);
    }
    return std::nullopt;
}

}  // namespace

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

namespace {

Value noSuchKey(const Value& key) {
    const auto* text = std::get_if<std::string>(&key.v);
    return Value::error("no such key: " + (text ? *text : toString(key)));
}

Value noFieldSelection(const Value& operand) {
    return Value::error("type '" + operand.typeName() + "' does not support field selection");
}

// A list position from an index value (int, uint or integral double), or the error to return.
std::optional<std::int64_t> listPosition(const Value& key, Value& error) {
    if (const auto* x = std::get_if<std::int64_t>(&key.v))
        return *x;
    if (const auto* u = std::get_if<std::uint64_t>(&key.v))
        return *u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())
                   ? std::numeric_limits<std::int64_t>::max()
                   : static_cast<std::int64_t>(*u);
    if (const auto* d = std::get_if<double>(&key.v)) {
        if (std::trunc(*d) != *d || !(std::fabs(*d) < 9.2e18)) {
            error = Value::error("unsupported index value " + formatDouble(*d));
            return std::nullopt;
        }
        return static_cast<std::int64_t>(*d);
    }
    error = Value();  // no overload
    return std::nullopt;
}

}  // namespace

// `container[key]` on a list or map-like value; `optional` gives optional.of / optional.none
// instead of a value / an error for a missing key or position.
Value indexValue(const Value& container, const Value& key, bool optional) {
    if (const auto* list = std::get_if<std::shared_ptr<const List>>(&container.v)) {
        Value error;
        const auto i = listPosition(key, error);
        if (!i)
            return error.isError() ? error : noSuchOverload("_[_]", {container, key});
        if (*i >= 0 && *i < static_cast<std::int64_t>((*list)->size())) {
            const Value& item = (**list)[static_cast<std::size_t>(*i)];
            return optional ? makeOptional(item) : item;
        }
        return optional ? noneOptional()
                        : Value::error("index out of bounds: " + std::to_string(*i));
    }
    if (!mapEntries(container))
        return noSuchOverload("_[_]", {container, key});
    bool unsupported = false;
    auto found = lookupKey(container, key, &unsupported);
    if (found)
        return optional ? makeOptional(std::move(*found)) : std::move(*found);
    if (unsupported)
        return Value::error("unsupported key type: " + key.typeName());
    return optional ? noneOptional() : noSuchKey(key);
}

// Selecting `field` of a map-like value; `optional` as for indexValue.
Value fieldValue(const Value& operand, const Node& node, bool optional) {
    if (!mapEntries(operand))
        return noFieldSelection(operand);
    auto found = lookupField(operand, node.fieldKey);
    if (optional)
        return optionalOf(std::move(found));
    return found ? std::move(*found) : Value::error("no such key: " + node.name);
}

}  // namespace numadra::cel::detail
