#pragma once
// Typed, strict access to the fields of a loaded object, for the parsers of ResourceSlice,
// DeviceClass, ResourceClaim and Pod. Every error names the source and the field path:
//   "claims.yaml, document 2: spec.devices.requests[0].exactly.count: expected an integer, got
//    string \"two\""
//
// A field that is absent and a field that is null are the same ("optional" accessors give
// std::nullopt, as Go's JSON decoding leaves the field unset). Types are never coerced: a string
// "2" is not an integer and 2 is not a string, as for the API server. An integer field accepts a
// number with no fractional part (YAML "1e3" or "2.0"), which kubectl's YAML-to-JSON conversion
// also turns into an integer.
//
//   Status parseRequest(const Reader& r, Request& out) {
//       if (auto ok = r.rejectUnknownFields({"name", "exactly"}); !ok) return ok;
//       auto name = r.requiredString("name");
//       if (!name) return name.error();
//       out.name = *name;
//       return r.each("selectors", [&](const Reader& selector) -> Status { ... });
//   }

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/documents/documents.hpp"

namespace numadra::documents {

// A path to a field in the style of Kubernetes' field.Path:
//   FieldPath("spec").field("devices").index(2).field("count").str() == "spec.devices[2].count"
//   FieldPath("metadata").field("labels").key("app").str() == "metadata.labels[app]"
class FieldPath {
  public:
    FieldPath() = default;  // the object itself: str() == ""
    explicit FieldPath(std::string_view first) : text_(first) {}

    [[nodiscard]] FieldPath field(std::string_view name) const;
    [[nodiscard]] FieldPath index(std::size_t i) const;
    [[nodiscard]] FieldPath key(std::string_view mapKey) const;  // an entry of a map

    const std::string& str() const { return text_; }
    bool empty() const { return text_.empty(); }
    bool operator==(const FieldPath&) const = default;

  private:
    std::string text_;
};

// One node of an object with where it is. Keeps a pointer to the Json: the Object (or Json) it
// was made from must outlive it. Cheap to copy.
class Reader {
  public:
    explicit Reader(const Object& object) : Reader(object.json, object.source) {}
    Reader(const Json& json, Source source, FieldPath path = {});

    const Json& json() const { return *json_; }
    const Source& source() const { return source_; }
    const FieldPath& path() const { return path_; }

    // "<source>: <path>: <message>" (no path part at the object's root).
    Error error(std::string_view message) const;
    // The same for a field of this node: "<source>: <path>.<name>: <message>".
    Error fieldError(std::string_view name, std::string_view message) const;

    bool isNull() const { return json_->is_null(); }
    // The field is present and not null (false when this node is not an object).
    bool has(std::string_view name) const;
    // The field's node; a null node when absent or when this node is not an object (the typed
    // accessors report the latter).
    Reader field(std::string_view name) const;

    // ---- fields of this node (an error when this node is neither an object nor null) ----
    Result<std::optional<std::string>> optionalString(std::string_view name) const;
    Result<std::string> requiredString(std::string_view name) const;  // present; "" allowed
    Result<std::optional<std::int64_t>> optionalInt(std::string_view name) const;
    Result<std::int64_t> requiredInt(std::string_view name) const;
    Result<std::optional<double>> optionalNumber(std::string_view name) const;  // any number
    Result<std::optional<bool>> optionalBool(std::string_view name) const;
    Result<std::optional<Reader>> optionalObject(std::string_view name) const;
    Result<Reader> requiredObject(std::string_view name) const;
    Result<std::optional<Reader>> optionalArray(std::string_view name) const;
    // A list of strings; absent -> empty.
    Result<std::vector<std::string>> stringArray(std::string_view name) const;
    // A map of strings (labels, annotations, nodeSelector) in document order; absent -> empty.
    Result<std::vector<std::pair<std::string, std::string>>> stringMap(std::string_view name) const;

    // ---- this node itself ----
    Result<std::string> asString() const;
    Result<std::int64_t> asInt() const;
    Result<double> asNumber() const;
    Result<bool> asBool() const;
    Status expectObject() const;  // an object (null is not)
    Status expectArray() const;   // an array (null is not)

    // Calls fn for every item of this array (null: none), the item's path ending in "[i]".
    // Stops at the first error and returns it.
    Status each(const std::function<Status(const Reader& item)>& fn) const;
    // The same for the array in field `name` (absent or null: none).
    Status each(std::string_view name, const std::function<Status(const Reader& item)>& fn) const;
    // The keys of this object in document order (null: none).
    Result<std::vector<std::string>> keys() const;
    // Calls fn for every entry of this object (null: none), the value's path ending in "[key]".
    Status eachEntry(
        const std::function<Status(const std::string& key, const Reader& value)>& fn) const;
    Status eachEntry(
        std::string_view name,
        const std::function<Status(const std::string& key, const Reader& value)>& fn) const;
    std::size_t size() const;          // items of an array / entries of an object, else 0
    Reader item(std::size_t i) const;  // i-th item of an array (null node when out of range)

    // An error naming every field of this object not in `known` ("unknown field \"x\"", or
    // "unknown fields \"x\", \"y\""), as kubectl --validate=strict. Null: OK.
    Status rejectUnknownFields(std::initializer_list<std::string_view> known) const;
    Status rejectUnknownFields(const std::vector<std::string_view>& known) const;

  private:
    Status expectObjectOrNull() const;
    Reader child(const Json& json, FieldPath path) const;

    const Json* json_;
    Source source_;
    FieldPath path_;
};

// "string \"two\"", "integer 3", "number 1.5", "boolean true", "null", "object", "array"; long
// strings are shortened.
std::string describeValue(const Json& value);

}  // namespace numadra::documents
