#pragma once
// A CDI (Container Device Interface) spec as the container runtime reads it: the value types,
// their JSON encoding (field names of the CDI Go types), and the rules the runtime's CDI library
// enforces beyond the JSON schema (name characters, the version the fields need, non-empty
// edits, no duplicate names). Facts: shared/spec/cdi-metadata.md §E.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/common/result.hpp"

namespace numadra::cdi {

struct DeviceNode {
    std::string path;      // in the container
    std::string hostPath;  // on the host; empty = same as path
    std::string type;      // "c", "b" or empty
    std::optional<std::int64_t> major;
    std::optional<std::int64_t> minor;
    std::string permissions;  // empty = runtime default (rwm)
    bool operator==(const DeviceNode&) const = default;
};

struct Mount {
    std::string hostPath;
    std::string containerPath;
    std::vector<std::string> options;
    std::string type;  // empty = not written (a type needs cdiVersion 0.4.0)
    bool operator==(const Mount&) const = default;
};

// CDI 1.1 (OCI runtime-spec 1.3 linux.netDevices): the runtime moves the host's interface into
// the container's network namespace, renamed to `name`.
struct NetDevice {
    std::string hostInterfaceName;
    std::string name;
    bool operator==(const NetDevice&) const = default;
};

struct ContainerEdits {
    std::vector<std::string> env;  // "NAME=value"
    std::vector<DeviceNode> deviceNodes;
    std::vector<Mount> mounts;
    std::vector<NetDevice> netDevices = {};  // needs cdiVersion 1.1.0
    bool empty() const {
        return env.empty() && deviceNodes.empty() && mounts.empty() && netDevices.empty();
    }
    bool operator==(const ContainerEdits&) const = default;
};

struct Device {
    std::string name;
    ContainerEdits containerEdits;
    bool operator==(const Device&) const = default;
};

struct Spec {
    std::string cdiVersion;  // empty: toJson/serialize write minimumVersion()
    std::string kind;        // "vendor/class"
    std::vector<Device> devices;
    ContainerEdits containerEdits;  // applied when any device of the spec is injected
    bool operator==(const Spec&) const = default;
};

// The versions the CDI library knows, oldest first ("0.1.0" ... "1.1.0").
const std::vector<std::string>& knownVersions();

// The lowest cdiVersion the spec's content needs, never below "0.3.0" (the library's rule):
// 0.4.0 for a mount type, 0.5.0 for a hostPath or a device name starting with a digit, 0.6.0
// for a '.' in the class, 1.1.0 for netDevices.
std::string minimumVersion(const Spec& spec);

// Everything the runtime's CDI library checks when it loads the spec; the error names the
// device and the field.
Status validate(const Spec& spec);

bool isValidVendor(std::string_view vendor);
bool isValidClass(std::string_view cls);
bool isValidDeviceName(std::string_view name);

// "vendor/class" + "name" -> "vendor/class=name".
std::string qualifiedName(std::string_view kind, std::string_view deviceName);

// The CDI library's transient spec name: "<vendor>-<class>_<id>.json", '/' in id -> '_'.
std::string transientSpecFileName(std::string_view vendor, std::string_view cls,
                                  std::string_view id);

api::Json toJson(const Spec& spec);
std::string serialize(const Spec& spec);  // pretty JSON, newline-terminated

// Strict, like the runtime: unknown fields, wrong types and missing required fields fail, with
// the field path in the message. `source` names the input (file path) in errors.
Result<Spec> parse(std::string_view json, std::string_view source);

}  // namespace numadra::cdi
