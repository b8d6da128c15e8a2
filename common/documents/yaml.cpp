// YAML -> Json through yaml-cpp's event interface (not YAML::Node): the events carry whether a
// scalar was quoted, every node's position, and let us count documents, refuse over-deep nesting
// before the recursive parser goes further, and bound what aliases expand to.

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "internal.hpp"

namespace numadra::documents::internal {

namespace {

constexpr std::string_view kCoreTagPrefix = "tag:yaml.org,2002:";

bool isCoreTag(std::string_view tag, std::string_view type) {
    return tag.size() == kCoreTagPrefix.size() + type.size() &&
           tag.substr(0, kCoreTagPrefix.size()) == kCoreTagPrefix &&
           tag.substr(kCoreTagPrefix.size()) == type;
}

bool isNullWord(std::string_view s) {
    return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL";
}

std::optional<bool> boolWord(std::string_view s) {
    if (s == "true" || s == "True" || s == "TRUE")
        return true;
    if (s == "false" || s == "False" || s == "FALSE")
        return false;
    return std::nullopt;
}

bool isDigitIn(char c, int base) {
    if (c >= '0' && c <= '9')
        return c - '0' < base;
    if (base == 16)
        return (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    return false;
}

bool allDigits(std::string_view s, int base) {
    return !s.empty() &&
           std::all_of(s.begin(), s.end(), [base](char c) { return isDigitIn(c, base); });
}

Json fromUnsigned(std::uint64_t v) {
    if (v <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        return static_cast<std::int64_t>(v);
    return v;
}

// A double from text matching the core schema's float pattern (no leading '+').
std::optional<double> toDouble(std::string_view s) {
    double value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (end != s.data() + s.size())
        return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
        // Underflow is a zero; overflow has no double (the caller keeps the text).
        const auto e = s.find_first_of("eE");
        if (e != std::string_view::npos && e + 1 < s.size() && s[e + 1] == '-')
            return s[0] == '-' ? -0.0 : 0.0;
        return std::nullopt;
    }
    if (ec != std::errc())
        return std::nullopt;
    return value;
}

// Integer forms of the core schema; nullopt when `s` is not one.
std::optional<Json> resolveInteger(std::string_view s) {
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x')) {
        const int base = s[1] == 'o' ? 8 : 16;
        const std::string_view digits = s.substr(2);
        if (!allDigits(digits, base))
            return std::nullopt;
        std::uint64_t v = 0;
        const auto [end, ec] =
            std::from_chars(digits.data(), digits.data() + digits.size(), v, base);
        if (ec != std::errc() || end != digits.data() + digits.size())
            return Json(std::string(s));  // does not fit 64 bits: stays text
        return fromUnsigned(v);
    }
    std::string_view body = s;
    const bool negative = !body.empty() && body[0] == '-';
    if (!body.empty() && (body[0] == '-' || body[0] == '+'))
        body.remove_prefix(1);
    if (!allDigits(body, 10))
        return std::nullopt;
    std::uint64_t magnitude = 0;
    const auto [end, ec] = std::from_chars(body.data(), body.data() + body.size(), magnitude);
    if (ec != std::errc() || end != body.data() + body.size()) {
        // Beyond 64 bits: a double, as kubectl's YAML reader makes it.
        auto d = toDouble(negative ? s : body);
        if (!d)
            return Json(std::string(s));
        return *d;
    }
    if (!negative)
        return fromUnsigned(magnitude);
    constexpr auto kMinMagnitude =
        static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + 1;
    if (magnitude == kMinMagnitude)
        return std::numeric_limits<std::int64_t>::min();
    if (magnitude < kMinMagnitude)
        return -static_cast<std::int64_t>(magnitude);
    return -static_cast<double>(magnitude);
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool isCoreFloat(std::string_view s) {
    std::size_t i = 0;
    const auto digits = [&] {
        const std::size_t start = i;
        while (i < s.size() && s[i] >= '0' && s[i] <= '9')
            ++i;
        return i - start;
    };
    if (i < s.size() && (s[i] == '-' || s[i] == '+'))
        ++i;
    const std::size_t whole = digits();
    std::size_t fraction = 0;
    if (i < s.size() && s[i] == '.') {
        ++i;
        fraction = digits();
        if (whole == 0 && fraction == 0)
            return false;
    } else if (whole == 0) {
        return false;
    }
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
        ++i;
        if (i < s.size() && (s[i] == '-' || s[i] == '+'))
            ++i;
        if (digits() == 0)
            return false;
    }
    return i == s.size();
}

std::optional<Json> resolveFloat(std::string_view s) {
    std::string_view unsigned_ = s;
    bool negative = false;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) {
        negative = s[0] == '-';
        unsigned_ = s.substr(1);
    }
    if (unsigned_ == ".inf" || unsigned_ == ".Inf" || unsigned_ == ".INF")
        return negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
    if (s == ".nan" || s == ".NaN" || s == ".NAN")
        return std::numeric_limits<double>::quiet_NaN();
    if (!isCoreFloat(s))
        return std::nullopt;
    auto d = toDouble(s[0] == '+' ? s.substr(1) : s);
    if (!d)
        return Json(std::string(s));  // overflows a double: stays text
    return *d;
}

// A plain scalar typed by the YAML 1.2 core schema.
Json resolvePlain(const std::string& s) {
    if (isNullWord(s))
        return nullptr;
    if (auto b = boolWord(s))
        return *b;
    if (auto i = resolveInteger(s))
        return std::move(*i);
    if (auto f = resolveFloat(s))
        return std::move(*f);
    return s;
}

struct Failure {
    YAML::Mark mark;
    std::string message;
};

// A scalar with an explicit tag.
Json resolveTagged(const YAML::Mark& mark, const std::string& tag, const std::string& s) {
    if (tag.compare(0, kCoreTagPrefix.size(), kCoreTagPrefix) != 0)
        return s;  // "!" (quoted or non-specific) or an application tag: a string
    const std::string_view type = std::string_view(tag).substr(kCoreTagPrefix.size());
    const auto wrong = [&]() -> Failure {
        return {mark, "\"" + s + "\" is not a valid !!" + std::string(type)};
    };
    if (type == "null") {
        if (!isNullWord(s))
            throw wrong();
        return nullptr;
    }
    if (type == "bool") {
        auto b = boolWord(s);
        if (!b)
            throw wrong();
        return *b;
    }
    if (type == "int") {
        auto i = resolveInteger(s);
        if (!i || !i->is_number_integer())
            throw wrong();
        return std::move(*i);
    }
    if (type == "float") {
        Json v = resolvePlain(s);
        if (!v.is_number())
            throw wrong();
        return v.get<double>();
    }
    return s;  // !!str, !!binary, !!timestamp, ...
}

// What an anchor refers to, for its aliases.
struct Anchored {
    Json value;
    std::size_t nodes = 1;
    std::size_t height = 0;  // 0 for a scalar, 1 + the highest child for a collection
    std::optional<std::string> keyText;
};

struct Frame {
    bool isMap = false;
    Json value;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    std::size_t nodes = 1;
    std::size_t height = 1;
    // Mapping state: the key read and waiting for its value.
    bool hasKey = false;
    std::string key;
    YAML::Mark keyMark;
    bool keyIsMerge = false;
    std::set<std::string> mergedKeys;  // entries a merge added, which the mapping may override
    bool isItems = false;              // the sequence under the root mapping's "items"
};

class Builder final : public YAML::EventHandler {
  public:
    explicit Builder(std::string_view text) : text_(text) {}

    // The document being read (or, between documents, the next one).
    int documentIndex() const { return completed_; }
    std::vector<RawDocument> take() { return std::move(documents_); }

    void OnDocumentStart(const YAML::Mark& mark) override {
        // yaml-cpp 0.7 answers a token that cannot start a node (a "," outside any flow
        // collection) with an empty document that does not consume it, forever.
        if (lastDocumentStart_ && mark.pos == lastDocumentStart_->pos) {
            documents_.pop_back();
            --completed_;
            const auto at = static_cast<std::size_t>(mark.pos);
            const bool printable = at < text_.size() && text_[at] > ' ' && text_[at] < 127;
            throw Failure{mark, printable ? "unexpected \"" + std::string(1, text_[at]) + "\""
                                          : std::string("unexpected token")};
        }
        lastDocumentStart_ = mark;
        stack_.clear();
        anchors_.clear();
        aliasNodes_ = 0;
        complexKey_.reset();
        root_.reset();
        itemLines_.clear();
        documentItemLines_.clear();
    }

    void OnDocumentEnd() override {
        if (complexKey_)
            throw *complexKey_;
        RawDocument document;
        if (root_) {
            document.json = std::move(*root_);
            document.line = rootMark_.line + 1;
            document.column = rootMark_.column + 1;
            document.itemLines = std::move(documentItemLines_);
        }
        documents_.push_back(std::move(document));
        ++completed_;
    }

    void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        complete(nullptr, 1, 0, mark, anchor, std::string("null"), false);
    }

    void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
        const auto it = anchors_.find(anchor);
        if (it == anchors_.end())
            throw Failure{mark, "alias refers to a node that contains it"};
        const Anchored& target = it->second;
        aliasNodes_ += target.nodes;
        if (aliasNodes_ > kMaxAliasNodes)
            throw Failure{
                mark, "aliases expand to more than " + std::to_string(kMaxAliasNodes) + " nodes"};
        if (stack_.size() + target.height > kMaxDepth)
            throw tooDeep(mark);
        complete(target.value, target.nodes, target.height, mark, 0, target.keyText, false);
    }

    void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  const std::string& value) override {
        if (!isValidUtf8(value))
            throw Failure{mark, "invalid UTF-8"};
        Json json = tag == "?" ? resolvePlain(value) : resolveTagged(mark, tag, value);
        const bool merge = tag == "?" ? value == "<<" : isCoreTag(tag, "merge");
        complete(std::move(json), 1, 0, mark, anchor, value, merge);
    }

    void OnSequenceStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                         YAML::EmitterStyle::value /*style*/) override {
        open(false, mark, anchor);
    }
    void OnSequenceEnd() override { close(); }

    void OnMapStart(const YAML::Mark& mark, const std::string& /*tag*/, YAML::anchor_t anchor,
                    YAML::EmitterStyle::value /*style*/) override {
        open(true, mark, anchor);
    }
    void OnMapEnd() override { close(); }

  private:
    static Failure tooDeep(const YAML::Mark& mark) {
        return {mark, "nesting deeper than " + std::to_string(kMaxDepth) + " levels"};
    }

    void open(bool isMap, const YAML::Mark& mark, YAML::anchor_t anchor) {
        if (stack_.size() >= kMaxDepth)
            throw tooDeep(mark);
        Frame frame;
        frame.isMap = isMap;
        frame.value = isMap ? Json::object() : Json::array();
        frame.mark = mark;
        frame.anchor = anchor;
        frame.isItems = !isMap && stack_.size() == 1 && stack_[0].isMap && stack_[0].hasKey &&
                        !stack_[0].keyIsMerge && stack_[0].key == "items";
        if (frame.isItems)
            itemLines_.clear();
        stack_.push_back(std::move(frame));
    }

    void close() {
        Frame frame = std::move(stack_.back());
        stack_.pop_back();
        if (frame.isItems)
            documentItemLines_ = std::move(itemLines_);
        complete(std::move(frame.value), frame.nodes, frame.height, frame.mark, frame.anchor,
                 std::nullopt, false);
    }

    void complete(Json value, std::size_t nodes, std::size_t height, const YAML::Mark& mark,
                  YAML::anchor_t anchor, std::optional<std::string> keyText, bool isMerge) {
        if (anchor != 0)
            anchors_[anchor] = Anchored{value, nodes, height, keyText};
        if (stack_.empty()) {
            root_ = std::move(value);
            rootMark_ = mark;
            return;
        }
        Frame& top = stack_.back();
        top.nodes += nodes;
        top.height = std::max(top.height, height + 1);
        if (!top.isMap) {
            if (top.isItems)
                itemLines_.push_back(mark.line + 1);
            top.value.push_back(std::move(value));
            return;
        }
        if (!top.hasKey) {
            if (!keyText) {
                // Reported at the end of the document, so that yaml-cpp's own error wins for an
                // unclosed "[[" (which it reads as a flow mapping with a sequence as key).
                if (!complexKey_)
                    complexKey_ = Failure{mark, "a mapping key must be a scalar"};
                keyText = std::string();
                isMerge = false;
            }
            top.hasKey = true;
            top.key = std::move(*keyText);
            top.keyMark = mark;
            top.keyIsMerge = isMerge;
            return;
        }
        top.hasKey = false;
        if (complexKey_)
            return;  // the document is refused anyway
        if (top.keyIsMerge) {
            merge(top, value, mark);
            return;
        }
        const auto existing = top.value.find(top.key);
        if (existing == top.value.end()) {
            top.value.emplace(top.key, std::move(value));
            return;
        }
        if (top.mergedKeys.erase(top.key) == 0)
            throw Failure{top.keyMark, "duplicate key \"" + top.key + "\""};
        *existing = std::move(value);
    }

    // "<<: map" or "<<: [map, map]": entries the mapping does not have yet; later explicit keys
    // still override them, earlier maps win over later ones.
    static void merge(Frame& top, const Json& value, const YAML::Mark& mark) {
        const auto mergeOne = [&top](const Json& from) {
            for (auto it = from.begin(); it != from.end(); ++it) {
                if (top.value.find(it.key()) == top.value.end()) {
                    top.value.emplace(it.key(), Json(it.value()));
                    top.mergedKeys.insert(it.key());
                }
            }
        };
        if (value.is_object()) {
            mergeOne(value);
            return;
        }
        if (value.is_array() &&
            std::all_of(value.begin(), value.end(), [](const Json& v) { return v.is_object(); })) {
            for (const auto& from : value)
                mergeOne(from);
            return;
        }
        throw Failure{mark,
                      "the value of a merge key (<<) must be a mapping or a list of mappings"};
    }

    std::vector<Frame> stack_;
    std::map<YAML::anchor_t, Anchored> anchors_;
    std::size_t aliasNodes_ = 0;
    std::optional<Failure> complexKey_;
    std::optional<Json> root_;
    YAML::Mark rootMark_;
    std::vector<int> itemLines_;
    std::vector<int> documentItemLines_;
    std::vector<RawDocument> documents_;
    int completed_ = 0;
    std::string_view text_;
    std::optional<YAML::Mark> lastDocumentStart_;
};

}  // namespace

Result<std::vector<RawDocument>> parseYaml(std::string_view text, const std::string& file) {
    std::istringstream in{std::string(text)};
    Builder builder(text);
    const auto fail = [&](const YAML::Mark& mark, std::string_view message) {
        const bool known = !mark.is_null() && mark.line >= 0;
        return documentError(file, builder.documentIndex(), known ? mark.line + 1 : 0,
                             known ? mark.column + 1 : 0, message);
    };
    try {
        YAML::Parser parser(in);
        while (parser.HandleNextDocument(builder)) {
        }
    } catch (const Failure& failure) {
        return fail(failure.mark, failure.message);
    } catch (const YAML::Exception& e) {
        return fail(e.mark, e.msg);
    } catch (const std::exception& e) {
        return fail(YAML::Mark::null_mark(), e.what());
    }
    return builder.take();
}

}  // namespace numadra::documents::internal
