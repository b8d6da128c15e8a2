#include "numadra/cdi/spec.hpp"

#include <algorithm>
#include <limits>
#include <set>

#include "numadra/common/text.hpp"

namespace numadra::cdi {

namespace {

// Positions in knownVersions() of the versions that add features. The library never computes
// a minimum below 0.3.0, even for a spec that would parse under 0.1.0.
constexpr size_t kV030 = 2;
constexpr size_t kV040 = 3;  // mounts[].type
constexpr size_t kV050 = 4;  // deviceNodes[].hostPath, device names starting with a digit
constexpr size_t kV060 = 5;  // '.' in the class
constexpr size_t kV110 = 9;  // netDevices

bool isLetter(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}
bool isDigit(char c) {
    return c >= '0' && c <= '9';
}
bool isAlphaNumeric(char c) {
    return isLetter(c) || isDigit(c);
}

std::string quote(std::string_view s) {
    return api::Json(std::string(s)).dump();
}

// The parser's shared shape for vendor, class and device names: a first character, middle
// characters from alphanumerics plus `extraMiddle`, an alphanumeric last character. Returns why
// the name is invalid, or an empty string.
std::string nameProblem(std::string_view name, bool firstMustBeLetter,
                        std::string_view extraMiddle) {
    if (name.empty())
        return "is empty";
    if (firstMustBeLetter ? !isLetter(name.front()) : !isAlphaNumeric(name.front()))
        return firstMustBeLetter ? "must start with a letter" : "must start with a letter or digit";
    for (size_t i = 1; i + 1 < name.size(); ++i) {
        const char c = name[i];
        if (!isAlphaNumeric(c) && extraMiddle.find(c) == std::string_view::npos)
            return "has the invalid character " + quote(std::string(1, c));
    }
    if (!isAlphaNumeric(name.back()))
        return "must end with a letter or digit";
    return {};
}

std::string vendorOrClassProblem(std::string_view name) {
    return nameProblem(name, true, "_.-");
}
std::string deviceNameProblem(std::string_view name) {
    return nameProblem(name, false, "_.-:");
}

std::string_view withoutV(std::string_view version) {
    if (!version.empty() && version.front() == 'v')
        version.remove_prefix(1);
    return version;
}

// Position in knownVersions(), or nullopt for a version the library does not know.
std::optional<size_t> versionIndex(std::string_view version) {
    const auto& known = knownVersions();
    auto it = std::find(known.begin(), known.end(), withoutV(version));
    if (it == known.end())
        return std::nullopt;
    return static_cast<size_t>(it - known.begin());
}

// The class part of "vendor/class" (everything after the first '/'); empty when there is none.
std::string_view classOf(std::string_view kind) {
    auto slash = kind.find('/');
    return slash == std::string_view::npos ? std::string_view{} : kind.substr(slash + 1);
}

struct Minimum {
    size_t index = kV030;
    std::string reason;  // the first feature that needs `index`
    void require(size_t needed, const std::string& why) {
        if (needed > index) {
            index = needed;
            reason = why;
        }
    }
};

void requireForEdits(const ContainerEdits& edits, const std::string& where, Minimum& minimum) {
    if (!edits.netDevices.empty())
        minimum.require(kV110, where + "containerEdits.netDevices is set");
    for (size_t i = 0; i < edits.mounts.size(); ++i) {
        if (!edits.mounts[i].type.empty()) {
            minimum.require(kV040,
                            where + "containerEdits.mounts[" + std::to_string(i) + "].type is set");
        }
    }
    for (size_t i = 0; i < edits.deviceNodes.size(); ++i) {
        if (!edits.deviceNodes[i].hostPath.empty()) {
            minimum.require(kV050, where + "containerEdits.deviceNodes[" + std::to_string(i) +
                                       "].hostPath is set");
        }
    }
}

Minimum minimumFor(const Spec& spec) {
    Minimum minimum;
    // Highest requirement first, so the reason names the feature that sets the version.
    if (classOf(spec.kind).find('.') != std::string_view::npos)
        minimum.require(kV060, "the class in kind " + quote(spec.kind) + " contains '.'");
    for (const auto& device : spec.devices) {
        if (!device.name.empty() && isDigit(device.name.front()))
            minimum.require(kV050, "device " + quote(device.name) + " starts with a digit");
        requireForEdits(device.containerEdits, "device " + quote(device.name) + ": ", minimum);
    }
    requireForEdits(spec.containerEdits, "", minimum);
    return minimum;
}

Status validateEdits(const ContainerEdits& edits, const std::string& context) {
    auto fail = [&](const std::string& field, const std::string& problem) {
        return Status(Error{context + "containerEdits." + field + " " + problem});
    };
    for (size_t i = 0; i < edits.env.size(); ++i) {
        const auto& entry = edits.env[i];
        auto equals = entry.find('=');
        if (equals == std::string::npos || equals == 0) {
            return fail("env[" + std::to_string(i) + "]",
                        quote(entry) + " is not NAME=value (a '=' after a non-empty name)");
        }
    }
    for (size_t i = 0; i < edits.deviceNodes.size(); ++i) {
        const auto& node = edits.deviceNodes[i];
        const std::string field = "deviceNodes[" + std::to_string(i) + "].";
        if (node.path.empty())
            return fail(field + "path", "is empty");
        static const std::set<std::string> kTypes{"", "b", "c", "u", "p"};
        if (kTypes.count(node.type) == 0) {
            return fail(field + "type",
                        quote(node.type) + " is not one of \"\", \"b\", \"c\", \"u\", \"p\"");
        }
        if (node.permissions != "none" &&
            node.permissions.find_first_not_of("rwm") != std::string::npos) {
            return fail(field + "permissions",
                        quote(node.permissions) + " must be empty, \"none\" or letters of \"rwm\"");
        }
    }
    for (size_t i = 0; i < edits.mounts.size(); ++i) {
        const auto& mount = edits.mounts[i];
        const std::string field = "mounts[" + std::to_string(i) + "].";
        if (mount.hostPath.empty())
            return fail(field + "hostPath", "is empty");
        if (mount.containerPath.empty())
            return fail(field + "containerPath", "is empty");
    }
    // The library's ValidateNetDevices: both names set, each host interface and each name once.
    std::set<std::string> hosts, names;
    for (size_t i = 0; i < edits.netDevices.size(); ++i) {
        const auto& device = edits.netDevices[i];
        const std::string field = "netDevices[" + std::to_string(i) + "].";
        if (device.hostInterfaceName.empty())
            return fail(field + "hostInterfaceName", "is empty");
        if (device.name.empty())
            return fail(field + "name", "is empty");
        if (!hosts.insert(device.hostInterfaceName).second)
            return fail(field + "hostInterfaceName",
                        quote(device.hostInterfaceName) + " is listed twice");
        if (!names.insert(device.name).second)
            return fail(field + "name", quote(device.name) + " is listed twice");
    }
    return Status::Ok();
}

// ---- JSON encoding -------------------------------------------------------------------------

api::Json toJson(const DeviceNode& node) {
    api::Json out = api::Json::object();
    out["path"] = node.path;
    if (!node.hostPath.empty())
        out["hostPath"] = node.hostPath;
    if (!node.type.empty())
        out["type"] = node.type;
    if (node.major)
        out["major"] = *node.major;
    if (node.minor)
        out["minor"] = *node.minor;
    if (!node.permissions.empty())
        out["permissions"] = node.permissions;
    return out;
}

api::Json toJson(const Mount& mount) {
    api::Json out = api::Json::object();
    out["hostPath"] = mount.hostPath;
    out["containerPath"] = mount.containerPath;
    if (!mount.options.empty())
        out["options"] = mount.options;
    if (!mount.type.empty())
        out["type"] = mount.type;
    return out;
}

api::Json toJson(const ContainerEdits& edits) {
    api::Json out = api::Json::object();
    if (!edits.env.empty())
        out["env"] = edits.env;
    if (!edits.deviceNodes.empty()) {
        api::Json nodes = api::Json::array();
        for (const auto& node : edits.deviceNodes)
            nodes.push_back(toJson(node));
        out["deviceNodes"] = std::move(nodes);
    }
    if (!edits.mounts.empty()) {
        api::Json mounts = api::Json::array();
        for (const auto& mount : edits.mounts)
            mounts.push_back(toJson(mount));
        out["mounts"] = std::move(mounts);
    }
    if (!edits.netDevices.empty()) {
        api::Json devices = api::Json::array();
        for (const auto& device : edits.netDevices)
            devices.push_back(
                {{"hostInterfaceName", device.hostInterfaceName}, {"name", device.name}});
        out["netDevices"] = std::move(devices);
    }
    return out;
}

// ---- Strict parsing ------------------------------------------------------------------------

// Fields the CDI spec defines but this project never writes: a spec carrying them is not one
// of ours, and accepting them silently would drop them on the next write.
const std::set<std::string> kUnsupportedSpecFields{"annotations"};
const std::set<std::string> kUnsupportedDeviceFields{"annotations"};
const std::set<std::string> kUnsupportedEditsFields{"hooks", "intelRdt", "additionalGids"};
const std::set<std::string> kUnsupportedNodeFields{"fileMode", "uid", "gid"};

class Parser {
  public:
    explicit Parser(std::string_view source) : source_(source) {}

    Error error(const std::string& path, const std::string& problem) const {
        return Error{source_ + ": " + (path.empty() ? "" : path + ": ") + problem};
    }

    // Rejects a non-object and any key outside `known`, naming the first offending key.
    Status object(const api::Json& value, const std::string& path,
                  const std::set<std::string>& known,
                  const std::set<std::string>& unsupported) const {
        if (!value.is_object())
            return error(path, "must be an object, got " + std::string(value.type_name()));
        for (const auto& [key, unused] : value.items()) {
            const std::string where = join(path, key);
            if (unsupported.count(key) != 0)
                return error(where, "is a CDI field this driver does not support");
            if (known.count(key) == 0)
                return error(where, "unknown field");
        }
        return Status::Ok();
    }

    Status required(const api::Json& object, const std::string& path,
                    std::initializer_list<const char*> keys) const {
        for (const char* key : keys) {
            if (!object.contains(key))
                return error(join(path, key), "required field is missing");
        }
        return Status::Ok();
    }

    Status string(const api::Json& object, const std::string& path, const char* key,
                  std::string& out) const {
        auto it = object.find(key);
        if (it == object.end())
            return Status::Ok();
        if (!it->is_string())
            return error(join(path, key), "must be a string, got " + std::string(it->type_name()));
        out = it->get<std::string>();
        return Status::Ok();
    }

    Status strings(const api::Json& object, const std::string& path, const char* key,
                   std::vector<std::string>& out) const {
        auto it = object.find(key);
        if (it == object.end())
            return Status::Ok();
        const std::string where = join(path, key);
        if (!it->is_array())
            return error(where, "must be an array, got " + std::string(it->type_name()));
        for (size_t i = 0; i < it->size(); ++i) {
            const auto& item = (*it)[i];
            if (!item.is_string()) {
                return error(where + "[" + std::to_string(i) + "]",
                             "must be a string, got " + std::string(item.type_name()));
            }
            out.push_back(item.get<std::string>());
        }
        return Status::Ok();
    }

    Status int64(const api::Json& object, const std::string& path, const char* key,
                 std::optional<std::int64_t>& out) const {
        auto it = object.find(key);
        if (it == object.end())
            return Status::Ok();
        const std::string where = join(path, key);
        if (!it->is_number_integer())
            return error(where, "must be an integer, got " + describe(*it));
        if (it->is_number_unsigned() &&
            it->get<std::uint64_t>() >
                static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
            return error(where, "is out of the int64 range");
        }
        out = it->get<std::int64_t>();
        return Status::Ok();
    }

    // The array at object[key] (absent = empty); `each` parses one element.
    template <class T, class F>
    Status array(const api::Json& object, const std::string& path, const char* key,
                 std::vector<T>& out, F each) const {
        auto it = object.find(key);
        if (it == object.end())
            return Status::Ok();
        const std::string where = join(path, key);
        if (!it->is_array())
            return error(where, "must be an array, got " + std::string(it->type_name()));
        for (size_t i = 0; i < it->size(); ++i) {
            T item;
            if (Status s = each((*it)[i], where + "[" + std::to_string(i) + "]", item); !s)
                return s;
            out.push_back(std::move(item));
        }
        return Status::Ok();
    }

    Status deviceNode(const api::Json& value, const std::string& path, DeviceNode& out) const {
        Status s =
            object(value, path, {"path", "hostPath", "type", "major", "minor", "permissions"},
                   kUnsupportedNodeFields);
        if (s)
            s = required(value, path, {"path"});
        if (s)
            s = string(value, path, "path", out.path);
        if (s)
            s = string(value, path, "hostPath", out.hostPath);
        if (s)
            s = string(value, path, "type", out.type);
        if (s)
            s = int64(value, path, "major", out.major);
        if (s)
            s = int64(value, path, "minor", out.minor);
        if (s)
            s = string(value, path, "permissions", out.permissions);
        return s;
    }

    Status mount(const api::Json& value, const std::string& path, Mount& out) const {
        Status s = object(value, path, {"hostPath", "containerPath", "options", "type"}, {});
        if (s)
            s = required(value, path, {"hostPath", "containerPath"});
        if (s)
            s = string(value, path, "hostPath", out.hostPath);
        if (s)
            s = string(value, path, "containerPath", out.containerPath);
        if (s)
            s = strings(value, path, "options", out.options);
        if (s)
            s = string(value, path, "type", out.type);
        return s;
    }

    Status netDevice(const api::Json& value, const std::string& path, NetDevice& out) const {
        Status s = object(value, path, {"hostInterfaceName", "name"}, {});
        if (s)
            s = required(value, path, {"hostInterfaceName", "name"});
        if (s)
            s = string(value, path, "hostInterfaceName", out.hostInterfaceName);
        if (s)
            s = string(value, path, "name", out.name);
        return s;
    }

    Status edits(const api::Json& value, const std::string& path, ContainerEdits& out) const {
        Status s = object(value, path, {"env", "deviceNodes", "mounts", "netDevices"},
                          kUnsupportedEditsFields);
        if (s)
            s = strings(value, path, "env", out.env);
        if (s) {
            s = array(value, path, "deviceNodes", out.deviceNodes,
                      [this](const api::Json& v, const std::string& p, DeviceNode& n) {
                          return deviceNode(v, p, n);
                      });
        }
        if (s) {
            s = array(value, path, "mounts", out.mounts,
                      [this](const api::Json& v, const std::string& p, Mount& m) {
                          return mount(v, p, m);
                      });
        }
        if (s) {
            s = array(value, path, "netDevices", out.netDevices,
                      [this](const api::Json& v, const std::string& p, NetDevice& d) {
                          return netDevice(v, p, d);
                      });
        }
        return s;
    }

    Status device(const api::Json& value, const std::string& path, Device& out) const {
        Status s = object(value, path, {"name", "containerEdits"}, kUnsupportedDeviceFields);
        if (s)
            s = required(value, path, {"name", "containerEdits"});
        if (s)
            s = string(value, path, "name", out.name);
        if (s)
            s = edits(value.at("containerEdits"), join(path, "containerEdits"), out.containerEdits);
        return s;
    }

    Status spec(const api::Json& value, Spec& out) const {
        Status s = object(value, "", {"cdiVersion", "kind", "devices", "containerEdits"},
                          kUnsupportedSpecFields);
        if (s)
            s = required(value, "", {"cdiVersion", "kind", "devices"});
        if (s)
            s = string(value, "", "cdiVersion", out.cdiVersion);
        if (s)
            s = string(value, "", "kind", out.kind);
        if (s) {
            s = array(value, "", "devices", out.devices,
                      [this](const api::Json& v, const std::string& p, Device& d) {
                          return device(v, p, d);
                      });
        }
        if (s && value.contains("containerEdits"))
            s = edits(value.at("containerEdits"), "containerEdits", out.containerEdits);
        return s;
    }

  private:
    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? key : path + "." + key;
    }
    static std::string describe(const api::Json& value) {
        if (value.is_number_float())
            return "the fraction " + value.dump();
        return value.type_name();
    }

    std::string source_;
};

}  // namespace

const std::vector<std::string>& knownVersions() {
    static const std::vector<std::string> versions{"0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0",
                                                   "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0"};
    return versions;
}

std::string minimumVersion(const Spec& spec) {
    return knownVersions()[minimumFor(spec).index];
}

bool isValidVendor(std::string_view vendor) {
    return vendorOrClassProblem(vendor).empty();
}

bool isValidClass(std::string_view cls) {
    return vendorOrClassProblem(cls).empty();
}

bool isValidDeviceName(std::string_view name) {
    return deviceNameProblem(name).empty();
}

Status validate(const Spec& spec) {
    const Minimum minimum = minimumFor(spec);
    // An empty version is written as the minimum (toJson), so it is valid by construction.
    if (!spec.cdiVersion.empty()) {
        auto index = versionIndex(spec.cdiVersion);
        if (!index) {
            return Error{
                "cdiVersion " + quote(spec.cdiVersion) +
                " is not a known CDI version (known: " + text::join(knownVersions(), ", ") + ")"};
        }
        if (*index < minimum.index) {
            return Error{"cdiVersion " + quote(spec.cdiVersion) + " is lower than " +
                         knownVersions()[minimum.index] + ", which the spec needs because " +
                         minimum.reason};
        }
    }

    auto slash = spec.kind.find('/');
    if (slash == std::string::npos)
        return Error{"kind " + quote(spec.kind) + " is not of the form \"vendor/class\""};
    const std::string_view kind = spec.kind;
    if (auto problem = vendorOrClassProblem(kind.substr(0, slash)); !problem.empty())
        return Error{"kind " + quote(spec.kind) + ": the vendor " + problem};
    if (auto problem = vendorOrClassProblem(kind.substr(slash + 1)); !problem.empty())
        return Error{"kind " + quote(spec.kind) + ": the class " + problem};

    if (Status s = validateEdits(spec.containerEdits, ""); !s)
        return s;

    if (spec.devices.empty())
        return Error{"spec has no devices (a CDI spec needs at least one)"};
    std::set<std::string> seen;
    for (const auto& device : spec.devices) {
        const std::string context = "device " + quote(device.name) + ": ";
        if (auto problem = deviceNameProblem(device.name); !problem.empty())
            return Error{context + "the name " + problem};
        if (!seen.insert(device.name).second)
            return Error{context + "duplicate device name in the spec"};
        // The library rejects the whole spec for one device without edits.
        if (device.containerEdits.empty())
            return Error{context + "containerEdits is empty"};
        if (Status s = validateEdits(device.containerEdits, context); !s)
            return s;
    }
    return Status::Ok();
}

std::string qualifiedName(std::string_view kind, std::string_view deviceName) {
    return std::string(kind) + "=" + std::string(deviceName);
}

std::string transientSpecFileName(std::string_view vendor, std::string_view cls,
                                  std::string_view id) {
    std::string safeId(id);
    std::replace(safeId.begin(), safeId.end(), '/', '_');
    return std::string(vendor) + "-" + std::string(cls) + "_" + safeId + ".json";
}

api::Json toJson(const Spec& spec) {
    api::Json out = api::Json::object();
    out["cdiVersion"] = spec.cdiVersion.empty() ? minimumVersion(spec) : spec.cdiVersion;
    out["kind"] = spec.kind;
    api::Json devices = api::Json::array();
    for (const auto& device : spec.devices) {
        api::Json entry = api::Json::object();
        entry["name"] = device.name;
        entry["containerEdits"] = toJson(device.containerEdits);  // required, even when empty
        devices.push_back(std::move(entry));
    }
    out["devices"] = std::move(devices);
    if (!spec.containerEdits.empty())
        out["containerEdits"] = toJson(spec.containerEdits);
    return out;
}

std::string serialize(const Spec& spec) {
    return toJson(spec).dump(2) + "\n";
}

Result<Spec> parse(std::string_view json, std::string_view source) {
    const Parser parser(source);
    // nlohmann keeps the last of two equal keys; the runtime's strict YAML decoder rejects them,
    // so the parse callback records the first duplicate per object.
    std::vector<std::set<std::string>> keysPerObject;
    std::string duplicate;
    auto callback = [&](int /*depth*/, api::Json::parse_event_t event, api::Json& parsed) {
        using Event = api::Json::parse_event_t;
        if (event == Event::object_start) {
            keysPerObject.emplace_back();
        } else if (event == Event::object_end) {
            if (!keysPerObject.empty())
                keysPerObject.pop_back();
        } else if (event == Event::key && !keysPerObject.empty() && duplicate.empty()) {
            const auto key = parsed.get<std::string>();
            if (!keysPerObject.back().insert(key).second)
                duplicate = key;
        }
        return true;
    };
    api::Json document;
    try {
        document = api::Json::parse(json.begin(), json.end(), callback);
    } catch (const api::Json::parse_error& e) {
        return parser.error("", std::string("invalid JSON: ") + e.what());
    }
    if (!duplicate.empty())
        return parser.error("", "field " + quote(duplicate) + " appears twice in one object");
    Spec spec;
    if (Status s = parser.spec(document, spec); !s)
        return s.error();
    return spec;
}

}  // namespace numadra::cdi
