// Encoding and decoding of one checkpoint record. The decoder is strict on purpose: a record
// is either exactly what some version of this driver wrote, or it is reported (with the field
// at fault) so the store can quarantine it. Nothing is repaired or defaulted by guesswork.

#include "numadra/state/checkpoint.hpp"

#include <cerrno>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <utility>

#include "numadra/common/crc32c.hpp"
#include "numadra/common/errors.hpp"
#include "numadra/common/text.hpp"

namespace numadra::state {

namespace {

// ordered_json keeps the members in the order they were written, so re-dumping a parsed
// "claim" reproduces the exact bytes the checksum was computed over.
using Json = nlohmann::ordered_json;

constexpr std::string_view kChecksumPrefix = "crc32c:";
constexpr std::size_t kChecksumHexDigits = 8;

// The bytes the checksum covers: the compact dump of the claim object. Parsed input is always
// valid UTF-8 (the parser rejects anything else), so for it this equals claim.dump(); `replace`
// only keeps encode() from throwing on a record holding invalid UTF-8, which save() then
// rejects because the record no longer reads back identically.
std::string canonicalDump(const Json& value) {
    return value.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string checksumOf(const Json& claim) {
    return std::string(kChecksumPrefix) +
           text::hex(crc32c(canonicalDump(claim)), static_cast<int>(kChecksumHexDigits));
}

bool isWellFormedChecksum(std::string_view text) {
    if (!text::startsWith(text, kChecksumPrefix))
        return false;
    text.remove_prefix(kChecksumPrefix.size());
    if (text.size() != kChecksumHexDigits)
        return false;
    for (char c : text) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    }
    return true;
}

// A value quoted and escaped as JSON, so damaged text cannot garble the message.
std::string jsonQuoted(const std::string& value) {
    return canonicalDump(Json(value));
}

const char* stateName(ClaimState state) {
    switch (state) {
        case ClaimState::PrepareStarted:
            return "PrepareStarted";
        case ClaimState::PrepareCompleted:
            return "PrepareCompleted";
    }
    return "PrepareStarted";  // unreachable: every enumerator is handled above
}

Json deviceToJson(const DeviceRecord& device) {
    Json out = Json::object();
    out["request"] = device.request;
    out["pool"] = device.pool;
    out["device"] = device.device;
    if (device.shareId)
        out["shareID"] = *device.shareId;
    if (device.adminAccess)
        out["adminAccess"] = true;
    if (device.bindMemory)
        out["bindMemory"] = true;
    out["kind"] = device.kind;
    if (!device.pciAddress.empty())
        out["pciAddress"] = device.pciAddress;
    // Always written, 0 included: a fixed rule keeps the round trip exact without having to
    // tell "not a PCI device" from "absent".
    out["vendorID"] = device.vendorId;
    out["deviceID"] = device.deviceId;
    if (!device.serialNumber.empty())
        out["serialNumber"] = device.serialNumber;
    if (!device.interfaceName.empty())
        out["interfaceName"] = device.interfaceName;
    if (!device.hardwareAddress.empty())
        out["hardwareAddress"] = device.hardwareAddress;
    if (device.numaNode)
        out["numaNode"] = *device.numaNode;
    if (!device.cpus.empty())
        out["cpus"] = device.cpus;
    if (!device.consumedCapacity.empty()) {
        Json capacity = Json::object();
        for (const auto& [name, quantity] : device.consumedCapacity)
            capacity[name] = quantity;
        out["consumedCapacity"] = std::move(capacity);
    }
    out["cdiDeviceIDs"] = device.cdiDeviceIds;
    return out;
}

Json claimToJson(const ClaimRecord& record) {
    Json out = Json::object();
    out["namespace"] = record.claimNamespace;
    out["name"] = record.claimName;
    out["uid"] = record.claimUid;
    if (record.podClaimName)
        out["podClaimName"] = *record.podClaimName;
    out["state"] = stateName(record.state);
    out["bootId"] = record.bootId;
    Json devices = Json::array();
    for (const auto& device : record.devices)
        devices.push_back(deviceToJson(device));
    out["devices"] = std::move(devices);
    out["files"] = record.files;
    Json generations = Json::object();
    for (const auto& [request, generation] : record.metadataGenerations)
        generations[request] = generation;
    out["metadataGenerations"] = std::move(generations);
    return out;
}

// Reads typed fields out of parsed JSON. The first problem is kept and every later read becomes
// a no-op, so the decode reads straight through and reports the first thing that is wrong,
// naming its path ("claim.devices[2].device").
class FieldReader {
  public:
    bool failed() const { return !problem_.empty(); }
    const std::string& problem() const { return problem_; }

    // The member, or nullptr when it is absent (a problem only when `required`) or a read
    // already failed.
    const Json* member(const Json& object, const std::string& path, const char* key,
                       bool required) {
        if (failed())
            return nullptr;
        const auto found = object.find(key);
        if (found == object.end()) {
            if (required)
                fail(path + "." + key + " is missing");
            return nullptr;
        }
        return &*found;
    }

    void string(const Json& value, const std::string& path, std::string& out) {
        if (expect(value.is_string(), value, path, "a string"))
            out = value.get<std::string>();
    }

    template <class Int>
    void integer(const Json& value, const std::string& path, Int& out) {
        if (!expect(value.is_number_integer(), value, path, "an integer"))
            return;
        // Signed and unsigned JSON integers are checked separately so that no value is
        // narrowed before the range check.
        bool inRange = false;
        if (value.is_number_unsigned()) {
            const auto number = value.get<std::uint64_t>();
            inRange = std::in_range<Int>(number);
            if (inRange)
                out = static_cast<Int>(number);
        } else {
            const auto number = value.get<std::int64_t>();
            inRange = std::in_range<Int>(number);
            if (inRange)
                out = static_cast<Int>(number);
        }
        if (!inRange)
            fail(path + " is out of range (" + canonicalDump(value) + ")");
    }

    // Calls read(element, elementPath) for every element of an array.
    template <class Read>
    void array(const Json& value, const std::string& path, Read read) {
        if (!expect(value.is_array(), value, path, "an array"))
            return;
        for (std::size_t i = 0; i < value.size() && !failed(); ++i)
            read(value[i], path + "[" + std::to_string(i) + "]");
    }

    // Calls read(key, memberValue, memberPath) for every member of an object.
    template <class Read>
    void object(const Json& value, const std::string& path, Read read) {
        if (!expect(value.is_object(), value, path, "an object"))
            return;
        for (const auto& [key, member] : value.items()) {
            if (failed())
                return;
            read(key, member, path + "." + key);
        }
    }

    void strings(const Json& value, const std::string& path, std::vector<std::string>& out) {
        array(value, path, [&](const Json& element, const std::string& elementPath) {
            string(element, elementPath, out.emplace_back());
        });
    }

    void boolean(const Json& value, const std::string& path, bool& out) {
        if (expect(value.is_boolean(), value, path, "a boolean"))
            out = value.get<bool>();
    }

    void fail(std::string problem) {
        if (!failed())
            problem_ = std::move(problem);
    }

  private:
    bool expect(bool condition, const Json& value, const std::string& path, const char* what) {
        if (failed())
            return false;
        if (!condition)
            fail(path + " must be " + what + " (found " + value.type_name() + ")");
        return condition;
    }

    std::string problem_;
};

DeviceRecord readDevice(FieldReader& reader, const Json& value, const std::string& path) {
    DeviceRecord device;
    if (!value.is_object()) {
        reader.fail(path + " must be an object (found " + value.type_name() + ")");
        return device;
    }
    if (const auto* v = reader.member(value, path, "request", true))
        reader.string(*v, path + ".request", device.request);
    if (const auto* v = reader.member(value, path, "pool", true))
        reader.string(*v, path + ".pool", device.pool);
    if (const auto* v = reader.member(value, path, "device", true))
        reader.string(*v, path + ".device", device.device);
    if (const auto* v = reader.member(value, path, "shareID", false))
        reader.string(*v, path + ".shareID", device.shareId.emplace());
    if (const auto* v = reader.member(value, path, "adminAccess", false))
        reader.boolean(*v, path + ".adminAccess", device.adminAccess);
    if (const auto* v = reader.member(value, path, "bindMemory", false))
        reader.boolean(*v, path + ".bindMemory", device.bindMemory);
    if (const auto* v = reader.member(value, path, "kind", true))
        reader.string(*v, path + ".kind", device.kind);
    if (const auto* v = reader.member(value, path, "pciAddress", false))
        reader.string(*v, path + ".pciAddress", device.pciAddress);
    if (const auto* v = reader.member(value, path, "vendorID", true))
        reader.integer(*v, path + ".vendorID", device.vendorId);
    if (const auto* v = reader.member(value, path, "deviceID", true))
        reader.integer(*v, path + ".deviceID", device.deviceId);
    if (const auto* v = reader.member(value, path, "serialNumber", false))
        reader.string(*v, path + ".serialNumber", device.serialNumber);
    if (const auto* v = reader.member(value, path, "interfaceName", false))
        reader.string(*v, path + ".interfaceName", device.interfaceName);
    if (const auto* v = reader.member(value, path, "hardwareAddress", false))
        reader.string(*v, path + ".hardwareAddress", device.hardwareAddress);
    if (const auto* v = reader.member(value, path, "numaNode", false))
        reader.integer(*v, path + ".numaNode", device.numaNode.emplace());
    if (const auto* v = reader.member(value, path, "cpus", false)) {
        reader.array(*v, path + ".cpus", [&](const Json& cpu, const std::string& cpuPath) {
            reader.integer(cpu, cpuPath, device.cpus.emplace_back());
        });
    }
    if (const auto* v = reader.member(value, path, "consumedCapacity", false)) {
        reader.object(
            *v, path + ".consumedCapacity",
            [&](const std::string& name, const Json& quantity, const std::string& quantityPath) {
                reader.string(quantity, quantityPath, device.consumedCapacity[name]);
            });
    }
    if (const auto* v = reader.member(value, path, "cdiDeviceIDs", true))
        reader.strings(*v, path + ".cdiDeviceIDs", device.cdiDeviceIds);
    return device;
}

void readClaim(FieldReader& reader, const Json& claim, ClaimRecord& record) {
    const std::string path = "claim";
    if (const auto* v = reader.member(claim, path, "namespace", true))
        reader.string(*v, "claim.namespace", record.claimNamespace);
    if (const auto* v = reader.member(claim, path, "name", true))
        reader.string(*v, "claim.name", record.claimName);
    if (const auto* v = reader.member(claim, path, "uid", true))
        reader.string(*v, "claim.uid", record.claimUid);
    if (const auto* v = reader.member(claim, path, "podClaimName", false))
        reader.string(*v, "claim.podClaimName", record.podClaimName.emplace());
    if (const auto* v = reader.member(claim, path, "state", true)) {
        std::string state;
        reader.string(*v, "claim.state", state);
        if (state == "PrepareStarted") {
            record.state = ClaimState::PrepareStarted;
        } else if (state == "PrepareCompleted") {
            record.state = ClaimState::PrepareCompleted;
        } else if (!reader.failed()) {
            reader.fail("claim.state has an unknown value " + jsonQuoted(state));
        }
    }
    if (const auto* v = reader.member(claim, path, "bootId", true))
        reader.string(*v, "claim.bootId", record.bootId);
    if (const auto* v = reader.member(claim, path, "devices", true)) {
        reader.array(*v, "claim.devices", [&](const Json& device, const std::string& devicePath) {
            record.devices.push_back(readDevice(reader, device, devicePath));
        });
    }
    if (const auto* v = reader.member(claim, path, "files", true))
        reader.strings(*v, "claim.files", record.files);
    if (const auto* v = reader.member(claim, path, "metadataGenerations", true)) {
        reader.object(*v, "claim.metadataGenerations",
                      [&](const std::string& request, const Json& generation,
                          const std::string& generationPath) {
                          reader.integer(generation, generationPath,
                                         record.metadataGenerations[request]);
                      });
    }
}

}  // namespace

Result<std::string> encodeExactly(const ClaimRecord& record) {
    const Json claim = claimToJson(record);
    std::string compact;
    try {
        compact = claim.dump(-1, ' ', false, Json::error_handler_t::strict);
    } catch (const Json::type_error& e) {
        return errorWithErrno(EINVAL, std::string("text that is not valid UTF-8: ") + e.what());
    }
    Json document = Json::object();
    document["version"] = kCheckpointVersion;
    document["checksum"] = std::string(kChecksumPrefix) +
                           text::hex(crc32c(compact), static_cast<int>(kChecksumHexDigits));
    document["claim"] = claim;
    return document.dump(2) + "\n";
}

std::string encode(const ClaimRecord& record) {
    const Json claim = claimToJson(record);
    Json document = Json::object();
    document["version"] = kCheckpointVersion;
    document["checksum"] = checksumOf(claim);
    document["claim"] = claim;
    // Pretty-printed for the operator who has to look at a quarantined record; the checksum
    // covers the compact dump of "claim" whatever the layout of the file.
    return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

Result<ClaimRecord> decode(std::string_view content, std::string_view source) {
    auto problem = [source](const std::string& what) {
        return Error{std::string(source) + ": " + what};
    };

    const Json document = Json::parse(content.begin(), content.end(), nullptr,
                                      /*allow_exceptions=*/false);
    if (document.is_discarded())
        return problem(content.empty() ? "not valid JSON (empty file)" : "not valid JSON");
    if (!document.is_object())
        return problem(std::string("not a JSON object (found ") + document.type_name() + ")");

    // The version comes first: a newer writer may have changed anything after it, the checksum
    // included, so nothing else is interpreted for a version this binary does not know.
    const auto version = document.find("version");
    if (version == document.end())
        return problem("\"version\" is missing");
    if (!version->is_number_integer())
        return problem(std::string("\"version\" must be an integer (found ") +
                       version->type_name() + ")");
    if (version->is_number_unsigned() &&
        version->get<std::uint64_t>() > static_cast<std::uint64_t>(kCheckpointVersion)) {
        return problem("written by a newer version (" + canonicalDump(*version) +
                       "); refusing to guess");
    }
    if (version->get<std::int64_t>() < 1)
        return problem("invalid version (" + canonicalDump(*version) + ")");

    const auto checksum = document.find("checksum");
    if (checksum == document.end())
        return problem("\"checksum\" is missing");
    if (!checksum->is_string() || !isWellFormedChecksum(checksum->get_ref<const std::string&>()))
        return problem("malformed checksum " + canonicalDump(*checksum) +
                       " (expected \"crc32c:<8 lowercase hex digits>\")");

    const auto claim = document.find("claim");
    if (claim == document.end())
        return problem("claim is missing");
    if (!claim->is_object())
        return problem(std::string("claim must be an object (found ") + claim->type_name() + ")");
    if (checksumOf(*claim) != checksum->get_ref<const std::string&>())
        return problem("checksum mismatch: file is damaged");

    // The checksum holds, so a problem from here on is a writer's bug, not damage; it is still
    // reported, never patched over.
    ClaimRecord record;
    FieldReader reader;
    readClaim(reader, *claim, record);
    if (reader.failed())
        return problem(reader.problem());
    return record;
}

}  // namespace numadra::state
