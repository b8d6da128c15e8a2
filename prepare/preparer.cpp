#include "numadra/prepare/preparer.hpp"

#include <spdlog/spdlog.h>

#include <cerrno>
#include <condition_variable>
#include <mutex>

#include "numadra/common/files.hpp"
#include "numadra/state/checkpoint.hpp"
#include "plan.hpp"

namespace numadra::prepare {

using detail::Plan;
using state::ClaimRecord;
using state::ClaimState;
using state::DeviceRecord;

namespace {

constexpr const char* kQuarantined = "numadra_checkpoint_quarantined_total";
constexpr const char* kRecreated = "numadra_prepare_files_recreated_total";
constexpr const char* kPreparedClaims = "numadra_prepared_claims";

std::string claimText(const std::string& ns, const std::string& name, const std::string& uid) {
    return ns + "/" + name + " (" + uid + ")";
}

std::string parentOf(const std::string& path) {
    return path.substr(0, path.rfind('/'));
}

bool isShared(const DeviceRecord& record) {
    return record.shareId.has_value();
}

// Serializes the operations on one claim (the kubelet retries while a call is still running)
// without serializing different claims.
class ClaimLocks {
  public:
    class Guard {
      public:
        Guard(ClaimLocks& locks, std::string uid) : locks_(locks), uid_(std::move(uid)) {
            std::unique_lock lock(locks_.mutex_);
            auto& entry = locks_.entries_[uid_];
            ++entry.waiters;
            locks_.released_.wait(lock, [&] { return !entry.held; });
            entry.held = true;
        }
        ~Guard() {
            std::lock_guard lock(locks_.mutex_);
            auto it = locks_.entries_.find(uid_);
            it->second.held = false;
            if (--it->second.waiters == 0)
                locks_.entries_.erase(it);
            locks_.released_.notify_all();
        }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;

      private:
        ClaimLocks& locks_;
        std::string uid_;
    };

  private:
    struct Entry {
        bool held = false;
        int waiters = 0;
    };
    std::mutex mutex_;
    std::condition_variable released_;
    std::map<std::string, Entry> entries_;
};

}  // namespace

struct Preparer::State {
    State(Options o, metrics::Registry& m, state::CheckpointStore s)
        : options(std::move(o)), metrics(m), store(std::move(s)), host(options.hostRoots) {}

    Options options;
    metrics::Registry& metrics;
    state::CheckpointStore store;
    cdi::HostDeviceNodes host;
    ClaimLocks claimLocks;

    // Guards `records` and `held`; never held across I/O.
    mutable std::mutex mutex;
    std::map<std::string, ClaimRecord> records;                // prepared claims by UID
    std::map<std::string, std::vector<DeviceRecord>> held;     // devices in use by claim UID

    void wrote(const std::string& path) const {
        if (options.afterFileWrite)
            options.afterFileWrite(path);
    }

    Status saveRecord(const ClaimRecord& record) {
        auto saved = store.save(record);
        if (saved)
            wrote(store.recordPath(record.claimUid));
        return saved;
    }

    // Under `mutex`: the conflict, if any, between `record` and what other claims hold.
    std::optional<std::string> conflict(const std::string& uid, const DeviceRecord& record) const {
        for (const auto& [owner, devices] : held) {
            if (owner == uid)
                continue;
            for (const auto& other : devices) {
                if (other.device != record.device)
                    continue;
                if (!isShared(record) || !isShared(other)) {
                    const auto& claim = records.count(owner) ? records.at(owner) : ClaimRecord{};
                    return "device " + record.device + " is already prepared for claim " +
                           (claim.claimUid.empty()
                                ? owner
                                : claimText(claim.claimNamespace, claim.claimName, owner));
                }
            }
        }
        return std::nullopt;
    }

    // Under `mutex`: CPUs of `numaNode` handed to other claims' shares.
    std::set<int> cpusTaken(const std::string& uid, const std::vector<DeviceRecord>& mine) const {
        std::set<int> taken;
        for (const auto& [owner, devices] : held) {
            if (owner == uid)
                continue;
            for (const auto& other : devices)
                taken.insert(other.cpus.begin(), other.cpus.end());
        }
        for (const auto& record : mine)
            taken.insert(record.cpus.begin(), record.cpus.end());
        return taken;
    }

    // Reserves the devices for the claim in one critical section; CPU shares get their CPUs.
    Status reserve(const std::string& uid, std::vector<DeviceRecord>& devices,
                   const discovery::Machine& machine) {
        std::lock_guard lock(mutex);
        std::vector<DeviceRecord> assigned;
        for (auto& record : devices) {
            if (auto reason = conflict(uid, record))
                return Error{*reason};
            if (record.kind == "cpu") {
                auto cpus = detail::chooseCpus(machine, record.numaNode.value_or(0),
                                               detail::consumedCpus(record, options.driverName),
                                               cpusTaken(uid, assigned));
                if (!cpus)
                    return Error{"device " + record.device + ": " + cpus.error().message};
                record.cpus = std::move(cpus).value();
            }
            assigned.push_back(record);
        }
        held[uid] = devices;
        return {};
    }

    void release(const std::string& uid) {
        std::lock_guard lock(mutex);
        held.erase(uid);
        records.erase(uid);
        metrics.gaugeSet(kPreparedClaims, {}, static_cast<double>(records.size()));
    }

    void commit(const ClaimRecord& record) {
        std::lock_guard lock(mutex);
        records[record.claimUid] = record;
        held[record.claimUid] = record.devices;
        metrics.gaugeSet(kPreparedClaims, {}, static_cast<double>(records.size()));
    }

    std::optional<ClaimRecord> recordOf(const std::string& uid) const {
        std::lock_guard lock(mutex);
        auto it = records.find(uid);
        if (it == records.end())
            return std::nullopt;
        return it->second;
    }

    bool otherClaimUses(const std::string& ns, const std::string& name,
                        const std::string& uid) const {
        std::lock_guard lock(mutex);
        for (const auto& [owner, record] : records) {
            if (owner != uid && record.claimNamespace == ns && record.claimName == name)
                return true;
        }
        return false;
    }

    // Removes a claim's files: the listed ones, the folders of its metadata requests and,
    // unless a newer claim with the same namespace/name uses it, the claim's metadata folder.
    Status removeFiles(const ClaimRecord& record) {
        Status result;
        auto keep = [&result](Status status) {
            if (!status && result)
                result = std::move(status);
        };
        const std::string claimFolder =
            options.metadataDir + "/" + record.claimNamespace + "_" + record.claimName;
        for (const auto& path : record.files) {
            keep(files::removeFile(path));
            if (path.rfind(claimFolder + "/", 0) == 0)
                keep(files::removeTree(parentOf(path)));  // the request's folder
        }
        // The folder name comes from the claim's namespace and name: only touch it when they
        // are names the API allows (nothing can then point outside the metadata folder).
        const bool safeNames = metadata::validateNames(record.claimNamespace, record.claimName,
                                                       "request", options.driverName,
                                                       std::nullopt)
                                   .ok();
        if (safeNames &&
            !otherClaimUses(record.claimNamespace, record.claimName, record.claimUid))
            keep(files::removeTree(claimFolder));
        return result;
    }

    void quarantine(const ClaimRecord& record, const std::string& reason) {
        spdlog::error(
            "checkpoint entry quarantined claim={} reason=\"{}\" action=\"the claim's files stay "
            "until it is unprepared; a new Prepare re-creates it from the API server\"",
            claimText(record.claimNamespace, record.claimName, record.claimUid), reason);
        metrics.counterAdd(kQuarantined, {"unusable"});
        if (auto moved = store.quarantine(record.claimUid, reason); !moved)
            spdlog::error("quarantining checkpoint entry failed error=\"{}\"", moved.error().message);
        release(record.claimUid);
    }

    // Writes the plan's files; on any failure removes what it wrote and returns the error.
    Status writePlan(const Plan& plan, ClaimRecord& record) {
        record.metadataGenerations.clear();
        for (const auto& request : plan.requests) {
            auto object = request.object;
            object.generation = 1;
            if (auto created =
                    metadata::createFile(request.files, object, options.metadataVersions);
                !created)
                return created;
            record.metadataGenerations[detail::baseRequest(request.object.requestName)] = 1;
            wrote(request.files.hostFile);
        }
        for (const auto& request : plan.requests) {
            if (auto written = files::writeFileAtomically(request.files.cdiSpecFile,
                                                          request.metadataCdiSpec);
                !written)
                return written;
            wrote(request.files.cdiSpecFile);
        }
        if (auto written = files::writeFileAtomically(plan.claimSpecPath, plan.claimSpec);
            !written)
            return written;
        wrote(plan.claimSpecPath);
        return {};
    }

    // A prepared claim: checks its devices, re-creates files that are missing or stale (after a
    // reboot /var/run/cdi is empty and device numbers may have changed), refreshes the record.
    Result<size_t> repair(ClaimRecord& record, const NodeView& node) {
        for (const auto& device : record.devices) {
            if (auto same = detail::verifyIdentity(device, node); !same)
                return same.error();
        }
        auto plan = detail::buildPlan({record.claimNamespace, record.claimName, record.claimUid,
                                       record.podClaimName},
                                      record.devices, node, options, host);
        if (!plan)
            return plan.error();
        size_t recreated = 0;
        bool recordChanged = record.bootId != options.bootId;
        for (const auto& request : plan->requests) {
            auto changed = repairMetadata(request, record);
            if (!changed)
                return changed.error();
            recreated += *changed ? 1 : 0;
            recordChanged = recordChanged || *changed;
        }
        auto ensure = [&](const std::string& path, const std::string& content) -> Status {
            auto current = files::readFile(path);
            if (current && *current == content)
                return {};
            ++recreated;
            return files::writeFileAtomically(path, content);
        };
        for (const auto& request : plan->requests) {
            if (auto ok = ensure(request.files.cdiSpecFile, request.metadataCdiSpec); !ok)
                return ok.error();
        }
        if (auto ok = ensure(plan->claimSpecPath, plan->claimSpec); !ok)
            return ok.error();
        if (plan->devices != record.devices || plan->files != record.files) {
            record.devices = plan->devices;
            record.files = plan->files;
            recordChanged = true;
        }
        if (recordChanged) {
            record.bootId = options.bootId;
            if (auto saved = store.save(record); !saved)
                return saved.error();
        }
        if (recreated > 0)
            metrics.counterAdd(kRecreated, {}, static_cast<double>(recreated));
        return recreated;
    }

    // Missing: created again (a new inode is fine, no container can hold the old one after a
    // reboot). Stale content: rewritten in place with the next generation. Returns whether the
    // file changed.
    Result<bool> repairMetadata(const detail::RequestPlan& request, ClaimRecord& record) {
        const std::string base = detail::baseRequest(request.object.requestName);
        const std::int64_t last = record.metadataGenerations.count(base)
                                      ? record.metadataGenerations.at(base)
                                      : 0;
        auto wanted = request.object;
        auto content = files::readFile(request.files.hostFile);
        if (!content) {
            if (content.error().code != ENOENT)
                return content.error();
            wanted.generation = last + 1;
            if (auto created =
                    metadata::createFile(request.files, wanted, options.metadataVersions);
                !created)
                return created.error();
            record.metadataGenerations[base] = wanted.generation;
            return true;
        }
        auto stored = metadata::decodeStream(*content, request.files.hostFile);
        if (stored) {
            wanted.generation = stored->generation;
            if (*stored == wanted) {
                record.metadataGenerations[base] = stored->generation;
                return false;
            }
        }
        wanted.generation = std::max(last, stored ? stored->generation : 0) + 1;
        if (auto rewritten = files::rewriteFileInPlace(
                request.files.hostFile, metadata::encodeStream(wanted, options.metadataVersions));
            !rewritten)
            return rewritten.error();
        record.metadataGenerations[base] = wanted.generation;
        return true;
    }
};

Preparer::Preparer(std::unique_ptr<State> state) : state_(std::move(state)) {}
Preparer::~Preparer() = default;

Result<std::unique_ptr<Preparer>> Preparer::open(Options options, metrics::Registry& metrics) {
    if (!cdi::isValidVendor(options.driverName)) {
        return Error{"driver name '" + options.driverName +
                     "' cannot be a CDI vendor (it must start with a letter and end with a "
                     "letter or digit)"};
    }
    if (auto versions = metadata::validateVersions(options.metadataVersions); !versions)
        return versions.error();
    for (const auto* folder : {&options.cdiDir, &options.metadataDir}) {
        if (auto made = files::makeDirectories(*folder, 0755); !made)
            return made.error();
    }
    auto store = state::CheckpointStore::open(options.stateDir);
    if (!store)
        return store.error();
    metrics.declareCounter(kQuarantined,
                           "Checkpoint entries moved aside because they were damaged or named "
                           "devices that are gone.",
                           {"reason"});
    metrics.declareCounter(kRecreated,
                           "CDI and metadata files of prepared claims re-created because they "
                           "were missing or stale (e.g. after a reboot).");
    metrics.declareGauge(kPreparedClaims, "Claims prepared on this node.");
    auto state = std::make_unique<State>(std::move(options), metrics, std::move(store).value());
    return std::unique_ptr<Preparer>(new Preparer(std::move(state)));
}

Result<RestoreReport> Preparer::restore(const NodeView& node) {
    auto& s = *state_;
    auto loaded = s.store.load();
    if (!loaded)
        return loaded.error();
    RestoreReport report;
    for (const auto& bad : loaded->quarantined) {
        spdlog::error("checkpoint file quarantined path={} reason=\"{}\"", bad.path, bad.reason);
        s.metrics.counterAdd(kQuarantined, {"damaged"});
        ++report.quarantined;
    }
    // Reserve everything first, so repairing one claim can never hand its CPUs to another.
    std::vector<ClaimRecord> completed;
    for (auto& record : loaded->records) {
        if (record.state == ClaimState::PrepareStarted) {
            // A crash interrupted this prepare before it answered: undo it; the kubelet retries.
            spdlog::info("rolling back an interrupted prepare claim={}",
                         claimText(record.claimNamespace, record.claimName, record.claimUid));
            if (auto removed = s.removeFiles(record); !removed)
                return removed.error();
            if (auto removed = s.store.remove(record.claimUid); !removed)
                return removed.error();
            ++report.rolledBack;
            continue;
        }
        s.commit(record);
        completed.push_back(std::move(record));
    }
    for (auto& record : completed) {
        const bool earlierBoot = record.bootId != s.options.bootId;
        auto repaired = s.repair(record, node);
        if (!repaired) {
            s.quarantine(record, repaired.error().message);
            ++report.quarantined;
            continue;
        }
        s.commit(record);
        ++report.restored;
        report.filesRecreated += *repaired;
        report.fromEarlierBoot += earlierBoot ? 1 : 0;
    }
    return report;
}

std::optional<Result<std::vector<plugin::PreparedDevice>>> Preparer::preparedClaim(
    const plugin::ClaimRef& claim, const NodeView& node) {
    auto& s = *state_;
    if (!s.recordOf(claim.uid))
        return std::nullopt;
    ClaimLocks::Guard guard(s.claimLocks, claim.uid);
    auto record = s.recordOf(claim.uid);
    if (!record)
        return std::nullopt;  // unprepared while we waited
    auto repaired = s.repair(*record, node);
    if (!repaired) {
        s.quarantine(*record, repaired.error().message);
        return Result<std::vector<plugin::PreparedDevice>>(
            Error{"claim " + claimText(claim.ns, claim.name, claim.uid) +
                  " was prepared, but " + repaired.error().message +
                  "; its checkpoint entry was quarantined"});
    }
    s.commit(*record);
    return Result<std::vector<plugin::PreparedDevice>>(detail::preparedDevices(record->devices));
}

Result<std::vector<plugin::PreparedDevice>> Preparer::prepare(const ClaimAllocation& allocation,
                                                              const NodeView& node) {
    auto& s = *state_;
    const auto& ref = allocation.claim;
    if (auto done = preparedClaim(ref, node))
        return std::move(*done);
    ClaimLocks::Guard guard(s.claimLocks, ref.uid);
    if (auto record = s.recordOf(ref.uid))  // prepared by a concurrent call meanwhile
        return detail::preparedDevices(record->devices);

    std::vector<DeviceRecord> devices;
    for (const auto& device : allocation.devices) {
        auto record = detail::identify(device, node, s.options);
        if (!record)
            return record.error();
        devices.push_back(std::move(record).value());
    }
    if (auto reserved = s.reserve(ref.uid, devices, node.machine); !reserved) {
        s.release(ref.uid);
        return reserved.error();
    }
    auto plan = detail::buildPlan({ref.ns, ref.name, ref.uid, allocation.podClaimName}, devices,
                                  node, s.options, s.host);
    if (!plan) {
        s.release(ref.uid);
        return plan.error();
    }
    ClaimRecord record;
    record.claimNamespace = ref.ns;
    record.claimName = ref.name;
    record.claimUid = ref.uid;
    record.podClaimName = allocation.podClaimName;
    record.bootId = s.options.bootId;
    record.devices = plan->devices;
    record.files = plan->files;
    record.state = ClaimState::PrepareStarted;

    auto undo = [&](const Error& error) -> Error {
        if (auto removed = s.removeFiles(record); !removed)
            spdlog::error("cleaning up a failed prepare error=\"{}\"", removed.error().message);
        if (auto removed = s.store.remove(ref.uid); !removed)
            spdlog::error("cleaning up a failed prepare error=\"{}\"", removed.error().message);
        s.release(ref.uid);
        return error;
    };
    // The started record lists every file before the first is written: a crash from here on is
    // rolled back at the next start.
    if (auto saved = s.saveRecord(record); !saved)
        return undo(saved.error());
    if (auto written = s.writePlan(*plan, record); !written)
        return undo(written.error());
    record.state = ClaimState::PrepareCompleted;
    if (auto saved = s.saveRecord(record); !saved)
        return undo(saved.error());
    s.commit(record);
    return detail::preparedDevices(record.devices);
}

Status Preparer::unprepare(const plugin::ClaimRef& claim) {
    auto& s = *state_;
    ClaimLocks::Guard guard(s.claimLocks, claim.uid);
    auto record = s.recordOf(claim.uid);
    if (!record) {
        // Nothing recorded. A quarantined entry may still have files: they are named after the
        // claim, so they can be found without the record. A UID that could not name a file
        // was never prepared here.
        if (!s.store.isValidUid(claim.uid))
            return {};
        if (auto removed = s.store.removeQuarantined(claim.uid); !removed)
            return removed;
        ClaimRecord leftover;
        leftover.claimNamespace = claim.ns;
        leftover.claimName = claim.name;
        leftover.claimUid = claim.uid;
        leftover.files.push_back(s.options.cdiDir + "/" +
                                 cdi::transientSpecFileName(s.options.driverName, "claim",
                                                            claim.uid));
        const std::string metadataPrefix = s.options.driverName + "_metadata_" + claim.uid + "_";
        if (auto names = files::listDirectory(s.options.cdiDir)) {
            for (const auto& name : *names) {
                if (name.rfind(metadataPrefix, 0) == 0)
                    leftover.files.push_back(s.options.cdiDir + "/" + name);
            }
        }
        return s.removeFiles(leftover);
    }
    if (auto removed = s.removeFiles(*record); !removed)
        return removed;
    if (auto removed = s.store.remove(claim.uid); !removed)
        return removed;
    s.release(claim.uid);
    return {};
}

size_t Preparer::preparedClaimCount() const {
    std::lock_guard lock(state_->mutex);
    return state_->records.size();
}

}  // namespace numadra::prepare
