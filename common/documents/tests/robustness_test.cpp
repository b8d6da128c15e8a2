// No input crashes, hangs or exhausts the stack: every text gives objects or an error that names
// the file. (The sanitizer build runs these too.)

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "numadra/documents/documents.hpp"

namespace numadra::documents {
namespace {

// Parses and checks the invariant: objects are JSON objects that dump, errors name the file.
void expectObjectsOrError(const std::string& text, const std::string& file) {
    auto objects = parse(text, file);
    if (objects.ok()) {
        for (const auto& object : *objects) {
            EXPECT_TRUE(object.json.is_object());
            EXPECT_EQ(object.source.file, file);
            EXPECT_NO_THROW((void)object.json.dump());
        }
    } else {
        EXPECT_EQ(objects.error().message.rfind(file + ", document ", 0), 0u)
            << objects.error().message;
    }
}

const char* const kYamlSample = R"(apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu-claim
  labels: {app: "x", 'tier': web}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: 2
        selectors:
        - cel:
            expression: |-
              device.attributes["gpu.example.com"].model == "A100"
---
kind: List
items:
- &p {kind: Pod, metadata: {name: a}}
- <<: *p
  spec: [1, 2.5, ~, true, "q", 'r', 0x1f]
)";

const char* const kJsonSample =
    R"({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","labels":{"x":"y"}},)"
    R"("spec":{"containers":[{"name":"c","resources":{"claims":[{"name":"gpu"}]}}],"n":[1,-2.5e3,true,null]}})"
    "\n"
    R"({"kind":"List","items":[{"kind":"Pod"},{"kind":"Pod","x":"\u00e9\"}"}]})";

TEST(Robustness, EveryTruncationOfAYamlStreamParsesOrFails) {
    const std::string text = kYamlSample;
    for (std::size_t n = 0; n <= text.size(); ++n)
        expectObjectsOrError(text.substr(0, n), "t.yaml");
}

TEST(Robustness, EveryTruncationOfAJsonStreamParsesOrFails) {
    const std::string text = kJsonSample;
    for (std::size_t n = 0; n <= text.size(); ++n)
        expectObjectsOrError(text.substr(0, n), "t.json");
}

TEST(Robustness, RandomBytesParseOrFail) {
    std::mt19937 random(12345);
    std::uniform_int_distribution<int> byte(0, 255);
    std::uniform_int_distribution<std::size_t> length(0, 200);
    for (int round = 0; round < 3000; ++round) {
        std::string text(length(random), '\0');
        for (auto& c : text)
            c = static_cast<char>(byte(random));
        if (round % 3 == 1)
            text.insert(0, "{");  // through the JSON reader too
        expectObjectsOrError(text, "r.bin");
    }
}

TEST(Robustness, RandomYamlPunctuationParsesOrFails) {
    // Texts made of YAML's indicators, so the parser's rarer paths are reached.
    const std::string alphabet = " \n\n  -:?,[]{}#&*!|>'\"%@`<~.0x1eaZ\t\\";
    std::mt19937 random(777);
    std::uniform_int_distribution<std::size_t> pick(0, alphabet.size() - 1);
    std::uniform_int_distribution<std::size_t> length(0, 120);
    for (int round = 0; round < 5000; ++round) {
        std::string text(length(random), ' ');
        for (auto& c : text)
            c = alphabet[pick(random)];
        expectObjectsOrError(text, "p.yaml");
    }
}

TEST(Robustness, MutatedDocumentsParseOrFail) {
    std::mt19937 random(4242);
    const std::string samples[] = {kYamlSample, kJsonSample};
    for (int round = 0; round < 2000; ++round) {
        std::string text = samples[round % 2];
        std::uniform_int_distribution<std::size_t> at(0, text.size() - 1);
        std::uniform_int_distribution<int> byte(0, 127);
        for (int k = 0; k < 1 + round % 4; ++k)
            text[at(random)] = static_cast<char>(byte(random));
        expectObjectsOrError(text, round % 2 == 0 ? "m.yaml" : "m.json");
    }
}

TEST(Robustness, DeepYamlFlowNestingIsRefused) {
    const std::string text = "a: " + std::string(100000, '[') + std::string(100000, ']');
    EXPECT_EQ(parse(text, "d.yaml").error().message,
              "d.yaml, document 1 (line 1, column 259): nesting deeper than 256 levels");
    EXPECT_FALSE(parse("a: " + std::string(100000, '['), "d.yaml").ok());
}

TEST(Robustness, DeepYamlBlockNestingIsRefused) {
    std::string text;
    for (int i = 0; i < 2000; ++i)
        text += std::string(static_cast<std::size_t>(i), ' ') + "k:\n";
    auto objects = parse(text, "d.yaml");
    ASSERT_FALSE(objects.ok());
    EXPECT_NE(objects.error().message.find("nesting deeper than 256 levels"), std::string::npos)
        << objects.error().message;
}

TEST(Robustness, DeepJsonNestingIsRefused) {
    const std::string text = "{\"a\":" + std::string(1000000, '[');
    EXPECT_EQ(parse(text, "d.json").error().message,
              "d.json, document 1 (line 1, column 261): nesting deeper than 256 levels");
}

TEST(Robustness, NestingWithinTheLimitIsAccepted) {
    const std::string yaml = "a: " + std::string(200, '[') + std::string(200, ']') + "\n";
    EXPECT_TRUE(parse(yaml, "ok.yaml").ok());
    const std::string json = "{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}";
    EXPECT_TRUE(parse(json, "ok.json").ok());
}

TEST(Robustness, AliasesCannotBuildDeepNesting) {
    std::string text = "a0: &a0 " + std::string(200, '[') + std::string(200, ']') + "\n";
    text += "a1: &a1 " + std::string(100, '[') + "*a0" + std::string(100, ']') + "\n";
    auto objects = parse(text, "alias.yaml");
    ASSERT_FALSE(objects.ok());
    EXPECT_NE(objects.error().message.find("nesting deeper than 256 levels"), std::string::npos)
        << objects.error().message;
}

TEST(Robustness, BillionLaughsIsRefused) {
    std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
    for (int i = 1; i < 10; ++i) {
        const std::string prev = "*a" + std::to_string(i - 1);
        text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
        for (int k = 0; k < 10; ++k)
            text += (k == 0 ? "" : ", ") + prev;
        text += "]\n";
    }
    auto objects = parse(text, "laughs.yaml");
    ASSERT_FALSE(objects.ok());
    EXPECT_NE(objects.error().message.find("aliases expand to more than 1000000 nodes"),
              std::string::npos)
        << objects.error().message;
}

}  // namespace
}  // namespace numadra::documents
