#pragma once
// The CEL lexer (cel-spec langdef.md's lexis): source text to tokens, with line and column for
// the parser's error messages. Internal to the parser.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::cel::detail {

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

// Splits `source` into tokens ending with one Tok::End, or says where the first bad one is.
std::optional<LexError> lex(std::string_view source, std::vector<Token>& tokens);

// "line 3, column 7: <message>", the shape of every parse error.
Error positioned(int line, int column, const std::string& message);

// How an error message names a token: "'foo'", or "end of input".
std::string describe(const Token& token);

}  // namespace numadra::cel::detail
