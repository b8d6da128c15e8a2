#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "numadra/metadata/device_metadata.hpp"

namespace numadra::metadata {
namespace {

// The example of shared/spec/cdi-metadata.md §F.5, verbatim.
constexpr const char* kSpecExample = R"({
  "kind": "DeviceMetadata",
  "apiVersion": "metadata.resource.k8s.io/v1alpha1",
  "metadata": {"name": "my-claim", "namespace": "default", "uid": "claim-uid-1234", "generation": 1},
  "podClaimName": "gpu",
  "requests": [{
    "name": "gpu-request",
    "devices": [{
      "driver": "numa.example.com",
      "pool": "node-1",
      "name": "gpu-0",
      "attributes": {
        "resource.kubernetes.io/pciBusID": {"string": "0000:3b:00.0"},
        "resource.kubernetes.io/pcieRoot": {"string": "pci0000:3a"},
        "resource.kubernetes.io/numaNode": {"int": 0},
        "model": {"string": "H100"}
      }
    }]
  }]
}
)";

DeviceMetadata specExample() {
    DeviceMetadata m;
    m.claimName = "my-claim";
    m.claimNamespace = "default";
    m.claimUid = "claim-uid-1234";
    m.generation = 1;
    m.podClaimName = "gpu";
    m.requestName = "gpu-request";
    Device d;
    d.driver = "numa.example.com";
    d.pool = "node-1";
    d.name = "gpu-0";
    d.attributes["resource.kubernetes.io/pciBusID"] = std::string("0000:3b:00.0");
    d.attributes["resource.kubernetes.io/pcieRoot"] = std::string("pci0000:3a");
    d.attributes["resource.kubernetes.io/numaNode"] = std::int64_t{0};
    d.attributes["model"] = std::string("H100");
    m.devices.push_back(d);
    return m;
}

std::string objectText(const std::string& apiVersion, int generation) {
    return R"({"kind": "DeviceMetadata", "apiVersion": ")" + apiVersion +
           R"(", "metadata": {"name": "c", "namespace": "ns", "uid": "u", "generation": )" +
           std::to_string(generation) + R"(}, "requests": [{"name": "r"}]})" + "\n";
}

std::vector<std::string> keysOf(const api::Json& object) {
    std::vector<std::string> keys;
    for (const auto& [key, value] : object.items())
        keys.push_back(key);
    return keys;
}

TEST(EncodeStream, MatchesTheSpecExampleFieldForField) {
    const auto encoded = encodeStream(specExample(), {kV1alpha1});
    // Unordered comparison: Go sorts map keys, the hand-written example does not.
    EXPECT_EQ(nlohmann::json::parse(encoded), nlohmann::json::parse(kSpecExample));
}

TEST(EncodeStream, WritesFieldsInGoOrder) {
    const auto object = api::Json::parse(encodeStream(specExample(), {kV1alpha1}));
    EXPECT_EQ(keysOf(object), (std::vector<std::string>{"kind", "apiVersion", "metadata",
                                                        "podClaimName", "requests"}));
    EXPECT_EQ(keysOf(object["metadata"]),
              (std::vector<std::string>{"name", "namespace", "uid", "generation"}));
    EXPECT_EQ(keysOf(object["requests"][0]), (std::vector<std::string>{"name", "devices"}));
    EXPECT_EQ(keysOf(object["requests"][0]["devices"][0]),
              (std::vector<std::string>{"driver", "pool", "name", "attributes"}));
}

TEST(EncodeStream, IsPrettyWithTwoSpacesAndANewlineAfterEachObject) {
    const auto encoded = encodeStream(specExample(), {kV1beta1, kV1alpha1});
    EXPECT_EQ(encoded.rfind("{\n  \"kind\": \"DeviceMetadata\",\n", 0), 0u) << encoded;
    EXPECT_NE(encoded.find("}\n{\n  \"kind\""), std::string::npos) << encoded;
    EXPECT_EQ(encoded.substr(encoded.size() - 2), "}\n");
}

TEST(EncodeStream, EncodesOncePerVersionNewestFirst) {
    const auto encoded = encodeStream(specExample(), {kV1beta1, kV1alpha1});
    const auto second = encoded.find("}\n{");
    ASSERT_NE(second, std::string::npos);
    const auto first = api::Json::parse(encoded.substr(0, second + 1));
    const auto next = api::Json::parse(encoded.substr(second + 2));
    EXPECT_EQ(first["apiVersion"], "metadata.resource.k8s.io/v1beta1");
    EXPECT_EQ(next["apiVersion"], "metadata.resource.k8s.io/v1alpha1");
    EXPECT_EQ(first["requests"], next["requests"]);
}

TEST(EncodeStream, OmitsPodClaimNameForAClaimReferencedByName) {
    auto m = specExample();
    m.podClaimName.reset();
    const auto object = api::Json::parse(encodeStream(m, {kV1alpha1}));
    EXPECT_FALSE(object.contains("podClaimName"));
}

TEST(EncodeStream, OmitsEmptyAttributesAndAbsentNetworkData) {
    auto m = specExample();
    m.devices[0].attributes.clear();
    const auto object = api::Json::parse(encodeStream(m, {kV1alpha1}));
    EXPECT_EQ(keysOf(object["requests"][0]["devices"][0]),
              (std::vector<std::string>{"driver", "pool", "name"}));
}

TEST(DecodeStream, RoundTripsTheSpecExample) {
    auto decoded = decodeStream(kSpecExample, "example");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, specExample());
}

TEST(DecodeStream, ReturnsTheFirstOfTwoVersions) {
    const std::string stream = objectText("metadata.resource.k8s.io/v1beta1", 5) +
                               objectText("metadata.resource.k8s.io/v1alpha1", 4);
    auto decoded = decodeStream(stream, "file");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->generation, 5);
}

TEST(DecodeStream, RoundTripsAStreamOfBothVersions) {
    auto decoded = decodeStream(encodeStream(specExample(), {kV1beta1, kV1alpha1}), "file");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, specExample());
}

TEST(DecodeStream, SkipsUnknownVersions) {
    const std::string stream = objectText("metadata.resource.k8s.io/v2", 9) +
                               objectText("other.example.com/v1alpha1", 8) +
                               objectText("metadata.resource.k8s.io/v1alpha1", 3);
    auto decoded = decodeStream(stream, "file");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->generation, 3);
}

TEST(DecodeStream, AcceptsObjectsWithoutSeparatorsAndTrailingWhitespace) {
    std::string stream = objectText("metadata.resource.k8s.io/v1alpha1", 2);
    stream.pop_back();  // no newline between the objects
    stream += objectText("metadata.resource.k8s.io/v1alpha1", 1) + "  \n\t\n";
    auto decoded = decodeStream(stream, "file");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->generation, 2);
}

TEST(DecodeStream, IgnoresUnknownFieldsLikeGo) {
    const std::string stream =
        R"({"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
            "metadata": {"name": "c", "generation": 7, "labels": {"a": "b"}}, "future": [1]})";
    auto decoded = decodeStream(stream, "file");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->generation, 7);
    EXPECT_EQ(decoded->claimName, "c");
}

TEST(DecodeStream, OnlyUnknownVersionsIsTheUpstreamError) {
    const std::string stream =
        objectText("metadata.resource.k8s.io/v9", 1) + objectText("metadata.resource.k8s.io/v1", 1);
    auto decoded = decodeStream(stream, "/x/metadata.json");
    ASSERT_FALSE(decoded.ok());
    EXPECT_EQ(decoded.error().message,
              "/x/metadata.json: no compatible metadata version found in stream (unknown "
              "versions: metadata.resource.k8s.io/v9, metadata.resource.k8s.io/v1)");
}

TEST(DecodeStream, EmptyStreamIsTheUpstreamError) {
    for (const char* content : {"", " \n\t\r\n"}) {
        auto decoded = decodeStream(content, "/x/metadata.json");
        ASSERT_FALSE(decoded.ok());
        EXPECT_EQ(decoded.error().message, "/x/metadata.json: no metadata objects found in stream");
    }
}

TEST(DecodeStream, MalformedJsonFailsNamingTheSource) {
    for (const char* content : {"{\"kind\": ", "{\"kind\" 1}", "}", "{} ]", "nul"}) {
        auto decoded = decodeStream(content, "/x/metadata.json");
        ASSERT_FALSE(decoded.ok()) << content;
        EXPECT_EQ(decoded.error().message.rfind("/x/metadata.json: ", 0), 0u)
            << decoded.error().message;
    }
}

TEST(DecodeStream, NonObjectValueFails) {
    auto decoded = decodeStream("[1, 2]", "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("expected a JSON object"), std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, MissingApiVersionFails) {
    auto decoded = decodeStream(R"({"kind": "DeviceMetadata"})", "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("apiVersion"), std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, MissingKindFails) {
    auto decoded = decodeStream(R"({"apiVersion": "metadata.resource.k8s.io/v1alpha1"})", "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("kind"), std::string::npos) << decoded.error().message;
}

TEST(DecodeStream, OtherKindsAreSkippedLikeUnknownVersions) {
    const std::string stream =
        R"({"kind": "Other", "apiVersion": "metadata.resource.k8s.io/v1alpha1"})";
    auto decoded = decodeStream(stream, "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find(
                  "unknown versions: metadata.resource.k8s.io/v1alpha1, Kind=Other"),
              std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, MalformedFieldFailsNamingItsPath) {
    std::string stream = encodeStream(specExample(), {kV1alpha1});
    const std::string pool = "\"pool\": \"node-1\"";
    stream.replace(stream.find(pool), pool.size(), "\"pool\": 17");
    auto decoded = decodeStream(stream, "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("requests[0].devices[0].pool"), std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, FractionalGenerationFails) {
    std::string stream = objectText("metadata.resource.k8s.io/v1alpha1", 1);
    stream.replace(stream.find("\"generation\": 1"), 15, "\"generation\": 1.5");
    auto decoded = decodeStream(stream, "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("metadata.generation"), std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, AttributeWithTwoValuesFailsNamingIt) {
    const std::string stream =
        R"({"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
            "requests": [{"name": "r", "devices": [{"driver": "d", "pool": "p", "name": "n",
            "attributes": {"model": {"string": "x", "int": 1}}}]}]})";
    auto decoded = decodeStream(stream, "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("requests[0].devices[0].attributes[model]"),
              std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, BadListItemFailsNamingItsIndex) {
    const std::string stream =
        R"({"kind": "DeviceMetadata", "apiVersion": "metadata.resource.k8s.io/v1alpha1",
            "requests": [{"name": "r", "devices": [{"driver": "d", "pool": "p", "name": "n",
            "attributes": {"nodes": {"ints": [0, "1"]}}}]}]})";
    auto decoded = decodeStream(stream, "f");
    ASSERT_FALSE(decoded.ok());
    EXPECT_NE(decoded.error().message.find("attributes[nodes].ints[1]"), std::string::npos)
        << decoded.error().message;
}

TEST(DecodeStream, RoundTripsEveryAttributeForm) {
    auto m = specExample();
    auto& attributes = m.devices[0].attributes;
    attributes.clear();
    attributes["int"] = std::int64_t{-9007199254740993};
    attributes["bool"] = true;
    attributes["string"] = std::string("text \"quoted\" \\ ünïcode");
    attributes["version"] = api::Version{"1.2.3-rc.1"};
    attributes["ints"] = std::vector<std::int64_t>{0, 1, 2, 3};
    attributes["bools"] = std::vector<bool>{true, false};
    attributes["strings"] = std::vector<std::string>{"a", "b"};
    attributes["versions"] = std::vector<api::Version>{{"1.0.0"}, {"2.0.0"}};
    attributes["emptyList"] = std::vector<std::int64_t>{};
    auto decoded = decodeStream(encodeStream(m, {kV1alpha1}), "f");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, m);
}

TEST(DecodeStream, RoundTripsNetworkData) {
    auto m = specExample();
    m.devices[0].networkData =
        NetworkData{"eth1", {"192.0.2.5/24", "2001:db8::5/64"}, "00:11:22:33:44:55"};
    Device second;
    second.driver = "numa.example.com";
    second.pool = "node-1";
    second.name = "nic-1";
    second.networkData = NetworkData{"net1", {}, ""};
    m.devices.push_back(second);
    const auto encoded = encodeStream(m, {kV1alpha1});
    const auto object = api::Json::parse(encoded);
    EXPECT_EQ(keysOf(object["requests"][0]["devices"][0]["networkData"]),
              (std::vector<std::string>{"interfaceName", "ips", "hardwareAddress"}));
    EXPECT_EQ(keysOf(object["requests"][0]["devices"][1]["networkData"]),
              (std::vector<std::string>{"interfaceName"}));
    auto decoded = decodeStream(encoded, "f");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, m);
}

TEST(DecodeStream, KeepsAFullSubrequestName) {
    auto m = specExample();
    m.requestName = "gpu/large";
    auto decoded = decodeStream(encodeStream(m, {kV1alpha1}), "f");
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(decoded->requestName, "gpu/large");
}

TEST(ValidateVersions, AcceptsTheKnownVersionsNewestFirst) {
    EXPECT_TRUE(validateVersions({kV1alpha1}).ok());
    EXPECT_TRUE(validateVersions({kV1beta1}).ok());
    EXPECT_TRUE(validateVersions({kV1beta1, kV1alpha1}).ok());
}

TEST(ValidateVersions, RejectsOldestFirst) {
    // Readers take the first object they understand: an old one first would hide the new one.
    auto wrongOrder = validateVersions({kV1alpha1, kV1beta1});
    ASSERT_FALSE(wrongOrder.ok());
    EXPECT_NE(wrongOrder.error().message.find("newest first"), std::string::npos);
}

TEST(ValidateVersions, RejectsEmptyUnknownAndDuplicateLists) {
    EXPECT_FALSE(validateVersions({}).ok());
    auto unknown = validateVersions({"v1"});
    ASSERT_FALSE(unknown.ok());
    EXPECT_NE(unknown.error().message.find("\"v1\""), std::string::npos);
    EXPECT_FALSE(validateVersions({"metadata.resource.k8s.io/v1alpha1"}).ok());
    auto duplicate = validateVersions({kV1alpha1, kV1alpha1});
    ASSERT_FALSE(duplicate.ok());
    EXPECT_NE(duplicate.error().message.find("v1alpha1"), std::string::npos);
}

}  // namespace
}  // namespace numadra::metadata
