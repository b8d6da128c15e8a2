// Where the device metadata files and their CDI specs live (upstream kubeletplugin's layout), the
// name checks that keep a claim's names from steering those paths anywhere else, and the file
// writes: atomic on creation, in place (same inode) on update.

#include <climits>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <string>
#include <string_view>
#include <utility>

#include "numadra/common/files.hpp"
#include "numadra/metadata/device_metadata.hpp"

namespace numadra::metadata {

namespace {

constexpr std::size_t kDnsLabelMax = 63;
constexpr std::size_t kDnsSubdomainMax = 253;
constexpr std::size_t kUidMax = 128;
// Values end up in log lines; a huge or binary name must not make the message unreadable.
constexpr std::size_t kQuotedMax = 64;

bool isLowerAlnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool isAlnum(char c) {
    return isLowerAlnum(c) || (c >= 'A' && c <= 'Z');
}

// [a-z0-9]([-a-z0-9]*[a-z0-9])? without the length limit (subdomain parts have none of their own).
bool isLabelShape(std::string_view s) {
    if (s.empty() || !isLowerAlnum(s.front()) || !isLowerAlnum(s.back()))
        return false;
    for (char c : s) {
        if (!isLowerAlnum(c) && c != '-')
            return false;
    }
    return true;
}

bool isDnsLabel(std::string_view s) {
    return s.size() <= kDnsLabelMax && isLabelShape(s);
}

bool isDnsSubdomain(std::string_view s) {
    if (s.empty() || s.size() > kDnsSubdomainMax)
        return false;
    for (std::size_t start = 0;;) {
        const std::size_t dot = s.find('.', start);
        if (!isLabelShape(s.substr(start, dot == std::string_view::npos ? dot : dot - start)))
            return false;
        if (dot == std::string_view::npos)
            return true;
        start = dot + 1;
    }
}

bool isUid(std::string_view s) {
    if (s.empty() || s.size() > kUidMax)
        return false;
    // Alphanumeric ends: the UID starts the CDI device name, which must start with one.
    if (!isAlnum(s.front()) || !isAlnum(s.back()))
        return false;
    for (char c : s) {
        if (!isAlnum(c) && c != '-')
            return false;
    }
    return true;
}

std::string quote(std::string_view value) {
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out = "\"";
    const std::string_view shown = value.substr(0, kQuotedMax);
    for (char c : shown) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20 || u >= 0x7f) {
            out += "\\x";
            out += kHex[u >> 4];
            out += kHex[u & 0xf];
        } else {
            out += c;
        }
    }
    out += '"';
    if (value.size() > shown.size())
        out += "... (" + std::to_string(value.size()) + " characters)";
    return out;
}

constexpr const char* kLabelRule =
    "must be a DNS-1123 label: at most 63 characters of lower-case letters, digits and '-', "
    "starting and ending with a letter or digit";
constexpr const char* kSubdomainRule =
    "must be a DNS-1123 subdomain: at most 253 characters, '.'-separated parts of lower-case "
    "letters, digits and '-', each starting and ending with a letter or digit";

Error invalid(std::string_view field, std::string_view value, const char* rule) {
    return Error{"invalid " + std::string(field) + " " + quote(value) + ": " + rule};
}

std::string_view baseRequestOf(std::string_view requestName) {
    return requestName.substr(0, requestName.find('/'));
}

std::string joinPath(const std::string& dir, std::string_view name) {
    return dir == "/" ? dir + std::string(name) : dir + "/" + std::string(name);
}

std::string parentOf(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == 0 ? "/" : path.substr(0, slash);
}

// Lexical, like filepath.Clean: symlinks are the host's business, names are ours.
bool isStrictlyBelow(const std::string& path, const std::string& dir) {
    namespace fs = std::filesystem;
    const fs::path relative =
        fs::path(path).lexically_normal().lexically_relative(fs::path(dir).lexically_normal());
    return !relative.empty() && relative != "." && *relative.begin() != "..";
}

// Each name must be a single path component the file system accepts; a too-long one would only
// fail later at mkdir/open with a less helpful message.
Status checkComponents(const std::string& path) {
    for (const auto& part : std::filesystem::path(path)) {
        if (part.native().size() > NAME_MAX) {
            return Error{"path " + quote(path) + ": the component " + quote(part.native()) +
                         " is longer than " + std::to_string(NAME_MAX) + " bytes"};
        }
    }
    return {};
}

Result<std::string> normalizedDirectory(std::string_view field, const std::string& dir) {
    if (dir.empty() || dir.front() != '/')
        return Error{"layout " + std::string(field) + " " + quote(dir) + " is not absolute"};
    std::string normal = std::filesystem::path(dir).lexically_normal().string();
    while (normal.size() > 1 && normal.back() == '/')
        normal.pop_back();
    return normal;
}

}  // namespace

Status validateNames(std::string_view claimNamespace, std::string_view claimName,
                     std::string_view requestName, std::string_view driverName,
                     const std::optional<std::string>& podClaimName) {
    if (!isDnsLabel(claimNamespace))
        return invalid("claim namespace", claimNamespace, kLabelRule);
    if (!isDnsSubdomain(claimName))
        return invalid("claim name", claimName, kSubdomainRule);
    // "request/subrequest" (firstAvailable): both parts are DNS labels, only one separator.
    const auto slash = requestName.find('/');
    const std::string_view base = requestName.substr(0, slash);
    if (!isDnsLabel(base))
        return invalid("request name", requestName, kLabelRule);
    if (slash != std::string_view::npos && !isDnsLabel(requestName.substr(slash + 1))) {
        return invalid("request name", requestName,
                       "the subrequest after '/' must be a DNS-1123 label: at most 63 characters "
                       "of lower-case letters, digits and '-', starting and ending with a letter "
                       "or digit");
    }
    if (!isDnsSubdomain(driverName))
        return invalid("driver name", driverName, kSubdomainRule);
    if (podClaimName && !isDnsLabel(*podClaimName))
        return invalid("podClaimName", *podClaimName, kLabelRule);
    return {};
}

Result<RequestFiles> requestFiles(const Layout& layout, std::string_view claimNamespace,
                                  std::string_view claimName, std::string_view claimUid,
                                  std::string_view requestName,
                                  const std::optional<std::string>& podClaimName) {
    if (auto names =
            validateNames(claimNamespace, claimName, requestName, layout.driverName, podClaimName);
        !names) {
        return names.error();
    }
    if (!isUid(claimUid)) {
        return invalid("claim UID", claimUid,
                       "must be 1 to 128 letters, digits and '-', starting and ending with a "
                       "letter or digit");
    }
    auto metadataDir = normalizedDirectory("metadataDir", layout.metadataDir);
    if (!metadataDir)
        return metadataDir.error();
    auto cdiDir = normalizedDirectory("cdiDir", layout.cdiDir);
    if (!cdiDir)
        return cdiDir.error();

    const std::string driver = layout.driverName;
    const std::string base(baseRequestOf(requestName));
    const std::string uid(claimUid);

    RequestFiles files;
    files.claimDirectory =
        joinPath(*metadataDir, std::string(claimNamespace) + "_" + std::string(claimName));
    files.hostFile = files.claimDirectory + "/" + base + "/metadata.json";
    files.containerPath = std::string(kContainerRoot) +
                          (podClaimName ? "/resourceclaimtemplates/" + *podClaimName
                                        : "/resourceclaims/" + std::string(claimName)) +
                          "/" + base + "/" + driver + "-metadata.json";
    files.cdiSpecFile = joinPath(*cdiDir, driver + "_metadata_" + uid + "_" + base + ".json");
    files.cdiKind = driver + "/metadata";
    files.cdiDeviceName = uid + "_" + base;
    files.cdiDeviceId = files.cdiKind + "=" + files.cdiDeviceName;

    // Defence in depth: the name rules already exclude '/' and "..", but the paths are what
    // gets written and removed recursively, so check the result as well.
    if (!isStrictlyBelow(files.claimDirectory, *metadataDir) ||
        !isStrictlyBelow(files.hostFile, files.claimDirectory)) {
        return Error{"metadata path " + quote(files.hostFile) + " is not below " +
                     quote(*metadataDir)};
    }
    if (parentOf(std::filesystem::path(files.cdiSpecFile).lexically_normal().string()) != *cdiDir) {
        return Error{"CDI spec path " + quote(files.cdiSpecFile) + " is not in " + quote(*cdiDir)};
    }
    for (const auto* path : {&files.hostFile, &files.cdiSpecFile, &files.containerPath}) {
        if (auto ok = checkComponents(*path); !ok)
            return ok.error();
    }
    return files;
}

cdi::Spec cdiSpec(const RequestFiles& files) {
    cdi::Spec spec;
    // Upstream hard-codes 0.5.0; the lowest version the content needs is what older runtimes
    // read (0.5.0 when the UID that starts the device name starts with a digit, else 0.3.0).
    spec.cdiVersion = "";  // cdi::serialize writes cdi::minimumVersion(spec)
    spec.kind = files.cdiKind;
    cdi::Device device;
    device.name = files.cdiDeviceName;
    cdi::Mount mount;
    mount.hostPath = files.hostFile;
    mount.containerPath = files.containerPath;
    mount.options = {"ro", "bind"};
    device.containerEdits.mounts.push_back(std::move(mount));
    spec.devices.push_back(std::move(device));
    return spec;
}

Status createFile(const RequestFiles& files, const DeviceMetadata& metadata,
                  const std::vector<std::string>& versionsNewestFirst,
                  files::Durability durability) {
    if (auto versions = validateVersions(versionsNewestFirst); !versions)
        return versions;
    if (auto made = files::makeDirectories(parentOf(files.hostFile), 0755, durability); !made)
        return made.error().withMessage("creating device metadata folder: " + made.error().message);
    // Atomic, once: the CDI spec that mounts this file is published only afterwards, so no
    // container can see it half-written.
    if (auto written = files::writeFileAtomically(
            files.hostFile, encodeStream(metadata, versionsNewestFirst), 0644, durability);
        !written) {
        return written.error().withMessage("writing device metadata: " + written.error().message);
    }
    return {};
}

Result<std::int64_t> updateFile(const RequestFiles& files, DeviceMetadata metadata,
                                const std::vector<std::string>& versionsNewestFirst) {
    if (auto versions = validateVersions(versionsNewestFirst); !versions)
        return versions.error();
    auto content = files::readFile(files.hostFile);
    if (!content) {
        return content.error().withMessage(
            "device metadata of the request not found in the prepared claim: " +
            content.error().message);
    }
    auto stored = decodeStream(*content, files.hostFile);
    if (!stored)
        return stored.error();
    if (stored->generation == std::numeric_limits<std::int64_t>::max())
        return Error{files.hostFile + ": generation cannot be incremented any further"};
    // podClaimName comes from the claim's annotation at prepare time; an updater (e.g. an NRI
    // hook) does not know it, so the stored one wins, as upstream does.
    metadata.podClaimName = stored->podClaimName;
    metadata.generation = stored->generation + 1;
    // In place: the container's single-file bind mount pins the inode, so a rename would leave
    // running containers reading the old content.
    if (auto written =
            files::rewriteFileInPlace(files.hostFile, encodeStream(metadata, versionsNewestFirst));
        !written) {
        return written.error().withMessage("updating device metadata: " + written.error().message);
    }
    return metadata.generation;
}

}  // namespace numadra::metadata
