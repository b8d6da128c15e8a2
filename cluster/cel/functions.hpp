#pragma once
// The built-in functions (size, conversions, type, and the cel-go strings extension version 2).

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"

namespace numadra::cel::detail {

// Calls `node.builtin` with evaluated, non-error arguments (the receiver first for member
// calls). nullopt means "no overload for these argument types", so the caller may try a host
// function of the same name.
std::optional<Value> callBuiltin(const Node& node, const std::vector<Value>& args);

Value noSuchOverload(std::string_view function, const std::vector<Value>& args);

// The text of a host value format("%s") prints (timestamps and durations: what the host's
// string() gives), or nullopt.
using HostText = std::function<std::optional<std::string>(const Value&)>;

// `format.format(list)` (format.cpp): nullopt unless the arguments are a string and a list.
// The output stops at maxOutput bytes with the cost-limit error, as the evaluator charges it.
std::optional<Value> formatString(const std::vector<Value>& args, const HostText& hostText,
                                  std::size_t maxOutput);

// cel-go's compile-time validation of a literal format string with a list literal: the error
// and the argument it concerns (nullptr: the call itself).
struct FormatCheckError {
    std::string message;
    const Node* argument;
};
std::optional<FormatCheckError> checkFormat(std::string_view text,
                                            const std::vector<const Node*>& arguments);

}  // namespace numadra::cel::detail
