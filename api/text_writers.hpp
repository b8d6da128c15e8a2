#pragma once
// Internal: writers that turn a stream of events (begin/end of objects and arrays, keys,
// scalars) into text as it comes, byte for byte as nlohmann's dump() and api/yaml.cpp would
// print the DOM those events describe. One emitter (slice_events.hpp) drives them all.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/api/slice_writer.hpp"

namespace numadra::api::detail {

// `text` as a JSON string literal, escaped as nlohmann escapes it (invalid UTF-8: U+FFFD).
void appendJsonString(std::string& out, std::string_view text);
void appendJsonInt(std::string& out, std::int64_t value);
// api/yaml.cpp's rule: a key is written bare unless YAML could read it as something else.
bool isPlainYamlKey(std::string_view key);

class JsonWriter {
  public:
    JsonWriter(std::string& out, JsonLayout layout)
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
        out_ += value ? "true" : "false";
    }

  private:
    void beforeValue();
    void startElement();
    void open(char bracket);
    void close(char bracket);
    void lineBreak();

    std::string& out_;
    bool indented_;
    bool afterKey_ = false;
    // One entry per open container: whether it has an element yet.
    std::vector<bool> hasElements_;
};

class YamlWriter {
  public:
    explicit YamlWriter(std::string& out) : out_(out) {}

    void beginObject() { beginContainer(false); }
    void endObject() { endContainer(); }
    void beginArray() { beginContainer(true); }
    void endArray() { endContainer(); }
    void key(std::string_view name);
    void stringValue(std::string_view text) {
        startScalar();
        appendJsonString(out_, text);  // JSON's escaping is valid YAML double-quoted style
        out_ += '\n';
    }
    void intValue(std::int64_t value) {
        startScalar();
        appendJsonInt(out_, value);
        out_ += '\n';
    }
    void boolValue(bool value) {
        startScalar();
        out_ += value ? "true\n" : "false\n";
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

    std::string& out_;
    std::vector<Frame> frames_;
};

}  // namespace numadra::api::detail
