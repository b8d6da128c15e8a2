#pragma once
// The built-in functions (size, conversions, type, and the cel-go strings extension version 2).

#include <optional>
#include <vector>

#include "ast.hpp"

namespace numadra::cel::detail {

// Calls `node.builtin` with evaluated, non-error arguments (the receiver first for member
// calls). nullopt means "no overload for these argument types", so the caller may try a host
// function of the same name.
std::optional<Value> callBuiltin(const Node& node, const std::vector<Value>& args);

Value noSuchOverload(std::string_view function, const std::vector<Value>& args);

}  // namespace numadra::cel::detail
