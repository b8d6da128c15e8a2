#include "numadra/api/resource_slice.hpp"

#include <gtest/gtest.h>

namespace numadra::api {
namespace {

TEST(AttributeJson, ScalarsAndListsUseTheApiFieldNames) {
    EXPECT_EQ(toJson(AttributeValue{std::int64_t{5}}).dump(), R"({"int":5})");
    EXPECT_EQ(toJson(AttributeValue{std::string("pci0000:00")}).dump(),
              R"({"string":"pci0000:00"})");
    EXPECT_EQ(toJson(AttributeValue{true}).dump(), R"({"bool":true})");
    EXPECT_EQ(toJson(AttributeValue{Version{"1.2.3"}}).dump(), R"({"version":"1.2.3"})");
    EXPECT_EQ(toJson(AttributeValue{std::vector<std::int64_t>{5, 4, 6, 7}}).dump(),
              R"({"ints":[5,4,6,7]})");
    EXPECT_EQ(toJson(AttributeValue{std::vector<std::string>{"a"}}).dump(), R"({"strings":["a"]})");
}

TEST(Device, ListAttributeCountsAsAdvanced) {
    Device device;
    device.name = "d";
    device.attributes["x"] = std::int64_t{1};
    EXPECT_FALSE(device.usesAdvancedFeatures());
    device.attributes["y"] = std::vector<std::int64_t>{1, 2};
    EXPECT_TRUE(device.usesAdvancedFeatures());
    EXPECT_EQ(attributeValueCount(device.attributes["y"]), 2u);
}

TEST(Device, CounterConsumptionWithValueFromEncodesCapacityKey) {
    Device device;
    device.name = "vf-0";
    DeviceCounterConsumption consumption;
    consumption.counterSet = "pf-0";
    consumption.counters["bandwidth"] = Counter{{}, {}, std::string("example.com/bandwidth")};
    consumption.counters["vfs"] = Counter{Quantity::decimal(1), {}, {}};
    device.consumesCounters.push_back(consumption);
    EXPECT_EQ(
        toJson(device).dump(),
        R"({"name":"vf-0","consumesCounters":[{"counterSet":"pf-0","counters":{"bandwidth":{"valueFrom":{"capacityKey":"example.com/bandwidth"}},"vfs":{"value":"1"}}}]})");
}

TEST(ResourceSlice, CounterSliceHasNoDevicesField) {
    ResourceSlice slice;
    slice.name = "n-d-00000";
    slice.driver = "d";
    slice.pool = {"n", 3, 2};
    slice.nodeName = "n";
    slice.sharedCounters.push_back(
        CounterSet{"numa-0", {{"cpu", Counter{Quantity::decimal(8), {}, {}}}}});
    Json json = toJson(slice);
    EXPECT_FALSE(json["spec"].contains("devices"));
    EXPECT_EQ(json["spec"]["pool"]["generation"], 3);
    EXPECT_EQ(json["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(json["spec"]["sharedCounters"][0]["counters"]["cpu"]["value"], "8");
}

TEST(ResourceSlice, EmptyDeviceSliceStillHasDevicesList) {
    ResourceSlice slice;
    slice.name = "n";
    slice.driver = "d";
    Json json = toJson(slice);
    ASSERT_TRUE(json["spec"].contains("devices"));
    EXPECT_TRUE(json["spec"]["devices"].empty());
    EXPECT_EQ(json["apiVersion"], "resource.k8s.io/v1");
    EXPECT_EQ(json["kind"], "ResourceSlice");
}

TEST(ResourceSlice, ListWrapsItems) {
    Json list = toJsonList({ResourceSlice{}, ResourceSlice{}});
    EXPECT_EQ(list["apiVersion"], "v1");
    EXPECT_EQ(list["kind"], "List");
    EXPECT_EQ(list["items"].size(), 2u);
}

}  // namespace
}  // namespace numadra::api
