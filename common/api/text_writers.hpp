#pragma once
// Internal: writers that turn a stream of events (begin/end of objects and arrays, keys,
// scalars) into text as it comes, byte for byte as nlohmann's dump() and common/api/yaml.cpp would
// print the DOM those events describe. One emitter (slice_events.hpp) drives them all.

#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/api/slice_writer.hpp"

namespace numadra::api::detail {

// Buffered output to a string or a stream. An append is a bounds check and a memcpy (a
// std::string append is several times that), and a stream gets the text in 64 KiB pieces
// rather than as one 1.2 MB string that would have to be faulted in first. The owner calls
// flush() when done (not the destructor: it may throw, and half a document helps nobody).
class TextOutput {
  public:
    explicit TextOutput(std::string& target) : string_(&target) {}
    explicit TextOutput(std::ostream& target) : stream_(&target) {}
    TextOutput(const TextOutput&) = delete;
    TextOutput& operator=(const TextOutput&) = delete;

    void append(std::string_view text) {
        if (text.size() > kCapacity - used_) {
            appendLarge(text);
            return;
        }
        std::memcpy(buffer_.get() + used_, text.data(), text.size());
        used_ += text.size();
    }
    void append(char c) {
        if (used_ == kCapacity)
            flush();
        buffer_[used_++] = c;
    }
    // '"' + text + '"', with one bounds check for the three.
    void appendQuoted(std::string_view text) {
        if (text.size() + 2 > kCapacity - used_) {
            append('"');
            append(text);
            append('"');
            return;
        }
        char* out = buffer_.get() + used_;
        out[0] = '"';
        std::memcpy(out + 1, text.data(), text.size());
        out[text.size() + 1] = '"';
        used_ += text.size() + 2;
    }
    // A line break, then `indent` spaces.
    void lineBreak(size_t indent);
    void spaces(size_t count);
    void flush();

  private:
    void appendLarge(std::string_view text);

    static constexpr size_t kCapacity = 64 * 1024;
    std::unique_ptr<char[]> buffer_ = std::make_unique_for_overwrite<char[]>(kCapacity);
    size_t used_ = 0;
    std::string* string_ = nullptr;
    std::ostream* stream_ = nullptr;
};

// `text` as a JSON string literal, escaped as nlohmann escapes it (invalid UTF-8: U+FFFD).
void appendJsonString(TextOutput& out, std::string_view text);
void appendJsonInt(TextOutput& out, std::int64_t value);
// common/api/yaml.cpp's rule: a key is written bare unless YAML could read it as something else.
bool isPlainYamlKey(std::string_view key);

class JsonWriter {
  public:
    JsonWriter(TextOutput& out, JsonLayout layout)
        : out_(out), indented_(layout == JsonLayout::Indented) {}

    void beginObject() { open('{'); }
    void endObject() { close('}'); }
    void beginArray() { open('['); }
    void endArray() { close(']'); }
    void key(std::string_view name);
    void stringValue(std::string_view text) {
        beforeValue();
        appendJsonString(out_, text);
    }
    void intValue(std::int64_t value) {
        beforeValue();
        appendJsonInt(out_, value);
    }
    void boolValue(bool value) {
        beforeValue();
        out_.append(value ? "true" : "false");
    }

  private:
    void beforeValue();
    void startElement();
    void open(char bracket);
    void close(char bracket);
    void lineBreak();

    TextOutput& out_;
    bool indented_;
    bool afterKey_ = false;
    // One entry per open container: whether it has an element yet.
    std::vector<char> hasElements_;
};

class YamlWriter {
  public:
    explicit YamlWriter(TextOutput& out) : out_(out) {}

    void beginObject() { beginContainer(false); }
    void endObject() { endContainer(); }
    void beginArray() { beginContainer(true); }
    void endArray() { endContainer(); }
    void key(std::string_view name);
    void stringValue(std::string_view text) {
        startScalar();
        appendJsonString(out_, text);  // JSON's escaping is valid YAML double-quoted style
        out_.append('\n');
    }
    void intValue(std::int64_t value) {
        startScalar();
        appendJsonInt(out_, value);
        out_.append('\n');
    }
    void boolValue(bool value) {
        startScalar();
        out_.append(value ? "true\n" : "false\n");
    }

  private:
    // What the container follows, which decides how it opens and how it looks when empty.
    enum class Opener { Document, Key, Dash };
    struct Frame {
        bool isArray;
        Opener opener;
        int indent;           // of the keys (objects) or of the dashes (arrays)
        bool firstKeyInline;  // an object right after "- " starts on the dash's line
        bool empty = true;
    };

    void beginContainer(bool isArray);
    void endContainer();
    void startScalar();
    void startArrayElement(Frame& array);
    void firstElement(Frame& frame);

    TextOutput& out_;
    std::vector<Frame> frames_;
};

}  // namespace numadra::api::detail
