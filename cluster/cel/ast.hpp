#pragma once
// The parsed form of a CEL expression. Built once by the parser, never modified afterwards, so
// one tree may be evaluated from many threads at once.

#include <re2/re2.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "numadra/cel/cel.hpp"

namespace numadra::cel::detail {

enum class NodeKind {
    Literal,      // literal
    Ident,        // name
    Select,       // children[0].name, or children[0].?name when `optional`
    Has,          // has(children[0].name): a Select whose presence is tested
    Index,        // children[0][children[1]], or children[0][?children[1]] when `optional`
    Call,         // name(children...) or, when receiver, children[0].name(children[1..])
    List,         // [children...]; `optionalEntries[i]`: written `?children[i]`
    Map,          // {children[0]: children[1], ...}; `optionalEntries[i]`: entry i is `?k: v`
    Not,          // !children[0]
    Negate,       // -children[0]
    Binary,       // children[0] op children[1]
    And,          // children[0] && children[1]
    Or,           // children[0] || children[1]
    Conditional,  // children[0] ? children[1] : children[2]
    // children[0].macro(name [, name2], children[1] [, children[2]]); two-variable forms
    // bind name to the index (list) or key (map) and name2 to the element or value.
    Comprehension,
    Bind,  // cel.bind(iterVar, children[0], children[1])
};

enum class BinaryOp { Add, Sub, Mul, Div, Mod, Less, LessEq, Greater, GreaterEq, Eq, NotEq, In };

// Map/MapFilter/Filter are the one-variable macros; the transforms take two variables and an
// optional filter (children[1] filter, children[2] transform when there are three children).
// OptMap/OptFlatMap bind `name` to an optional's value, not an element.
enum class Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    MapFilter,
    Filter,
    TransformList,
    TransformMap,
    TransformMapEntry,
    OptMap,
    OptFlatMap,
    SortBy,  // Lists v3: list.sortBy(x, key), the list ordered by each element's key
};

// Built-in functions, resolved by name at parse time so evaluation does not compare strings.
enum class Builtin {
    None,
    Size,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Bool,
    Dyn,
    Type,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
    LowerAscii,
    UpperAscii,
    Split,
    Replace,
    Substring,
    IndexOf,
    LastIndexOf,
    Join,
    Trim,
    CharAt,
    Format,  // string.format(list), cel-go's strings extension version 2 (format.cpp)
    // Optional types: receiver functions and the optional.* constructors.
    HasValue,
    OptValue,
    OrValue,
    Or,
    OptionalOf,
    OptionalOfNonZero,
    OptionalNone,
};

struct Node {
    NodeKind kind = NodeKind::Literal;
    int line = 1;
    int column = 1;
    Value literal;
    std::string name;       // identifier, field, function name or comprehension variable
    std::string name2;      // two-variable comprehensions: the element / value variable
    MapKey fieldKey;        // Select/Has: `name` as a map key, built once for lookups
    std::string qualified;  // Ident/Select chains: the dotted name ("a.b.c"); Call: "ns.f"
    std::string rootName;   // Ident/Select chains and qualified calls: the first identifier
    std::string overload;   // Call: the one overload the checker resolved, when it is static
    BinaryOp op = BinaryOp::Add;
    Macro macro = Macro::All;
    Builtin builtin = Builtin::None;
    bool receiver = false;  // Call: receiver-style `x.f(...)`
    bool absolute = false;  // Ident: written with a leading '.', skips comprehension variables
    bool optional = false;  // Select/Index: `.?name` / `[?key]`, the result is an optional
    std::vector<bool> optionalEntries;  // List/Map: which entries were written with `?`
    int height = 1;                     // of the subtree; bounds the evaluator's recursion
    // matches() with a literal pattern: compiled once at parse time (RE2 is thread-safe).
    std::shared_ptr<const re2::RE2> regex;
    std::vector<std::unique_ptr<Node>> children;
};

using NodePtr = std::unique_ptr<Node>;

// Parses `source` into a tree (macros expanded). Errors: "line L, column C: message".
Result<NodePtr> parse(std::string_view source);

// Function name → Builtin (None for host functions). The optional constructors are named
// "optional.of", "optional.ofNonZeroValue" and "optional.none".
Builtin lookupBuiltin(std::string_view name);

// Names that evaluate to a type when no variable has them: int, uint, ..., optional_type.
bool isTypeName(std::string_view name);
// Dotted names that evaluate to a type: google.protobuf.Timestamp and google.protobuf.Duration,
// the types of timestamp() and duration() values (`type(t) == google.protobuf.Timestamp`).
bool isQualifiedTypeName(std::string_view name);

// Compile-time checks against declarations (see Declarations in cel.hpp) that the type checker
// (checked.hpp) does not make: names, and literal arguments (regex patterns, format strings, the
// host's literal checks). With declarations the resolution of qualified names is decided here,
// so the tree is adjusted: a Select or call above the resolved name no longer carries a
// qualified name to look up at evaluation.
std::optional<Error> checkDeclarations(Node& root, const Declarations& declarations);
// The result type deduced from the parsed tree alone, without variable types: Program::resultType
// of a program compiled without Declarations::types, and the format-string validation.
const std::string& deduceType(const Node& node);

// Shared by the evaluator and the standard library.
const char* binaryOpName(BinaryOp op);  // CEL's internal name: "_+_", "_<_", "@in", ...
// Ordering of two values: -1/0/1, or nullopt when they are unordered (NaN) or of types CEL does
// not order (the caller reports "no such overload").
std::optional<int> compareValues(const Value& a, const Value& b);
bool celEquals(const Value& a, const Value& b);
std::string formatDouble(double value);  // like Go's %g, as cel-go's string(double)
// A map key from a value: int, uint, bool and string are keys; integral doubles look up as ints.
std::optional<MapKey> toMapKey(const Value& value);
const Value* mapLookup(const Map& map, const Value& key);
bool mapsEqual(const Map& a, const Map& b);
Value keyValue(const MapKey& key);

// The map-like values: a Map or a HostMap, seen through its entries (nullptr otherwise).
const HostMap* asHostMap(const Value& value);
const Map* mapEntries(const Value& value);
// A key lookup on a Map or HostMap with CEL's numeric key equivalence; nullopt when absent.
// `unsupported` is set when the key's type cannot be a map key.
std::optional<Value> lookupKey(const Value& map, const Value& key, bool* unsupported = nullptr);
std::optional<Value> lookupField(const Value& map, const MapKey& key);

// CEL optional values (optional.of(x), optional.none()): an Opaque of type "optional_type".
class OptionalValue : public Opaque {
  public:
    explicit OptionalValue(std::optional<Value> value) : value_(std::move(value)) {}
    std::string typeName() const override { return "optional_type"; }
    bool equals(const Opaque& other) const override;
    std::string debugString() const override;
    const std::optional<Value>& value() const { return value_; }

  private:
    std::optional<Value> value_;
};
Value makeOptional(Value value);
Value noneOptional();  // shared, so optional.none() does not allocate
Value optionalOf(std::optional<Value> value);
const OptionalValue* asOptional(const Value& value);
// CEL's zero values (null, false, 0, "", empty list/map, ...), for optional.ofNonZeroValue.
bool isZeroValue(const Value& value);

// UTF-8 helpers: strings are UTF-8 and CEL indexes them by code point.
std::vector<std::size_t> codePointOffsets(std::string_view text);  // each start, then size()
std::size_t codePointCount(std::string_view text);
bool validUtf8(std::string_view text);
void appendUtf8(std::string& out, char32_t cp);

}  // namespace numadra::cel::detail
