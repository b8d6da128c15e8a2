#pragma once
// Shared by the YAML and JSON readers of documents.cpp; not part of the library's interface.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/documents/documents.hpp"

namespace numadra::documents::internal {

// Deepest nesting of sequences/mappings accepted: deeper input could exhaust the stack of a
// recursive parser or of a later Json::dump().
inline constexpr std::size_t kMaxDepth = 256;
// Nodes that aliases may add to one YAML document ("billion laughs").
inline constexpr std::size_t kMaxAliasNodes = 1000000;

// One document of a file before List flattening.
struct RawDocument {
    Json json;  // null for an empty document
    int line = 0;
    int column = 0;
    std::vector<int> itemLines;  // lines of the items of a top-level "items" sequence (YAML)
};

// "file, document N (line L, column C): message"; line 0 leaves the location out.
Error documentError(const std::string& file, int document, int line, int column,
                    std::string_view message);

bool isValidUtf8(std::string_view text);

// The documents of a YAML stream / a JSON stream (one or more concatenated values).
Result<std::vector<RawDocument>> parseYaml(std::string_view text, const std::string& file);
Result<std::vector<RawDocument>> parseJson(std::string_view text, const std::string& file);

}  // namespace numadra::documents::internal
