#include "numadra/documents/reader.hpp"

#include <gtest/gtest.h>

namespace numadra::documents {
namespace {

const Source kSource{"claims.yaml", 1, std::nullopt, 0};

Object object(std::string_view yaml) {
    auto objects = parse(yaml, "claims.yaml");
    EXPECT_TRUE(objects.ok()) << objects.error().message;
    Object out = objects.ok() && !objects->empty() ? (*objects)[0] : Object{};
    out.source = kSource;
    return out;
}

TEST(FieldPath, JoinsFieldsIndexesAndKeys) {
    EXPECT_EQ(FieldPath("spec").field("devices").index(2).field("count").str(),
              "spec.devices[2].count");
    EXPECT_EQ(FieldPath("metadata").field("labels").key("app.kubernetes.io/name").str(),
              "metadata.labels[app.kubernetes.io/name]");
    EXPECT_EQ(FieldPath().field("spec").str(), "spec");
    EXPECT_EQ(FieldPath().index(0).str(), "[0]");
    EXPECT_TRUE(FieldPath().empty());
}

TEST(Reader, ReadsTypedFields) {
    const Object o = object("name: gpu\ncount: 2\nshared: true\nratio: 0.5\n");
    const Reader r(o);
    EXPECT_EQ(r.requiredString("name").value(), "gpu");
    EXPECT_EQ(r.optionalInt("count").value(), 2);
    EXPECT_EQ(r.optionalBool("shared").value(), true);
    EXPECT_EQ(r.optionalNumber("ratio").value(), 0.5);
    EXPECT_EQ(r.optionalNumber("count").value(), 2.0);
}

TEST(Reader, WrongTypeNamesSourcePathAndValue) {
    const Object o = object("spec:\n  devices:\n    requests:\n    - exactly: {count: two}\n");
    auto requests = Reader(o).field("spec").field("devices").optionalArray("requests");
    ASSERT_TRUE(requests.ok());
    ASSERT_TRUE(requests->has_value());
    auto count = (*requests)->item(0).field("exactly").optionalInt("count");
    ASSERT_FALSE(count.ok());
    EXPECT_EQ(count.error().message,
              "claims.yaml, document 2: spec.devices.requests[0].exactly.count: expected an "
              "integer, got string \"two\"");
}

TEST(Reader, AbsentAndNullFieldsAreBothMissing) {
    const Object o = object("a: null\nb: ~\n");
    const Reader r(o);
    EXPECT_EQ(r.optionalString("a").value(), std::nullopt);
    EXPECT_EQ(r.optionalInt("b").value(), std::nullopt);
    EXPECT_EQ(r.optionalBool("c").value(), std::nullopt);
    EXPECT_EQ(r.optionalObject("a").value(), std::nullopt);
    EXPECT_EQ(r.optionalArray("c").value(), std::nullopt);
    EXPECT_FALSE(r.has("a"));
    EXPECT_FALSE(r.has("c"));
}

TEST(Reader, MissingRequiredFieldNamesItsPath) {
    const Object o = object("spec: {devices: {}}\n");
    auto spec = Reader(o).requiredObject("spec");
    ASSERT_TRUE(spec.ok());
    auto name = spec->field("devices").requiredString("name");
    ASSERT_FALSE(name.ok());
    EXPECT_EQ(name.error().message,
              "claims.yaml, document 2: spec.devices.name: required field is missing");
    EXPECT_EQ(Reader(o).requiredInt("count").error().message,
              "claims.yaml, document 2: count: required field is missing");
}

TEST(Reader, RequiredStringMayBeEmpty) {
    const Object o = object("name: ''\n");
    EXPECT_EQ(Reader(o).requiredString("name").value(), "");
}

TEST(Reader, StringsAreNotCoercedFromOtherTypes) {
    const Object o = object("name: 123\nflag: \"true\"\n");
    EXPECT_EQ(Reader(o).requiredString("name").error().message,
              "claims.yaml, document 2: name: expected a string, got integer 123");
    EXPECT_EQ(Reader(o).optionalBool("flag").error().message,
              "claims.yaml, document 2: flag: expected a boolean, got string \"true\"");
}

TEST(Reader, IntegerAcceptsWholeNumbersWrittenAsFloats) {
    const Object o = object("a: 1e3\nb: 2.0\nc: 2.5\nd: 1e30\ne: 18446744073709551615\n");
    const Reader r(o);
    EXPECT_EQ(r.optionalInt("a").value(), 1000);
    EXPECT_EQ(r.optionalInt("b").value(), 2);
    EXPECT_EQ(r.optionalInt("c").error().message,
              "claims.yaml, document 2: c: expected an integer, got number 2.5");
    EXPECT_EQ(r.optionalInt("d").error().message,
              "claims.yaml, document 2: d: number 1e+30 is out of range for an integer");
    EXPECT_EQ(r.optionalInt("e").error().message,
              "claims.yaml, document 2: e: integer 18446744073709551615 is out of range");
}

TEST(Reader, ContainerFieldsOfTheWrongTypeAreErrors) {
    const Object o = object("a: [1]\nb: {x: 1}\n");
    const Reader r(o);
    EXPECT_EQ(r.optionalObject("a").error().message,
              "claims.yaml, document 2: a: expected an object, got array");
    EXPECT_EQ(r.optionalArray("b").error().message,
              "claims.yaml, document 2: b: expected an array, got object");
    EXPECT_EQ(r.requiredObject("b").value().path().str(), "b");
}

TEST(Reader, FieldsOfANonObjectAreAnError) {
    const Object o = object("spec: text\n");
    EXPECT_EQ(Reader(o).field("spec").optionalString("x").error().message,
              "claims.yaml, document 2: spec: expected an object, got string \"text\"");
    EXPECT_FALSE(Reader(o).field("spec").has("x"));
}

TEST(Reader, FieldsOfAMissingObjectAreMissing) {
    const Object o = object("kind: Pod\n");
    const Reader spec = Reader(o).field("spec");
    EXPECT_TRUE(spec.isNull());
    EXPECT_EQ(spec.optionalString("x").value(), std::nullopt);
    EXPECT_EQ(spec.requiredString("x").error().message,
              "claims.yaml, document 2: spec.x: required field is missing");
}

TEST(Reader, EachVisitsItemsWithIndexedPaths) {
    const Object o = object("items: [a, b, c]\n");
    std::vector<std::string> seen;
    Status status = Reader(o).each("items", [&](const Reader& item) -> Status {
        seen.push_back(item.path().str() + "=" + item.asString().value());
        return {};
    });
    EXPECT_TRUE(status.ok());
    EXPECT_EQ(seen, (std::vector<std::string>{"items[0]=a", "items[1]=b", "items[2]=c"}));
}

TEST(Reader, EachStopsAtTheFirstError) {
    const Object o = object("items: [a, 2, c, 4]\n");
    int calls = 0;
    Status status = Reader(o).each("items", [&](const Reader& item) -> Status {
        ++calls;
        auto s = item.asString();
        return s ? Status() : Status(s.error());
    });
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(calls, 2);
    EXPECT_EQ(status.error().message,
              "claims.yaml, document 2: items[1]: expected a string, got integer 2");
}

TEST(Reader, EachOverAbsentFieldDoesNothingAndOverANonArrayFails) {
    const Object o = object("items: {a: 1}\n");
    const auto never = [](const Reader&) -> Status { return Error{"called"}; };
    EXPECT_TRUE(Reader(o).each("other", never).ok());
    EXPECT_EQ(Reader(o).each("items", never).error().message,
              "claims.yaml, document 2: items: expected an array, got object");
}

TEST(Reader, KeysAndEntriesKeepDocumentOrder) {
    const Object o = object("labels: {z: '1', a: '2', m: '3'}\n");
    const Reader labels = Reader(o).field("labels");
    EXPECT_EQ(labels.keys().value(), (std::vector<std::string>{"z", "a", "m"}));
    std::vector<std::string> paths;
    EXPECT_TRUE(labels
                    .eachEntry([&](const std::string& key, const Reader& value) -> Status {
                        paths.push_back(key + "@" + value.path().str());
                        return {};
                    })
                    .ok());
    EXPECT_EQ(paths, (std::vector<std::string>{"z@labels[z]", "a@labels[a]", "m@labels[m]"}));
    EXPECT_EQ(labels.size(), 3u);
}

TEST(Reader, StringArrayAndStringMap) {
    const Object o = object("names: [a, b]\nlabels: {app: web, tier: '1'}\nbad: {n: 1}\n");
    const Reader r(o);
    EXPECT_EQ(r.stringArray("names").value(), (std::vector<std::string>{"a", "b"}));
    EXPECT_TRUE(r.stringArray("missing").value().empty());
    using Pairs = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(r.stringMap("labels").value(), (Pairs{{"app", "web"}, {"tier", "1"}}));
    EXPECT_EQ(r.stringMap("bad").error().message,
              "claims.yaml, document 2: bad[n]: expected a string, got integer 1");
}

TEST(Reader, RejectUnknownFieldsNamesThem) {
    const Object o = object("spec: {a: 1, b: 2, x: 3}\nstatus: {a: 1, y: 2, z: 3}\n");
    const Reader r(o);
    EXPECT_TRUE(r.field("spec").rejectUnknownFields({"a", "b", "x"}).ok());
    EXPECT_EQ(r.field("spec").rejectUnknownFields({"a", "b"}).error().message,
              "claims.yaml, document 2: spec: unknown field \"x\"");
    EXPECT_EQ(r.field("status").rejectUnknownFields({"a"}).error().message,
              "claims.yaml, document 2: status: unknown fields \"y\", \"z\"");
    EXPECT_EQ(r.rejectUnknownFields({"spec"}).error().message,
              "claims.yaml, document 2: unknown field \"status\"");
    EXPECT_TRUE(r.field("absent").rejectUnknownFields({}).ok());
}

TEST(Reader, ErrorHelpersFormatSourceAndPath) {
    const Object o = object("spec: {}\n");
    const Reader spec = Reader(o).field("spec");
    EXPECT_EQ(spec.error("bad").message, "claims.yaml, document 2: spec: bad");
    EXPECT_EQ(spec.fieldError("count", "must be positive").message,
              "claims.yaml, document 2: spec.count: must be positive");
    EXPECT_EQ(Reader(o).error("bad").message, "claims.yaml, document 2: bad");
}

TEST(Reader, ListItemSourcesAppearInMessages) {
    auto objects = parse("kind: List\nitems:\n- {kind: Pod}\n- {kind: Pod, spec: 1}\n", "l.yaml");
    ASSERT_TRUE(objects.ok());
    EXPECT_EQ(Reader((*objects)[1]).optionalObject("spec").error().message,
              "l.yaml, document 1, item 2: spec: expected an object, got integer 1");
}

TEST(Reader, ItemOutOfRangeIsNull) {
    const Object o = object("a: [1]\n");
    EXPECT_TRUE(Reader(o).field("a").item(5).isNull());
    EXPECT_EQ(Reader(o).field("a").item(0).asInt().value(), 1);
}

TEST(DescribeValue, ShortensLongStrings) {
    const std::string long_(100, 'x');
    EXPECT_EQ(describeValue(Json(long_)), "string \"" + std::string(60, 'x') + "...\"");
    EXPECT_EQ(describeValue(Json(true)), "boolean true");
    EXPECT_EQ(describeValue(Json(nullptr)), "null");
    EXPECT_EQ(describeValue(Json(1.5)), "number 1.5");
    EXPECT_EQ(describeValue(Json::array()), "array");
}

}  // namespace
}  // namespace numadra::documents
