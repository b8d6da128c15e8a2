// What the parsed tree needs checked that cel-go's checker (typecheck.cpp, the one type
// checker) does not decide. Typing is not done here: operand types, overloads, homogeneous
// literals and result types are typecheck.cpp's whenever Declarations::types is given, which
// every host environment in this tree gives (cluster/dracel's selectors and derived attributes,
// the conformance harness's checked tests). What remains, each for its reason:
// - Names against Declarations (undeclared references, undefined fields of declared objects,
//   namespaces, qualified names), before the typed checker: the evaluator walks the parsed
//   tree, so how a dotted name resolves is decided here and written into the tree; and these
//   are the first errors reported, with the messages hosts and tests pin.
// - Literal arguments: regex patterns, timestamp() and duration() strings, format strings with
//   a list literal. cel-go validates them after checking (its AST validators and the strings
//   extension's format validator), not in checker.go, so the port has no place for them.
// - deduceType(): the result type of a program compiled without typed declarations
//   (Program::resultType: tests and the fuzzer compile without any), and the argument types of
//   the format-string validation, which runs on the parsed tree with or without types.

#include <re2/re2.h>

#include "ast.hpp"
#include "functions.hpp"

namespace numadra::cel::detail {

bool isTypeName(std::string_view name) {
    return name == "int" || name == "uint" || name == "double" || name == "string" ||
           name == "bytes" || name == "bool" || name == "list" || name == "map" ||
           name == "null_type" || name == "type" || name == "optional_type";
}

bool isQualifiedTypeName(std::string_view name) {
    return name == "google.protobuf.Timestamp" || name == "google.protobuf.Duration";
}

namespace {

// Comprehension and cel.bind variables in scope, innermost first.
struct Locals {
    const Locals* parent;
    std::string_view name;
};

bool isLocal(const Locals* locals, std::string_view name) {
    for (; locals; locals = locals->parent)
        if (locals->name == name)
            return true;
    return false;
}

using Fields = std::optional<std::set<std::string>>;

class Validator {
  public:
    explicit Validator(const Declarations& declarations) : declarations_(declarations) {}

    std::optional<Error> run(Node& root) {
        check(root, nullptr);
        return error_;
    }

  private:
    const Fields* declared(std::string_view name) const {
        const auto it = declarations_.variables.find(name);
        return it == declarations_.variables.end() ? nullptr : &it->second;
    }

    void fail(const Node& node, const std::string& message) {
        if (!error_)
            error_ = Error{"line " + std::to_string(node.line) + ", column " +
                           std::to_string(node.column) + ": " + message};
    }

    // `node` selects field node.name of an expression that is the declared variable `of`.
    void checkField(const Node& node, const Fields* of) {
        if (of && of->has_value() && (*of)->count(node.name) == 0)
            fail(node, "undefined field '" + node.name + "'");
    }

    // Checks the subtree; returns the declaration when `node` names a declared variable, so
    // that a selection from it can be checked.
    const Fields* check(Node& node, const Locals* locals) {
        if (error_)
            return nullptr;
        switch (node.kind) {
            case NodeKind::Ident:
                return ident(node, locals);
            case NodeKind::Select:
                return select(node, locals);
            case NodeKind::Has:
                checkField(node, check(*node.children[0], locals));
                return nullptr;
            case NodeKind::Call:
                call(node, locals);
                return nullptr;
            case NodeKind::Comprehension:
            case NodeKind::Bind:
                scoped(node, locals);
                return nullptr;
            default:
                for (auto& child : node.children)
                    check(*child, locals);
                return nullptr;
        }
    }

    const Fields* ident(const Node& node, const Locals* locals) {
        if (!node.absolute && isLocal(locals, node.name))
            return nullptr;
        if (const Fields* variable = declared(node.name))
            return variable;
        if (!isTypeName(node.name))
            fail(node, "undeclared reference to '" + node.name + "'");
        return nullptr;
    }

    // A dotted chain a.b.c resolves to its longest declared prefix; the selections above it
    // are field selections, so they lose their qualified name (nothing to look up at
    // evaluation).
    const Fields* select(Node& node, const Locals* locals) {
        if (node.qualified.empty()) {
            checkField(node, check(*node.children[0], locals));
            return nullptr;
        }
        std::vector<Node*> chain;  // the Selects, outermost first
        Node* root = &node;
        while (root->kind == NodeKind::Select) {
            chain.push_back(root);
            root = root->children[0].get();
        }
        const bool local = !root->absolute && isLocal(locals, root->name);
        for (std::size_t i = 0; i < chain.size() && !local; ++i) {
            if (isQualifiedTypeName(chain[i]->qualified)) {
                unqualify(chain, i);
                return nullptr;
            }
            if (const Fields* variable = declared(chain[i]->qualified)) {
                if (i > 0)
                    checkField(*chain[i - 1], variable);
                unqualify(chain, i);
                return i == 0 ? variable : nullptr;
            }
        }
        unqualify(chain, chain.size());
        if (!local)
            checkField(*chain.back(), ident(*root, locals));
        return nullptr;
    }

    static void unqualify(const std::vector<Node*>& chain, std::size_t resolved) {
        for (std::size_t i = 0; i < resolved; ++i)
            chain[i]->qualified.clear();
    }

    // `ns.f(...)` with an undeclared single identifier `ns` is a namespaced function (cel.bind,
    // sets.contains, ...), not a reference to `ns`. Literal arguments are validated here
    // because cel-go validates them outside its checker (see the top of the file).
    void call(Node& node, const Locals* locals) {
        std::size_t first = 0;
        if (node.receiver) {
            const Node& target = *node.children[0];
            const bool ns = target.kind == NodeKind::Ident && !target.absolute &&
                            !isLocal(locals, target.name) && !declared(target.name) &&
                            !isTypeName(target.name);
            if (!ns)
                node.qualified.clear();  // a member call on a variable, never a namespace
            else if (declarations_.namespaces && !declarations_.namespaces->contains(target.name))
                fail(target, "undeclared reference to '" + target.name + "'");
            first = ns ? 1 : 0;
        }
        // A literal pattern the parser could not compile is refused now, as cel-go's regex
        // validator refuses it, not when a device is evaluated.
        if (node.builtin == Builtin::Matches && !node.regex && !node.children.empty()) {
            const Node& pattern = *node.children.back();
            if (pattern.kind == NodeKind::Literal && pattern.literal.is<std::string>())
                fail(pattern, "invalid matches argument");
        }
        if (node.receiver && node.children.size() >= 2 &&
            declarations_.regexMemberFunctions.contains(node.name))
            checkRegexLiteral(node, *node.children[1]);
        for (std::size_t i = first; i < node.children.size(); ++i)
            check(*node.children[i], locals);
        if (!error_ && node.builtin == Builtin::Format)
            checkFormatLiteral(node);
        if (!error_ && !node.receiver && node.children.size() == 1)
            checkLiteralArgument(node);
    }

    // cel-go's strings extension validates a literal format string with a list literal when it
    // compiles (a validator, not the checker): the clauses, the number of arguments, and each
    // argument's type as deduceType() knows it from the parsed tree (with or without typed
    // declarations, so that both judge format() alike).
    void checkFormatLiteral(const Node& call) {
        if (!call.receiver || call.children.size() != 2)
            return;
        const Node& format = *call.children[0];
        const Node& list = *call.children[1];
        if (format.kind != NodeKind::Literal || !format.literal.is<std::string>() ||
            list.kind != NodeKind::List)
            return;
        std::vector<const Node*> arguments;
        for (const auto& child : list.children)
            arguments.push_back(child.get());
        if (auto error = checkFormat(format.literal.as<std::string>(), arguments))
            fail(error->argument ? *error->argument : call, error->message);
    }

    // The host's literal checks (timestamp("..."), duration("...")): cel-go's literal
    // validators, run after its checker.
    void checkLiteralArgument(const Node& call) {
        const Node& argument = *call.children[0];
        if (argument.kind != NodeKind::Literal || !argument.literal.is<std::string>())
            return;
        const auto check = declarations_.literalArgumentChecks.find(call.name);
        if (check == declarations_.literalArgumentChecks.end())
            return;
        if (auto error = check->second(argument.literal.as<std::string>()))
            fail(argument, *error);
    }

    // The host's regex functions (find, findAll): Kubernetes' regex library validates a literal
    // pattern at compile time as cel-go does matches().
    void checkRegexLiteral(const Node& call, const Node& pattern) {
        if (pattern.kind != NodeKind::Literal || !pattern.literal.is<std::string>())
            return;
        re2::RE2::Options options;
        options.set_log_errors(false);
        const re2::RE2 regex(pattern.literal.as<std::string>(), options);
        if (!regex.ok())
            fail(pattern, "invalid " + call.name + " argument: " + regex.error());
    }

    // Comprehensions and cel.bind: the first child is evaluated outside the new variables.
    void scoped(Node& node, const Locals* locals) {
        check(*node.children[0], locals);
        const Locals first{locals, node.name};
        const Locals second{&first, node.name2};
        const Locals* inner = node.name2.empty() ? &first : &second;
        for (std::size_t i = 1; i < node.children.size(); ++i)
            check(*node.children[i], inner);
    }

    const Declarations& declarations_;
    std::optional<Error> error_;
};

// ---- deduceType: the result type without typed declarations ---------------------------------
// From literals, operators and built-in functions alone; what values decide is "dyn". Kept for
// what has no typed checker to ask (see the top of the file); a typed program's type is the
// checker's (Program::checkedType).

const std::string kDyn = "dyn";
const std::string kBool = "bool";
const std::string kInt = "int";
const std::string kUint = "uint";
const std::string kDouble = "double";
const std::string kString = "string";
const std::string kBytes = "bytes";
const std::string kList = "list";
const std::string kMap = "map";
const std::string kNull = "null_type";
const std::string kType = "type";

const std::string& literalType(const Value& value) {
    switch (value.v.index()) {
        case 0:
            return kNull;
        case 1:
            return kBool;
        case 2:
            return kInt;
        case 3:
            return kUint;
        case 4:
            return kDouble;
        case 5:
            return kString;
        case 6:
            return kBytes;
        default:
            return kDyn;
    }
}

const std::string& callType(const Node& node) {
    switch (node.builtin) {
        case Builtin::Size:
        case Builtin::Int:
        case Builtin::IndexOf:
        case Builtin::LastIndexOf:
            return kInt;
        case Builtin::Uint:
            return kUint;
        case Builtin::Double:
            return kDouble;
        case Builtin::String:
        case Builtin::LowerAscii:
        case Builtin::UpperAscii:
        case Builtin::Replace:
        case Builtin::Substring:
        case Builtin::Trim:
        case Builtin::Join:
        case Builtin::CharAt:
        case Builtin::Format:
            return kString;
        case Builtin::Bytes:
            return kBytes;
        case Builtin::Bool:
        case Builtin::Contains:
        case Builtin::StartsWith:
        case Builtin::EndsWith:
        case Builtin::Matches:
        case Builtin::HasValue:
            return kBool;
        case Builtin::Split:
            return kList;
        case Builtin::Type:
            return kType;
        default:
            return kDyn;
    }
}

// The operator's result when both operands have the type `operand`.
const std::string& arithmeticType(BinaryOp op, const std::string& operand) {
    const bool number = operand == kInt || operand == kUint || operand == kDouble;
    switch (op) {
        case BinaryOp::Add:
            return number || operand == kString || operand == kBytes || operand == kList ? operand
                                                                                         : kDyn;
        case BinaryOp::Mod:
            return operand == kInt || operand == kUint ? operand : kDyn;
        default:
            return number ? operand : kDyn;
    }
}

bool isArithmetic(BinaryOp op) {
    return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul ||
           op == BinaryOp::Div || op == BinaryOp::Mod;
}

const std::string& binaryType(const Node& node) {
    if (!isArithmetic(node.op))
        return kBool;  // comparisons, equality, `in`
    const std::string& left = deduceType(*node.children[0]);
    if (left != deduceType(*node.children[1]))
        return kDyn;
    return arithmeticType(node.op, left);
}

const std::string& comprehensionType(const Node& node) {
    switch (node.macro) {
        case Macro::All:
        case Macro::Exists:
        case Macro::ExistsOne:
            return kBool;
        case Macro::Map:
        case Macro::MapFilter:
        case Macro::Filter:
        case Macro::TransformList:
        case Macro::SortBy:
            return kList;
        case Macro::TransformMap:
        case Macro::TransformMapEntry:
            return kMap;
        default:
            return kDyn;
    }
}

}  // namespace

std::optional<Error> checkDeclarations(Node& root, const Declarations& declarations) {
    return Validator(declarations).run(root);
}

const std::string& deduceType(const Node& node) {
    switch (node.kind) {
        case NodeKind::Literal:
            return literalType(node.literal);
        case NodeKind::List:
            return kList;
        case NodeKind::Map:
            return kMap;
        case NodeKind::Not:
        case NodeKind::And:
        case NodeKind::Or:
        case NodeKind::Has:
            return kBool;
        case NodeKind::Negate: {
            const std::string& operand = deduceType(*node.children[0]);
            return operand == kInt || operand == kDouble ? operand : kDyn;
        }
        case NodeKind::Binary:
            return binaryType(node);
        case NodeKind::Conditional: {
            const std::string& type = deduceType(*node.children[1]);
            return type == deduceType(*node.children[2]) ? type : kDyn;
        }
        case NodeKind::Call:
            return callType(node);
        case NodeKind::Comprehension:
            return comprehensionType(node);
        case NodeKind::Bind:
            return deduceType(*node.children[1]);
        default:
            return kDyn;  // identifiers, selections, indexing: they depend on values
    }
}

}  // namespace numadra::cel::detail
