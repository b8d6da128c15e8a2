#pragma once
// The operators of the evaluator that need no evaluation state: arithmetic with CEL's overflow
// errors, comparison, `in`, indexing and field selection. Internal to eval.cpp.

#include <optional>

#include "ast.hpp"

namespace numadra::cel::detail {

// "integer overflow", as cel-go words it.
Value intOverflow();

// `a op b` for the binary operators other than && and || (which short-circuit in the
// evaluator); nullopt when no overload takes these operand types.
std::optional<Value> binary(BinaryOp op, const Value& a, const Value& b);

// container[key]; with `optional` (container[?key]) a missing key is optional.none().
Value indexValue(const Value& container, const Value& key, bool optional);

// Selecting node's field of a map-like value; `optional` as for indexValue.
Value fieldValue(const Value& operand, const Node& node, bool optional);

}  // namespace numadra::cel::detail
