#include "numadra/api/yaml.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

namespace numadra::api {
namespace {

// Converts what yaml-cpp parsed back to JSON, keeping YAML's own typing of plain scalars.
Json fromYaml(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            Json out = Json::object();
            for (const auto& entry : node)
                out[entry.first.as<std::string>()] = fromYaml(entry.second);
            return out;
        }
        case YAML::NodeType::Sequence: {
            Json out = Json::array();
            for (const auto& item : node)
                out.push_back(fromYaml(item));
            return out;
        }
        case YAML::NodeType::Scalar: {
            if (node.Tag() == "!")
                return node.as<std::string>();  // quoted: always a string
            const auto text = node.as<std::string>();
            if (text == "true" || text == "false")
                return text == "true";
            try {
                size_t used = 0;
                long long v = std::stoll(text, &used);
                if (used == text.size())
                    return v;
            } catch (...) {
            }
            return text;
        }
        default:
            return nullptr;
    }
}

TEST(Yaml, RoundTripsThroughAYamlParserWithTypesIntact) {
    Json doc = Json::parse(R"({"apiVersion":"resource.k8s.io/v1","spec":{"devices":[
        {"name":"gpu-0","attributes":{"vendorID":{"string":"0x10de"},"ok":{"bool":true},
         "numaNode":{"ints":[5,4]},"odd":{"string":"true"},"num":{"string":"1e3"},"empty":{"string":""}}},
        {"name":"cpu","capacity":{}}],"nested":[[1,2],[]],"quote":"say \"hi\"\n"}})");
    const std::string yaml = toYaml(doc);
    EXPECT_EQ(fromYaml(YAML::Load(yaml)), doc) << yaml;
}

TEST(Yaml, StreamSeparatesDocuments) {
    const std::string stream = toYamlStream({Json{{"a", 1}}, Json{{"b", 2}}});
    auto docs = YAML::LoadAll(stream);
    ASSERT_EQ(docs.size(), 2u);
    EXPECT_EQ(docs[1]["b"].as<int>(), 2);
}

TEST(Yaml, ReservedWordsAndOddKeysAreQuoted) {
    const std::string yaml =
        toYaml(Json{{"on", 1}, {"resource.kubernetes.io/numaNode", 2}, {"a b", 3}});
    EXPECT_NE(yaml.find("\"on\": 1"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("resource.kubernetes.io/numaNode: 2"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("\"a b\": 3"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace numadra::api
