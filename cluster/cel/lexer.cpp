// The CEL lexer: identifiers, escaped field names, numbers with their suffixes, the string and
// bytes literals with every escape cel-spec defines, and the operators.

#include "lexer.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>

#include "ast.hpp"

namespace numadra::cel::detail {

namespace {

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

}  // namespace

std::optional<LexError> lex(std::string_view source, std::vector<Token>& tokens) {
    return Lexer(source).run(tokens);
}

Error positioned(int line, int column, const std::string& message) {
    return Error{"line " + std::to_string(line) + ", column " + std::to_string(column) + ": " +
                 message};
}

std::string describe(const Token& token) {
    if (token.kind == Tok::End)
        return "end of input";
    return "'" + token.text + "'";
}

}  // namespace numadra::cel::detail
