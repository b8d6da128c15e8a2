#pragma once
// ResourceSlices as JSON or YAML text, written straight from the values into a string: no Json
// DOM in between. The bytes are those of toJson(...).dump() / .dump(2) and of
// toYaml(toJson(...)), which cost several times the writing (a 536-device pool is 1.2 MB of
// JSON and 12 MB of DOM).
//
// Strings are escaped as nlohmann escapes them (", \, \b \f \n \r \t, other control characters
// as \u00XX, UTF-8 kept as is). Where nlohmann's dump() throws, on invalid UTF-8, the writer
// puts U+FFFD in place of each invalid sequence, as nlohmann's error_handler_t::replace (and
// the API server's JSON decoder) does: one odd interface name must not lose a node's slices.

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/api/resource_slice.hpp"

namespace numadra::api {

enum class JsonLayout {
    Compact,   // dump(): what goes to the API server
    Indented,  // dump(2): what people read
};

// Appends the slice. A non-empty `resourceVersion` becomes metadata.resourceVersion, after the
// other metadata fields (an update; where Json's operator[] would append it).
void appendJson(std::string& out, const ResourceSlice& slice, JsonLayout layout,
                std::string_view resourceVersion = {});
// Appends a v1 List of the slices (toJsonList).
void appendJsonList(std::string& out, const std::vector<ResourceSlice>& slices, JsonLayout layout);
// Appends one YAML document without a "---" line (toYaml(toJson(slice))).
void appendYaml(std::string& out, const ResourceSlice& slice);
// Appends a "---"-separated stream, one document per slice (toYamlStream).
void appendYamlStream(std::string& out, const std::vector<ResourceSlice>& slices);

// The same two, written to a stream piece by piece as they are made (never the whole text in
// memory).
void writeJsonList(std::ostream& out, const std::vector<ResourceSlice>& slices, JsonLayout layout);
void writeYamlStream(std::ostream& out, const std::vector<ResourceSlice>& slices);

}  // namespace numadra::api
