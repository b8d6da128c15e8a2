#include "numadra/cdi/spec.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace numadra::cdi {
namespace {

using ::testing::HasSubstr;

// Specs in the shapes of the CDI project's own schema fixtures (a minimal valid spec, a fuller
// one with fields this driver never writes, an empty file, an empty object).
constexpr const char* kMinimalSpec = R"({
  "cdiVersion": "0.3.0",
  "kind": "vendor.com/device",
  "devices": [{"name": "myDevice", "containerEdits": {"deviceNodes": [{"path": "/dev/card1"}]}}]
})";
constexpr const char* kSpecWithHooks = R"({
  "cdiVersion": "0.6.0",
  "kind": "vendor.com/device",
  "devices": [{"name": "myDevice", "containerEdits": {"deviceNodes": [{"path": "/dev/card1"}]}}],
  "containerEdits": {
    "env": ["FOO=CDI_SPEC"],
    "hooks": [{"hookName": "createContainer", "path": "/bin/vendor-hook"}]
  }
})";

// One device with one char device node: valid at the base version.
Spec validSpec() {
    Spec spec;
    spec.cdiVersion = "0.3.0";
    spec.kind = "numa.dra.dev/claim";
    Device device;
    device.name = "gpu0";
    device.containerEdits.env = {"A=B"};
    device.containerEdits.deviceNodes.push_back({"/dev/null", "", "c", 1, 3, ""});
    spec.devices.push_back(device);
    return spec;
}

// The validation error, or "" when the spec is valid.
std::string problem(const Spec& spec) {
    Status status = validate(spec);
    return status ? std::string() : status.error().message;
}

// ---- versions --------------------------------------------------------------------------------

TEST(CdiVersions, AreExactlyTheTenTheLibraryKnowsOldestFirst) {
    EXPECT_EQ(knownVersions(),
              (std::vector<std::string>{"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0",
                                        "0.7.0", "0.8.0", "1.0.0", "1.1.0"}));
}

TEST(CdiMinimumVersion, IsThreeForPlainDevices) {
    EXPECT_EQ(minimumVersion(validSpec()), "0.3.0");
}

TEST(CdiMinimumVersion, NetDevicesNeedOneOneZero) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.netDevices.push_back({"ens1f0v3", "ens1f0v3"});
    EXPECT_EQ(minimumVersion(spec), "1.1.0");
    spec.cdiVersion = "1.0.0";
    EXPECT_EQ(problem(spec),
              "cdiVersion \"1.0.0\" is lower than 1.1.0, which the spec needs because device "
              "\"gpu0\": containerEdits.netDevices is set");
}

TEST(CdiMinimumVersion, MountTypeNeedsFour) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {"bind"}, "bind"});
    EXPECT_EQ(minimumVersion(spec), "0.4.0");
}

TEST(CdiMinimumVersion, MountWithoutTypeStaysThree) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {"ro", "bind"}, ""});
    EXPECT_EQ(minimumVersion(spec), "0.3.0");
}

TEST(CdiMinimumVersion, HostPathNeedsFive) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes[0].hostPath = "/dev/null";
    EXPECT_EQ(minimumVersion(spec), "0.5.0");
}

TEST(CdiMinimumVersion, DeviceNameStartingWithADigitNeedsFive) {
    Spec spec = validSpec();
    spec.devices[0].name = "0000:3b:00.0";
    EXPECT_EQ(minimumVersion(spec), "0.5.0");
}

TEST(CdiMinimumVersion, DotInTheClassNeedsSix) {
    Spec spec = validSpec();
    spec.kind = "numa.dra.dev/gpu.claim";
    EXPECT_EQ(minimumVersion(spec), "0.6.0");
}

TEST(CdiMinimumVersion, DotsInTheVendorNeedNothing) {
    Spec spec = validSpec();
    spec.kind = "k8s.gpu.example.com/gpu";
    EXPECT_EQ(minimumVersion(spec), "0.3.0");
}

TEST(CdiMinimumVersion, SpecLevelEditsCountToo) {
    Spec spec = validSpec();
    spec.containerEdits.mounts.push_back({"/a", "/b", {}, "bind"});
    EXPECT_EQ(minimumVersion(spec), "0.4.0");
}

TEST(CdiMinimumVersion, IsTheHighestFeatureNeeded) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {}, "bind"});
    spec.devices[0].name = "1gpu";
    spec.kind = "vendor/a.b";
    EXPECT_EQ(minimumVersion(spec), "0.6.0");
}

// ---- validate: versions ------------------------------------------------------------------------

TEST(CdiValidate, AcceptsAPlainSpec) {
    EXPECT_EQ(problem(validSpec()), "");
}

TEST(CdiValidate, AcceptsEveryKnownVersionAtOrAboveTheMinimum) {
    Spec spec = validSpec();
    for (const auto& version : {"0.3.0", "0.4.0", "0.8.0", "1.0.0", "1.1.0"}) {
        spec.cdiVersion = version;
        EXPECT_EQ(problem(spec), "") << version;
    }
}

TEST(CdiValidate, ToleratesALeadingV) {
    Spec spec = validSpec();
    spec.cdiVersion = "v0.5.0";
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, AcceptsAnEmptyVersionBecauseTheMinimumIsWritten) {
    Spec spec = validSpec();
    spec.cdiVersion = "";
    spec.devices[0].name = "0gpu";
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, RejectsAModulePatchReleaseAsVersion) {
    Spec spec = validSpec();
    spec.cdiVersion = "1.0.1";
    EXPECT_THAT(problem(spec), HasSubstr("cdiVersion \"1.0.1\" is not a known CDI version"));
}

TEST(CdiValidate, RejectsAVersionBelowWhatTheFieldsNeed) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes[0].hostPath = "/dev/null";
    spec.cdiVersion = "0.4.0";
    EXPECT_THAT(problem(spec), HasSubstr("cdiVersion \"0.4.0\" is lower than 0.5.0"));
    EXPECT_THAT(problem(spec), HasSubstr("deviceNodes[0].hostPath is set"));
}

TEST(CdiValidate, RejectsADigitFirstDeviceNameBeforeFive) {
    Spec spec = validSpec();
    spec.devices[0].name = "0000:3b:00.0";
    EXPECT_THAT(problem(spec), HasSubstr("is lower than 0.5.0"));
    spec.cdiVersion = "0.5.0";
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, RejectsADottedClassBeforeSix) {
    Spec spec = validSpec();
    spec.kind = "vendor.com/a.b";
    spec.cdiVersion = "0.5.0";
    EXPECT_THAT(problem(spec), HasSubstr("is lower than 0.6.0"));
    spec.cdiVersion = "0.6.0";
    EXPECT_EQ(problem(spec), "");
}

// ---- validate: kind and names
// --------------------------------------------------------------------

TEST(CdiValidate, RejectsAKindWithoutClass) {
    Spec spec = validSpec();
    spec.kind = "numa.dra.dev";
    EXPECT_THAT(problem(spec), HasSubstr("is not of the form \"vendor/class\""));
}

TEST(CdiValidate, RejectsAnInvalidVendor) {
    Spec spec = validSpec();
    spec.kind = "1vendor/claim";
    EXPECT_THAT(problem(spec), HasSubstr("the vendor must start with a letter"));
}

TEST(CdiValidate, RejectsAnInvalidClass) {
    Spec spec = validSpec();
    spec.kind = "vendor/claim-";
    EXPECT_THAT(problem(spec), HasSubstr("the class must end with a letter or digit"));
}

TEST(CdiNames, VendorAndClassStartWithALetterAndEndAlphanumeric) {
    EXPECT_TRUE(isValidVendor("k8s.gpu.example.com"));
    EXPECT_TRUE(isValidVendor("a"));
    EXPECT_TRUE(isValidVendor("A_b-c.d9"));
    EXPECT_FALSE(isValidVendor(""));
    EXPECT_FALSE(isValidVendor("9abc"));
    EXPECT_FALSE(isValidVendor("_abc"));
    EXPECT_FALSE(isValidVendor("abc."));
    EXPECT_FALSE(isValidVendor("a/b"));
    EXPECT_FALSE(isValidVendor("a:b"));
    EXPECT_TRUE(isValidClass("gpu"));
    EXPECT_TRUE(isValidClass("gpu.claim"));  // valid; the version rule is separate
    EXPECT_FALSE(isValidClass("gpu claim"));
    EXPECT_FALSE(isValidClass("-gpu"));
}

TEST(CdiNames, DeviceNamesAllowDigitsFirstColonsAndUpperCase) {
    EXPECT_TRUE(isValidDeviceName("0000:3b:00.0"));
    EXPECT_TRUE(isValidDeviceName("GPU0"));
    EXPECT_TRUE(isValidDeviceName("x"));
    EXPECT_TRUE(isValidDeviceName("a_b-c.d:e"));
    EXPECT_TRUE(isValidDeviceName("3f2a6b1c-0d4e-4f5a-9b8c-7d6e5f4a3b2c-gpu-0000-3b-00-0"));
    EXPECT_FALSE(isValidDeviceName(""));
    EXPECT_FALSE(isValidDeviceName("-gpu"));
    EXPECT_FALSE(isValidDeviceName("gpu:"));
    EXPECT_FALSE(isValidDeviceName("gpu/0"));
    EXPECT_FALSE(isValidDeviceName("gpu 0"));
    EXPECT_FALSE(isValidDeviceName("gpu=0"));
}

TEST(CdiValidate, RejectsAnInvalidDeviceNameNamingIt) {
    Spec spec = validSpec();
    spec.devices[0].name = "gpu/0";
    EXPECT_THAT(problem(spec), HasSubstr("device \"gpu/0\": the name has the invalid character"));
}

// ---- validate: devices -------------------------------------------------------------------------

TEST(CdiValidate, RejectsASpecWithoutDevices) {
    Spec spec = validSpec();
    spec.devices.clear();
    EXPECT_THAT(problem(spec), HasSubstr("no devices"));
}

TEST(CdiValidate, RejectsDuplicateDeviceNames) {
    Spec spec = validSpec();
    spec.devices.push_back(spec.devices[0]);
    EXPECT_THAT(problem(spec), HasSubstr("device \"gpu0\": duplicate device name"));
}

TEST(CdiValidate, RejectsADeviceWithEmptyEdits) {
    Spec spec = validSpec();
    spec.devices.push_back({"gpu1", {}});
    EXPECT_EQ(problem(spec), "device \"gpu1\": containerEdits is empty");
}

TEST(CdiValidate, AcceptsADeviceWithOnlyEnv) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes.clear();
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, AcceptsEmptySpecLevelEdits) {
    Spec spec = validSpec();
    spec.containerEdits = {};
    EXPECT_EQ(problem(spec), "");
}

// ---- validate: edits ---------------------------------------------------------------------------

TEST(CdiValidate, RejectsEnvWithoutEquals) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.env = {"A=B", "NOVALUE"};
    EXPECT_THAT(problem(spec), HasSubstr("device \"gpu0\": containerEdits.env[1] \"NOVALUE\""));
}

TEST(CdiValidate, RejectsEnvWithAnEmptyName) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.env = {"=value"};
    EXPECT_THAT(problem(spec), HasSubstr("containerEdits.env[0]"));
}

TEST(CdiValidate, AcceptsEnvWithAnEmptyValue) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.env = {"A=", "B==c"};
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, RejectsADeviceNodeWithoutPath) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes.push_back({"", "", "c", 1, 5, ""});
    EXPECT_EQ(problem(spec), "device \"gpu0\": containerEdits.deviceNodes[1].path is empty");
}

TEST(CdiValidate, AcceptsEveryDeviceNodeTypeTheLibraryKnows) {
    Spec spec = validSpec();
    for (const auto& type : {"", "b", "c", "u", "p"}) {
        spec.devices[0].containerEdits.deviceNodes[0].type = type;
        EXPECT_EQ(problem(spec), "") << type;
    }
}

TEST(CdiValidate, RejectsAnUnknownDeviceNodeType) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes[0].type = "char";
    EXPECT_THAT(problem(spec), HasSubstr("containerEdits.deviceNodes[0].type \"char\""));
}

TEST(CdiValidate, AcceptsPermissionsFromRwmOrNone) {
    Spec spec = validSpec();
    for (const auto& permissions : {"", "r", "rw", "rwm", "mr", "none"}) {
        spec.devices[0].containerEdits.deviceNodes[0].permissions = permissions;
        EXPECT_EQ(problem(spec), "") << permissions;
    }
}

TEST(CdiValidate, RejectsOtherPermissionLetters) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes[0].permissions = "rwx";
    EXPECT_THAT(problem(spec), HasSubstr("containerEdits.deviceNodes[0].permissions \"rwx\""));
}

TEST(CdiValidate, RejectsAMountWithoutHostPath) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.mounts.push_back({"", "/b", {}, ""});
    EXPECT_EQ(problem(spec), "device \"gpu0\": containerEdits.mounts[0].hostPath is empty");
}

TEST(CdiValidate, RejectsAMountWithoutContainerPath) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.mounts.push_back({"/a", "", {}, ""});
    EXPECT_EQ(problem(spec), "device \"gpu0\": containerEdits.mounts[0].containerPath is empty");
}

// The CDI library's ValidateNetDevices.
TEST(CdiValidate, RejectsANetDeviceWithoutEitherName) {
    Spec spec = validSpec();
    spec.cdiVersion = "1.1.0";
    spec.devices[0].containerEdits.netDevices.push_back({"", "net1"});
    EXPECT_EQ(problem(spec),
              "device \"gpu0\": containerEdits.netDevices[0].hostInterfaceName is empty");
    spec.devices[0].containerEdits.netDevices[0] = {"eth1", ""};
    EXPECT_EQ(problem(spec), "device \"gpu0\": containerEdits.netDevices[0].name is empty");
}

TEST(CdiValidate, RejectsAHostInterfaceOrANameListedTwice) {
    Spec spec = validSpec();
    spec.cdiVersion = "1.1.0";
    auto& devices = spec.devices[0].containerEdits.netDevices;
    devices = {{"eth1", "net1"}, {"eth1", "net2"}};
    EXPECT_EQ(problem(spec),
              "device \"gpu0\": containerEdits.netDevices[1].hostInterfaceName "
              "\"eth1\" is listed twice");
    devices = {{"eth1", "net1"}, {"eth2", "net1"}};
    EXPECT_EQ(problem(spec),
              "device \"gpu0\": containerEdits.netDevices[1].name \"net1\" is listed twice");
}

TEST(CdiValidate, AcceptsADeviceWithOnlyANetDevice) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits = {};
    spec.devices[0].containerEdits.netDevices.push_back({"eth1", "eth1"});
    spec.cdiVersion = "1.1.0";
    EXPECT_EQ(problem(spec), "");
}

TEST(CdiValidate, ChecksSpecLevelEditsWithoutADeviceName) {
    Spec spec = validSpec();
    spec.containerEdits.env = {"BROKEN"};
    EXPECT_THAT(problem(spec), HasSubstr("containerEdits.env[0] \"BROKEN\""));
    EXPECT_THAT(problem(spec), ::testing::Not(HasSubstr("device")));
}

// ---- JSON encoding -----------------------------------------------------------------------------

TEST(CdiJson, UsesTheGoFieldNamesInOrder) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits.deviceNodes[0] = {"/dev/x", "/host/x", "c", 195, 0, "rw"};
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {"ro", "bind"}, "bind"});
    spec.cdiVersion = "0.5.0";
    EXPECT_EQ(toJson(spec).dump(),
              R"({"cdiVersion":"0.5.0","kind":"numa.dra.dev/claim","devices":[{"name":"gpu0",)"
              R"("containerEdits":{"env":["A=B"],"deviceNodes":[{"path":"/dev/x",)"
              R"("hostPath":"/host/x","type":"c","major":195,"minor":0,"permissions":"rw"}],)"
              R"("mounts":[{"hostPath":"/a","containerPath":"/b","options":["ro","bind"],)"
              R"("type":"bind"}]}}]})");
}

TEST(CdiJson, OmitsEmptyStringsListsAndUnsetNumbers) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits = {};
    spec.devices[0].containerEdits.deviceNodes.push_back({"/dev/x", "", "", {}, {}, ""});
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {}, ""});
    const auto edits = toJson(spec)["devices"][0]["containerEdits"];
    EXPECT_EQ(
        edits.dump(),
        R"({"deviceNodes":[{"path":"/dev/x"}],"mounts":[{"hostPath":"/a","containerPath":"/b"}]})");
}

TEST(CdiJson, WritesTheRequiredDeviceEditsEvenWhenEmpty) {
    Spec spec = validSpec();
    spec.devices[0].containerEdits = {};
    EXPECT_EQ(toJson(spec)["devices"][0].dump(), R"({"name":"gpu0","containerEdits":{}})");
}

TEST(CdiJson, WritesSpecLevelEditsOnlyWhenNotEmpty) {
    Spec spec = validSpec();
    EXPECT_FALSE(toJson(spec).contains("containerEdits"));
    spec.containerEdits.env = {"X=1"};
    EXPECT_EQ(toJson(spec)["containerEdits"].dump(), R"({"env":["X=1"]})");
}

TEST(CdiJson, WritesTheMinimumVersionWhenNoneIsSet) {
    Spec spec = validSpec();
    spec.cdiVersion = "";
    spec.devices[0].name = "0gpu";
    EXPECT_EQ(toJson(spec)["cdiVersion"], "0.5.0");
}

TEST(CdiJson, KeepsAnExplicitVersion) {
    Spec spec = validSpec();
    spec.cdiVersion = "1.0.0";
    EXPECT_EQ(toJson(spec)["cdiVersion"], "1.0.0");
}

TEST(CdiJson, SerializeIsIndentedByTwoAndEndsWithANewline) {
    const std::string text = serialize(validSpec());
    EXPECT_EQ(text.rfind("{\n  \"cdiVersion\": \"0.3.0\",\n  \"kind\": ", 0), 0u) << text;
    EXPECT_EQ(text.back(), '\n');
    EXPECT_NE(text.find("\n    {\n      \"name\": \"gpu0\""), std::string::npos) << text;
}

// ---- parse -------------------------------------------------------------------------------------

TEST(CdiParse, RoundTripsEveryField) {
    Spec spec = validSpec();
    spec.cdiVersion = "0.5.0";
    spec.devices[0].containerEdits.deviceNodes.push_back(
        {"/dev/x", "/host/x", "b", -1, 9223372036854775807LL, "none"});
    spec.devices[0].containerEdits.deviceNodes.push_back({"/dev/y", "", "", {}, 0, ""});
    spec.devices[0].containerEdits.mounts.push_back({"/a", "/b", {"ro", "bind"}, "bind"});
    spec.devices.push_back({"gpu1", {{"C=D", "E="}, {}, {}, {{"ens1f0v3", "net1"}}}});
    spec.cdiVersion = "1.1.0";
    spec.containerEdits.env = {"SHARED=1"};
    spec.containerEdits.mounts.push_back({"/c", "/d", {}, ""});
    auto parsed = parse(serialize(spec), "round-trip.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed.value(), spec);
}

TEST(CdiParse, RoundTripFillsInTheMinimumVersion) {
    Spec spec = validSpec();
    spec.cdiVersion = "";
    auto parsed = parse(serialize(spec), "x.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->cdiVersion, "0.3.0");
    spec.cdiVersion = "0.3.0";
    EXPECT_EQ(parsed.value(), spec);
}

TEST(CdiParse, ReadsAMinimalSpec) {
    auto parsed = parse(kMinimalSpec, "minimal.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->kind, "vendor.com/device");
    ASSERT_EQ(parsed->devices.size(), 1u);
    EXPECT_EQ(parsed->devices[0].containerEdits.deviceNodes[0].path, "/dev/card1");
    EXPECT_TRUE(validate(parsed.value()));
}

TEST(CdiParse, RejectsCdiFieldsThisDriverNeverWritesNamingThem) {
    // A spec with hooks (upstream writes them, this driver never does): reading it would lose them.
    auto parsed = parse(kSpecWithHooks, "example.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("example.json: containerEdits.hooks"));
    EXPECT_THAT(parsed.error().message, HasSubstr("does not support"));
}

TEST(CdiParse, RejectsAnEmptyFileNamingTheSource) {
    auto parsed = parse("", "/var/run/cdi/e.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("/var/run/cdi/e.json: invalid JSON"));
}

TEST(CdiParse, RejectsAnEmptyObjectForTheMissingVersion) {
    auto parsed = parse("{}", "e.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "e.json: cdiVersion: required field is missing");
}

TEST(CdiParse, RejectsANonObjectDocument) {
    auto parsed = parse("[]", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: must be an object, got array");
}

TEST(CdiParse, RejectsAnUnknownTopLevelField) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[],"extra":1})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: extra: unknown field");
}

TEST(CdiParse, RejectsAnUnknownNestedFieldWithItsPath) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"deviceNodes":[{"path":"/dev/a"},{"path":"/dev/b","majr":1}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "a.json: devices[0].containerEdits.deviceNodes[1].majr: unknown field");
}

TEST(CdiParse, RejectsAnUnknownMountField) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"mounts":[{"hostPath":"/a","containerPath":"/b","readonly":true}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("devices[0].containerEdits.mounts[0].readonly"));
}

TEST(CdiParse, RejectsAWrongTypeForAString) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":7,"devices":[]})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: kind: must be a string, got number");
}

TEST(CdiParse, RejectsNullForAString) {
    auto parsed = parse(R"({"cdiVersion":null,"kind":"a/b","devices":[]})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: cdiVersion: must be a string, got null");
}

TEST(CdiParse, RejectsANonStringEnvEntry) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"env":["A=B",5]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "a.json: devices[0].containerEdits.env[1]: must be a string, got number");
}

TEST(CdiParse, RejectsAStringMajor) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"deviceNodes":[{"path":"/dev/a","major":"195"}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "a.json: devices[0].containerEdits.deviceNodes[0].major: must be an integer, got "
              "string");
}

TEST(CdiParse, RejectsAFractionalMinor) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"deviceNodes":[{"path":"/dev/a","minor":1.5}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("deviceNodes[0].minor: must be an integer"));
}

TEST(CdiParse, RejectsAMajorBeyondInt64) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"deviceNodes":[{"path":"/dev/a","major":9223372036854775808}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("major: is out of the int64 range"));
}

TEST(CdiParse, RejectsDevicesThatAreNotAnArray) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":{}})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: devices: must be an array, got object");
}

TEST(CdiParse, RejectsEditsThatAreAnArray) {
    // SPEC.md shows the spec-level containerEdits as an array; the Go type is an object.
    auto parsed =
        parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[],"containerEdits":[]})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: containerEdits: must be an object, got array");
}

TEST(CdiParse, RequiresDevices) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b"})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: devices: required field is missing");
}

TEST(CdiParse, RequiresDeviceEdits) {
    auto parsed =
        parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d"}]})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "a.json: devices[0].containerEdits: required field is missing");
}

TEST(CdiParse, RequiresADeviceNodePath) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"deviceNodes":[{"type":"c"}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message,
              "a.json: devices[0].containerEdits.deviceNodes[0].path: required field is missing");
}

TEST(CdiParse, RequiresBothMountPaths) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[{"name":"d",
        "containerEdits":{"mounts":[{"hostPath":"/a"}]}}]})",
                        "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("mounts[0].containerPath: required field"));
}

TEST(CdiParse, RejectsADuplicateKey) {
    auto parsed =
        parse(R"({"cdiVersion":"0.3.0","kind":"a/b","kind":"c/d","devices":[]})", "a.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_EQ(parsed.error().message, "a.json: field \"kind\" appears twice in one object");
}

TEST(CdiParse, AllowsTheSameKeyInSiblingObjects) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0","kind":"a/b","devices":[
        {"name":"a","containerEdits":{"env":["A=1"]}},
        {"name":"b","containerEdits":{"env":["B=1"]}}]})",
                        "a.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_EQ(parsed->devices.size(), 2u);
}

TEST(CdiParse, RejectsTruncatedJsonNamingTheSource) {
    auto parsed = parse(R"({"cdiVersion":"0.3.0")", "/var/run/cdi/t.json");
    ASSERT_FALSE(parsed.ok());
    EXPECT_THAT(parsed.error().message, HasSubstr("/var/run/cdi/t.json: invalid JSON"));
}

TEST(CdiParse, DoesNotValidateTheRules) {
    // Structure only, like the runtime's loader; validate() is a separate step.
    auto parsed = parse(R"({"cdiVersion":"9.9.9","kind":"a/b","devices":[]})", "a.json");
    ASSERT_TRUE(parsed.ok()) << parsed.error().message;
    EXPECT_FALSE(validate(parsed.value()));
}

// ---- names -------------------------------------------------------------------------------------

TEST(CdiNaming, QualifiedNameJoinsKindAndDeviceWithEquals) {
    EXPECT_EQ(qualifiedName("numa.dra.dev/claim", "uid-gpu-0"), "numa.dra.dev/claim=uid-gpu-0");
}

TEST(CdiNaming, TransientSpecFileNameFollowsTheLibraryHelper) {
    EXPECT_EQ(transientSpecFileName("numa.dra.dev", "claim", "0f1e2d3c-aaaa"),
              "numa.dra.dev-claim_0f1e2d3c-aaaa.json");
}

TEST(CdiNaming, TransientSpecFileNameReplacesSlashesInTheId) {
    EXPECT_EQ(transientSpecFileName("v", "c", "ns/name/x"), "v-c_ns_name_x.json");
}

}  // namespace
}  // namespace numadra::cdi
