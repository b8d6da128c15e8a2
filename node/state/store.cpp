// The on-disk store of checkpoint records. Its one rule: a record that cannot be honoured is
// moved aside (quarantined) with the reason beside it — never deleted, never repaired, and never
// a reason to fail the start-up, because a driver that cannot start cannot unprepare anything.

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <set>
#include <system_error>
#include <utility>

#include "numadra/common/errors.hpp"
#include "numadra/common/files.hpp"
#include "numadra/common/text.hpp"
#include "numadra/state/checkpoint.hpp"

namespace numadra::state {

namespace {

constexpr std::size_t kMaxClaimUidLength = 128;
constexpr std::string_view kRecordSuffix = ".json";
constexpr std::string_view kReasonSuffix = ".reason";

bool endsWith(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool isValidClaimUid(std::string_view uid) {
    if (uid.empty() || uid.size() > kMaxClaimUidLength)
        return false;
    for (char c : uid) {
        const bool allowed =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
        if (!allowed)
            return false;
    }
    return true;
}

// Every path is built from a claim UID, which comes from the API server: checking it here is
// what keeps "../x" or "a/b" from ever naming a file outside the checkpoint folder.
Status checkClaimUid(const std::string& uid) {
    if (isValidClaimUid(uid))
        return {};
    // Printed escaped and shortened: the value is untrusted and may be long or binary.
    std::string shown;
    for (char c : uid.substr(0, 64)) {
        const auto byte = static_cast<unsigned char>(c);
        if (byte < 0x20 || byte >= 0x7f || c == '"' || c == '\\')
            shown += "\\x" + text::hex(byte, 2);
        else
            shown += c;
    }
    if (uid.size() > 64)
        shown += "...";
    return errorWithErrno(EINVAL, "invalid claim UID \"" + shown + "\" (" +
                                      std::to_string(uid.size()) +
                                      " characters; expected 1-128 of [A-Za-z0-9-])");
}

// What the temp file of an interrupted files::writeFileAtomically looks like:
// ".<name>.tmp.<random>". It was never renamed into place, so it holds nothing that counts.
bool isInterruptedWrite(const std::string& name) {
    return name.size() > 1 && name.front() == '.' && name.find(".tmp.", 1) != std::string::npos;
}

// Moves <fromDir>/<name> to <quarantineDir>/<name>.<unix-seconds> (plus ".N" when that is
// taken) and writes the reason beside it; returns the new path.
Result<std::string> moveToQuarantine(const std::string& fromDir, const std::string& quarantineDir,
                                     const std::string& name, const std::string& reason) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    const std::string base = quarantineDir + "/" + name + "." + std::to_string(seconds);
    std::string target = base;
    // Two quarantines of one claim within a second must not overwrite each other.
    for (int n = 1; files::exists(target) || files::exists(target + std::string(kReasonSuffix));
         ++n)
        target = base + "." + std::to_string(n);

    // The reason goes first: a crash in between leaves a stray reason file (harmless, and
    // removed with the claim's quarantine), never a quarantined record without its reason.
    const std::string reasonPath = target + std::string(kReasonSuffix);
    if (auto written = files::writeFileAtomically(reasonPath, reason + "\n", 0600); !written)
        return written.error();
    const std::string source = fromDir + "/" + name;
    if (::rename(source.c_str(), target.c_str()) != 0) {
        const int error = errno;
        static_cast<void>(files::removeFile(reasonPath));
        return errorFromErrno(error, "moving " + source + " to " + target);
    }
    // Best effort: should the rename be lost in a crash, the record is back in the checkpoint
    // folder and the next load quarantines it again; failing here would misreport the move.
    static_cast<void>(files::syncDirectory(fromDir));
    static_cast<void>(files::syncDirectory(quarantineDir));
    return target;
}

// The record in <dir>/<name>, or why it cannot be honoured. Of kind NotFound only when the
// file vanished after it was listed.
Result<ClaimRecord> readRecord(const std::string& dir, const std::string& name) {
    const std::string path = dir + "/" + name;
    const std::string stem = name.substr(0, name.size() - kRecordSuffix.size());
    if (!isValidClaimUid(stem))
        return Error{path + ": the file name is not a claim UID"};
    auto content = files::readFile(path);
    if (!content) {
        if (content.error().is(ErrorKind::NotFound))
            return content.error();
        // Unreadable is treated like damaged: moving the file aside loses nothing, while
        // failing the load would keep the driver from starting at all.
        return Error{"cannot read the record: " + content.error().message};
    }
    auto record = decode(*content, path);
    if (!record)
        return record.error();
    if (record->claimUid != stem) {
        return Error{path + ": the record is for claim \"" + record->claimUid +
                     "\", not the claim the file is named after"};
    }
    return record;
}

}  // namespace

CheckpointStore::CheckpointStore(std::string checkpointDir, std::string quarantineDir)
    : checkpointDir_(std::move(checkpointDir)), quarantineDir_(std::move(quarantineDir)) {}

Result<CheckpointStore> CheckpointStore::open(const std::string& stateDir) {
    CheckpointStore store(stateDir + "/checkpoints", stateDir + "/quarantine");
    // 0700: the records list the claims of every pod on the node and the files made for them.
    for (const auto* folder : {&store.checkpointDir_, &store.quarantineDir_}) {
        if (auto made = files::makeDirectories(*folder, 0700); !made) {
            return made.error().withMessage("cannot create the checkpoint folder " + *folder +
                                            ": " + made.error().message);
        }
    }
    store.recordDurability_ = files::durabilityFor(store.checkpointDir_, files::Durability::Full);
    return store;
}

bool CheckpointStore::isValidUid(std::string_view claimUid) {
    return isValidClaimUid(claimUid);
}

std::string CheckpointStore::recordPath(const std::string& claimUid) const {
    return checkpointDir_ + "/" + claimUid + std::string(kRecordSuffix);
}

Status CheckpointStore::save(const ClaimRecord& record) {
    if (auto valid = checkClaimUid(record.claimUid); !valid)
        return valid;
    // Text that is not valid UTF-8 would be silently changed on disk: refuse it now rather than
    // quarantine the record after a restart.
    auto content = encodeExactly(record);
    if (!content)
        return errorWithErrno(
            EINVAL, "cannot checkpoint claim " + record.claimUid + ": " + content.error().message);
    return files::writeFileAtomically(recordPath(record.claimUid), *content, 0600,
                                      recordDurability_);
}

Status CheckpointStore::remove(const std::string& claimUid) {
    if (auto valid = checkClaimUid(claimUid); !valid)
        return valid;
    return files::removeFile(recordPath(claimUid), recordDurability_);
}

Result<LoadedCheckpoint> CheckpointStore::load() {
    auto names = files::listDirectory(checkpointDir_);
    if (!names)
        return names.error();

    LoadedCheckpoint loaded;
    for (const auto& name : *names) {
        if (isInterruptedWrite(name)) {
            // A failure to delete it is ignored: the file is inert, and the next load retries.
            static_cast<void>(files::removeFile(checkpointDir_ + "/" + name));
            continue;
        }
        if (!endsWith(name, kRecordSuffix))
            continue;  // not ours; left alone

        auto record = readRecord(checkpointDir_, name);
        if (record) {
            loaded.records.push_back(std::move(record).value());
            continue;
        }
        if (record.error().is(ErrorKind::NotFound))
            continue;  // removed since it was listed (an Unprepare)

        const std::string& reason = record.error().message;
        auto moved = moveToQuarantine(checkpointDir_, quarantineDir_, name, reason);
        if (moved) {
            loaded.quarantined.push_back({*moved, reason});
        } else {
            // Still reported, and still not loaded: the caller learns about it either way.
            loaded.quarantined.push_back(
                {checkpointDir_ + "/" + name,
                 reason + " (could not be moved to quarantine: " + moved.error().message + ")"});
        }
    }
    std::sort(loaded.records.begin(), loaded.records.end(),
              [](const ClaimRecord& a, const ClaimRecord& b) { return a.claimUid < b.claimUid; });
    return loaded;
}

Result<std::vector<std::string>> CheckpointStore::recordedUids() const {
    auto names = files::listDirectory(checkpointDir_);
    if (!names)
        return names.error();
    std::vector<std::string> uids;
    for (const auto& name : *names) {
        if (isInterruptedWrite(name) || !endsWith(name, kRecordSuffix))
            continue;
        auto uid = name.substr(0, name.size() - kRecordSuffix.size());
        if (isValidUid(uid))
            uids.push_back(std::move(uid));
    }
    std::sort(uids.begin(), uids.end());
    return uids;
}

Result<ClaimRecord> CheckpointStore::read(const std::string& claimUid) const {
    if (auto valid = checkClaimUid(claimUid); !valid)
        return valid.error();
    return readRecord(checkpointDir_, claimUid + std::string(kRecordSuffix));
}

Status CheckpointStore::quarantine(const std::string& claimUid, const std::string& reason) {
    if (auto valid = checkClaimUid(claimUid); !valid)
        return valid;
    const std::string path = recordPath(claimUid);
    if (!files::exists(path))
        return errorWithErrno(ENOENT, "no checkpoint record to quarantine at " + path);
    auto moved = moveToQuarantine(checkpointDir_, quarantineDir_,
                                  claimUid + std::string(kRecordSuffix), reason);
    if (!moved)
        return moved.error();
    return {};
}

Status CheckpointStore::removeQuarantined(const std::string& claimUid) {
    if (auto valid = checkClaimUid(claimUid); !valid)
        return valid;
    auto names = files::listDirectory(quarantineDir_);
    if (!names)
        return names.error().is(ErrorKind::NotFound) ? Status{} : Status(names.error());
    // "<uid>.json." and nothing shorter: claim "ab" must not take claim "abc"'s files.
    const std::string prefix = claimUid + std::string(kRecordSuffix) + ".";
    Status result;
    for (const auto& name : *names) {
        if (!text::startsWith(name, prefix))
            continue;
        // Keeps going after a failure so one stuck file does not keep the others.
        if (auto removed = files::removeFile(quarantineDir_ + "/" + name); !removed && result)
            result = removed;
    }
    return result;
}

Result<std::vector<std::string>> CheckpointStore::quarantinedUids() const {
    auto names = files::listDirectory(quarantineDir_);
    if (!names)
        return names.error();
    // "<uid>.json.<seconds>[.N]" and its ".reason" beside it.
    std::set<std::string> uids;
    for (const auto& name : *names) {
        const auto suffix = name.find(std::string(kRecordSuffix) + ".");
        if (suffix != std::string::npos && isValidClaimUid(name.substr(0, suffix)))
            uids.insert(name.substr(0, suffix));
    }
    return std::vector<std::string>(uids.begin(), uids.end());
}

Result<std::string> readBootId(const std::string& procRoot) {
    const std::string path = procRoot + "/sys/kernel/random/boot_id";
    auto content = files::readFile(path);
    if (!content)
        return content.error().withMessage("cannot read the boot id: " + content.error().message);
    const auto id = text::trim(*content);
    if (id.empty())
        return Error{"cannot read the boot id: " + path + " is empty"};
    return std::string(id);
}

}  // namespace numadra::state
