#include "simple_selector.hpp"

#include <charconv>

namespace numadra::allocator::detail {

namespace {

bool isIdentifierStart(char c) {
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

bool isIdentifierPart(char c) {
    return isIdentifierStart(c) || (c >= '0' && c <= '9');
}

// Tokens of the accepted subset. Anything it does not know (escapes, raw or single-quoted
// strings, comments, other number forms, ...) makes the whole text "not simple".
class Reader {
  public:
    explicit Reader(std::string_view text) : text_(text) {}

    bool atEnd() {
        skipSpace();
        return pos_ == text_.size();
    }

    // A punctuation token ("&&", "==", "[", ...).
    bool consume(std::string_view token) {
        skipSpace();
        if (text_.substr(pos_, token.size()) != token)
            return false;
        pos_ += token.size();
        return true;
    }

    std::optional<std::string> identifier() {
        skipSpace();
        if (pos_ == text_.size() || !isIdentifierStart(text_[pos_]))
            return std::nullopt;
        const size_t start = pos_;
        while (pos_ < text_.size() && isIdentifierPart(text_[pos_]))
            ++pos_;
        return std::string(text_.substr(start, pos_ - start));
    }

    bool keyword(std::string_view word) {
        const size_t start = pos_;
        if (identifier() == word)
            return true;
        pos_ = start;
        return false;
    }

    // "text" without escapes: its bytes are the string's.
    std::optional<std::string> string() {
        skipSpace();
        if (pos_ == text_.size() || text_[pos_] != '"')
            return std::nullopt;
        const size_t end = text_.find_first_of("\"\\\n\r", pos_ + 1);
        if (end == std::string_view::npos || text_[end] != '"')
            return std::nullopt;
        std::string out(text_.substr(pos_ + 1, end - pos_ - 1));
        pos_ = end + 1;
        return out;
    }

    // A decimal int literal without sign or leading zero, within int64 (a suffix or a fraction
    // then fails the next token).
    std::optional<std::int64_t> integer() {
        skipSpace();
        const char* first = text_.data() + pos_;
        const char* last = text_.data() + text_.size();
        if (first == last || *first < '0' || *first > '9' ||
            (*first == '0' && last - first > 1 && first[1] >= '0' && first[1] <= '9'))
            return std::nullopt;
        std::int64_t value = 0;
        auto [end, error] = std::from_chars(first, last, value);
        if (error != std::errc())
            return std::nullopt;
        pos_ += static_cast<size_t>(end - first);
        return value;
    }

  private:
    void skipSpace() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                text_[pos_] == '\r' || text_[pos_] == '\f'))
            ++pos_;
    }

    std::string_view text_;
    size_t pos_ = 0;
};

std::optional<SimpleSelector::Literal> readLiteral(Reader& reader) {
    if (auto text = reader.string())
        return SimpleSelector::Literal(std::move(*text));
    if (auto number = reader.integer())
        return SimpleSelector::Literal(*number);
    if (reader.keyword("true"))
        return SimpleSelector::Literal(true);
    if (reader.keyword("false"))
        return SimpleSelector::Literal(false);
    return std::nullopt;
}

// device.attributes["domain"].id or device.attributes["domain"]["id"], after "attributes".
bool readAttribute(Reader& reader, SimpleSelector::Comparison& out) {
    if (!reader.consume("["))
        return false;
    auto domain = reader.string();
    // A domain holding '/' never matches (names split at their first '/'), which is CEL's
    // "no such key" error: left to the program.
    if (!domain || domain->find('/') != std::string::npos || !reader.consume("]"))
        return false;
    std::optional<std::string> id;
    if (reader.consume(".")) {
        id = reader.identifier();
    } else if (reader.consume("[")) {
        id = reader.string();
        if (!reader.consume("]"))
            return false;
    }
    if (!id)
        return false;
    out.domain = std::move(*domain);
    out.qualified = out.domain + "/" + *id;
    // A bare name holding '/' would be another domain's.
    out.bareAllowed = id->find('/') == std::string::npos;
    out.bare = std::move(*id);
    return true;
}

std::optional<SimpleSelector::Operator> readOperator(Reader& reader) {
    using Operator = SimpleSelector::Operator;
    // Two-character operators first: "<" would take the start of "<=".
    static constexpr std::pair<std::string_view, Operator> kOperators[] = {
        {"==", Operator::Equal},        {"!=", Operator::NotEqual}, {"<=", Operator::LessEqual},
        {">=", Operator::GreaterEqual}, {"<", Operator::Less},      {">", Operator::Greater},
    };
    for (const auto& [token, op] : kOperators)
        if (reader.consume(token))
            return op;
    return std::nullopt;
}

std::optional<SimpleSelector::Comparison> readComparison(Reader& reader) {
    SimpleSelector::Comparison out;
    if (!reader.keyword("device") || !reader.consume("."))
        return std::nullopt;
    auto field = reader.identifier();
    if (field == "driver")
        out.onDriver = true;
    else if (field != "attributes" || !readAttribute(reader, out))
        return std::nullopt;
    auto op = readOperator(reader);
    auto literal = op ? readLiteral(reader) : std::nullopt;
    if (!literal)
        return std::nullopt;
    const bool ordering =
        *op != SimpleSelector::Operator::Equal && *op != SimpleSelector::Operator::NotEqual;
    if (ordering && !std::holds_alternative<std::int64_t>(*literal))
        return std::nullopt;  // orderings of strings, bools, ... are left to the program
    out.op = *op;
    out.literal = std::move(*literal);
    return out;
}

}  // namespace

std::optional<SimpleSelector> SimpleSelector::parse(std::string_view text) {
    Reader reader(text);
    std::vector<Comparison> comparisons;
    do {
        auto comparison = readComparison(reader);
        if (!comparison)
            return std::nullopt;
        comparisons.push_back(std::move(*comparison));
    } while (reader.consume("&&"));
    if (!reader.atEnd())
        return std::nullopt;
    return SimpleSelector(std::move(comparisons));
}

const AttributeValue* SimpleSelector::Comparison::attribute(std::string_view driver,
                                                            const Device& device,
                                                            bool qualifiedDriverNames) const {
    const bool driverDomain = driver == domain;
    if (!driverDomain || qualifiedDriverNames) {
        if (auto found = device.attributes.find(qualified); found != device.attributes.end())
            return &found->second;
    }
    if (!driverDomain || !bareAllowed)
        return nullptr;
    auto found = device.attributes.find(bare);
    return found == device.attributes.end() ? nullptr : &found->second;
}

namespace {

// `a op b` for two values of one type (orderings only reach here for ints).
template <class T>
bool compare(const T& a, SimpleSelector::Operator op, const T& b) {
    using Operator = SimpleSelector::Operator;
    switch (op) {
        case Operator::Equal:
            return a == b;
        case Operator::NotEqual:
            return a != b;
        case Operator::Less:
            return a < b;
        case Operator::LessEqual:
            return a <= b;
        case Operator::Greater:
            return a > b;
        case Operator::GreaterEqual:
            return a >= b;
    }
    return false;
}

}  // namespace

std::optional<bool> SimpleSelector::Comparison::decide(std::string_view driver,
                                                       const Device& device,
                                                       bool qualifiedDriverNames) const {
    if (onDriver) {
        const auto* text = std::get_if<std::string>(&literal);
        if (text == nullptr || (op != Operator::Equal && op != Operator::NotEqual))
            return std::nullopt;  // string against another type: the program decides
        return compare(driver, op, std::string_view(*text));
    }
    const AttributeValue* found = attribute(driver, device, qualifiedDriverNames);
    if (found == nullptr)
        return std::nullopt;  // CEL's "no such key" error, unless another comparison is false
    const AttributeValue& value = *found;
    // AttributeValue starts with bool, int64, string, in Literal's order; versions and lists
    // are left to the program.
    if (value.index() != literal.index())
        return std::nullopt;
    if (const auto* b = std::get_if<bool>(&literal))
        return compare(std::get<bool>(value), op, *b);
    if (const auto* i = std::get_if<std::int64_t>(&literal))
        return compare(std::get<std::int64_t>(value), op, *i);
    return compare(std::get<std::string>(value), op, std::get<std::string>(literal));
}

std::optional<bool> SimpleSelector::decide(std::string_view driver, const Device& device,
                                           bool qualifiedDriverNames) const {
    bool allTrue = true;
    for (const Comparison& comparison : comparisons_) {
        const std::optional<bool> result = comparison.decide(driver, device, qualifiedDriverNames);
        if (result == false)
            return false;  // CEL's && is false whatever the other sides give
        allTrue = allTrue && result.has_value();
    }
    if (allTrue)
        return true;
    return std::nullopt;
}

}  // namespace numadra::allocator::detail
