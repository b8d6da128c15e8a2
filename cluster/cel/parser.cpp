// Lexer and recursive-descent parser for the CEL grammar (cel-spec langdef.md), expanding the
// macros into dedicated nodes as it goes.

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>

#include "ast.hpp"

namespace numadra::cel::detail {

namespace {

// cel-go's default parser recursion limit; deeper input is rejected instead of risking the stack.
constexpr int kMaxNesting = 250;
// Left-associative operator chains do not recurse in the parser but do in the evaluator.
constexpr int kMaxHeight = 500;

enum class Tok {
    End,
    Int,  // magnitude in `number`, sign applied by the parser
    Uint,
    Double,
    String,
    Bytes,
    Ident,
    EscapedIdent,  // `a-b`: a field name in backticks, `value` without them
    True,
    False,
    Null,
    In,
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Not,
    Less,
    LessEq,
    Greater,
    GreaterEq,
    Eq,
    NotEq,
    And,
    Or,
};

struct Token {
    Tok kind = Tok::End;
    std::string text;   // as written, for error messages
    std::string value;  // identifier name, decoded string or bytes
    std::uint64_t number = 0;
    double real = 0;
    int line = 1;
    int column = 1;
};

struct LexError {
    int line;
    int column;
    std::string message;
};

Error positioned(int line, int column, const std::string& message) {
    return Error{"line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                 message};
}

bool isIdentStart(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isIdentChar(char c) {
    return isIdentStart(c) || isDigit(c);
}
bool isHex(char c) {
    return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
int hexValue(char c) {
    if (isDigit(c))
        return c - '0';
    return (c | 0x20) - 'a' + 10;
}

class Lexer {
  public:
    explicit Lexer(std::string_view source) : src_(source) {}

    std::optional<LexError> run(std::vector<Token>& out) {
        while (true) {
            if (auto err = skipSpace())
                return err;
            Token token;
            token.line = line_;
            token.column = column_;
            const std::size_t start = pos_;
            if (pos_ >= src_.size()) {
                token.kind = Tok::End;
                out.push_back(std::move(token));
                return std::nullopt;
            }
            if (auto err = next(token))
                return err;
            token.text = std::string(src_.substr(start, pos_ - start));
            out.push_back(std::move(token));
        }
    }

  private:
    char peek(std::size_t ahead = 0) const {
        return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0';
    }
    // Advances one byte, keeping line and column (in code points) current.
    void advance() {
        const char c = src_[pos_++];
        if (c == '\n') {
            ++line_;
            column_ = 1;
        } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++column_;
        }
    }
    void advance(std::size_t n) {
        for (std::size_t i = 0; i < n; ++i)
            advance();
    }
    LexError error(const std::string& message) const { return LexError{line_, column_, message}; }
    LexError errorAt(const Token& token, const std::string& message) const {
        return LexError{token.line, token.column, message};
    }

    std::optional<LexError> skipSpace() {
        while (pos_ < src_.size()) {
            const char c = peek();
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
                advance();
            } else if (c == '/' && peek(1) == '/') {
                while (pos_ < src_.size() && peek() != '\n')
                    advance();
            } else {
                break;
            }
        }
        return std::nullopt;
    }

    std::optional<LexError> next(Token& token) {
        const char c = peek();
        if (isDigit(c) || (c == '.' && isDigit(peek(1))))
            return number(token);
        if (isIdentStart(c)) {
            // String prefixes: r"", b"", rb"", br"" in any letter case.
            std::size_t n = 0;
            bool raw = false;
            bool bytes = false;
            while (n < 2 &&
                   (peek(n) == 'r' || peek(n) == 'R' || peek(n) == 'b' || peek(n) == 'B')) {
                const bool isRaw = peek(n) == 'r' || peek(n) == 'R';
                if ((isRaw && raw) || (!isRaw && bytes))
                    break;
                (isRaw ? raw : bytes) = true;
                ++n;
            }
            if (n > 0 && (peek(n) == '"' || peek(n) == '\'')) {
                advance(n);
                return string(token, raw, bytes);
            }
            std::size_t end = pos_;
            while (end < src_.size() && isIdentChar(src_[end]))
                ++end;
            token.value = std::string(src_.substr(pos_, end - pos_));
            advance(end - pos_);
            if (token.value == "true")
                token.kind = Tok::True;
            else if (token.value == "false")
                token.kind = Tok::False;
            else if (token.value == "null")
                token.kind = Tok::Null;
            else if (token.value == "in")
                token.kind = Tok::In;
            else
                token.kind = Tok::Ident;
            return std::nullopt;
        }
        if (c == '"' || c == '\'')
            return string(token, false, false);
        if (c == '`')
            return escapedIdent(token);
        struct Punct {
            std::string_view text;
            Tok kind;
        };
        static constexpr std::array<Punct, 27> kPuncts{{
            {"==", Tok::Eq},      {"!=", Tok::NotEq},   {"<=", Tok::LessEq}, {">=", Tok::GreaterEq},
            {"&&", Tok::And},     {"||", Tok::Or},      {"(", Tok::LParen},  {")", Tok::RParen},
            {"[", Tok::LBracket}, {"]", Tok::RBracket}, {"{", Tok::LBrace},  {"}", Tok::RBrace},
            {".", Tok::Dot},      {",", Tok::Comma},    {":", Tok::Colon},   {"?", Tok::Question},
            {"+", Tok::Plus},     {"-", Tok::Minus},    {"*", Tok::Star},    {"/", Tok::Slash},
            {"%", Tok::Percent},  {"!", Tok::Not},      {"<", Tok::Less},    {">", Tok::Greater},
            {"=", Tok::End},      {"&", Tok::End},      {"|", Tok::End},
        }};
        for (const auto& punct : kPuncts) {
            if (src_.substr(pos_, punct.text.size()) == punct.text) {
                if (punct.kind == Tok::End)
                    return error("unexpected character '" + std::string(punct.text) + "'");
                token.kind = punct.kind;
                advance(punct.text.size());
                return std::nullopt;
            }
        }
        // Quote the whole (possibly multi-byte) character.
        std::size_t len = 1;
        while (pos_ + len < src_.size() &&
               (static_cast<unsigned char>(src_[pos_ + len]) & 0xC0) == 0x80)
            ++len;
        return error("unexpected character '" + std::string(src_.substr(pos_, len)) + "'");
    }

    // cel-go's ESC_IDENTIFIER (on by default in its parser): a field name that is not an
    // identifier, in backticks: letters, digits, '_', '.', '-', '/' and ' '.
    std::optional<LexError> escapedIdent(Token& token) {
        std::size_t end = pos_ + 1;
        while (end < src_.size() && (isIdentChar(src_[end]) || src_[end] == '.' ||
                                     src_[end] == '-' || src_[end] == '/' || src_[end] == ' '))
            ++end;
        if (end == pos_ + 1 || end >= src_.size() || src_[end] != '`')
            return error(
                "invalid escaped field name: a backtick-quoted name holds letters, "
                "digits, '_', '.', '-', '/' and ' ' and ends with a backtick");
        token.kind = Tok::EscapedIdent;
        token.value = std::string(src_.substr(pos_ + 1, end - pos_ - 1));
        advance(end + 1 - pos_);
        return std::nullopt;
    }

    std::optional<LexError> number(Token& token) {
        const std::size_t start = pos_;
        if (peek() == '0' && (peek(1) == 'x' || peek(1) == 'X')) {
            advance(2);
            const std::size_t digits = pos_;
            while (isHex(peek()))
                advance();
            if (pos_ == digits)
                return errorAt(token, "invalid hexadecimal literal '" +
                                          std::string(src_.substr(start, pos_ - start)) + "'");
            const auto text = src_.substr(digits, pos_ - digits);
            const auto [ptr, ec] =
                std::from_chars(text.data(), text.data() + text.size(), token.number, 16);
            if (ec != std::errc() || ptr != text.data() + text.size())
                return errorAt(token, "integer literal '" +
                                          std::string(src_.substr(start, pos_ - start)) +
                                          "' is out of range");
            return integerSuffix(token, start);
        }
        bool real = false;
        while (isDigit(peek()))
            advance();
        if (peek() == '.' && isDigit(peek(1))) {
            real = true;
            advance();
            while (isDigit(peek()))
                advance();
        }
        if ((peek() == 'e' || peek() == 'E') &&
            (isDigit(peek(1)) || ((peek(1) == '+' || peek(1) == '-') && isDigit(peek(2))))) {
            real = true;
            advance(2);
            while (isDigit(peek()))
                advance();
        }
        const auto text = src_.substr(start, pos_ - start);
        if (real) {
            token.kind = Tok::Double;
            const auto [ptr, ec] =
                std::from_chars(text.data(), text.data() + text.size(), token.real);
            if (ec == std::errc::result_out_of_range) {
                // Overflowing literals become infinity or zero, as Go's ParseFloat reports them.
                token.real = text.find_first_of("eE") != std::string_view::npos &&
                                     text[text.find_first_of("eE") + 1] == '-'
                                 ? 0.0
                                 : std::numeric_limits<double>::infinity();
            } else if (ec != std::errc() || ptr != text.data() + text.size()) {
                return errorAt(token, "invalid number '" + std::string(text) + "'");
            }
            return std::nullopt;
        }
        const auto [ptr, ec] =
            std::from_chars(text.data(), text.data() + text.size(), token.number);
        if (ec != std::errc() || ptr != text.data() + text.size())
            return errorAt(token, "integer literal '" + std::string(text) + "' is out of range");
        return integerSuffix(token, start);
    }

    std::optional<LexError> integerSuffix(Token& token, std::size_t start) {
        if (peek() == 'u' || peek() == 'U') {
            advance();
            token.kind = Tok::Uint;
            return std::nullopt;
        }
        token.kind = Tok::Int;
        // The sign is applied by the parser, so only 2^63 (for -2^63) may exceed int64 here.
        if (token.number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1)
            return errorAt(token, "integer literal '" +
                                      std::string(src_.substr(start, pos_ - start)) +
                                      "' is out of range");
        return std::nullopt;
    }

    std::optional<LexError> string(Token& token, bool raw, bool bytes) {
        const char quote = peek();
        const bool triple = peek(1) == quote && peek(2) == quote;
        advance(triple ? 3 : 1);
        std::string out;
        while (true) {
            if (pos_ >= src_.size())
                return errorAt(token, "unterminated string literal");
            const char c = peek();
            if (c == quote && (!triple || (peek(1) == quote && peek(2) == quote))) {
                advance(triple ? 3 : 1);
                break;
            }
            if (!triple && (c == '\n' || c == '\r'))
                return errorAt(token, "unterminated string literal");
            if (c != '\\' || raw) {
                out.push_back(c);
                advance();
                continue;
            }
            if (auto err = escape(out, bytes))
                return err;
        }
        token.kind = bytes ? Tok::Bytes : Tok::String;
        if (!bytes && !validUtf8(out))
            return errorAt(token, "string literal is not valid UTF-8");
        token.value = std::move(out);
        return std::nullopt;
    }

    // One escape sequence (at the backslash). In strings \x and octal escapes name code points;
    // in bytes they name bytes.
    std::optional<LexError> escape(std::string& out, bool bytes) {
        const LexError bad = error("invalid escape sequence");
        advance();  // the backslash
        const char c = peek();
        if (pos_ >= src_.size())
            return bad;
        switch (c) {
            case 'a':
                out.push_back('\a');
                break;
            case 'b':
                out.push_back('\b');
                break;
            case 'f':
                out.push_back('\f');
                break;
            case 'n':
                out.push_back('\n');
                break;
            case 'r':
                out.push_back('\r');
                break;
            case 't':
                out.push_back('\t');
                break;
            case 'v':
                out.push_back('\v');
                break;
            case '\\':
            case '\'':
            case '"':
            case '`':
            case '?':
                out.push_back(c);
                break;
            case 'x':
            case 'X':
            case 'u':
            case 'U': {
                const int digits = (c == 'x' || c == 'X') ? 2 : (c == 'u' ? 4 : 8);
                std::uint32_t value = 0;
                for (int i = 1; i <= digits; ++i) {
                    if (!isHex(peek(static_cast<std::size_t>(i))))
                        return bad;
                    value = value * 16 +
                            static_cast<std::uint32_t>(hexValue(peek(static_cast<std::size_t>(i))));
                }
                advance(static_cast<std::size_t>(digits));
                if ((c == 'x' || c == 'X') && bytes) {
                    out.push_back(static_cast<char>(value));
                } else {
                    if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
                        return bad;
                    appendUtf8(out, value);
                }
                break;
            }
            default:
                if (c >= '0' && c <= '3' && peek(1) >= '0' && peek(1) <= '7' && peek(2) >= '0' &&
                    peek(2) <= '7') {
                    const std::uint32_t value = static_cast<std::uint32_t>(
                        (c - '0') * 64 + (peek(1) - '0') * 8 + (peek(2) - '0'));
                    advance(2);
                    if (bytes)
                        out.push_back(static_cast<char>(value));
                    else
                        appendUtf8(out, value);
                    break;
                }
                return bad;
        }
        advance();
        return std::nullopt;
    }

    std::string_view src_;
    std::size_t pos_ = 0;
    int line_ = 1;
    int column_ = 1;
};

std::string describe(const Token& token) {
    if (token.kind == Tok::End)
        return "end of input";
    return "'" + token.text + "'";
}

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
    if (auto err = Lexer(source).run(tokens))
        return positioned(err->line, err->column, err->message);
    return Parser(std::move(tokens)).run();
}

}  // namespace numadra::cel::detail
