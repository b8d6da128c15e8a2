// A JSON stream (one value, or several concatenated) -> Json, with nlohmann's parser. The text is
// first cut into one piece per top-level value by matching brackets outside strings (which also
// bounds the nesting before anything is built); each piece is then parsed strictly through a SAX
// handler that refuses duplicate keys.

#include <algorithm>
#include <cstddef>
#include <utility>

#include "internal.hpp"
#include "numadra/documents/reader.hpp"

namespace numadra::documents::internal {

namespace {

bool isJsonSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Line and column (1-based) of byte offsets, from the offsets where lines start.
class Lines {
  public:
    explicit Lines(std::string_view text) {
        starts_.push_back(0);
        for (std::size_t i = 0; i < text.size(); ++i) {
            if (text[i] == '\n')
                starts_.push_back(i + 1);
        }
    }
    std::pair<int, int> at(std::size_t offset) const {
        const auto next = std::upper_bound(starts_.begin(), starts_.end(), offset);
        const auto line = static_cast<std::size_t>(next - starts_.begin());  // >= 1
        return {static_cast<int>(line), static_cast<int>(offset - starts_[line - 1] + 1)};
    }

  private:
    std::vector<std::size_t> starts_;
};

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error
// ..." without the prefix and its (piece-relative) position.
std::string parseErrorMessage(const std::string& what) {
    const auto at = what.find("parse error");
    if (at != std::string::npos) {
        const auto colon = what.find(": ", at);
        if (colon != std::string::npos)
            return what.substr(colon + 2);
    }
    const auto bracket = what.find("] ");
    return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

class SaxBuilder final : public nlohmann::json_sax<Json> {
  public:
    bool null() override { return add(nullptr); }
    bool boolean(bool value) override { return add(value); }
    bool number_integer(number_integer_t value) override { return add(value); }
    bool number_unsigned(number_unsigned_t value) override { return add(value); }
    bool number_float(number_float_t value, const string_t& /*text*/) override {
        return add(value);
    }
    bool string(string_t& value) override { return add(std::move(value)); }
    bool binary(binary_t& /*value*/) override {
        message_ = "binary values are not supported";
        return false;
    }
    bool start_object(std::size_t /*elements*/) override {
        frames_.push_back({Json::object(), {}, true});
        return true;
    }
    bool key(string_t& key) override {
        Frame& top = frames_.back();
        if (top.value.find(key) != top.value.end()) {
            message_ = "duplicate key \"" + key + "\"";
            const std::string where = path().str();
            if (!where.empty())
                message_ += " in " + where;
            return false;
        }
        top.key = std::move(key);
        return true;
    }
    bool end_object() override { return close(); }
    bool start_array(std::size_t /*elements*/) override {
        frames_.push_back({Json::array(), {}, false});
        return true;
    }
    bool end_array() override { return close(); }
    bool parse_error(std::size_t position, const std::string& /*lastToken*/,
                     const Json::exception& ex) override {
        position_ = position;
        message_ = parseErrorMessage(ex.what());
        return false;
    }

    Json take() { return std::move(root_); }
    const std::string& message() const { return message_; }
    std::size_t position() const { return position_; }  // 0: no position known

  private:
    struct Frame {
        Json value;
        std::string key;
        bool isObject;
    };

    bool add(Json value) {
        if (frames_.empty()) {
            root_ = std::move(value);
            return true;
        }
        Frame& top = frames_.back();
        if (top.isObject)
            top.value.emplace(std::move(top.key), std::move(value));
        else
            top.value.push_back(std::move(value));
        return true;
    }

    bool close() {
        Json value = std::move(frames_.back().value);
        frames_.pop_back();
        return add(std::move(value));
    }

    // Path of the innermost object, for duplicate-key messages.
    FieldPath path() const {
        FieldPath out;
        for (std::size_t i = 0; i + 1 < frames_.size(); ++i) {
            out = frames_[i].isObject ? out.field(frames_[i].key)
                                      : out.index(frames_[i].value.size());
        }
        return out;
    }

    std::vector<Frame> frames_;
    Json root_;
    std::string message_;
    std::size_t position_ = 0;
};

}  // namespace

Result<std::vector<RawDocument>> parseJson(std::string_view text, const std::string& file) {
    const Lines lines(text);
    std::vector<RawDocument> documents;
    std::size_t i = text.substr(0, 3) == "\xEF\xBB\xBF" ? 3 : 0;
    const std::size_t n = text.size();
    for (int index = 0;; ++index) {
        while (i < n && isJsonSpace(text[i]))
            ++i;
        if (i >= n)
            break;
        // One top-level value: [begin, i).
        const std::size_t begin = i;
        const char first = text[i];
        if (first == '{' || first == '[') {
            std::size_t depth = 0;
            bool inString = false;
            for (; i < n; ++i) {
                const char c = text[i];
                if (inString) {
                    if (c == '\\')
                        ++i;
                    else if (c == '"')
                        inString = false;
                } else if (c == '"') {
                    inString = true;
                } else if (c == '{' || c == '[') {
                    if (++depth > kMaxDepth) {
                        const auto [line, column] = lines.at(i);
                        return documentError(
                            file, index, line, column,
                            "nesting deeper than " + std::to_string(kMaxDepth) + " levels");
                    }
                } else if (c == '}' || c == ']') {
                    if (--depth == 0) {
                        ++i;
                        break;
                    }
                }
            }
        } else if (first == '"') {
            for (++i; i < n; ++i) {
                if (text[i] == '\\') {
                    ++i;
                } else if (text[i] == '"') {
                    ++i;
                    break;
                }
            }
        } else {
            for (++i; i < n && !isJsonSpace(text[i]); ++i) {
                const char c = text[i];
                if (c == '{' || c == '[' || c == '}' || c == ']' || c == '"')
                    break;
            }
        }
        i = std::min(i, n);

        SaxBuilder sax;
        bool parsed = false;
        try {
            parsed = Json::sax_parse(text.data() + begin, text.data() + i, &sax);
        } catch (const std::exception& e) {
            return documentError(file, index, lines.at(begin).first, lines.at(begin).second,
                                 e.what());
        }
        if (!parsed) {
            if (sax.position() == 0)  // a duplicate key: named with its path instead
                return documentError(file, index, 0, 0, sax.message());
            const auto [line, column] = lines.at(std::min(begin + sax.position() - 1, n - 1));
            return documentError(file, index, line, column, sax.message());
        }
        const auto [line, column] = lines.at(begin);
        documents.push_back(RawDocument{sax.take(), line, column, {}});
    }
    return documents;
}

}  // namespace numadra::documents::internal
