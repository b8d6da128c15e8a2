#include "orphans.hpp"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <optional>
#include <string_view>

#include "numadra/common/files.hpp"
#include "numadra/common/text.hpp"
#include "numadra/metadata/device_metadata.hpp"
#include "numadra/state/checkpoint.hpp"

namespace numadra::prepare::detail {

namespace {

constexpr std::string_view kJson = ".json";
constexpr std::string_view kTempMarker = ".tmp.";

// The claim UID in the name of one of this driver's CDI specs: "<driver>-claim_<uid>.json"
// (the claim's spec) or "<driver>_metadata_<uid>_<request>.json" (a metadata spec).
std::optional<std::string> specOwner(std::string_view name, const std::string& driver) {
    if (!name.ends_with(kJson))
        return std::nullopt;
    name.remove_suffix(kJson.size());
    std::string_view uid;
    if (const std::string claimPrefix = driver + "-claim_"; text::startsWith(name, claimPrefix)) {
        uid = name.substr(claimPrefix.size());
    } else if (const std::string metadataPrefix = driver + "_metadata_";
               text::startsWith(name, metadataPrefix)) {
        // A UID has no '_': the request's name starts after the first one.
        uid = name.substr(metadataPrefix.size());
        uid = uid.substr(0, uid.find('_'));
    } else {
        return std::nullopt;
    }
    if (!state::CheckpointStore::isValidUid(uid))
        return std::nullopt;
    return std::string(uid);
}

// ".<spec name>.tmp.<random>": what files::writeFileAtomically leaves when it is interrupted.
bool isInterruptedSpecWrite(std::string_view name, const std::string& driver) {
    if (!text::startsWith(name, "."))
        return false;
    const auto marker = name.find(kTempMarker);
    return marker != std::string_view::npos &&
           specOwner(name.substr(1, marker - 1), driver).has_value();
}

bool isFolder(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// What the metadata files in <claimFolder>/<request>/metadata.json say about their writers. A
// file that cannot be read or decoded says nothing.
struct MetadataWriters {
    std::set<std::string> claimUids;
    bool otherDriver = false;  // a file names a device of another driver
};

MetadataWriters writersOf(const std::string& claimFolder, const std::string& driver) {
    MetadataWriters writers;
    auto requests = files::listDirectory(claimFolder);
    if (!requests)
        return writers;
    for (const auto& request : *requests) {
        const std::string path = claimFolder + "/" + request + "/metadata.json";
        auto content = files::readFile(path);
        if (!content)
            continue;
        auto object = metadata::decodeStream(*content, path);
        if (!object)
            continue;
        writers.claimUids.insert(object->claimUid);
        for (const auto& device : object->devices)
            writers.otherDriver = writers.otherDriver || device.driver != driver;
    }
    return writers;
}

bool ownedByAny(const std::set<std::string>& uids, const FileOwners& owners) {
    for (const auto& uid : uids) {
        if (owners.claimUids.count(uid) != 0)
            return true;
    }
    return false;
}

class Sweep {
  public:
    void remove(const std::string& path, bool folder) {
        auto removed = folder ? files::removeTree(path, files::Durability::None)
                              : files::removeFile(path, files::Durability::None);
        if (!removed) {
            if (firstError_)
                firstError_ = removed;
            return;
        }
        spdlog::info("removed a file of an unfinished prepare or unprepare path={}", path);
        ++removed_;
    }
    Result<size_t> result() const {
        if (!firstError_)
            return firstError_.error();
        return removed_;
    }

  private:
    size_t removed_ = 0;
    Status firstError_;
};

void sweepCdiFolder(const OrphanFolders& folders, const FileOwners& owners, Sweep& sweep) {
    auto names = files::listDirectory(folders.cdiDir);
    if (!names)
        return;
    for (const auto& name : *names) {
        const std::string path = folders.cdiDir + "/" + name;
        if (isInterruptedSpecWrite(name, folders.driverName)) {
            sweep.remove(path, false);
            continue;
        }
        auto owner = specOwner(name, folders.driverName);
        if (owner && owners.claimUids.count(*owner) == 0)
            sweep.remove(path, false);
    }
}

// ".<name>.tmp.<random>" in a prepared claim's request folders: a repair a crash interrupted.
void sweepInterruptedWrites(const std::string& claimFolder, Sweep& sweep) {
    auto requests = files::listDirectory(claimFolder);
    if (!requests)
        return;
    for (const auto& request : *requests) {
        auto names = files::listDirectory(claimFolder + "/" + request);
        if (!names)
            continue;
        for (const auto& name : *names) {
            if (text::startsWith(name, ".") && name.find(kTempMarker) != std::string::npos)
                sweep.remove(claimFolder + "/" + request + "/" + name, false);
        }
    }
}

// <namespace>_<name> folders: neither part can hold a '_' (a DNS label and a DNS subdomain), so
// anything else in the folder is not a claim's and is left alone.
void sweepMetadataFolder(const OrphanFolders& folders, const FileOwners& owners, Sweep& sweep) {
    auto names = files::listDirectory(folders.metadataDir);
    if (!names)
        return;
    for (const auto& name : *names) {
        const auto separator = name.find('_');
        if (separator == std::string::npos || name.find('_', separator + 1) != std::string::npos)
            continue;
        const std::string path = folders.metadataDir + "/" + name;
        if (!isFolder(path))
            continue;
        if (owners.claimFolders.count(name) != 0) {
            sweepInterruptedWrites(path, sweep);
            continue;
        }
        // A quarantined record no longer says which folder is its claim's; the files do. And a
        // metadata folder shared with another driver (a --metadata-dir set so) holds its claims.
        const auto writers = writersOf(path, folders.driverName);
        if (writers.otherDriver || ownedByAny(writers.claimUids, owners))
            continue;
        sweep.remove(path, true);
    }
}

}  // namespace

Result<size_t> removeOrphans(const OrphanFolders& folders, const FileOwners& owners) {
    Sweep sweep;
    sweepCdiFolder(folders, owners, sweep);
    sweepMetadataFolder(folders, owners, sweep);
    return sweep.result();
}

}  // namespace numadra::prepare::detail
