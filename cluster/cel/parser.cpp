// Recursive-descent parser for the CEL grammar (cel-spec langdef.md) over lexer.hpp's tokens,
// expanding the macros into dedicated nodes as it goes.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "ast.hpp"
#include "lexer.hpp"

namespace numadra::cel::detail {

namespace {

// cel-go's default parser recursion limit; deeper input is rejected instead of risking the stack.
constexpr int kMaxNesting = 250;
// Left-associative operator chains do not recurse in the parser but do in the evaluator.
constexpr int kMaxHeight = 500;

// Identifiers the CEL grammar reserves: they may not name variables or functions.
bool reserved(std::string_view name) {
    static constexpr std::array<std::string_view, 17> kReserved{
        "as",  "break", "const",   "continue",  "else",   "for", "function", "if",   "import",
        "let", "loop",  "package", "namespace", "return", "var", "void",     "while"};
    return std::find(kReserved.begin(), kReserved.end(), name) != kReserved.end();
}

class Parser {
  public:
    explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

    Result<NodePtr> run() {
        NodePtr root = expr();
        if (!error_ && peekTok().kind != Tok::End)
            fail(peekTok(), "unexpected " + describe(peekTok()));
        if (error_)
            return *error_;
        return root;
    }

  private:
    const Token& peekTok(std::size_t ahead = 0) const {
        return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
    }
    const Token& take() {
        const Token& token = tokens_[pos_];
        if (pos_ + 1 < tokens_.size())
            ++pos_;
        return token;
    }
    bool accept(Tok kind) {
        if (peekTok().kind != kind)
            return false;
        take();
        return true;
    }
    NodePtr fail(const Token& token, const std::string& message) {
        if (!error_)
            error_ = positioned(token.line, token.column, message);
        return nullptr;
    }
    bool expect(Tok kind, const char* what) {
        if (accept(kind))
            return true;
        fail(peekTok(), std::string("expected ") + what + ", found " + describe(peekTok()));
        return false;
    }

    NodePtr make(NodeKind kind, const Token& at) {
        auto node = std::make_unique<Node>();
        node->kind = kind;
        node->line = at.line;
        node->column = at.column;
        return node;
    }
    // Adds a child, keeping the height bound.
    bool attach(Node& parent, NodePtr child, const Token& at) {
        if (!child)
            return false;
        parent.height = std::max(parent.height, child->height + 1);
        parent.children.push_back(std::move(child));
        if (parent.height > kMaxHeight) {
            fail(at, "expression nested too deeply");
            return false;
        }
        return true;
    }

    // Expr = ConditionalOr ["?" ConditionalOr ":" Expr]
    NodePtr expr() {
        if (++depth_ > kMaxNesting)
            return fail(peekTok(), "expression nested too deeply at " + describe(peekTok()));
        const Token start = peekTok();
        NodePtr condition = logical(Tok::Or);
        if (!condition || peekTok().kind != Tok::Question) {
            --depth_;
            return condition;
        }
        const Token question = take();
        auto node = make(NodeKind::Conditional, question);
        if (!attach(*node, std::move(condition), start) ||
            !attach(*node, logical(Tok::Or), start) || !expect(Tok::Colon, "':'") ||
            !attach(*node, expr(), start))
            return nullptr;
        --depth_;
        return node;
    }

    // ConditionalOr / ConditionalAnd: the operands are combined into a balanced tree, as cel-go
    // does, so long chains do not make deep trees.
    NodePtr logical(Tok op) {
        std::vector<NodePtr> operands;
        std::vector<Token> ops;
        operands.push_back(op == Tok::Or ? logical(Tok::And) : relation());
        if (!operands.back())
            return nullptr;
        while (peekTok().kind == op) {
            ops.push_back(take());
            operands.push_back(op == Tok::Or ? logical(Tok::And) : relation());
            if (!operands.back())
                return nullptr;
        }
        return balance(operands, ops, 0, operands.size(),
                       op == Tok::Or ? NodeKind::Or : NodeKind::And);
    }
    NodePtr balance(std::vector<NodePtr>& operands, const std::vector<Token>& ops, std::size_t lo,
                    std::size_t hi, NodeKind kind) {
        if (hi - lo == 1)
            return std::move(operands[lo]);
        const std::size_t mid = (lo + hi) / 2;
        auto node = make(kind, ops[mid - 1]);
        if (!attach(*node, balance(operands, ops, lo, mid, kind), ops[mid - 1]) ||
            !attach(*node, balance(operands, ops, mid, hi, kind), ops[mid - 1]))
            return nullptr;
        return node;
    }

    NodePtr binary(BinaryOp op, const Token& at, NodePtr left, NodePtr right) {
        auto node = make(NodeKind::Binary, at);
        node->op = op;
        if (!attach(*node, std::move(left), at) || !attach(*node, std::move(right), at))
            return nullptr;
        return node;
    }

    // Relation = [Relation Relop] Addition
    NodePtr relation() {
        NodePtr left = addition();
        while (left) {
            BinaryOp op;
            switch (peekTok().kind) {
                case Tok::Less:
                    op = BinaryOp::Less;
                    break;
                case Tok::LessEq:
                    op = BinaryOp::LessEq;
                    break;
                case Tok::Greater:
                    op = BinaryOp::Greater;
                    break;
                case Tok::GreaterEq:
                    op = BinaryOp::GreaterEq;
                    break;
                case Tok::Eq:
                    op = BinaryOp::Eq;
                    break;
                case Tok::NotEq:
                    op = BinaryOp::NotEq;
                    break;
                case Tok::In:
                    op = BinaryOp::In;
                    break;
                default:
                    return left;
            }
            const Token at = take();
            left = binary(op, at, std::move(left), addition());
        }
        return left;
    }

    NodePtr addition() {
        NodePtr left = multiplication();
        while (left && (peekTok().kind == Tok::Plus || peekTok().kind == Tok::Minus)) {
            const Token at = take();
            left = binary(at.kind == Tok::Plus ? BinaryOp::Add : BinaryOp::Sub, at, std::move(left),
                          multiplication());
        }
        return left;
    }

    NodePtr multiplication() {
        NodePtr left = unary();
        while (left && (peekTok().kind == Tok::Star || peekTok().kind == Tok::Slash ||
                        peekTok().kind == Tok::Percent)) {
            const Token at = take();
            const BinaryOp op = at.kind == Tok::Star    ? BinaryOp::Mul
                                : at.kind == Tok::Slash ? BinaryOp::Div
                                                        : BinaryOp::Mod;
            left = binary(op, at, std::move(left), unary());
        }
        return left;
    }

    // Unary = Member | "!" {"!"} Member | "-" {"-"} Member. A '-' directly before a number
    // literal is part of the literal (so -9223372036854775808 is representable).
    NodePtr unary() {
        if (peekTok().kind == Tok::Not || peekTok().kind == Tok::Minus) {
            std::vector<Token> ops;
            const Tok kind = peekTok().kind;
            while (peekTok().kind == kind)
                ops.push_back(take());
            NodePtr operand;
            const auto number = [this](std::size_t ahead) {
                return peekTok(ahead).kind == Tok::Int || peekTok(ahead).kind == Tok::Double;
            };
            if (kind == Tok::Minus && number(0)) {
                operand = member(negativeLiteral(ops.back(), take()));
                ops.pop_back();
            } else if (kind == Tok::Not && peekTok().kind == Tok::Minus && number(1)) {
                // A number literal carries its sign in cel-go's grammar: `!-2` is `!(-2)`.
                const Token minus = take();
                operand = member(negativeLiteral(minus, take()));
            } else {
                operand = member(primary());
            }
            // As cel-go's parser: an even run of the same operator cancels out (`!!x` is x,
            // whatever x's type), an odd one is a single operator.
            if (!operand || ops.size() % 2 == 0)
                return operand;
            auto node = make(kind == Tok::Not ? NodeKind::Not : NodeKind::Negate, ops.front());
            if (!attach(*node, std::move(operand), ops.front()))
                return nullptr;
            return node;
        }
        return member(primary());
    }

    NodePtr negativeLiteral(const Token& minus, const Token& literal) {
        auto node = make(NodeKind::Literal, minus);
        if (literal.kind == Tok::Int)
            node->literal = static_cast<std::int64_t>(0 - literal.number);
        else
            node->literal = -literal.real;
        return node;
    }

    static void qualify(Node& node, const Node& operand) {
        if (operand.qualified.empty())
            return;
        node.qualified = operand.qualified + "." + node.name;
        node.rootName = operand.rootName;
        node.absolute = operand.absolute;
    }

    // Member = Primary | Member "." IDENT ["(" args ")"] | Member "[" Expr "]"
    NodePtr member(NodePtr operand) {
        while (operand) {
            if (peekTok().kind == Tok::Dot) {
                take();
                const bool optional = accept(Tok::Question);
                const Token name = peekTok();
                const bool escaped = name.kind == Tok::EscapedIdent;
                if (name.kind != Tok::Ident && !escaped)
                    return fail(name, "expected a field name after '.', found " + describe(name));
                take();
                if (!optional && !escaped && peekTok().kind == Tok::LParen) {
                    take();
                    operand = call(name, std::move(operand));
                    continue;
                }
                auto node = make(NodeKind::Select, name);
                node->name = name.value;
                node->fieldKey = name.value;
                node->optional = optional;
                if (!optional && !escaped)  // `a.?b` and a.`b-c` are not qualified names
                    qualify(*node, *operand);
                if (!attach(*node, std::move(operand), name))
                    return nullptr;
                operand = std::move(node);
            } else if (peekTok().kind == Tok::LBracket) {
                const Token bracket = take();
                auto node = make(NodeKind::Index, bracket);
                node->optional = accept(Tok::Question);
                if (!attach(*node, std::move(operand), bracket) ||
                    !attach(*node, expr(), bracket) || !expect(Tok::RBracket, "']'"))
                    return nullptr;
                operand = std::move(node);
            } else if (peekTok().kind == Tok::LBrace && operand->kind == NodeKind::Ident) {
                return fail(peekTok(), "message construction is not supported");
            } else {
                break;
            }
        }
        return operand;
    }

    // After `name(`: the arguments, then macro expansion or a plain call.
    NodePtr call(const Token& name, NodePtr target) {
        std::vector<NodePtr> args;
        if (peekTok().kind != Tok::RParen) {
            do {
                args.push_back(expr());
                if (!args.back())
                    return nullptr;
            } while (accept(Tok::Comma));
        }
        if (!expect(Tok::RParen, "')' after the arguments"))
            return nullptr;
        if (NodePtr expanded = macro(name, target, args); expanded || error_)
            return expanded;
        if (!target && reserved(name.value))
            return fail(name, "reserved identifier '" + name.value + "'");
        auto node = make(NodeKind::Call, name);
        node->name = name.value;
        if (target && isOptionalConstructor(*target, name.value)) {
            target.reset();  // `optional` is a namespace here, not a receiver
            node->name = "optional." + name.value;
        }
        node->builtin = lookupBuiltin(node->name);
        if (target) {
            node->receiver = true;
            if (!target->qualified.empty() && !target->absolute) {
                node->qualified = target->qualified + "." + name.value;
                node->rootName = target->rootName;
            }
            if (!attach(*node, std::move(target), name))
                return nullptr;
        }
        for (auto& arg : args)
            if (!attach(*node, std::move(arg), name))
                return nullptr;
        if (node->builtin == Builtin::Matches && node->children.size() == 2) {
            // A literal pattern is compiled once here; a bad one is reported at evaluation, as
            // for computed patterns.
            const Node& pattern = *node->children.back();
            if (pattern.kind == NodeKind::Literal && pattern.literal.is<std::string>()) {
                re2::RE2::Options options;
                options.set_log_errors(false);
                auto regex =
                    std::make_shared<const re2::RE2>(pattern.literal.as<std::string>(), options);
                if (regex->ok())
                    node->regex = std::move(regex);
            }
        }
        return node;
    }

    static bool isOptionalConstructor(const Node& target, std::string_view fn) {
        return target.kind == NodeKind::Ident && !target.absolute && target.name == "optional" &&
               (fn == "of" || fn == "ofNonZeroValue" || fn == "none");
    }

    // The iteration variables of a macro must be simple identifiers.
    std::optional<std::string> iterVar(const NodePtr& arg, const Token& at, int position = 1) {
        if (arg->kind != NodeKind::Ident || arg->absolute) {
            fail(at, "argument " + std::to_string(position) + " of '" + at.value +
                         "' must be a simple identifier");
            return std::nullopt;
        }
        return arg->name;
    }

    // cel-go refuses an iteration variable named as its accumulator (`__result__`, or the hidden
    // `@result`) in every comprehension macro except optMap/optFlatMap, which bind a value.
    static bool overwritesAccumulator(const Node& comprehension) {
        if (comprehension.macro == Macro::OptMap || comprehension.macro == Macro::OptFlatMap)
            return false;
        const auto accumulator = [](const std::string& name) {
            return name == "__result__" || name == "@result";
        };
        return accumulator(comprehension.name) || accumulator(comprehension.name2);
    }

    // Which comprehension macro a receiver call `fn(args...)` is, and with how many variables.
    static std::optional<std::pair<Macro, int>> comprehensionMacro(std::string_view fn,
                                                                   std::size_t args) {
        if (args == 2) {
            if (fn == "all")
                return std::pair{Macro::All, 1};
            if (fn == "exists")
                return std::pair{Macro::Exists, 1};
            if (fn == "exists_one" || fn == "existsOne")
                return std::pair{Macro::ExistsOne, 1};
            if (fn == "map")
                return std::pair{Macro::Map, 1};
            if (fn == "filter")
                return std::pair{Macro::Filter, 1};
            if (fn == "optMap")
                return std::pair{Macro::OptMap, 1};
            if (fn == "optFlatMap")
                return std::pair{Macro::OptFlatMap, 1};
            if (fn == "sortBy")
                return std::pair{Macro::SortBy, 1};
        }
        if (args == 3) {
            if (fn == "map")
                return std::pair{Macro::MapFilter, 1};
            if (fn == "all")
                return std::pair{Macro::All, 2};
            if (fn == "exists")
                return std::pair{Macro::Exists, 2};
            if (fn == "exists_one" || fn == "existsOne")
                return std::pair{Macro::ExistsOne, 2};
        }
        if (args == 3 || args == 4) {
            if (fn == "transformList")
                return std::pair{Macro::TransformList, 2};
            if (fn == "transformMap")
                return std::pair{Macro::TransformMap, 2};
            if (fn == "transformMapEntry")
                return std::pair{Macro::TransformMapEntry, 2};
        }
        return std::nullopt;
    }

    // has(a.f): a Has node testing field f of a.
    NodePtr hasMacro(const Token& name, std::vector<NodePtr>& args) {
        if (args[0]->kind != NodeKind::Select || args[0]->optional)
            return fail(name, "invalid argument to has() macro");
        NodePtr select = std::move(args[0]);
        auto node = make(NodeKind::Has, name);
        node->name = select->name;
        node->fieldKey = select->fieldKey;
        if (!attach(*node, std::move(select->children[0]), name))
            return nullptr;
        return node;
    }

    NodePtr macro(const Token& name, NodePtr& target, std::vector<NodePtr>& args) {
        const std::string& fn = name.value;
        if (!target) {
            if (fn != "has" || args.size() != 1)
                return nullptr;
            return hasMacro(name, args);
        }
        if (fn == "bind" && args.size() == 3 && target->kind == NodeKind::Ident &&
            target->name == "cel" && !target->absolute) {
            auto var = iterVar(args[0], name);
            if (!var)
                return nullptr;
            auto node = make(NodeKind::Bind, name);
            node->name = *var;
            if (!attach(*node, std::move(args[1]), name) ||
                !attach(*node, std::move(args[2]), name))
                return nullptr;
            return node;
        }
        const auto kind = comprehensionMacro(fn, args.size());
        if (!kind)
            return nullptr;
        auto node = make(NodeKind::Comprehension, name);
        node->macro = kind->first;
        auto var = iterVar(args[0], name);
        if (!var)
            return nullptr;
        node->name = *var;
        if (kind->second == 2) {
            auto second = iterVar(args[1], name, 2);
            if (!second)
                return nullptr;
            if (*second == *var)
                return fail(name, "duplicate variable name: " + *var);
            node->name2 = *second;
        }
        if (overwritesAccumulator(*node))
            return fail(name, "iteration variable overwrites accumulator variable");
        if (!attach(*node, std::move(target), name))
            return nullptr;
        for (std::size_t i = static_cast<std::size_t>(kind->second); i < args.size(); ++i)
            if (!attach(*node, std::move(args[i]), name))
                return nullptr;
        return node;
    }

    NodePtr literal(const Token& token, Value value) {
        auto node = make(NodeKind::Literal, token);
        node->literal = std::move(value);
        return node;
    }

    NodePtr primary() {
        const Token token = peekTok();
        switch (token.kind) {
            case Tok::Int:
                take();
                if (token.number >
                    static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
                    return fail(token, "integer literal '" + token.text + "' is out of range");
                return literal(token, static_cast<std::int64_t>(token.number));
            case Tok::Uint:
                take();
                return literal(token, token.number);
            case Tok::Double:
                take();
                return literal(token, token.real);
            case Tok::String:
                take();
                return literal(token, token.value);
            case Tok::Bytes:
                take();
                return literal(token, Value::bytes(token.value));
            case Tok::True:
                take();
                return literal(token, true);
            case Tok::False:
                take();
                return literal(token, false);
            case Tok::Null:
                take();
                return literal(token, Null{});
            case Tok::LParen: {
                take();
                NodePtr inner = expr();
                if (!inner || !expect(Tok::RParen, "')'"))
                    return nullptr;
                return inner;
            }
            case Tok::LBracket: {
                take();
                auto node = make(NodeKind::List, token);
                while (peekTok().kind != Tok::RBracket) {
                    node->optionalEntries.push_back(accept(Tok::Question));
                    if (!attach(*node, expr(), token))
                        return nullptr;
                    if (!accept(Tok::Comma))
                        break;
                }
                if (!expect(Tok::RBracket, "']'"))
                    return nullptr;
                return node;
            }
            case Tok::LBrace: {
                take();
                auto node = make(NodeKind::Map, token);
                while (peekTok().kind != Tok::RBrace) {
                    node->optionalEntries.push_back(accept(Tok::Question));
                    if (!attach(*node, expr(), token) || !expect(Tok::Colon, "':'") ||
                        !attach(*node, expr(), token))
                        return nullptr;
                    if (!accept(Tok::Comma))
                        break;
                }
                if (!expect(Tok::RBrace, "'}'"))
                    return nullptr;
                return node;
            }
            case Tok::Dot:
            case Tok::Ident: {
                const bool absolute = token.kind == Tok::Dot;
                if (absolute)
                    take();
                const Token name = peekTok();
                if (name.kind != Tok::Ident)
                    return fail(name, "unexpected " + describe(name));
                take();
                if (peekTok().kind == Tok::LParen) {
                    take();
                    if (absolute)
                        return call(name, nullptr);
                    return call(name, nullptr);
                }
                if (reserved(name.value))
                    return fail(name, "reserved identifier '" + name.value + "'");
                auto node = make(NodeKind::Ident, absolute ? token : name);
                node->name = name.value;
                node->qualified = name.value;
                node->rootName = name.value;
                node->absolute = absolute;
                return node;
            }
            default:
                return fail(token, "unexpected " + describe(token));
        }
    }

    std::vector<Token> tokens_;
    std::size_t pos_ = 0;
    int depth_ = 0;
    std::optional<Error> error_;
};

}  // namespace

Result<NodePtr> parse(std::string_view source) {
    std::vector<Token> tokens;
    if (auto err = lex(source, tokens))
        return positioned(err->line, err->column, err->message);
    return Parser(std::move(tokens)).run();
}

}  // namespace numadra::cel::detail
