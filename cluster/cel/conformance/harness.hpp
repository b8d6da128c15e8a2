#pragma once
// The CEL conformance harness: reads the conformance tests exported as JSON by
// fetch_cel_spec.sh (cel.expr.conformance.test.SimpleTest messages in proto3 JSON form), turns
// the expected cel.expr.Value into a cel::Value, finds the tests outside the tier's scope from
// their data alone (protobuf messages and enums, features Kubernetes' CEL environment does not
// have), compares results strictly (types must match; NaN equals NaN), and reads the committed
// expectations (expectations.txt: per file the counts that must come out, and every test skipped
// by name with its reason).

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
#include "numadra/cel/checker.hpp"
#include "numadra/cel/types.hpp"
#include "numadra/common/result.hpp"

namespace numadra::cel::conformance {

// Why a test is not run, found in its data (never in the engine's answers): its class is one of
// the kScope* names below, its detail says what in the test needs it.
struct OutOfScope {
    std::string reasonClass;
    std::string detail;
};

// Protobuf messages (TestAllTypes, google.protobuf.* wrappers/Any/Struct, message values and
// message-typed variables): Kubernetes' objects are OpenAPI schemas, not messages.
inline constexpr std::string_view kScopeProtobufMessage = "protobuf-message";
// Protobuf enums (GlobalEnum, enum values): out of scope with the messages that declare them.
inline constexpr std::string_view kScopeProtobufEnum = "protobuf-enum";
// A library, macro, syntax or evaluation mode Kubernetes' CEL environment does not have
// (math.*, base64.*, cel.block, backtick field names, containers, unknowns, disabled macros).
inline constexpr std::string_view kScopeNotInKubernetes = "not-in-kubernetes";
// The test declares a function of its own (the cel-spec gives its signature, not its code).
inline constexpr std::string_view kScopeTestFunction = "test-function";

struct TestCase {
    std::string section;
    std::string name;
    std::string description;
    std::string expr;
    std::optional<OutOfScope> outOfScope;
    // Set when the test's JSON could not be understood; the test counts as failed.
    std::optional<std::string> malformed;
    bool expectError = false;
    std::string expectedErrorText;  // the upstream messages, informational only
    Value expected;
    // typedResult: the type the checker must deduce; checkOnly: that is all to compare.
    TypePtr expectedType;
    bool checkOnly = false;
    std::vector<std::pair<std::string, Value>> bindings;
    // disable_check false: compiled with the type checker (Kubernetes' declarations plus the
    // test's variables), as the CEL project's runner checks it.
    bool checked = true;
    std::vector<std::pair<std::string, TypePtr>> variables;  // the type_env identifiers
    // The type_env functions (a check-only test may declare its own; the checker resolves them).
    std::vector<std::pair<std::string, OverloadDeclaration>> functions;

    std::string fullName(std::string_view file) const;
};

struct TestFile {
    std::string name;
    std::vector<TestCase> tests;
};

// A cel.expr.Value in proto3 JSON form. Errors name what is malformed; a protobuf message or
// enum value yields an Error whose message starts with "out of scope: <class>: ".
Result<Value> valueFromJson(const nlohmann::json& json);

// A cel.expr.Type in proto3 JSON form ({"primitive": "INT64"}, {"listType": ...}, ...); a
// message or wrapper type is an Error starting with "out of scope: protobuf-message: ".
Result<TypePtr> typeFromJson(const nlohmann::json& json);

// Why a test is out of scope, if it is (from its expression, fields, type_env and bindings).
std::optional<OutOfScope> outOfScope(const nlohmann::json& test);

// One SimpleTest; never fails (problems end up in TestCase::malformed / outOfScope).
TestCase parseTest(std::string section, const nlohmann::json& test);

// A file written by export_cel_spec.mjs: {"name", "sections": [{"name", "tests": [...]}]}.
Result<TestFile> parseTestFile(const nlohmann::json& json);
Result<TestFile> loadTestFile(const std::filesystem::path& path);

// The names of the files index.json lists (written next to them by export_cel_spec.mjs).
Result<std::vector<std::string>> loadIndex(const std::filesystem::path& dataDir);

// The committed expectations (expectations.txt), in the format of every expectation file
// (tests/upstream/README.md, "Expectation files": fields separated by " | ", the last taking the
// rest of the line; # comments; a malformed line or a name given twice is an error naming the
// line). Two kinds of entry:
//   file | <name> | passed=<n> [<class>=<n>]...
//       the counts of one file: passed, unchecked, listed, and each out-of-scope class (a class
//       not given is 0)
//   skip | <file>/<section>/<test> | <class> | <answer start> | <why>
//       one test skipped by name; <answer start> is how numadra's answer starts (describe() of
//       the value, or "compile error: ...").
// A test skipped by name still runs: kubernetes-differs and engine-gap must not pass (a pass
// makes the skip stale: the tier fails); kubernetes-refuses must be refused by the type checker,
// then runs unchecked and must pass.
inline constexpr std::string_view kEntrySeparator = " | ";
struct FileExpectation {
    std::map<std::string, int, std::less<>> counts;  // "passed", "unchecked", ... -> count
};
struct ListedSkip {
    std::string reasonClass;
    std::string reason;
    std::string answer;  // how numadra's answer starts
};
struct Expectations {
    std::map<std::string, FileExpectation, std::less<>> files;
    std::map<std::string, ListedSkip, std::less<>> skips;  // by full test name
};
// Kubernetes' CEL (cel-go v0.29.2 in upstream's DRA environment) answers otherwise than the
// cel-spec, and numadra answers as Kubernetes does.
inline constexpr std::string_view kListedKubernetesDiffers = "kubernetes-differs";
// Kubernetes' type checker refuses the expression (cel-go's HomogeneousAggregateLiterals), and
// so does numadra's; the test's evaluation is judged unchecked.
inline constexpr std::string_view kListedKubernetesRefuses = "kubernetes-refuses";
// numadra fails where Kubernetes passes (a known gap, with where it is closed).
inline constexpr std::string_view kListedEngineGap = "engine-gap";
// `source` names the text in errors ("<source>:<line>: ...").
Result<Expectations> parseExpectations(std::string_view text,
                                       std::string_view source = "expectations");
Result<Expectations> loadExpectations(const std::filesystem::path& path);

// The compile options of a test: a checked test gets Kubernetes' declarations (the DRA
// environment's, numadra::dracel) with its own variables added; an unchecked one none.
CompileOptions compileOptionsFor(const TestCase& test);

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
