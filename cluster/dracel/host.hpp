#pragma once
// What the environment's host functions (environment.cpp, net.cpp, time.cpp) share: the
// interpreter's "no such overload" wording, argument accessors, and registering a function
// under a name another library may already use (string(), int(), the operators).

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numadra/cel/cel.hpp"

namespace numadra::dracel::detail {

using Args = std::vector<cel::Value>;

// The interpreter's wording for a call it cannot resolve.
inline cel::Value noSuchOverload(std::string_view function, const Args& args) {
    std::string message = "no such overload: " + std::string(function) + "(";
    for (std::size_t i = 0; i < args.size(); ++i)
        message += (i == 0 ? "" : ", ") + args[i].typeName();
    return cel::Value::error(message + ")");
}

inline const std::string* asString(const cel::Value& value) {
    return std::get_if<std::string>(&value.v);
}

// The host value of type T inside an Opaque, or null.
template <class T>
const T* asOpaque(const cel::Value& value) {
    const auto* opaque = std::get_if<std::shared_ptr<const cel::Opaque>>(&value.v);
    return opaque && *opaque ? dynamic_cast<const T*>(opaque->get()) : nullptr;
}

template <class T, class... Parts>
cel::Value opaqueValue(Parts&&... parts) {
    return cel::Value(std::shared_ptr<const cel::Opaque>(
        std::make_shared<const T>(std::forward<Parts>(parts)...)));
}

// Registers `function` under `name`; a function already there (another library's overloads
// of the same name) is called when this one has no overload for the arguments, so the order
// the libraries register in does not matter.
inline void chain(std::map<std::string, cel::Function, std::less<>>& functions,
                  const std::string& name, cel::Function function) {
    const auto existing = functions.find(name);
    cel::Function earlier = existing == functions.end() ? cel::Function{} : existing->second;
    functions[name] = [function = std::move(function),
                       earlier = std::move(earlier)](const Args& args) -> cel::Value {
        cel::Value result = function(args);
        if (earlier && result.isError() &&
            result.as<cel::ErrorValue>().message.rfind("no such overload", 0) == 0)
            return earlier(args);
        return result;
    };
}

}  // namespace numadra::dracel::detail
