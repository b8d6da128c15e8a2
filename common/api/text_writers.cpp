#include "text_writers.hpp"

#include <array>
#include <charconv>
#include <ostream>

#include "numadra/api/resource_slice.hpp"

namespace numadra::api::detail {

namespace {

// Bytes nlohmann copies unchanged: printable ASCII and DEL, except '"' and '\'.
constexpr std::array<bool, 256> kVerbatim = [] {
    std::array<bool, 256> table{};
    for (int c = 0x20; c < 0x80; ++c)
        table[static_cast<size_t>(c)] = c != '"' && c != '\\';
    return table;
}();

// A line break, then spaces: what every indented line starts with, in one append.
constexpr size_t kMostSpaces = 128;
constexpr std::array<char, 1 + kMostSpaces> kLineBreakAndSpaces = [] {
    std::array<char, 1 + kMostSpaces> text{};
    text.fill(' ');
    text[0] = '\n';
    return text;
}();

}  // namespace

void TextOutput::lineBreak(size_t indent) {
    if (indent > kMostSpaces) {
        append('\n');
        spaces(indent);
        return;
    }
    append({kLineBreakAndSpaces.data(), 1 + indent});
}

void TextOutput::spaces(size_t count) {
    for (; count > kMostSpaces; count -= kMostSpaces)
        append({kLineBreakAndSpaces.data() + 1, kMostSpaces});
    append({kLineBreakAndSpaces.data() + 1, count});
}

void TextOutput::flush() {
    if (used_ == 0)
        return;
    if (string_ != nullptr)
        string_->append(buffer_.get(), used_);
    else
        stream_->write(buffer_.get(), static_cast<std::streamsize>(used_));
    used_ = 0;
}

void TextOutput::appendLarge(std::string_view text) {
    flush();
    if (text.size() < kCapacity) {
        append(text);
    } else if (string_ != nullptr) {
        string_->append(text);
    } else {
        stream_->write(text.data(), static_cast<std::streamsize>(text.size()));
    }
}

void appendJsonString(TextOutput& out, std::string_view text) {
    for (char c : text) {
        if (!kVerbatim[static_cast<unsigned char>(c)]) {
            // Escapes and UTF-8 (validation, replacement) are rare here: nlohmann's own code
            // writes those strings, so they cannot come out differently.
            out.append(Json(text).dump(-1, ' ', false, Json::error_handler_t::replace));
            return;
        }
    }
    out.appendQuoted(text);
}

void appendJsonInt(TextOutput& out, std::int64_t value) {
    char buffer[24];
    const auto end = std::to_chars(buffer, buffer + sizeof buffer, value).ptr;
    out.append({buffer, static_cast<size_t>(end - buffer)});
}

bool isPlainYamlKey(std::string_view key) {
    if (key.empty())
        return false;
    for (char c : key) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' || c == '/';
        if (!ok)
            return false;
    }
    // Keys that YAML 1.1 would read as booleans/null stay quoted.
    static constexpr std::string_view kReserved[] = {"y",   "n",    "yes",   "no",   "on",
                                                     "off", "true", "false", "null", "~"};
    for (std::string_view word : kReserved) {
        if (key == word)
            return false;
    }
    return !(key[0] >= '0' && key[0] <= '9') && key[0] != '-' && key[0] != '.';
}

// --- JsonWriter: nlohmann's layout. Indented: "{", then each element on its own line one
// level deeper ("key": value), then "}" on a line of its own; empty containers are "{}"/"[]".

void JsonWriter::key(std::string_view name) {
    startElement();
    appendJsonString(out_, name);
    out_.append(indented_ ? std::string_view(": ") : std::string_view(":"));
    afterKey_ = true;
}

void JsonWriter::beforeValue() {
    if (afterKey_) {
        afterKey_ = false;
    } else if (!hasElements_.empty()) {
        startElement();  // an array element
    }
}

void JsonWriter::startElement() {
    if (hasElements_.back())
        out_.append(',');
    hasElements_.back() = true;
    if (indented_)
        lineBreak();
}

void JsonWriter::open(char bracket) {
    beforeValue();
    out_.append(bracket);
    hasElements_.push_back(false);
}

void JsonWriter::close(char bracket) {
    const bool hadElements = hasElements_.back();
    hasElements_.pop_back();
    if (hadElements && indented_)
        lineBreak();
    out_.append(bracket);
}

void JsonWriter::lineBreak() {
    out_.lineBreak(2 * hasElements_.size());
}

// --- YamlWriter: common/api/yaml.cpp's layout. An object after a key goes one level deeper on the
// next lines, an array after a key puts its dashes at the key's level; an object element starts on
// its dash's line; empty containers are "{}"/"[]" where the value would be.

void YamlWriter::key(std::string_view name) {
    Frame& object = frames_.back();
    const bool onDashLine = object.empty && object.firstKeyInline;
    firstElement(object);
    if (!onDashLine)
        out_.spaces(static_cast<size_t>(object.indent));
    if (isPlainYamlKey(name))
        out_.append(name);
    else
        appendJsonString(out_, name);
    out_.append(':');
}

void YamlWriter::beginContainer(bool isArray) {
    if (frames_.empty()) {
        frames_.push_back({isArray, Opener::Document, 0, false});
        return;
    }
    Frame& parent = frames_.back();
    if (!parent.isArray) {
        frames_.push_back(
            {isArray, Opener::Key, isArray ? parent.indent : parent.indent + 2, false});
        return;
    }
    startArrayElement(parent);
    const int indent = parent.indent + 2;  // `parent` dangles once frames_ grows
    frames_.push_back({isArray, Opener::Dash, indent, !isArray});
}

void YamlWriter::endContainer() {
    const Frame frame = frames_.back();
    frames_.pop_back();
    if (!frame.empty)
        return;  // its last line is written
    if (frame.opener == Opener::Key)
        out_.append(' ');
    out_.append(frame.isArray ? "[]\n" : "{}\n");
}

void YamlWriter::startScalar() {
    if (frames_.empty())
        return;
    Frame& parent = frames_.back();
    if (parent.isArray)
        startArrayElement(parent);
    else
        out_.append(' ');
}

void YamlWriter::startArrayElement(Frame& array) {
    firstElement(array);
    out_.spaces(static_cast<size_t>(array.indent));
    out_.append("- ");
}

void YamlWriter::firstElement(Frame& frame) {
    if (!frame.empty)
        return;
    frame.empty = false;
    // After a key, the elements start on the next line; so do a nested array's after its dash.
    if (frame.opener == Opener::Key || (frame.opener == Opener::Dash && frame.isArray))
        out_.append('\n');
}

}  // namespace numadra::api::detail
