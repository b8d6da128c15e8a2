#include <gtest/gtest.h>

#include <sstream>

#include "numadra/documents/documents.hpp"
#include "numadra/testing/temp_tree.hpp"

namespace numadra::documents {
namespace {

using numadra::testing::TempTree;

std::vector<Object> parseOk(std::string_view text, const std::string& file = "x.yaml") {
    auto objects = parse(text, file);
    EXPECT_TRUE(objects.ok()) << (objects.ok() ? "" : objects.error().message);
    return objects.ok() ? std::move(objects).value() : std::vector<Object>{};
}

std::vector<Object> loadOk(const std::vector<std::string>& paths, const std::string& input = "") {
    std::istringstream in(input);
    auto objects = load(paths, in);
    EXPECT_TRUE(objects.ok()) << (objects.ok() ? "" : objects.error().message);
    return objects.ok() ? std::move(objects).value() : std::vector<Object>{};
}

std::vector<std::string> names(const std::vector<Object>& objects) {
    std::vector<std::string> out;
    for (const auto& o : objects)
        out.push_back(o.name());
    return out;
}

TEST(Source, DescribesDocumentAndItemCountingFromOne) {
    EXPECT_EQ((Source{"claims.yaml", 1, 2, 0}).describe(), "claims.yaml, document 2, item 3");
    EXPECT_EQ((Source{"claims.yaml", 0, std::nullopt, 0}).describe(), "claims.yaml, document 1");
}

TEST(Parse, MultiDocumentYamlGivesOneObjectPerDocument) {
    auto objects = parseOk("kind: Pod\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\n",
                           "pods.yaml");
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(names(objects), (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(objects[1].source, (Source{"pods.yaml", 1, std::nullopt, 4}));
}

TEST(Parse, EmptyDocumentsAreSkippedButKeepTheirPlaceInTheCount) {
    auto objects = parseOk("---\n# only a comment\n---\n---\nkind: Pod\n---\nnull\n---\n");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].source.document, 2);
}

TEST(Parse, EmptyTextGivesNoObjects) {
    EXPECT_TRUE(parseOk("").empty());
    EXPECT_TRUE(parseOk("  \n\n# nothing\n").empty());
}

TEST(Parse, JsonObject) {
    auto objects = parseOk(R"({"kind": "Pod", "metadata": {"name": "a"}, "n": 1.5})", "a.json");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].json, Json::parse(R"({"kind":"Pod","metadata":{"name":"a"},"n":1.5})"));
    EXPECT_EQ(objects[0].source, (Source{"a.json", 0, std::nullopt, 1}));
}

TEST(Parse, ConcatenatedJsonValuesAreSeparateDocuments) {
    auto objects = parseOk(
        "{\"metadata\":{\"name\":\"a\"}}{\"metadata\":{\"name\":\"b\"}}\n\n"
        "  {\"metadata\":{\"name\":\"c\", \"x\": \"}{\"}}\n",
        "s.json");
    EXPECT_EQ(names(objects), (std::vector<std::string>{"a", "b", "c"}));
    ASSERT_EQ(objects.size(), 3u);
    EXPECT_EQ(objects[2].source.document, 2);
    EXPECT_EQ(objects[2].source.line, 3);
}

TEST(Parse, ContentNotTheFileNameDecidesBetweenJsonAndYaml) {
    // As JSON, "0x10" would be a syntax error and 010 a leading-zero error: both prove the
    // JSON parser was used (YAML would read them as 16 and 10).
    auto asYaml = parse("a: 010\n", "x.json");
    ASSERT_TRUE(asYaml.ok());  // YAML content in a .json file is read as YAML
    EXPECT_FALSE(parse("{\"a\": 010}", "x.yaml").ok());
}

TEST(Parse, JsonArrayOfObjectsIsNotAList) {
    auto result = parse(R"([{"kind":"Pod"}])", "a.json");
    ASSERT_FALSE(result.ok());
    EXPECT_NE(result.error().message.find("not a mapping"), std::string::npos);
}

TEST(Parse, Utf8ByteOrderMarkIsIgnored) {
    EXPECT_EQ(parseOk("\xEF\xBB\xBF{\"kind\":\"Pod\"}", "a.json").size(), 1u);
    EXPECT_EQ(parseOk("\xEF\xBB\xBFkind: Pod\n").size(), 1u);
}

TEST(Parse, MapKeyOrderIsKept) {
    auto objects = parseOk("z: 1\na: 2\nm: {y: 1, b: 2}\n");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].json.dump(), R"({"z":1,"a":2,"m":{"y":1,"b":2}})");
}

TEST(Parse, ListItemsAreFlattenedKeepingTheirItemIndexAndLine) {
    auto objects = parseOk(R"(kind: Pod
metadata: {name: first}
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: a}
- apiVersion: resource.k8s.io/v1
  kind: ResourceClaim
  metadata: {name: b}
)",
                           "all.yaml");
    ASSERT_EQ(objects.size(), 3u);
    EXPECT_EQ(names(objects), (std::vector<std::string>{"first", "a", "b"}));
    EXPECT_EQ(objects[1].source, (Source{"all.yaml", 1, 0, 7}));
    EXPECT_EQ(objects[2].source, (Source{"all.yaml", 1, 1, 10}));
    EXPECT_EQ(objects[2].source.describe(), "all.yaml, document 2, item 2");
    EXPECT_EQ(objects[2].kind(), "ResourceClaim");
}

TEST(Parse, JsonListItemsAreFlattened) {
    auto objects = parseOk(
        R"({"kind":"List","items":[{"kind":"Pod","metadata":{"name":"a"}},{"kind":"Pod"}]})",
        "l.json");
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(objects[1].source.item, 1);
    EXPECT_EQ(objects[1].source.document, 0);
}

TEST(Parse, TypedListItemsGetTheListsKindAndApiVersion) {
    auto objects = parseOk(R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaimList
metadata: {resourceVersion: "5"}
items:
- metadata: {name: a}
- kind: Other
  apiVersion: x/v1
)");
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(
        objects[0].json.dump(),
        R"({"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"a"}})");
    EXPECT_EQ(objects[1].kind(), "Other");
    EXPECT_EQ(objects[1].apiVersion(), "x/v1");
}

TEST(Parse, ListWithoutItemsGivesNoObjects) {
    EXPECT_TRUE(parseOk("kind: List\n").empty());
    EXPECT_TRUE(parseOk("kind: List\nitems: null\n").empty());
    EXPECT_TRUE(parseOk("kind: List\nitems: []\n").empty());
}

TEST(Parse, KindEndingInListWithoutItemsIsAnOrdinaryObject) {
    auto objects = parseOk("kind: PodChecklist\nspec: {}\n");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].kind(), "PodChecklist");
}

TEST(Parse, AnchorsAndAliasesAreExpanded) {
    auto objects = parseOk("base: &b {x: 1, y: [a, b]}\ncopy: *b\nname: &n gpu\nagain: *n\n");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].json["copy"], objects[0].json["base"]);
    EXPECT_EQ(objects[0].json["again"], "gpu");
}

TEST(Parse, MergeKeysAddTheEntriesTheMappingLacks) {
    auto objects = parseOk(R"(defaults: &d {a: 1, b: 2}
other: &o {b: 3, c: 4}
m:
  a: 10
  <<: [*d, *o]
  c: 40
)");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].json["m"].dump(), R"({"a":10,"b":2,"c":40})");
}

TEST(Parse, QuotedMergeKeyIsAnOrdinaryKey) {
    auto objects = parseOk("\"<<\": {a: 1}\n");
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].json.dump(), R"({"<<":{"a":1}})");
}

TEST(Object, AccessorsGiveEmptyStringsForMissingFields) {
    auto objects = parseOk(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ns}\n---\n"
        "kind: 5\nmetadata: x\n");
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(objects[0].apiVersion(), "v1");
    EXPECT_EQ(objects[0].kind(), "Pod");
    EXPECT_EQ(objects[0].name(), "p");
    EXPECT_EQ(objects[0].namespaceName(), "ns");
    EXPECT_EQ(objects[1].kind(), "");
    EXPECT_EQ(objects[1].name(), "");
    EXPECT_EQ(objects[1].apiVersion(), "");
}

TEST(Load, ReadsFilesInTheOrderGiven) {
    TempTree tree;
    tree.file("b.yaml", "metadata: {name: b}\n");
    tree.file("a.json", R"({"metadata": {"name": "a"}})");
    auto objects = loadOk({tree.path("b.yaml"), tree.path("a.json")});
    EXPECT_EQ(names(objects), (std::vector<std::string>{"b", "a"}));
    ASSERT_EQ(objects.size(), 2u);
    EXPECT_EQ(objects[0].source.file, tree.path("b.yaml"));
    EXPECT_EQ(objects[1].source.file, tree.path("a.json"));
}

TEST(Load, ExplicitFileIsReadWhateverItsExtension) {
    TempTree tree;
    tree.file("claims.txt", "metadata: {name: t}\n");
    EXPECT_EQ(names(loadOk({tree.path("claims.txt")})), (std::vector<std::string>{"t"}));
}

TEST(Load, DirectoryGivesItsManifestFilesSortedByNameAndNotRecursively) {
    TempTree tree;
    tree.file("dir/b.yaml", "metadata: {name: b}\n---\nmetadata: {name: b2}\n");
    tree.file("dir/a.json", R"({"metadata": {"name": "a"}})");
    tree.file("dir/c.yml", "metadata: {name: c}\n");
    tree.file("dir/B.yaml", "metadata: {name: B}\n");
    tree.file("dir/notes.txt", "metadata: {name: txt}\n");
    tree.file("dir/README", "not yaml: [\n");
    tree.file("dir/sub/d.yaml", "metadata: {name: d}\n");
    tree.dir("dir/e.yaml.d");
    tree.dir("dir/folder.yaml");
    auto objects = loadOk({tree.path("dir")});
    EXPECT_EQ(names(objects), (std::vector<std::string>{"B", "a", "b", "b2", "c"}));
    ASSERT_EQ(objects.size(), 5u);
    EXPECT_EQ(objects[1].source.file, tree.path("dir/a.json"));
}

TEST(Load, DirectoryWithATrailingSlashGivesCleanFileNames) {
    TempTree tree;
    tree.file("dir/a.yaml", "metadata: {name: a}\n");
    auto objects = loadOk({tree.path("dir") + "/"});
    ASSERT_EQ(objects.size(), 1u);
    EXPECT_EQ(objects[0].source.file, tree.path("dir/a.yaml"));
}

TEST(Load, SymlinkedManifestInADirectoryIsRead) {
    TempTree tree;
    tree.file("real/x.data", "metadata: {name: linked}\n");
    tree.link("dir/a.yaml", tree.path("real/x.data"));
    tree.link("dir/dangling.yaml", tree.path("real/missing"));
    EXPECT_EQ(names(loadOk({tree.path("dir")})), (std::vector<std::string>{"linked"}));
}

TEST(Load, DashReadsStandardInput) {
    TempTree tree;
    tree.file("a.yaml", "metadata: {name: a}\n");
    auto objects = loadOk({tree.path("a.yaml"), "-"},
                          "metadata: {name: s}\n---\n"
                          "metadata: {name: t}\n");
    EXPECT_EQ(names(objects), (std::vector<std::string>{"a", "s", "t"}));
    ASSERT_EQ(objects.size(), 3u);
    EXPECT_EQ(objects[2].source.describe(), "<stdin>, document 2");
}

TEST(Load, StandardInputMayBeJson) {
    auto objects = loadOk({"-"}, R"({"metadata":{"name":"j"}})");
    EXPECT_EQ(names(objects), (std::vector<std::string>{"j"}));
}

TEST(Load, DashGivenTwiceIsAnError) {
    std::istringstream in("kind: Pod\n");
    auto objects = load({"-", "-"}, in);
    ASSERT_FALSE(objects.ok());
    EXPECT_EQ(objects.error().message, "standard input (\"-\") is named more than once");
}

TEST(Load, NoPathsGivesNoObjects) {
    EXPECT_TRUE(loadOk({}).empty());
}

}  // namespace
}  // namespace numadra::documents
