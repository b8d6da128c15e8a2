#pragma once
// KEP-5304 device metadata: the DeviceMetadata object (metadata.resource.k8s.io), its file
// encoding (the object once per configured API version, newest first, pretty JSON, each
// followed by '\n'), and where the files and their CDI specs live, exactly as upstream's
// kubeletplugin helper lays them out so tools reading those paths work.
// Facts: shared/spec/cdi-metadata.md §F, shared/spec/upstream-library.md §3.1.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/cdi/spec.hpp"
#include "numadra/common/files.hpp"
#include "numadra/common/result.hpp"

namespace numadra::metadata {

inline constexpr const char* kGroup = "metadata.resource.k8s.io";
inline constexpr const char* kKind = "DeviceMetadata";
// Versions this writer can encode; the field set is the same in both.
inline constexpr const char* kV1alpha1 = "v1alpha1";
inline constexpr const char* kV1beta1 = "v1beta1";
inline constexpr const char* kContainerRoot = "/var/run/kubernetes.io/dra-device-attributes";

struct NetworkData {
    std::string interfaceName;
    std::vector<std::string> ips;  // CIDR form
    std::string hardwareAddress;
    bool operator==(const NetworkData&) const = default;
};

struct Device {
    std::string driver, pool, name;
    std::map<std::string, api::AttributeValue> attributes;  // ResourceSlice encoding
    std::optional<NetworkData> networkData;
    bool operator==(const Device&) const = default;
};

// One file's object: one claim, one request, one driver.
struct DeviceMetadata {
    std::string claimName, claimNamespace, claimUid;
    std::int64_t generation = 1;
    std::optional<std::string> podClaimName;  // template-generated claims only
    std::string requestName;                  // full "request/subrequest" for firstAvailable
    std::vector<Device> devices;
    bool operator==(const DeviceMetadata&) const = default;
};

// Each entry must be kV1alpha1 or kV1beta1, no duplicates, at least one; the error names it.
Status validateVersions(const std::vector<std::string>& versionsNewestFirst);

// The file content: the object encoded once per version in the given order.
std::string encodeStream(const DeviceMetadata& metadata,
                         const std::vector<std::string>& versionsNewestFirst);

// Like upstream's DecodeMetadataFromStream: objects of unknown apiVersion are skipped, the
// first known one is returned; malformed JSON or fields fail with `source` and the field named.
Result<DeviceMetadata> decodeStream(std::string_view content, std::string_view source);

// Names that end up in paths must be what the API allows, so nothing from a claim can escape the
// metadata folder: namespace = DNS label, claim name and podClaimName = DNS subdomain (podClaimName
// a DNS label), request = DNS label (the base request; "req/sub" is accepted and split), driver =
// DNS subdomain. The error names the field and the value.
Status validateNames(std::string_view claimNamespace, std::string_view claimName,
                     std::string_view requestName, std::string_view driverName,
                     const std::optional<std::string>& podClaimName);

struct Layout {
    std::string driverName;
    std::string metadataDir;  // host: <plugins>/<driver>/dra-device-metadata
    std::string cdiDir;       // host: /var/run/cdi
};

// Everything derived from one (claim, request): all paths absolute.
struct RequestFiles {
    std::string claimDirectory;  // <metadataDir>/<ns>_<claim>
    std::string hostFile;        // <claimDirectory>/<baseRequest>/metadata.json
    std::string
        containerPath;  // <kContainerRoot>/{resourceclaims/<claim>|resourceclaimtemplates/<podClaimName>}/<baseRequest>/<driver>-metadata.json
    std::string cdiSpecFile;    // <cdiDir>/<driver>_metadata_<claimUID>_<baseRequest>.json
    std::string cdiKind;        // <driver>/metadata
    std::string cdiDeviceName;  // <claimUID>_<baseRequest>
    std::string cdiDeviceId;    // <driver>/metadata=<claimUID>_<baseRequest>
};

// Validates every name first (validateNames + the claim UID) and checks the results stay below
// the layout's folders.
Result<RequestFiles> requestFiles(const Layout& layout, std::string_view claimNamespace,
                                  std::string_view claimName, std::string_view claimUid,
                                  std::string_view requestName,
                                  const std::optional<std::string>& podClaimName);

// The CDI spec that bind-mounts the file read-only into containers (cdiVersion 0.5.0 like
// upstream; one device, a mount with options ro, bind).
cdi::Spec cdiSpec(const RequestFiles& files);

// Creates the metadata file (and its folders) atomically; the file must not be visible
// half-written. `durability` is what the writes force to disk (files::Durability).
Status createFile(const RequestFiles& files, const DeviceMetadata& metadata,
                  const std::vector<std::string>& versionsNewestFirst,
                  files::Durability durability = files::Durability::Full);

// Rewrites an existing file in place (same inode) with generation = stored generation + 1 and
// podClaimName kept from the stored object; returns the new generation. An error of kind NotFound
// when the file does not exist.
Result<std::int64_t> updateFile(const RequestFiles& files, DeviceMetadata metadata,
                                const std::vector<std::string>& versionsNewestFirst);

}  // namespace numadra::metadata
