#include <gtest/gtest.h>
#include <unistd.h>

#include <sstream>

#include "numadra/documents/documents.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::documents {
namespace {

using numadra::testing::TempTree;

std::string parseError(std::string_view text, const std::string& file = "claims.yaml") {
    auto objects = parse(text, file);
    EXPECT_FALSE(objects.ok()) << "parsed " << text;
    return objects.ok() ? std::string() : objects.error().message;
}

std::string loadError(const std::vector<std::string>& paths) {
    std::istringstream in;
    auto objects = load(paths, in);
    EXPECT_FALSE(objects.ok());
    return objects.ok() ? std::string() : objects.error().message;
}

TEST(Errors, YamlSyntaxErrorNamesFileDocumentLineAndColumn) {
    EXPECT_EQ(parseError("kind: Pod\n---\nkind: Pod\nmetadata:\n  name: a: b\n"),
              "claims.yaml, document 2 (line 5, column 10): illegal map value");
}

TEST(Errors, UnclosedFlowSequenceNamesItsDocument) {
    EXPECT_EQ(parseError("a: 1\n---\n---\nb: [1, 2\n"),
              "claims.yaml, document 3 (line 5, column 1): end of sequence flow not found");
}

TEST(Errors, BadIndentationNamesTheLine) {
    const std::string message = parseError("a:\n  b: 1\n c: 2\n");
    EXPECT_EQ(message.rfind("claims.yaml, document 1 (line 3, column ", 0), 0u) << message;
}

TEST(Errors, JsonSyntaxErrorNamesFileDocumentLineAndColumn) {
    const std::string message = parseError("{\"a\": 1}\n{\"b\":\n  }\n", "c.json");
    EXPECT_EQ(message.rfind("c.json, document 2 (line 3, column 3): syntax error while parsing "
                            "value",
                            0),
              0u)
        << message;
}

TEST(Errors, TruncatedJsonNamesTheEnd) {
    const std::string message = parseError("{\"a\": [1, 2", "c.json");
    EXPECT_EQ(message.rfind("c.json, document 1 (line 1, column 11): ", 0), 0u) << message;
    EXPECT_NE(message.find("unexpected end of input"), std::string::npos) << message;
}

TEST(Errors, YamlDocumentThatIsNotAMappingIsAnError) {
    EXPECT_EQ(parseError("kind: Pod\n---\n- a\n- b\n"),
              "claims.yaml, document 2 (line 3, column 1): document is not a mapping (a "
              "Kubernetes object): got array");
    EXPECT_EQ(parseError("hello\n"),
              "claims.yaml, document 1 (line 1, column 1): document is not a mapping (a "
              "Kubernetes object): got string \"hello\"");
}

TEST(Errors, JsonValueThatIsNotAnObjectIsAnError) {
    EXPECT_EQ(parseError("{}\n  42\n", "n.json"),
              "n.json, document 2 (line 2, column 3): document is not a mapping (a Kubernetes "
              "object): got integer 42");
}

TEST(Errors, JunkAfterJsonIsAnError) {
    const std::string message = parseError("{\"a\": 1} garbage", "j.json");
    EXPECT_EQ(message.rfind("j.json, document 2 (line 1, column 10): ", 0), 0u) << message;
}

TEST(Errors, ListItemThatIsNotAMappingNamesTheItem) {
    EXPECT_EQ(parseError("kind: List\nitems:\n- kind: Pod\n- just text\n"),
              "claims.yaml, document 1, item 2 (line 4): list item is not a mapping (a "
              "Kubernetes object): got string \"just text\"");
}

TEST(Errors, ListItemsThatAreNotAnArrayAreAnError) {
    EXPECT_EQ(parseError("kind: List\nitems: {a: 1}\n"),
              "claims.yaml, document 1 (line 1): items: expected an array, got object");
}

TEST(Errors, DuplicateYamlKeyNamesItsPosition) {
    EXPECT_EQ(parseError("metadata:\n  name: a\n  name: b\n"),
              "claims.yaml, document 1 (line 3, column 3): duplicate key \"name\"");
}

TEST(Errors, DuplicateJsonKeyNamesItsPath) {
    EXPECT_EQ(parseError(R"({"spec": {"devices": [{"n": 1, "n": 2}]}})", "d.json"),
              "d.json, document 1: duplicate key \"n\" in spec.devices[0]");
}

TEST(Errors, ComplexMappingKeyIsAnError) {
    const std::string message = parseError("? [a, b]\n: c\n");
    EXPECT_NE(message.find("a mapping key must be a scalar"), std::string::npos) << message;
}

TEST(Errors, ScalarThatDoesNotFitItsTagIsAnError) {
    EXPECT_EQ(parseError("a: !!int twelve\n"),
              "claims.yaml, document 1 (line 1, column 4): \"twelve\" is not a valid !!int");
}

TEST(Errors, UndefinedAliasIsAnError) {
    const std::string message = parseError("a: *nowhere\n");
    EXPECT_EQ(message.rfind("claims.yaml, document 1 (line 1, column 4): ", 0), 0u) << message;
}

TEST(Errors, AliasInsideItsOwnAnchorIsAnError) {
    const std::string message = parseError("a: &x [1, *x]\n");
    EXPECT_EQ(message.rfind("claims.yaml, document 1 (line 1, column 11): ", 0), 0u) << message;
}

TEST(Errors, MergeOfAScalarIsAnError) {
    const std::string message = parseError("a: {<<: 5}\n");
    EXPECT_NE(message.find("merge key"), std::string::npos) << message;
}

TEST(Errors, InvalidUtf8InYamlIsAnError) {
    const std::string message = parseError("a: \xC3\x28\n");
    EXPECT_EQ(message, "claims.yaml, document 1 (line 1, column 4): invalid UTF-8");
}

TEST(Errors, InvalidUtf8InJsonIsAnError) {
    const std::string message = parseError("{\"a\": \"\xC3\x28\"}", "u.json");
    EXPECT_NE(message.find("UTF-8"), std::string::npos) << message;
}

TEST(Errors, MissingFileNamesThePath) {
    TempTree tree;
    EXPECT_EQ(loadError({tree.path("nope.yaml")}),
              "cannot read " + tree.path("nope.yaml") + ": No such file or directory");
}

TEST(Errors, EmptyPathIsAnError) {
    EXPECT_EQ(loadError({""}), "cannot read \"\": No such file or directory");
}

TEST(Errors, PathThroughAFileNamesThePath) {
    TempTree tree;
    tree.file("a.yaml", "kind: Pod\n");
    EXPECT_EQ(loadError({tree.path("a.yaml/b.yaml")}),
              "cannot read " + tree.path("a.yaml/b.yaml") + ": Not a directory");
}

TEST(Errors, UnreadableDirectoryNamesThePath) {
    if (::geteuid() == 0)
        GTEST_SKIP() << "root reads any directory";
    TempTree tree;
    tree.dir("locked");
    std::filesystem::permissions(tree.path("locked"), std::filesystem::perms::none);
    const std::string message = loadError({tree.path("locked")});
    std::filesystem::permissions(tree.path("locked"), std::filesystem::perms::owner_all);
    EXPECT_EQ(message, "cannot read directory " + tree.path("locked") + ": Permission denied");
}

TEST(Errors, ErrorInADirectoryFileNamesThatFile) {
    TempTree tree;
    tree.file("dir/a.yaml", "kind: Pod\n");
    tree.file("dir/b.yaml", "kind: Pod\n---\nkind: [\n");
    const std::string message = loadError({tree.path("dir")});
    EXPECT_EQ(message.rfind(tree.path("dir/b.yaml") + ", document 2 (line ", 0), 0u) << message;
}

TEST(Errors, StandardInputErrorsNameIt) {
    std::istringstream in("a: [\n");
    auto objects = load({"-"}, in);
    ASSERT_FALSE(objects.ok());
    EXPECT_EQ(objects.error().message.rfind("<stdin>, document 1 (line ", 0), 0u)
        << objects.error().message;
}

}  // namespace
}  // namespace numadra::documents
