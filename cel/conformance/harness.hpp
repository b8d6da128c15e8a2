#pragma once
// The CEL conformance harness: reads the conformance tests exported as JSON by
// fetch_cel_spec.sh (cel.expr.conformance.test.SimpleTest messages in proto3 JSON form), turns
// the expected cel.expr.Value into a cel::Value, decides which tests need features outside the
// interpreter's scope (and says why), and compares results strictly (types must match; NaN
// equals NaN).

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numadra/cel/cel.hpp"
#include "numadra/common/result.hpp"

namespace numadra::cel::conformance {

struct TestCase {
    std::string section;
    std::string name;
    std::string description;
    std::string expr;
    // Set when the test needs a feature outside the interpreter's scope; such a test is not run
    // by default but listed with this reason.
    std::optional<std::string> unsupported;
    // Set when the test's JSON could not be understood; the test counts as failed.
    std::optional<std::string> malformed;
    bool expectError = false;
    std::string expectedErrorText;  // the upstream messages, informational only
    Value expected;
    std::vector<std::pair<std::string, Value>> bindings;
    // The test's type_env when it is type-checked (disable_check false): compile with these
    // declarations, so undeclared references fail as a checker reports them.
    std::optional<Declarations> declarations;

    std::string fullName(std::string_view file) const;
};

struct TestFile {
    std::string name;
    std::vector<TestCase> tests;
};

// A cel.expr.Value in proto3 JSON form. Errors name what is malformed; an unsupported kind
// (objectValue, enumValue) yields an Error whose message starts with "unsupported: ".
Result<Value> valueFromJson(const nlohmann::json& json);

// Names of the optional extension functions (CEL's strings extension beyond the subset the
// interpreter must have) that the interpreter was found to implement: "charAt", "lastIndexOf",
// "format", "reverse", "strings.quote". Tests using one that is absent are unsupported.
using Extensions = std::set<std::string, std::less<>>;

// Per extension function: an expression that evaluates to true when the interpreter implements
// it. The runner evaluates these to fill an Extensions set.
const std::vector<std::pair<std::string, std::string>>& extensionProbes();

// Whole sections outside the interpreter's scope, by (file, section), with the reason.
const std::map<std::pair<std::string, std::string>, std::string>& skippedSections();

// Single tests whose expectation the cel-go version Kubernetes pins does not share (the
// interpreter follows Kubernetes), by (file, section, test), with the reason.
const std::map<std::vector<std::string>, std::string>& skippedTests();

// The declarations a type-checked test (type_env given, disable_check false) compiles with.
std::optional<Declarations> declarationsOf(const nlohmann::json& test);

// The reason a test is outside the interpreter's scope, if it is.
std::optional<std::string> unsupportedFeature(const nlohmann::json& test,
                                              const Extensions& supported = {});

// One SimpleTest; never fails (problems end up in TestCase::malformed / unsupported).
TestCase parseTest(std::string section, const nlohmann::json& test,
                   const Extensions& supported = {});

// A file written by export_cel_spec.mjs: {"name", "sections": [{"name", "tests": [...]}]}.
Result<TestFile> parseTestFile(const nlohmann::json& json, const Extensions& supported = {});
Result<TestFile> loadTestFile(const std::filesystem::path& path, const Extensions& supported = {});

// Strict equality: the same kind of value (1 != 1u != 1.0), NaN equal to NaN, lists and maps
// element-wise, errors equal to errors whatever their message.
bool sameValue(const Value& a, const Value& b);

// CEL-like literal text, e.g. [1, 2u, "x", b"\xff", {"k": 1.5}], error("...").
std::string describe(const Value& value);

// `text` with control characters (other than newline and tab) shown as \xNN, for printing
// expressions whose literals hold raw control bytes.
std::string printable(std::string_view text);

// Standard base64 (RFC 4648), padding optional; also accepts the URL-safe alphabet.
Result<std::string> decodeBase64(std::string_view text);

}  // namespace numadra::cel::conformance
