// The DeviceMetadata file format: the same object once per API version, newest first, each a
// pretty-printed JSON object followed by '\n' (what upstream's kubeletplugin writes), and the
// reader that mirrors devicemetadata.DecodeMetadataFromStream.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "numadra/metadata/device_metadata.hpp"

namespace numadra::metadata {

namespace {

using api::Json;

std::string apiVersionOf(std::string_view version) {
    return std::string(kGroup) + "/" + std::string(version);
}

bool isKnownVersion(std::string_view version) {
    return version == kV1alpha1 || version == kV1beta1;
}

// Go's omitempty on the ObjectMeta strings and on NetworkDeviceData: empty values are not
// written, so the output matches the Go writer for the same object.
void setIfNotEmpty(Json& object, const char* key, const std::string& value) {
    if (!value.empty())
        object[key] = value;
}

Json encodeObject(const DeviceMetadata& metadata, std::string_view version) {
    Json meta = Json::object();
    setIfNotEmpty(meta, "name", metadata.claimName);
    setIfNotEmpty(meta, "namespace", metadata.claimNamespace);
    setIfNotEmpty(meta, "uid", metadata.claimUid);
    if (metadata.generation != 0)
        meta["generation"] = metadata.generation;

    Json devices = Json::array();
    for (const auto& device : metadata.devices) {
        Json out = Json::object();
        out["driver"] = device.driver;
        out["pool"] = device.pool;
        out["name"] = device.name;
        if (!device.attributes.empty()) {
            Json attributes = Json::object();
            for (const auto& [name, value] : device.attributes)
                attributes[name] = api::toJson(value);
            out["attributes"] = std::move(attributes);
        }
        if (device.networkData) {
            Json network = Json::object();
            setIfNotEmpty(network, "interfaceName", device.networkData->interfaceName);
            if (!device.networkData->ips.empty())
                network["ips"] = device.networkData->ips;
            setIfNotEmpty(network, "hardwareAddress", device.networkData->hardwareAddress);
            out["networkData"] = std::move(network);
        }
        devices.push_back(std::move(out));
    }

    // The writer emits exactly one request per file.
    Json request = Json::object();
    request["name"] = metadata.requestName;
    if (!devices.empty())
        request["devices"] = std::move(devices);

    Json object = Json::object();
    object["kind"] = kKind;
    object["apiVersion"] = apiVersionOf(version);
    object["metadata"] = std::move(meta);
    if (metadata.podClaimName)
        object["podClaimName"] = *metadata.podClaimName;
    object["requests"] = Json::array({std::move(request)});
    return object;
}

// ---- decoding ----------------------------------------------------------------------------------

// Decoding errors carry the field path; the caller adds the source and the object number.
struct FieldError {
    std::string path;
    std::string problem;
};

template <class T>
using Decoded = std::variant<T, FieldError>;

const char* typeName(const Json& value) {
    return value.type_name();
}

FieldError wrongType(const std::string& path, const char* expected, const Json& value) {
    return FieldError{path, std::string("expected ") + expected + ", found " + typeName(value)};
}

// A missing key and a JSON null both decode to Go's zero value.
const Json* member(const Json& object, const char* key) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null())
        return nullptr;
    return &*it;
}

std::optional<FieldError> readString(const Json& object, const char* key, const std::string& path,
                                     std::string& out) {
    const Json* value = member(object, key);
    if (value == nullptr)
        return std::nullopt;
    if (!value->is_string())
        return wrongType(path, "a string", *value);
    out = value->get<std::string>();
    return std::nullopt;
}

// Go rejects fractions and values outside int64 for an int64 field.
std::optional<std::int64_t> asInt64(const Json& value) {
    if (value.is_number_integer() && !value.is_number_unsigned())
        return value.get<std::int64_t>();
    if (value.is_number_unsigned()) {
        const auto u = value.get<std::uint64_t>();
        if (u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return static_cast<std::int64_t>(u);
    }
    return std::nullopt;
}

template <class T, class Convert>
Decoded<std::vector<T>> readList(const Json& value, const std::string& path, const char* itemType,
                                 Convert convert) {
    if (!value.is_array())
        return wrongType(path, "an array", value);
    std::vector<T> out;
    out.reserve(value.size());
    for (std::size_t i = 0; i < value.size(); ++i) {
        auto item = convert(value[i]);
        if (!item)
            return wrongType(path + "[" + std::to_string(i) + "]", itemType, value[i]);
        out.push_back(std::move(*item));
    }
    return out;
}

std::optional<bool> asBool(const Json& value) {
    if (!value.is_boolean())
        return std::nullopt;
    return value.get<bool>();
}

std::optional<std::string> asString(const Json& value) {
    if (!value.is_string())
        return std::nullopt;
    return value.get<std::string>();
}

std::optional<api::Version> asVersion(const Json& value) {
    if (!value.is_string())
        return std::nullopt;
    return api::Version{value.get<std::string>()};
}

template <class T>
Decoded<api::AttributeValue> widen(Decoded<T> decoded) {
    if (auto* error = std::get_if<FieldError>(&decoded))
        return std::move(*error);
    return api::AttributeValue(std::move(std::get<T>(decoded)));
}

// The ResourceSlice attribute encoding: exactly one of the typed members.
Decoded<api::AttributeValue> decodeAttribute(const Json& value, const std::string& path) {
    if (!value.is_object())
        return wrongType(path, "an object", value);
    static constexpr const char* kTypes[] = {"int",  "bool",  "string",  "version",
                                             "ints", "bools", "strings", "versions"};
    const char* type = nullptr;
    for (const char* candidate : kTypes) {
        if (member(value, candidate) == nullptr)
            continue;
        if (type != nullptr) {
            return FieldError{path, std::string("more than one value type set (") + type + ", " +
                                        candidate + ")"};
        }
        type = candidate;
    }
    if (type == nullptr) {
        return FieldError{path,
                          "no value set (expected one of int, bool, string, version, ints, bools, "
                          "strings, versions)"};
    }
    const Json& v = *member(value, type);
    const std::string field = path + "." + type;
    const std::string_view t = type;
    if (t == "int") {
        if (auto n = asInt64(v))
            return api::AttributeValue(*n);
        return wrongType(field, "a 64-bit integer", v);
    }
    if (t == "bool") {
        if (auto b = asBool(v))
            return api::AttributeValue(*b);
        return wrongType(field, "a boolean", v);
    }
    if (t == "string") {
        if (auto s = asString(v))
            return api::AttributeValue(std::move(*s));
        return wrongType(field, "a string", v);
    }
    if (t == "version") {
        if (auto s = asVersion(v))
            return api::AttributeValue(std::move(*s));
        return wrongType(field, "a string", v);
    }
    if (t == "ints")
        return widen(readList<std::int64_t>(v, field, "a 64-bit integer", asInt64));
    if (t == "bools")
        return widen(readList<bool>(v, field, "a boolean", asBool));
    if (t == "strings")
        return widen(readList<std::string>(v, field, "a string", asString));
    return widen(readList<api::Version>(v, field, "a string", asVersion));
}

Decoded<NetworkData> decodeNetworkData(const Json& value, const std::string& path) {
    if (!value.is_object())
        return wrongType(path, "an object", value);
    NetworkData out;
    if (auto error = readString(value, "interfaceName", path + ".interfaceName", out.interfaceName))
        return *error;
    if (const Json* ips = member(value, "ips")) {
        auto list = readList<std::string>(*ips, path + ".ips", "a string", asString);
        if (auto* error = std::get_if<FieldError>(&list))
            return std::move(*error);
        out.ips = std::move(std::get<std::vector<std::string>>(list));
    }
    if (auto error =
            readString(value, "hardwareAddress", path + ".hardwareAddress", out.hardwareAddress))
        return *error;
    return out;
}

Decoded<Device> decodeDevice(const Json& value, const std::string& path) {
    if (!value.is_object())
        return wrongType(path, "an object", value);
    Device out;
    if (auto error = readString(value, "driver", path + ".driver", out.driver))
        return *error;
    if (auto error = readString(value, "pool", path + ".pool", out.pool))
        return *error;
    if (auto error = readString(value, "name", path + ".name", out.name))
        return *error;
    if (const Json* attributes = member(value, "attributes")) {
        if (!attributes->is_object())
            return wrongType(path + ".attributes", "an object", *attributes);
        for (const auto& [name, attribute] : attributes->items()) {
            auto decoded = decodeAttribute(attribute, path + ".attributes[" + name + "]");
            if (auto* error = std::get_if<FieldError>(&decoded))
                return std::move(*error);
            out.attributes.emplace(name, std::move(std::get<api::AttributeValue>(decoded)));
        }
    }
    if (const Json* network = member(value, "networkData")) {
        auto decoded = decodeNetworkData(*network, path + ".networkData");
        if (auto* error = std::get_if<FieldError>(&decoded))
            return std::move(*error);
        out.networkData = std::move(std::get<NetworkData>(decoded));
    }
    return out;
}

Decoded<DeviceMetadata> decodeObject(const Json& object) {
    DeviceMetadata out;
    out.generation = 0;  // Go's zero value when the field is absent
    if (const Json* meta = member(object, "metadata")) {
        if (!meta->is_object())
            return wrongType("metadata", "an object", *meta);
        if (auto error = readString(*meta, "name", "metadata.name", out.claimName))
            return *error;
        if (auto error = readString(*meta, "namespace", "metadata.namespace", out.claimNamespace))
            return *error;
        if (auto error = readString(*meta, "uid", "metadata.uid", out.claimUid))
            return *error;
        if (const Json* generation = member(*meta, "generation")) {
            auto n = asInt64(*generation);
            if (!n)
                return wrongType("metadata.generation", "a 64-bit integer", *generation);
            out.generation = *n;
        }
    }
    if (const Json* podClaimName = member(object, "podClaimName")) {
        if (!podClaimName->is_string())
            return wrongType("podClaimName", "a string", *podClaimName);
        out.podClaimName = podClaimName->get<std::string>();
    }
    if (const Json* requests = member(object, "requests")) {
        if (!requests->is_array())
            return wrongType("requests", "an array", *requests);
        // One file is one request; a second one could not be represented and must not be lost
        // silently on an update.
        if (requests->size() > 1) {
            return FieldError{"requests", "expected at most one request, found " +
                                              std::to_string(requests->size())};
        }
        if (requests->size() == 1) {
            const Json& request = (*requests)[0];
            if (!request.is_object())
                return wrongType("requests[0]", "an object", request);
            if (auto error = readString(request, "name", "requests[0].name", out.requestName))
                return *error;
            if (const Json* devices = member(request, "devices")) {
                if (!devices->is_array())
                    return wrongType("requests[0].devices", "an array", *devices);
                for (std::size_t i = 0; i < devices->size(); ++i) {
                    auto device = decodeDevice((*devices)[i],
                                               "requests[0].devices[" + std::to_string(i) + "]");
                    if (auto* error = std::get_if<FieldError>(&device))
                        return std::move(*error);
                    out.devices.push_back(std::move(std::get<Device>(device)));
                }
            }
        }
    }
    return out;
}

bool isJsonSpace(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

// Finds the extent of the JSON value starting at `pos` (after whitespace), like Go's
// json.Decoder does for a stream of concatenated values. The value itself is checked by the
// parser afterwards; this only needs to find where it ends. nullopt at the end of the input.
struct Extent {
    std::size_t begin = 0, end = 0;
};

std::variant<std::optional<Extent>, std::string> nextValue(std::string_view text,
                                                           std::size_t& pos) {
    while (pos < text.size() && isJsonSpace(text[pos]))
        ++pos;
    if (pos == text.size())
        return std::optional<Extent>{};
    const std::size_t begin = pos;
    const char first = text[pos];
    if (first == '{' || first == '[' || first == '"') {
        int depth = 0;
        bool inString = false;
        for (; pos < text.size(); ++pos) {
            const char c = text[pos];
            if (inString) {
                if (c == '\\')
                    ++pos;  // skip the escaped character
                else if (c == '"')
                    inString = false;
            } else if (c == '"') {
                inString = true;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                --depth;
            }
            if (!inString && depth == 0) {
                ++pos;
                return std::optional<Extent>{Extent{begin, pos}};
            }
        }
        pos = text.size();
        return "unexpected end of JSON input in the value starting at byte " +
               std::to_string(begin);
    }
    // A scalar runs to the next whitespace or structural character.
    while (pos < text.size() && !isJsonSpace(text[pos]) &&
           std::string_view("{}[],:\"").find(text[pos]) == std::string_view::npos) {
        ++pos;
    }
    if (pos == begin)
        return "invalid character '" + std::string(1, first) + "' at byte " + std::to_string(begin);
    return std::optional<Extent>{Extent{begin, pos}};
}

// Records the parser's message without exceptions (expected errors are values here).
class ErrorCapture : public nlohmann::json_sax<Json> {
  public:
    std::string message;

    bool null() override { return true; }
    bool boolean(bool) override { return true; }
    bool number_integer(number_integer_t) override { return true; }
    bool number_unsigned(number_unsigned_t) override { return true; }
    bool number_float(number_float_t, const string_t&) override { return true; }
    bool string(string_t&) override { return true; }
    bool binary(binary_t&) override { return true; }
    bool start_object(std::size_t) override { return true; }
    bool key(string_t&) override { return true; }
    bool end_object() override { return true; }
    bool start_array(std::size_t) override { return true; }
    bool end_array() override { return true; }
    bool parse_error(std::size_t, const std::string&,
                     const nlohmann::detail::exception& error) override {
        message = error.what();
        return false;
    }
};

std::string parseErrorMessage(std::string_view value) {
    ErrorCapture capture;
    Json::sax_parse(value.begin(), value.end(), &capture);
    return capture.message.empty() ? std::string("invalid JSON") : capture.message;
}

}  // namespace

Status validateVersions(const std::vector<std::string>& versionsNewestFirst) {
    if (versionsNewestFirst.empty()) {
        return Error{"no device metadata API version configured (supported: " +
                     std::string(kV1beta1) + ", " + kV1alpha1 + ")"};
    }
    std::set<std::string_view> seen;
    for (const auto& version : versionsNewestFirst) {
        if (!isKnownVersion(version)) {
            return Error{"unsupported device metadata API version \"" + version +
                         "\" (supported: " + kV1beta1 + ", " + kV1alpha1 + ")"};
        }
        if (!seen.insert(version).second)
            return Error{"device metadata API version \"" + version + "\" listed twice"};
    }
    // Readers take the first version they understand, so the newest must come first.
    if (seen.size() == 2 && versionsNewestFirst.front() != kV1beta1) {
        return Error{"device metadata API versions must be listed newest first (" +
                     std::string(kV1beta1) + "," + kV1alpha1 + ")"};
    }
    return {};
}

std::string encodeStream(const DeviceMetadata& metadata,
                         const std::vector<std::string>& versionsNewestFirst) {
    std::string out;
    for (const auto& version : versionsNewestFirst) {
        out += encodeObject(metadata, version).dump(2);
        out += '\n';
    }
    return out;
}

Result<DeviceMetadata> decodeStream(std::string_view content, std::string_view source) {
    const std::string prefix = std::string(source) + ": ";
    std::vector<std::string> unknownVersions;
    std::size_t pos = 0;
    for (int index = 1;; ++index) {
        const std::string objectName = "object " + std::to_string(index);
        auto next = nextValue(content, pos);
        if (auto* error = std::get_if<std::string>(&next))
            return Error{prefix + "decoding JSON " + objectName + ": " + *error};
        const auto& extent = std::get<std::optional<Extent>>(next);
        if (!extent)
            break;
        const std::string_view text = content.substr(extent->begin, extent->end - extent->begin);
        const Json object = Json::parse(text.begin(), text.end(), nullptr,
                                        /*allow_exceptions=*/false);
        if (object.is_discarded()) {
            return Error{prefix + "decoding JSON " + objectName + " (byte " +
                         std::to_string(extent->begin) + "): " + parseErrorMessage(text)};
        }
        if (!object.is_object())
            return Error{prefix + objectName + ": expected a JSON object, found " +
                         object.type_name()};

        const Json* apiVersion = member(object, "apiVersion");
        if (apiVersion == nullptr || !apiVersion->is_string() ||
            apiVersion->get<std::string>().empty()) {
            return Error{prefix + objectName + ": field apiVersion: missing or not a string"};
        }
        const std::string version = apiVersion->get<std::string>();
        std::string kind;
        if (auto error = readString(object, "kind", "kind", kind))
            return Error{prefix + objectName + ": field kind: " + error->problem};
        // Like apimachinery: a missing type is a decode error, not an unknown type to skip.
        if (kind.empty())
            return Error{prefix + objectName + ": field kind: missing"};
        const std::string groupPrefix = std::string(kGroup) + "/";
        const bool known = version.rfind(groupPrefix, 0) == 0 &&
                           isKnownVersion(std::string_view(version).substr(groupPrefix.size()));
        if (!known || kind != kKind) {
            // Skipped like a type the Go scheme does not have registered.
            unknownVersions.push_back(kind == kKind ? version : version + ", Kind=" + kind);
            continue;
        }
        auto decoded = decodeObject(object);
        if (auto* error = std::get_if<FieldError>(&decoded)) {
            return Error{prefix + objectName + " (" + version + "): field " + error->path + ": " +
                         error->problem};
        }
        return std::get<DeviceMetadata>(std::move(decoded));
    }
    if (!unknownVersions.empty()) {
        std::string list;
        for (const auto& version : unknownVersions)
            list += (list.empty() ? "" : ", ") + version;
        return Error{prefix + "no compatible metadata version found in stream (unknown versions: " +
                     list + ")"};
    }
    return Error{prefix + "no metadata objects found in stream"};
}

}  // namespace numadra::metadata
