#include "numadra/state/checkpoint.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "numadra/common/crc32c.hpp"
#include "numadra/common/text.hpp"

namespace numadra::state {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;

constexpr std::string_view kSource = "/state/checkpoints/uid-1.json";

ClaimRecord fullRecord() {
    ClaimRecord record;
    record.claimNamespace = "team-a";
    record.claimName = "train-gpus";
    record.claimUid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
    record.podClaimName = "gpus";
    record.state = ClaimState::PrepareCompleted;
    record.bootId = "3c1b0d1e-9a0b-4c1d-8e2f-1a2b3c4d5e6f";

    DeviceRecord gpu;
    gpu.request = "gpus/fast";
    gpu.pool = "node-1";
    gpu.device = "gpu-0";
    gpu.shareId = "7b3c6a1e-0000-4000-8000-000000000001";
    gpu.kind = "gpu";
    gpu.pciAddress = "0000:41:00.0";
    gpu.vendorId = 0x10de;
    gpu.deviceId = 0x2330;
    gpu.serialNumber = "82-a3-d7-5c-05-44-0c-62";
    gpu.consumedCapacity = {{"memory", "40Gi"}, {"sm", "50"}};
    gpu.cdiDeviceIds = {"numa.dra.example.com/gpu=claim-0f1e-gpu-0"};

    DeviceRecord cpu;
    cpu.request = "cpus";
    cpu.pool = "node-1";
    cpu.device = "cpu-node-1";
    cpu.kind = "cpu";
    cpu.numaNode = 1;
    cpu.cpus = {8, 9, 10, 11};
    cpu.cdiDeviceIds = {"numa.dra.example.com/cpu=a", "numa.dra.example.com/cpu=b"};

    DeviceRecord nic;  // a device on the far side of the 16-bit range
    nic.request = "nic";
    nic.pool = "node-1";
    nic.device = "nic-3";
    nic.kind = "nic";
    nic.pciAddress = "0000:c1:00.1";
    nic.vendorId = 0xffff;
    nic.deviceId = 0;
    nic.numaNode = -1;
    nic.adminAccess = true;
    nic.bindMemory = true;
    nic.interfaceName = "ens5f1np1";
    nic.hardwareAddress = "b8:ce:f6:00:00:01";

    record.devices = {gpu, cpu, nic};
    record.files = {"/var/run/cdi/numa.dra.example.com-claim-0f1e.json",
                    "/var/lib/numadra/metadata/0f1e/gpus.json"};
    record.metadataGenerations = {{"gpus", 3}, {"cpus", 9007199254740993}};
    return record;
}

ClaimRecord minimalRecord() {
    ClaimRecord record;
    record.claimNamespace = "default";
    record.claimName = "empty";
    record.claimUid = "uid-1";
    record.bootId = "boot";
    DeviceRecord device;
    device.request = "r";
    device.pool = "p";
    device.device = "d";
    device.kind = "accelerator";
    record.devices = {device};
    return record;
}

std::string checksumText(const Json& claim) {
    return "crc32c:" + text::hex(crc32c(claim.dump()), 8);
}

Json parsed(const std::string& content) {
    return Json::parse(content);
}

// The document with its checksum recomputed after an edit, so decoding gets past the checksum
// to the problem the edit introduced.
std::string resealed(Json document) {
    document["checksum"] = checksumText(document["claim"]);
    return document.dump(2);
}

std::string decodeError(const std::string& content) {
    auto decoded = decode(content, kSource);
    EXPECT_FALSE(decoded.ok()) << "decoded although it should not have";
    if (decoded.ok())
        return {};
    EXPECT_THAT(decoded.error().message, HasSubstr(std::string(kSource)));
    return decoded.error().message;
}

TEST(Codec, FullRecordRoundTrips) {
    const auto record = fullRecord();
    auto decoded = decode(encode(record), kSource);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, record);
}

TEST(Codec, RecordWithEveryOptionalFieldUnsetRoundTrips) {
    const auto record = minimalRecord();
    auto decoded = decode(encode(record), kSource);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, record);
}

TEST(Codec, RecordWithoutDevicesRoundTrips) {
    auto record = minimalRecord();
    record.devices.clear();
    auto decoded = decode(encode(record), kSource);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, record);
}

TEST(Codec, EmptyOptionalStringsStayPresent) {
    auto record = minimalRecord();
    record.podClaimName = "";
    record.devices[0].shareId = "";
    auto decoded = decode(encode(record), kSource);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, record);
}

TEST(Codec, UnsetOptionalFieldsAreOmittedAndIdsAlwaysWritten) {
    const auto document = parsed(encode(minimalRecord()));
    const auto& claim = document["claim"];
    EXPECT_FALSE(claim.contains("podClaimName"));
    EXPECT_EQ(claim["state"], "PrepareStarted");
    EXPECT_EQ(claim["files"], Json::array());
    EXPECT_EQ(claim["metadataGenerations"], Json::object());
    const auto& device = claim["devices"][0];
    for (const char* key :
         {"shareID", "pciAddress", "serialNumber", "numaNode", "cpus", "consumedCapacity"})
        EXPECT_FALSE(device.contains(key)) << key;
    EXPECT_EQ(device["vendorID"], 0);
    EXPECT_EQ(device["deviceID"], 0);
    EXPECT_EQ(device["cdiDeviceIDs"], Json::array());
}

TEST(Codec, UsesTheDocumentedFieldNames) {
    const auto document = parsed(encode(fullRecord()));
    EXPECT_EQ(document["version"], kCheckpointVersion);
    const auto& claim = document["claim"];
    EXPECT_EQ(claim["namespace"], "team-a");
    EXPECT_EQ(claim["name"], "train-gpus");
    EXPECT_EQ(claim["uid"], "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
    EXPECT_EQ(claim["podClaimName"], "gpus");
    EXPECT_EQ(claim["state"], "PrepareCompleted");
    EXPECT_EQ(claim["bootId"], "3c1b0d1e-9a0b-4c1d-8e2f-1a2b3c4d5e6f");
    const auto& gpu = claim["devices"][0];
    EXPECT_EQ(gpu["shareID"], "7b3c6a1e-0000-4000-8000-000000000001");
    EXPECT_EQ(gpu["pciAddress"], "0000:41:00.0");
    EXPECT_EQ(gpu["vendorID"], 0x10de);
    EXPECT_EQ(gpu["deviceID"], 0x2330);
    EXPECT_EQ(gpu["serialNumber"], "82-a3-d7-5c-05-44-0c-62");
    EXPECT_EQ(gpu["consumedCapacity"]["memory"], "40Gi");
    EXPECT_EQ(claim["devices"][1]["numaNode"], 1);
    EXPECT_EQ(claim["devices"][1]["cpus"], Json::parse("[8,9,10,11]"));
    EXPECT_EQ(claim["metadataGenerations"]["gpus"], 3);
}

TEST(Codec, ChecksumIsTheCrc32cOfTheCompactClaimDump) {
    const auto document = parsed(encode(fullRecord()));
    EXPECT_EQ(document["checksum"], checksumText(document["claim"]));
}

TEST(Codec, DecodesACompactlyWrittenFile) {
    // The layout of the file is free; only the claim's compact dump is checksummed.
    const auto content = parsed(encode(fullRecord())).dump();
    auto decoded = decode(content, kSource);
    ASSERT_TRUE(decoded.ok()) << decoded.error().message;
    EXPECT_EQ(*decoded, fullRecord());
}

TEST(DecodeErrors, TruncatedFileIsNotValidJsonAtEveryLength) {
    const auto content = encode(fullRecord());
    const auto end = content.rfind('}');
    for (std::size_t length = 0; length < end; length += 7) {
        EXPECT_THAT(decodeError(content.substr(0, length)), HasSubstr("not valid JSON"))
            << "length " << length;
    }
    EXPECT_THAT(decodeError(content.substr(0, end)), HasSubstr("not valid JSON"));
}

TEST(DecodeErrors, EmptyFileIsNotValidJson) {
    EXPECT_THAT(decodeError(""), HasSubstr("not valid JSON"));
}

TEST(DecodeErrors, OneChangedByteInAStringIsAChecksumMismatch) {
    auto content = encode(fullRecord());
    const auto at = content.find("gpu-0");
    ASSERT_NE(at, std::string::npos);
    content[at + 4] = '1';
    EXPECT_THAT(decodeError(content), HasSubstr("checksum mismatch: file is damaged"));
}

TEST(DecodeErrors, OneChangedDigitIsAChecksumMismatch) {
    auto content = encode(fullRecord());
    const auto at = content.find("9007199254740993");
    ASSERT_NE(at, std::string::npos);
    content[at] = '8';
    EXPECT_THAT(decodeError(content), HasSubstr("checksum mismatch: file is damaged"));
}

TEST(DecodeErrors, EveryBitFlipInsideTheClaimIsDetected) {
    const auto content = encode(fullRecord());
    const auto begin = content.find("\"claim\"");
    ASSERT_NE(begin, std::string::npos);
    for (std::size_t at = begin; at < content.size(); ++at) {
        for (int bit = 0; bit < 8; ++bit) {
            auto damaged = content;
            damaged[at] = static_cast<char>(damaged[at] ^ (1 << bit));
            auto decoded = decode(damaged, kSource);
            // Flips in insignificant whitespace may leave the same record, which is fine; a
            // different record must never come out.
            if (decoded.ok()) {
                EXPECT_EQ(*decoded, fullRecord()) << "byte " << at << " bit " << bit;
            }
        }
    }
}

TEST(DecodeErrors, NewerVersionRefusesToGuess) {
    auto document = parsed(encode(fullRecord()));
    document["version"] = 2;
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("written by a newer version (2); refusing to guess"));
}

TEST(DecodeErrors, NewerVersionIsRefusedWhateverTheRestLooksLike) {
    EXPECT_THAT(decodeError(R"({"version": 7, "somethingElse": true})"),
                HasSubstr("written by a newer version (7); refusing to guess"));
}

TEST(DecodeErrors, VersionZeroIsInvalid) {
    auto document = parsed(encode(fullRecord()));
    document["version"] = 0;
    EXPECT_THAT(decodeError(resealed(document)), HasSubstr("invalid version (0)"));
}

TEST(DecodeErrors, NegativeVersionIsInvalid) {
    auto document = parsed(encode(fullRecord()));
    document["version"] = -1;
    EXPECT_THAT(decodeError(resealed(document)), HasSubstr("invalid version (-1)"));
}

TEST(DecodeErrors, MissingVersion) {
    auto document = parsed(encode(fullRecord()));
    document.erase("version");
    EXPECT_THAT(decodeError(resealed(document)), HasSubstr("\"version\" is missing"));
}

TEST(DecodeErrors, VersionThatIsNotAnInteger) {
    for (const Json& version : {Json("1"), Json(1.0), Json(nullptr)}) {
        auto document = parsed(encode(fullRecord()));
        document["version"] = version;
        EXPECT_THAT(decodeError(resealed(document)), HasSubstr("\"version\" must be an integer"))
            << version.dump();
    }
}

TEST(DecodeErrors, NotAnObject) {
    EXPECT_THAT(decodeError("[1, 2]"), HasSubstr("not a JSON object (found array)"));
    EXPECT_THAT(decodeError("42"), HasSubstr("not a JSON object (found number)"));
}

TEST(DecodeErrors, MissingChecksum) {
    auto document = parsed(encode(fullRecord()));
    document.erase("checksum");
    EXPECT_THAT(decodeError(document.dump()), HasSubstr("\"checksum\" is missing"));
}

TEST(DecodeErrors, MalformedChecksum) {
    const auto document = parsed(encode(fullRecord()));
    const std::string good = document["checksum"];
    for (const Json& checksum : {Json("crc32:" + good.substr(7)), Json(good.substr(0, 14)),
                                 Json(good + "0"), Json("crc32c:ABCDEF01"), Json(12)}) {
        auto edited = document;
        edited["checksum"] = checksum;
        EXPECT_THAT(decodeError(edited.dump()), HasSubstr("malformed checksum")) << checksum.dump();
    }
}

TEST(DecodeErrors, MissingClaim) {
    auto document = parsed(encode(fullRecord()));
    document.erase("claim");
    EXPECT_THAT(decodeError(document.dump()), HasSubstr("claim is missing"));
}

TEST(DecodeErrors, MissingDeviceFieldNamesItsPath) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["devices"][2].erase("device");
    EXPECT_THAT(decodeError(resealed(document)), HasSubstr("claim.devices[2].device is missing"));
}

TEST(DecodeErrors, MissingClaimFieldNamesItsPath) {
    for (const char* key : {"namespace", "name", "uid", "state", "bootId", "devices", "files",
                            "metadataGenerations"}) {
        auto document = parsed(encode(fullRecord()));
        document["claim"].erase(key);
        EXPECT_THAT(decodeError(resealed(document)),
                    HasSubstr("claim." + std::string(key) + " is missing"));
    }
}

TEST(DecodeErrors, MissingRequiredDeviceFieldsNameTheirPath) {
    for (const char* key :
         {"request", "pool", "device", "kind", "vendorID", "deviceID", "cdiDeviceIDs"}) {
        auto document = parsed(encode(fullRecord()));
        document["claim"]["devices"][0].erase(key);
        EXPECT_THAT(decodeError(resealed(document)),
                    HasSubstr("claim.devices[0]." + std::string(key) + " is missing"));
    }
}

TEST(DecodeErrors, WrongTypeNamesThePathAndTheType) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["devices"][0]["vendorID"] = "0x10de";
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.devices[0].vendorID must be an integer (found string)"));
}

TEST(DecodeErrors, WrongTypeInsideAnArrayNamesTheElement) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["devices"][1]["cpus"][2] = "10";
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.devices[1].cpus[2] must be an integer (found string)"));
}

TEST(DecodeErrors, WrongTypeOfAMapValueNamesTheKey) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["metadataGenerations"]["gpus"] = 1.5;
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.metadataGenerations.gpus must be an integer (found number)"));
}

TEST(DecodeErrors, WrongTypeOfAContainer) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["files"] = "/a";
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.files must be an array (found string)"));
}

TEST(DecodeErrors, ClaimThatIsNotAnObject) {
    auto document = parsed(encode(fullRecord()));
    document["claim"] = Json::array();
    EXPECT_THAT(decodeError(resealed(document)), HasSubstr("claim must be an object"));
}

TEST(DecodeErrors, DeviceThatIsNotAnObject) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["devices"][1] = "cpu-node-1";
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.devices[1] must be an object (found string)"));
}

TEST(DecodeErrors, IdOutOfItsRange) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["devices"][0]["deviceID"] = 65536;
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.devices[0].deviceID is out of range (65536)"));
    document["claim"]["devices"][0]["deviceID"] = -1;
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.devices[0].deviceID is out of range (-1)"));
}

TEST(DecodeErrors, UnknownState) {
    auto document = parsed(encode(fullRecord()));
    document["claim"]["state"] = "PrepareHalfDone";
    EXPECT_THAT(decodeError(resealed(document)),
                HasSubstr("claim.state has an unknown value \"PrepareHalfDone\""));
}

}  // namespace
}  // namespace numadra::state
