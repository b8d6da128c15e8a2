#include "numadra/api/slice_writer.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "legacy_json.hpp"
#include "numadra/api/yaml.hpp"

namespace numadra::api {
namespace {

// Every field of every type, with values that exercise escaping and YAML's key quoting.
Device everyDeviceField() {
    Device device;
    device.name = "gpu-0000-3b-00-0";
    device.allowMultipleAllocations = true;
    auto& a = device.attributes;
    a["bool"] = true;
    a["int"] = std::int64_t{-5};
    a["string"] = std::string("NVIDIA \"H100\" \\ 80GB\t\x01\x1f\x7f/é€😀");
    a["version"] = Version{"1.2.3-rc.1+build"};
    a["bools"] = std::vector<bool>{true, false};
    a["ints"] = std::vector<std::int64_t>{std::numeric_limits<std::int64_t>::min(), 0,
                                          std::numeric_limits<std::int64_t>::max()};
    // One kind of special byte per string: each must be escaped on its own.
    a["strings"] = std::vector<std::string>{
        "a", "", "true", "1e3", "back\\slash", "\"", "line\nbreak", "\x1f", "\x7f", "é€😀"};
    a["versions"] = std::vector<Version>{{"1.0.0"}, {"2.0.0"}};
    a["resource.kubernetes.io/numaNode"] = std::vector<std::int64_t>{5, 4, 6, 7};
    a["emptyList"] = std::vector<std::string>{};
    a["on"] = std::string("reserved key");
    a["0starts-with-digit"] = std::string("x");
    a["-dash"] = std::string("x");
    a[".dot"] = std::string("x");
    a["with space"] = std::string("x");
    a[""] = std::string("empty key");
    a["ké"] = std::string("non-ASCII key");
    device.capacity["bandwidth"] = DeviceCapacity{Quantity::decimal(100'000'000'000), {}};
    device.capacity["memory"] = DeviceCapacity{
        Quantity::binary(68'719'476'736),
        CapacityRequestPolicy{Quantity::decimal(0),
                              {Quantity::decimal(1), Quantity::binary(1 << 20)},
                              CapacityRange{Quantity::decimal(0), Quantity::binary(1 << 30),
                                            Quantity::binary(1 << 20)}}};
    device.capacity["unbounded"] = DeviceCapacity{Quantity::decimal(1), CapacityRequestPolicy{}};
    DeviceCounterConsumption consumption;
    consumption.counterSet = "pf-0000-01-00-0";
    consumption.counters["bandwidth"] = Counter{{}, {}, std::string("numa.dra.dev/bandwidth")};
    consumption.counters["vfs"] = Counter{Quantity::decimal(1), {}, {}};
    consumption.counters["both"] =
        Counter{Quantity::decimal(2), CapacityRequestPolicy{{}, {}, CapacityRange{}}, "key"};
    device.consumesCounters.push_back(consumption);
    device.consumesCounters.push_back(DeviceCounterConsumption{"numa-0", {}});
    device.taints.push_back({"numa.dra.dev/unhealthy", "link down", "NoSchedule"});
    device.taints.push_back({"numa.dra.dev/gone", "", "NoExecute"});
    return device;
}

ResourceSlice deviceSlice() {
    ResourceSlice slice;
    slice.name = "node-a-numa.dra.dev-00001";
    slice.labels = {{"app.kubernetes.io/name", "numa-dra"}, {"yes", "no"}};
    slice.ownerReferences.push_back({"v1", "Node", "node-a", "uid-1", true});
    slice.ownerReferences.push_back({"v1", "Node", "node-b", "uid-2", false});
    slice.driver = "numa.dra.dev";
    slice.pool = {"node-a", 7, 11};
    slice.nodeName = "node-a";
    slice.devices.push_back(everyDeviceField());
    Device bare;
    bare.name = "cpu-numa-0";
    slice.devices.push_back(bare);
    return slice;
}

ResourceSlice counterSlice() {
    ResourceSlice slice;
    slice.name = "n-d-00000";
    slice.driver = "d";
    slice.pool = {"n", 1, 2};
    slice.sharedCounters.push_back(
        CounterSet{"pf-0",
                   {{"bandwidth",
                     Counter{Quantity::decimal(100'000'000'000),
                             CapacityRequestPolicy{Quantity::decimal(12'500'000'000),
                                                   {},
                                                   CapacityRange{Quantity::decimal(1'000'000),
                                                                 Quantity::decimal(100'000'000'000),
                                                                 Quantity::decimal(1'000'000)}},
                             {}}},
                    {"vfs", Counter{Quantity::decimal(8), {}, {}}}}});
    slice.sharedCounters.push_back(CounterSet{"empty", {}});
    // Ignored: a slice with counters has no devices field.
    slice.devices.push_back(Device{"ignored", {}, {}, {}, {}, false, {}});
    return slice;
}

ResourceSlice emptySlice() {
    return ResourceSlice{};
}

struct Sample {
    const char* name;
    ResourceSlice (*make)();
};

void PrintTo(const Sample& sample, std::ostream* out) {
    *out << sample.name;
}

const Sample kSamples[] = {
    {"devices", deviceSlice},
    {"counters", counterSlice},
    {"empty", emptySlice},
};

class WriterMatchesLegacy : public ::testing::TestWithParam<Sample> {};

TEST_P(WriterMatchesLegacy, IndentedJsonIsDumpTwo) {
    const ResourceSlice slice = GetParam().make();
    std::string text;
    appendJson(text, slice, JsonLayout::Indented);
    EXPECT_EQ(text, legacyToJson(slice).dump(2));
}

TEST_P(WriterMatchesLegacy, CompactJsonIsDump) {
    const ResourceSlice slice = GetParam().make();
    std::string text;
    appendJson(text, slice, JsonLayout::Compact);
    EXPECT_EQ(text, legacyToJson(slice).dump());
}

TEST_P(WriterMatchesLegacy, YamlIsToYamlOfTheDom) {
    const ResourceSlice slice = GetParam().make();
    std::string text;
    appendYaml(text, slice);
    EXPECT_EQ(text, toYaml(legacyToJson(slice)));
}

TEST_P(WriterMatchesLegacy, ToJsonBuildsTheSameDom) {
    const ResourceSlice slice = GetParam().make();
    EXPECT_EQ(toJson(slice), legacyToJson(slice));
    EXPECT_EQ(toJson(slice).dump(2), legacyToJson(slice).dump(2));
}

TEST_P(WriterMatchesLegacy, ResourceVersionFollowsTheOtherMetadata) {
    const ResourceSlice slice = GetParam().make();
    Json expected = legacyToJson(slice);
    expected["metadata"]["resourceVersion"] = "12345";
    std::string text;
    appendJson(text, slice, JsonLayout::Compact, "12345");
    EXPECT_EQ(text, expected.dump());
}

INSTANTIATE_TEST_SUITE_P(Slices, WriterMatchesLegacy, ::testing::ValuesIn(kSamples),
                         [](const auto& test) { return std::string(test.param.name); });

std::vector<ResourceSlice> allSamples() {
    std::vector<ResourceSlice> slices;
    for (const auto& sample : kSamples)
        slices.push_back(sample.make());
    return slices;
}

TEST(SliceWriter, ListIsToJsonListInBothLayouts) {
    const auto slices = allSamples();
    std::string indented, compact;
    appendJsonList(indented, slices, JsonLayout::Indented);
    appendJsonList(compact, slices, JsonLayout::Compact);
    EXPECT_EQ(indented, legacyToJsonList(slices).dump(2));
    EXPECT_EQ(compact, legacyToJsonList(slices).dump());
}

TEST(SliceWriter, EmptyListHasAnEmptyItemsArray) {
    std::string text;
    appendJsonList(text, {}, JsonLayout::Indented);
    EXPECT_EQ(text, legacyToJsonList({}).dump(2));
    EXPECT_NE(text.find("\"items\": []"), std::string::npos) << text;
}

TEST(SliceWriter, YamlStreamIsToYamlStreamOfTheDoms) {
    const auto slices = allSamples();
    std::vector<Json> documents;
    for (const auto& slice : slices)
        documents.push_back(legacyToJson(slice));
    std::string text;
    appendYamlStream(text, slices);
    EXPECT_EQ(text, toYamlStream(documents));
}

// More text than the writer's 64 KiB buffer holds, so it is passed on in several pieces.
std::vector<ResourceSlice> manySlices() {
    std::vector<ResourceSlice> slices;
    for (int i = 0; i < 100; ++i)
        slices.push_back(deviceSlice());
    return slices;
}

TEST(SliceWriter, StreamedJsonIsTheAppendedJson) {
    const auto slices = manySlices();
    std::string appended;
    appendJsonList(appended, slices, JsonLayout::Indented);
    std::ostringstream streamed;
    writeJsonList(streamed, slices, JsonLayout::Indented);
    EXPECT_GT(appended.size(), 3u * 64 * 1024);
    EXPECT_EQ(streamed.str(), appended);
    EXPECT_EQ(appended, legacyToJsonList(slices).dump(2));
}

TEST(SliceWriter, StreamedYamlIsTheAppendedYaml) {
    const auto slices = manySlices();
    std::string appended;
    appendYamlStream(appended, slices);
    std::ostringstream streamed;
    writeYamlStream(streamed, slices);
    EXPECT_GT(appended.size(), 3u * 64 * 1024);
    EXPECT_EQ(streamed.str(), appended);
}

TEST(SliceWriter, StringsLongerThanTheBufferAreWrittenWhole) {
    ResourceSlice slice = emptySlice();
    Device device;
    device.name = "d";
    device.attributes["long"] = std::string(200 * 1024, 'x');
    slice.devices.push_back(device);
    std::string text;
    appendJson(text, slice, JsonLayout::Compact);
    EXPECT_EQ(text, legacyToJson(slice).dump());
    std::ostringstream streamed;
    writeYamlStream(streamed, {slice});
    EXPECT_EQ(streamed.str(), "---\n" + toYaml(legacyToJson(slice)));
}

TEST(SliceWriter, AppendsToWhatTheBufferHolds) {
    std::string text = "prefix";
    appendJson(text, emptySlice(), JsonLayout::Compact);
    EXPECT_EQ(text, "prefix" + legacyToJson(emptySlice()).dump());
}

TEST(SliceWriter, PartsOfToJsonMatchLegacy) {
    const Device device = everyDeviceField();
    EXPECT_EQ(toJson(device), legacyToJson(device));
    for (const auto& [name, value] : device.attributes)
        EXPECT_EQ(toJson(value), legacyToJson(value)) << name;
    const auto& policy = *device.capacity.at("memory").requestPolicy;
    EXPECT_EQ(toJson(policy), legacyToJson(policy));
}

// DRANodeAllocatableResources (1.37): after the device's other fields, each resource's mapping
// and overhead with the API's field names, quantities as strings.
TEST(SliceWriter, NodeAllocatableResourcesAreWrittenAsTheApiNamesThem) {
    Device device;
    device.name = "cpu-numa-0";
    device.capacity["cpu"] = {Quantity::decimal(8), std::nullopt};
    device.nodeAllocatableResources["cpu"] = {
        NodeAllocatableMapping{"cpu", Quantity::decimal(1), std::nullopt}, std::nullopt};
    device.nodeAllocatableResources["memory"] = {
        std::nullopt, NodeAllocatableOverhead{Quantity::binary(16 << 20), std::nullopt}};
    device.nodeAllocatableResources["hugepages-2Mi"] = {
        NodeAllocatableMapping{std::nullopt, std::nullopt, Quantity::decimal(2)},
        NodeAllocatableOverhead{std::nullopt, Quantity::binary(2 << 20)}};
    EXPECT_EQ(toJson(device).dump(),
              R"({"name":"cpu-numa-0","capacity":{"cpu":{"value":"8"}},)"
              R"("nodeAllocatableResources":{"cpu":{"mapping":{"capacityKey":"cpu",)"
              R"("capacityMultiplier":"1"}},"hugepages-2Mi":{"mapping":{"deviceMultiplier":"2"},)"
              R"("overhead":{"perContainer":"2Mi"}},"memory":{"overhead":{"perPod":"16Mi"}}}})");
}

// Invalid UTF-8 (a netdev name may hold any byte): nlohmann's dump() throws; the writer writes
// what dump() with error_handler_t::replace writes.
ResourceSlice sliceWithInvalidUtf8() {
    ResourceSlice slice = emptySlice();
    Device device;
    device.name = "nic";
    device.attributes["ifName"] = std::string("eth\xff\xc3(\xe2\x82");  // bad, bad pair, cut off
    slice.devices.push_back(device);
    return slice;
}

TEST(SliceWriter, InvalidUtf8InJsonBecomesReplacementCharacters) {
    const ResourceSlice slice = sliceWithInvalidUtf8();
    EXPECT_THROW(legacyToJson(slice).dump(), Json::type_error);
    std::string text;
    appendJson(text, slice, JsonLayout::Compact);
    EXPECT_EQ(text, legacyToJson(slice).dump(-1, ' ', false, Json::error_handler_t::replace));
    EXPECT_NE(text.find("\"eth\xEF\xBF\xBD\xEF\xBF\xBD(\xEF\xBF\xBD\""), std::string::npos) << text;
}

TEST(SliceWriter, InvalidUtf8InYamlValuesIsReplacedAsBefore) {
    const ResourceSlice slice = sliceWithInvalidUtf8();
    std::string text;
    appendYaml(text, slice);
    EXPECT_EQ(text, toYaml(legacyToJson(slice)));
}

TEST(SliceWriter, InvalidUtf8InYamlKeysIsReplacedInsteadOfThrowing) {
    ResourceSlice slice = emptySlice();
    slice.labels["bad\xff"] = "v";
    EXPECT_THROW(toYaml(legacyToJson(slice)), Json::type_error);
    std::string text;
    appendYaml(text, slice);
    EXPECT_NE(text.find("\n    \"bad\xEF\xBF\xBD\": \"v\"\n"), std::string::npos) << text;
}

// Strings are checked eight bytes at a time: every byte value, at every position of a word and
// of the tail, must still be written as nlohmann writes it (escaped, replaced or as it is).
TEST(SliceWriter, EveryByteAtEveryPositionIsWrittenAsDumpWritesIt) {
    for (int byte = 0; byte < 256; ++byte) {
        for (size_t position = 0; position < 19; ++position) {
            std::string value(19, 'a');
            value[position] = static_cast<char>(byte);
            ResourceSlice slice = emptySlice();
            Device device;
            device.name = "d";
            device.attributes["s"] = value;
            slice.devices.push_back(device);
            std::string text;
            appendJson(text, slice, JsonLayout::Compact);
            ASSERT_EQ(text,
                      legacyToJson(slice).dump(-1, ' ', false, Json::error_handler_t::replace))
                << "byte " << byte << " at " << position;
        }
    }
}

}  // namespace
}  // namespace numadra::api
