#pragma once
// The parsed form of a CEL expression. Built once by the parser, never modified afterwards, so
// one tree may be evaluated from many threads at once.

#include <re2/re2.h>

#include <memory>
#include <string>
#include <vector>

#include "numadra/cel/cel.hpp"

namespace numadra::cel::detail {

enum class NodeKind {
    Literal,        // literal
    Ident,          // name
    Select,         // children[0].name
    Has,            // has(children[0].name): a Select whose presence is tested
    Index,          // children[0][children[1]]
    Call,           // name(children...) or, when receiver, children[0].name(children[1..])
    List,           // [children...]
    Map,            // {children[0]: children[1], ...}
    Not,            // !children[0]
    Negate,         // -children[0]
    Binary,         // children[0] op children[1]
    And,            // children[0] && children[1]
    Or,             // children[0] || children[1]
    Conditional,    // children[0] ? children[1] : children[2]
    Comprehension,  // children[0].macro(iterVar, children[1] [, children[2]])
    Bind,           // cel.bind(iterVar, children[0], children[1])
};

enum class BinaryOp { Add, Sub, Mul, Div, Mod, Less, LessEq, Greater, GreaterEq, Eq, NotEq, In };

enum class Macro { All, Exists, ExistsOne, Map, MapFilter, Filter };

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
};

struct Node {
    NodeKind kind = NodeKind::Literal;
    int line = 1;
    int column = 1;
    Value literal;
    std::string name;       // identifier, field, function name or comprehension variable
    std::string qualified;  // Ident/Select chains: the dotted name ("a.b.c"); Call: "ns.f"
    std::string rootName;   // Ident/Select chains and qualified calls: the first identifier
    BinaryOp op = BinaryOp::Add;
    Macro macro = Macro::All;
    Builtin builtin = Builtin::None;
    bool receiver = false;  // Call: receiver-style `x.f(...)`
    bool absolute = false;  // Ident: written with a leading '.', skips comprehension variables
    int height = 1;         // of the subtree; bounds the evaluator's recursion
    // matches() with a literal pattern: compiled once at parse time (RE2 is thread-safe).
    std::shared_ptr<const re2::RE2> regex;
    std::vector<std::unique_ptr<Node>> children;
};

using NodePtr = std::unique_ptr<Node>;

// Parses `source` into a tree (macros expanded). Errors: "line L, column C: message".
Result<NodePtr> parse(std::string_view source);

// Function name → Builtin (None for host functions).
Builtin lookupBuiltin(std::string_view name);

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

// UTF-8 helpers: strings are UTF-8 and CEL indexes them by code point.
std::vector<std::size_t> codePointOffsets(std::string_view text);  // each start, then size()
std::size_t codePointCount(std::string_view text);
bool validUtf8(std::string_view text);
void appendUtf8(std::string& out, char32_t cp);

}  // namespace numadra::cel::detail
