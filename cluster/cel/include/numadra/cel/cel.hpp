#pragma once
// An in-house Common Expression Language interpreter covering what DRA device selectors and
// derived attributes use (no CEL library is packaged for Debian). Parse once, evaluate many:
// a Program is immutable and thread-safe; evaluation never throws for expected failures
// (errors are values, as CEL defines them) and stops at a cost limit.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "numadra/cel/checker.hpp"
#include "numadra/common/result.hpp"

namespace numadra::cel {

struct Value;
using List = std::vector<Value>;
// CEL map keys are int, uint, bool or string; kept in a deterministic order. Lookups treat
// numerically equal int and uint keys as the same key (heterogeneous equality).
using MapKey = std::variant<std::int64_t, std::uint64_t, bool, std::string>;
using Map = std::map<MapKey, Value>;

struct Null {
    bool operator==(const Null&) const = default;
};
struct Bytes {
    std::string data;
    bool operator==(const Bytes&) const = default;
};
// An evaluation error travelling as a value (CEL's `&&`/`||` may absorb it).
struct ErrorValue {
    std::string message;
    bool operator==(const ErrorValue&) const = default;
};
struct TypeValue {  // the value of `type(x)` and of type names such as `int`
    std::string name;
    bool operator==(const TypeValue&) const = default;
};
// Extension values the host defines (the DRA environment's semver and quantity): an opaque
// object with a type name and an equality; everything else (ordering, accessors) is provided by
// host functions, which receive the Opaque among their arguments. `x.f(...)` with an Opaque
// receiver dispatches to Environment::memberFunctions["f"]. CEL optional values
// (`optional.of(x)`, `m.?f`) reach host functions as an Opaque of type "optional_type".
class Opaque {
  public:
    virtual ~Opaque() = default;
    virtual std::string typeName() const = 0;
    // Used by `==`, `!=`, `in` and list/map equality; only called with the same typeName().
    virtual bool equals(const Opaque& other) const = 0;
    // For toString() (tests, error messages).
    virtual std::string debugString() const { return typeName() + "(...)"; }
    // cel-go's traits.Comparer, for the host types CEL orders (timestamps, durations): the sign
    // of this value against `other` (only called with the same typeName()), or nullopt when the
    // type has no order. sortBy() and the host's list functions order values through it.
    virtual std::optional<int> order(const Opaque& /*other*/) const { return std::nullopt; }
    // cel-go's traits.Zeroer, for optional.ofNonZeroValue(): true for the zero value of a type
    // that has one (a zero duration, the timestamp of Go's zero time.Time); a type without one
    // (an optional, a quantity, a semver) is never zero.
    virtual bool isZeroValue() const { return false; }
};

struct Value;

// A map-like host value (the DRA device's `attributes` and `capacity`, where an unknown domain
// reads as an empty map). Indexing `m[k]`, field selection `m.f`, `has(m.f)`, optional access
// `m[?k]` / `m.?f`, `k in m`, `size(m)`, comprehensions over `m` and equality go through these two
// functions instead of failing as they would for another Opaque.
class HostMap;

struct Value {
    using Storage = std::variant<Null, bool, std::int64_t, std::uint64_t, double, std::string,
                                 Bytes, std::shared_ptr<const List>, std::shared_ptr<const Map>,
                                 TypeValue, ErrorValue, std::shared_ptr<const Opaque>>;
    Storage v;

    Value() = default;
    template <class T>
    Value(T x) : v(std::move(x)) {}  // NOLINT(google-explicit-constructor)
    static Value list(List items) { return Value(std::make_shared<const List>(std::move(items))); }
    static Value map(Map entries) { return Value(std::make_shared<const Map>(std::move(entries))); }
    static Value bytes(std::string data) { return Value(Bytes{std::move(data)}); }
    static Value type(std::string name) { return Value(TypeValue{std::move(name)}); }
    static Value error(std::string message) { return Value(ErrorValue{std::move(message)}); }

    bool isError() const { return std::holds_alternative<ErrorValue>(v); }
    template <class T>
    bool is() const {
        return std::holds_alternative<T>(v);
    }
    template <class T>
    const T& as() const {
        return std::get<T>(v);
    }
    std::string typeName() const;  // "int", "string", "list", ... as CEL's type() names them
};

class HostMap : public Opaque {
  public:
    // The value for a key; nullopt makes `m[k]` a "no such key" error and `has()` false.
    virtual std::optional<Value> lookup(const MapKey& key) const = 0;
    // What `in`, size(), comprehensions and equality see.
    virtual const Map& entries() const = 0;
    std::string typeName() const override { return "map"; }
    bool equals(const Opaque& other) const override;
    std::string debugString() const override;
    bool isZeroValue() const override { return entries().empty(); }
};

// CEL equality (heterogeneous numeric equality: 1 == 1u == 1.0; lists/maps element-wise; NaN is
// unequal to everything). An ErrorValue equals another with the same message, so tests can
// compare results directly.
bool operator==(const Value& a, const Value& b);
// For tests and error messages: CEL-like literal text.
std::string toString(const Value& value);

// Variables of an evaluation: names, possibly dotted ("device" or "a.b.c"), bound to values. A
// dotted reference `a.b.c` resolves to the longest bound prefix, then selects the remaining
// fields, as CEL's qualified-name resolution does.
class Activation {
  public:
    void bind(std::string name, Value value) { values_[std::move(name)] = std::move(value); }
    const Value* find(std::string_view name) const;

  private:
    std::map<std::string, Value, std::less<>> values_;
};

// Host functions: global (`f(x)`, also qualified `ns.f(x)`) and member (`x.f(y)`) overloads,
// looked up by name; a function gets the evaluated arguments (the receiver first for member calls)
// and returns a Value (an ErrorValue for a failure). Arguments are never ErrorValues (CEL
// functions are strict). The standard library is tried first; when it has no overload for the
// argument types, the host function of the same name is called, so a host may extend names like
// `indexOf` to its own types. Operators have the CEL names `_+_`, `_<_`, ... and are consulted only
// when the built-in operator has no overload (e.g. for Opaque operands).
using Function = std::function<Value(const std::vector<Value>& args)>;
struct Environment {
    std::map<std::string, Function, std::less<>> globalFunctions;
    std::map<std::string, Function, std::less<>> memberFunctions;
    // By overload id: the functions of overloads whose result depends on the argument's static
    // type, not only on its value (sum() of an empty list(duration) is a duration), as cel-go's
    // planner calls the one overload the checker resolved. Used for a call the checker resolved
    // to exactly one overload listed in Declarations::staticOverloads; others go by name.
    std::map<std::string, Function, std::less<>> overloadFunctions;
    // Evaluation steps (each evaluated node and each comprehension iteration count one; string
    // functions add one per 16 bytes scanned); exceeding it aborts with an error value.
    std::int64_t costLimit = 1'000'000;
};

// What a compiled expression may reference, checked at compile time the way a CEL type checker
// reports them: an identifier that is neither declared, nor a comprehension or cel.bind variable,
// nor a type name is "undeclared reference to 'x'"; selecting a field a declared object lacks is
// "undefined field 'f'". A dotted name resolves to its longest declared prefix. Function names
// are not declared: in `ns.f(...)` a single undeclared identifier `ns` is taken as a namespace
// (optional.of, sets.contains, ...), a longer undeclared chain `a.b.f()` is a reference to `a`.
struct Declarations {
    // Variable name -> the fields it has when it is an object (nullopt: any field, e.g. a map).
    std::map<std::string, std::optional<std::set<std::string>>, std::less<>> variables;
    // The function namespaces the host provides (`sets`, `lists`, ...): `ns.f(...)` with any
    // other undeclared `ns` is "undeclared reference to 'ns'", as a type checker reports it.
    // nullopt: every undeclared single identifier may be a namespace.
    std::optional<std::set<std::string, std::less<>>> namespaces;
    // Host member functions whose first argument is a regular expression (`s.find(re)`): a
    // literal pattern that does not compile is refused at compile time, as for matches().
    std::set<std::string, std::less<>> regexMemberFunctions;
    // Global functions whose single string-literal argument is checked at compile time
    // (`timestamp("...")`): the check returns the error to report, or nullopt.
    std::map<std::string, std::function<std::optional<std::string>(const std::string&)>,
             std::less<>>
        literalArgumentChecks;
    // cel-go's declarations of every function, variable and object field: with them the
    // expression is type-checked as cel-go checks it (overloads resolved, so a call no overload
    // accepts is a compile error; list and map literals of one type) and its static cost can be
    // estimated (Program::estimateCost). Without them no types are judged at compile time: only
    // names and literal arguments are.
    std::shared_ptr<const TypeEnvironment> types;
    // Overload ids whose calls are evaluated by Environment::overloadFunctions when the checker
    // resolved a call to exactly that overload (needs `types`).
    std::set<std::string, std::less<>> staticOverloads;
};
struct CompileOptions {
    std::optional<Declarations> declarations;  // nullopt: no check, names resolve at evaluation
};

class Program {
  public:
    // Parses and expands the macros. An error's message starts with "line L, column C: " (both
    // 1-based, columns in characters) and quotes the offending text.
    static Result<Program> compile(std::string_view expression, const CompileOptions& options = {});
    // The result type: compiled with Declarations::types, the checker's (checkedType() by its
    // name, "dyn" for what values decide); without, deduced from the parsed tree alone: "bool",
    // "int", "uint", "double", "string", "bytes", "list", "map", "null_type", "type", or "dyn"
    // when it depends on values (a variable, an index, a host function, an optional).
    const std::string& resultType() const;
    // cel-go's static worst-case cost (checker.Cost) with the host's sizes and function costs;
    // nullopt unless compiled with Declarations::types.
    std::optional<CostEstimate> estimateCost(const CostEstimator& estimator) const;
    // The checker's result type; nullptr unless compiled with Declarations::types.
    TypePtr checkedType() const;
    // cel-go plans a type conversion (int, string, duration, ...) of a constant argument by
    // evaluating it once, so a conversion that fails is refused when the program is built:
    // the error of the first such conversion (bottom-up), or nullopt.
    std::optional<Error> checkConstantConversions(const Environment& environment) const;
    // The result (an ErrorValue when evaluation failed or exceeded the cost limit) and the cost
    // it took.
    Value evaluate(const Activation& activation, const Environment& environment,
                   std::int64_t* cost = nullptr) const;
    const std::string& source() const;

  private:
    static std::string resultTypeName(const CelType& type);
    struct Impl;
    explicit Program(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// A CEL optional value for host functions that return one (`l.first()`): optional.of(value),
// or optional.none() for nullopt.
Value optionalValue(std::optional<Value> value);

// The message of the error value returned when the cost limit is exceeded.
inline constexpr std::string_view kCostLimitExceeded =
    "operation cancelled: actual cost limit exceeded";

}  // namespace numadra::cel
