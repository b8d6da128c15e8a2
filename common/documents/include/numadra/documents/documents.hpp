#pragma once
// Kubernetes objects read from YAML or JSON files, the way `kubectl apply -f` reads them, for
// the offline allocator `dra-allocate [options] FILE_OR_DIR...`.
//
// What is read:
//  - A path "-" is standard input (read once; naming "-" twice is an error).
//  - A directory: every regular file (or symlink to one) directly inside it whose name ends in
//    .yaml, .yml or .json, in byte order of the names. Not recursive: subdirectories and other
//    files are ignored (kubectl -f DIR without -R). Paths are read in the order given.
//  - A file whose first character other than whitespace (after an optional UTF-8 BOM) is '{' or
//    '[' is JSON, whatever its name: one value or several concatenated ("{..}{..}" or one per
//    line). Anything else is YAML, possibly several documents separated by "---".
//  - A document that is empty (or just null) is skipped; any other document must be a mapping.
//  - A document of kind "List", or of a kind ending in "List" that has "items", is replaced by
//    its items, each keeping its index (Source::item). Items of a typed list ("ResourceClaimList")
//    that lack kind/apiVersion get the list's ("ResourceClaim", the list's apiVersion), as the
//    API server leaves them out. Lists inside lists are not flattened again.
//
// YAML plain (unquoted) scalars are typed with the YAML 1.2 core schema:
//  - null, Null, NULL, ~ and the empty scalar -> null
//  - true/True/TRUE, false/False/FALSE -> bool (yes/no/on/off stay strings, unlike YAML 1.1)
//  - [-+]?[0-9]+ decimal (so 010 is 10), 0o[0-7]+ octal, 0x[0-9a-fA-F]+ hex -> integer: int64
//    when it fits, else uint64 when it fits; a larger decimal becomes a double (as kubectl's
//    YAML reader does), a larger octal/hex stays a string
//  - [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? -> double (1e3 is the double 1000;
//    one that overflows a double stays a string); [-+]?.inf/.Inf/.INF and .nan/.NaN/.NAN ->
//    double infinity/NaN (which JSON cannot write: Json::dump() prints them as null)
//  - anything else -> string.
// Quoted scalars, and scalars tagged "!" or with a tag outside the core schema, are strings;
// !!str/!!null/!!bool/!!int/!!float force that type (an error when the text is not of it).
// Map keys are the key's text whatever its type ("1: a" -> key "1", a null key -> "null"); a
// sequence or mapping as a key is an error, and so is a key given twice in one mapping (JSON
// too; kubectl --validate=strict refuses them as well). Anchors and aliases are expanded
// (aliases adding more than a million nodes to a document are refused); merge keys ("<<: *base"
// or "<<: [*a, *b]") add the entries the mapping does not have itself, earlier maps winning.
// Nesting deeper than 256 levels is refused, so no input can exhaust the stack. JSON numbers
// are int64, uint64 or double the same way. Text must be valid UTF-8.
//
// Errors name the file, the document and, when known, the line and column:
//   "claims.yaml, document 2 (line 14, column 3): illegal map value"

#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::documents {

using Json = nlohmann::ordered_json;

// Where an object came from. Indexes are 0-based; describe() shows them 1-based, as a person
// counts ("document 1" is the first document of the file).
struct Source {
    // The path as given (joined with the file's name for a directory), or "<stdin>".
    std::string file;
    // Index of the document in the file: of the YAML "---" documents, empty ones included, or of
    // the values of a JSON stream.
    int document = 0;
    // Index in the List's items, for an object that came from a List.
    std::optional<int> item;
    // 1-based line where the document (or List item) starts; 0 when unknown (JSON List items).
    int line = 0;

    // "claims.yaml, document 2" or "claims.yaml, document 2, item 3".
    std::string describe() const;
    bool operator==(const Source&) const = default;
};

struct Object {
    Json json;  // always an object
    Source source;

    // Top-level string fields, "" when absent or not a string.
    std::string apiVersion() const;
    std::string kind() const;
    std::string name() const;           // metadata.name
    std::string namespaceName() const;  // metadata.namespace
};

// Name used in Source::file for standard input.
inline constexpr const char* kStdinName = "<stdin>";

// Reads the paths in order (see above). The first error ends the load.
Result<std::vector<Object>> load(const std::vector<std::string>& paths, std::istream& stdinStream);

// The objects in one file's text; `fileName` only names the source.
Result<std::vector<Object>> parse(std::string_view text, const std::string& fileName);

}  // namespace numadra::documents
