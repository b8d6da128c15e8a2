#include "numadra/prepare/preparer.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <mutex>
#include <set>

#include "numadra/common/files.hpp"
#include "numadra/state/checkpoint.hpp"
#include "orphans.hpp"
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
constexpr const char* kRepairFailures = "numadra_prepare_repair_failures_total";

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

// The devices a claim holds on this node (prepared, or being prepared).
struct Holding {
    std::string claimNamespace, claimName;
    std::vector<DeviceRecord> devices;
};

struct Preparer::State {
    State(Options o, metrics::Registry& m, state::CheckpointStore s)
        : options(std::move(o)),
          metrics(m),
          store(std::move(s)),
          host(options.hostRoots),
          cdiDurability(files::durabilityFor(options.cdiDir, files::Durability::Content)),
          metadataDurability(
              cdiDurability == files::Durability::None
                  ? files::Durability::None
                  : files::durabilityFor(options.metadataDir, files::Durability::Content)) {}

    Options options;
    metrics::Registry& metrics;
    state::CheckpointStore store;
    cdi::HostDeviceNodes host;
    ClaimLocks claimLocks;
    // What a claim's file writes force to disk, decided once per folder. Never the folder: the
    // record, written last, is what makes a prepare count, and every start re-creates the files
    // of a completed record that a power cut lost (repair), as after every reboot. The content,
    // so that no reader finds a partial file under its name after a power cut, only where a
    // reader could: not on tmpfs, which a power cut erases (/var/run/cdi on most nodes), and not
    // for metadata files when the CDI specs are on tmpfs. A metadata file is read through the
    // CDI spec that mounts it, and after a power cut that spec comes back only from repair,
    // which mends the metadata file first.
    files::Durability cdiDurability;
    files::Durability metadataDurability;

    // Guards `records` and `held`; never held across I/O.
    mutable std::mutex mutex;
    std::map<std::string, ClaimRecord> records;  // prepared claims by UID
    // By UID: devices of prepared claims, of claims being prepared, and of quarantined claims
    // until they are unprepared (a pod may still be using them).
    std::map<std::string, Holding> held;

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

    std::string describe(const std::string& uid, const Holding& holding) const {
        return claimText(holding.claimNamespace, holding.claimName, uid);
    }

    // Under `mutex`: why `devices` cannot be prepared for the claim next to what others hold.
    std::optional<std::string> conflict(const std::string& uid, const std::string& ns,
                                        const std::string& name, const DeviceRecord& record) const {
        for (const auto& [owner, holding] : held) {
            if (owner == uid)
                continue;
            // Both would use <ns>_<name>/ for their metadata; the old one goes first.
            if (holding.claimNamespace == ns && holding.claimName == name) {
                return "claim " + ns + "/" + name + " with UID " + owner +
                       " is still prepared on this node; it must be unprepared first";
            }
            for (const auto& other : holding.devices) {
                if (other.device != record.device || record.adminAccess || other.adminAccess)
                    continue;
                if (!isShared(record) || !isShared(other))
                    return "device " + record.device + " is already prepared for claim " +
                           describe(owner, holding);
            }
        }
        return std::nullopt;
    }

    // Under `mutex`: every record that holds something, of other claims and `mine` (admin views
    // hold nothing).
    template <class Visit>
    void forEachHolder(const std::string& uid, const std::vector<DeviceRecord>& mine,
                       Visit visit) const {
        auto holding = [&visit](const DeviceRecord& record) {
            if (!record.adminAccess)
                visit(record);
        };
        for (const auto& [owner, claim] : held) {
            if (owner != uid)
                std::for_each(claim.devices.begin(), claim.devices.end(), holding);
        }
        std::for_each(mine.begin(), mine.end(), holding);
    }

    // Under `mutex`: CPUs handed to shares of other claims and `mine`.
    std::set<int> cpusTaken(const std::string& uid, const std::vector<DeviceRecord>& mine) const {
        std::set<int> taken;
        forEachHolder(uid, mine, [&taken](const DeviceRecord& record) {
            taken.insert(record.cpus.begin(), record.cpus.end());
        });
        return taken;
    }

    Result<std::vector<int>> cpusFor(const std::string& uid, const DeviceRecord& record,
                                     const std::vector<DeviceRecord>& assigned,
                                     const discovery::Machine& machine) const {
        const int numaNode = record.numaNode.value_or(0);
        const auto all = detail::onlineCpus(machine, numaNode);
        if (record.adminAccess)
            return all;  // an admin view sees the node, it does not own CPUs
        // Without a share the claim has the whole device: every CPU of the node.
        const int count = isShared(record) ? detail::consumedCpus(record, options.driverName)
                                           : static_cast<int>(all.size());
        return detail::chooseCpus(machine, numaNode, count, cpusTaken(uid, assigned));
    }

    // Under `mutex`: PCI functions held by other claims and by `mine`.
    std::set<std::string> functionsTaken(const std::string& uid,
                                         const std::vector<DeviceRecord>& mine) const {
        std::set<std::string> taken;
        forEachHolder(uid, mine, [&taken](const DeviceRecord& record) {
            if (!record.pciAddress.empty())
                taken.insert(record.pciAddress);
        });
        return taken;
    }

    // Reserves the devices for the claim in one critical section; CPU devices get their CPUs,
    // shares of a VF pool their VF.
    Status reserve(const std::string& uid, const std::string& ns, const std::string& name,
                   std::vector<DeviceRecord>& devices, const discovery::Machine& machine) {
        std::lock_guard lock(mutex);
        std::vector<DeviceRecord> assigned;
        for (auto& record : devices) {
            if (auto reason = conflict(uid, ns, name, record))
                return Error{*reason};
            if (record.kind == "cpu") {
                auto cpus = cpusFor(uid, record, assigned, machine);
                if (!cpus)
                    return Error{"device " + record.device + ": " + cpus.error().message};
                record.cpus = std::move(cpus).value();
            }
            if (detail::awaitsVfChoice(record)) {
                auto vf = detail::chooseVf(machine, record.device, functionsTaken(uid, assigned));
                if (!vf)
                    return Error{"device " + record.device + ": " + vf.error().message};
                detail::recordFunction(record, **vf);
            }
            assigned.push_back(record);
        }
        held[uid] = Holding{ns, name, devices};
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
        held[record.claimUid] = Holding{record.claimNamespace, record.claimName, record.devices};
        metrics.gaugeSet(kPreparedClaims, {}, static_cast<double>(records.size()));
    }

    std::optional<ClaimRecord> recordOf(const std::string& uid) const {
        std::lock_guard lock(mutex);
        auto it = records.find(uid);
        if (it == records.end())
            return std::nullopt;
        return it->second;
    }

    // Whether another claim (prepared, in flight or quarantined) uses <ns>_<name>/.
    bool otherClaimUses(const std::string& ns, const std::string& name,
                        const std::string& uid) const {
        std::lock_guard lock(mutex);
        for (const auto& [owner, holding] : held) {
            if (owner != uid && holding.claimNamespace == ns && holding.claimName == name)
                return true;
        }
        return false;
    }

    // Removes a claim's files: the listed ones with any temp file an interrupted write left
    // beside them, the folders of its metadata requests and the claim's metadata folder; what
    // lives below <ns>_<name>/ is left alone while another claim of that name uses it.
    // No folder is fsynced: callers remove the record (durably) after the files, and a removal
    // that a power cut undoes leaves files no record owns, which the next start removes.
    Status removeFiles(const ClaimRecord& record) {
        Status result;
        auto keep = [&result](Status status) {
            if (!status && result)
                result = std::move(status);
        };
        const std::string claimFolder =
            options.metadataDir + "/" + record.claimNamespace + "_" + record.claimName;
        // The folder name comes from the claim's namespace and name: only touch it when they
        // are names the API allows (nothing can then point outside the metadata folder).
        const bool ownsClaimFolder =
            metadata::validateNames(record.claimNamespace, record.claimName, "request",
                                    options.driverName, std::nullopt)
                .ok() &&
            !otherClaimUses(record.claimNamespace, record.claimName, record.claimUid);
        std::map<std::string, std::set<std::string>> tempPrefixes;  // folder -> ".<name>.tmp."
        for (const auto& path : record.files) {
            const bool inClaimFolder = path.rfind(claimFolder + "/", 0) == 0;
            if (inClaimFolder && !ownsClaimFolder)
                continue;
            keep(files::removeFile(path, files::Durability::None));
            tempPrefixes[parentOf(path)].insert("." + path.substr(path.rfind('/') + 1) + ".tmp.");
            if (inClaimFolder)  // the request's folder
                keep(files::removeTree(parentOf(path), files::Durability::None));
        }
        for (const auto& [folder, prefixes] : tempPrefixes) {
            auto names = files::listDirectory(folder);
            if (!names)
                continue;
            for (const auto& entry : *names) {
                for (const auto& prefix : prefixes) {
                    if (entry.rfind(prefix, 0) == 0)
                        keep(files::removeFile(folder + "/" + entry, files::Durability::None));
                }
            }
        }
        if (ownsClaimFolder)
            keep(files::removeTree(claimFolder, files::Durability::None));
        return result;
    }

    // The record can never be honoured again: moved aside (its devices stay reserved until the
    // kubelet unprepares the claim, a pod may still be running on them).
    void quarantine(const ClaimRecord& record, const std::string& reason) {
        spdlog::error(
            "checkpoint entry quarantined claim={} reason=\"{}\" action=\"the claim's devices stay "
            "reserved and its files in place until it is unprepared\"",
            claimText(record.claimNamespace, record.claimName, record.claimUid), reason);
        metrics.counterAdd(kQuarantined, {"unusable"});
        if (auto moved = store.quarantine(record.claimUid, reason); !moved)
            spdlog::error("quarantining checkpoint entry failed error=\"{}\"",
                          moved.error().message);
        std::lock_guard lock(mutex);
        records.erase(record.claimUid);
        metrics.gaugeSet(kPreparedClaims, {}, static_cast<double>(records.size()));
    }

    // Writes the plan's files, each atomically and with its folder's durability; the caller
    // undoes them on failure and writes the record after them.
    Status writePlan(const Plan& plan, ClaimRecord& record) {
        record.metadataGenerations.clear();
        for (const auto& request : plan.requests) {
            auto object = request.object;
            object.generation = 1;
            if (auto created = metadata::createFile(request.files, object, options.metadataVersions,
                                                    metadataDurability);
                !created)
                return created;
            record.metadataGenerations[detail::baseRequest(request.object.requestName)] = 1;
            wrote(request.files.hostFile);
        }
        for (const auto& request : plan.requests) {
            if (auto written = files::writeFileAtomically(
                    request.files.cdiSpecFile, request.metadataCdiSpec, 0644, cdiDurability);
                !written)
                return written;
            wrote(request.files.cdiSpecFile);
        }
        if (auto written =
                files::writeFileAtomically(plan.claimSpecPath, plan.claimSpec, 0644, cdiDurability);
            !written)
            return written;
        wrote(plan.claimSpecPath);
        return {};
    }

    // A prepared claim whose devices are still the prepared ones: an error when one changed, and
    // then the record can never be honoured again (as opposed to, say, a write that failed in
    // repair and may work on the next try).
    static Status devicesUnchanged(const ClaimRecord& record, const NodeView& node) {
        for (const auto& device : record.devices) {
            if (auto same = detail::verifyIdentity(device, node); !same)
                return same;
        }
        return Status::Ok();
    }

    // A prepared claim whose devices are unchanged: re-creates files that are missing or stale
    // (after a reboot /var/run/cdi is empty and device numbers may have changed), refreshes the
    // record.
    Result<size_t> repair(ClaimRecord& record, const NodeView& node) {
        auto plan = detail::buildPlan(
            {record.claimNamespace, record.claimName, record.claimUid, record.podClaimName},
            record.devices, node, options, host);
        if (!plan)
            return plan.error();
        size_t recreated = 0;
        bool recordChanged = record.bootId != options.bootId;
        // Metadata files before the CDI specs that mount them: after a power cut a spec must not
        // come back before its file is whole (metadataDurability counts on it).
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
            return files::writeFileAtomically(path, content, 0644, cdiDurability);
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
        const std::int64_t last =
            record.metadataGenerations.count(base) ? record.metadataGenerations.at(base) : 0;
        auto wanted = request.object;
        auto content = files::readFile(request.files.hostFile);
        if (!content) {
            if (!content.error().is(ErrorKind::NotFound))
                return content.error();
            wanted.generation = last + 1;
            if (auto created = metadata::createFile(request.files, wanted, options.metadataVersions,
                                                    metadataDurability);
                !created)
                return created.error();
            record.metadataGenerations[base] = wanted.generation;
            return true;
        }
        // Compared as bytes, not as decoded objects: the file must hold exactly what this
        // daemon writes, every configured version included (a restart with another
        // --metadata-versions changes the file, not the object decoded from its first document).
        auto stored = metadata::decodeStream(*content, request.files.hostFile);
        if (stored) {
            wanted.generation = stored->generation;
            if (*content == metadata::encodeStream(wanted, options.metadataVersions)) {
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

    // Removes the files no record owns (orphans.hpp); returns how many. Only at start, under the
    // rolling-update turn: a prepare in flight has files and no record yet.
    size_t removeLeftovers(const std::vector<ClaimRecord>& prepared) {
        auto quarantined = store.quarantinedUids();
        if (!quarantined) {
            spdlog::warn("leftover files not looked for error=\"{}\"", quarantined.error().message);
            return 0;
        }
        detail::FileOwners owners;
        owners.claimUids.insert(quarantined->begin(), quarantined->end());
        for (const auto& record : prepared) {
            owners.claimUids.insert(record.claimUid);
            owners.claimFolders.insert(record.claimNamespace + "_" + record.claimName);
        }
        auto removed = detail::removeOrphans(
            {options.driverName, options.cdiDir, options.metadataDir}, owners);
        if (!removed) {
            // Left for the next start (or the claim's Unprepare): they are inert.
            spdlog::warn("removing leftover files error=\"{}\"", removed.error().message);
            return 0;
        }
        return *removed;
    }

    // After a failed repair (a write that failed, a device node the driver has not created yet
    // after a reboot): the record and its devices are kept, and the next Prepare tries again.
    void repairFailed(const ClaimRecord& record, const Error& error) {
        metrics.counterAdd(kRepairFailures);
        spdlog::error(
            "prepared claim could not be repaired claim={} error=\"{}\" action=\"kept; "
            "retried on the next Prepare\"",
            claimText(record.claimNamespace, record.claimName, record.claimUid), error.message);
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
    metrics.declareCounter(kRepairFailures,
                           "Prepared claims whose missing files could not be re-created yet "
                           "(kept and retried on the next Prepare).");
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
    // Every completed claim is registered before anything is removed or repaired: rolling back
    // one claim must not touch the files of a live claim of the same name, and repairing one
    // must never hand its CPUs to another.
    std::vector<ClaimRecord> completed, interrupted;
    for (auto& record : loaded->records) {
        if (record.state == ClaimState::PrepareStarted) {
            interrupted.push_back(std::move(record));
        } else {
            s.commit(record);
            completed.push_back(std::move(record));
        }
    }
    for (const auto& record : interrupted) {
        // A crash interrupted this prepare before it answered: undo it; the kubelet retries.
        spdlog::info("rolling back an interrupted prepare claim={}",
                     claimText(record.claimNamespace, record.claimName, record.claimUid));
        auto removed = s.removeFiles(record);
        if (removed)
            removed = s.store.remove(record.claimUid);
        if (!removed) {
            s.quarantine(record, "rolling back an interrupted prepare: " + removed.error().message);
            ++report.quarantined;
            continue;
        }
        ++report.rolledBack;
    }
    report.leftoversRemoved = s.removeLeftovers(completed);
    for (auto& record : completed) {
        const bool earlierBoot = record.bootId != s.options.bootId;
        report.fromEarlierBoot += earlierBoot ? 1 : 0;
        if (auto same = State::devicesUnchanged(record, node); !same) {
            s.quarantine(record, same.error().message);
            ++report.quarantined;
            continue;
        }
        auto repaired = s.repair(record, node);
        if (!repaired) {
            s.repairFailed(record, repaired.error());
            ++report.repairFailed;
            continue;
        }
        s.commit(record);
        ++report.restored;
        report.filesRecreated += *repaired;
    }
    return report;
}

std::optional<Result<std::vector<claims::PreparedDevice>>> Preparer::preparedClaim(
    const claims::ClaimRef& claim, const NodeView& node) {
    auto& s = *state_;
    if (!s.recordOf(claim.uid))
        return std::nullopt;
    ClaimLocks::Guard guard(s.claimLocks, claim.uid);
    auto record = s.recordOf(claim.uid);
    if (!record)
        return std::nullopt;  // unprepared while we waited
    if (auto same = State::devicesUnchanged(*record, node); !same) {
        s.quarantine(*record, same.error().message);
        return Result<std::vector<claims::PreparedDevice>>(
            same.error().withMessage("claim was prepared, but " + same.error().message +
                                     "; its checkpoint entry was quarantined"));
    }
    auto repaired = s.repair(*record, node);
    if (!repaired) {
        s.repairFailed(*record, repaired.error());
        return Result<std::vector<claims::PreparedDevice>>(repaired.error().withMessage(
            "claim was prepared, but " + repaired.error().message + "; the next Prepare retries"));
    }
    s.commit(*record);
    return Result<std::vector<claims::PreparedDevice>>(detail::preparedDevices(record->devices));
}

Result<std::vector<claims::PreparedDevice>> Preparer::prepare(const ClaimAllocation& allocation,
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
    if (auto reserved = s.reserve(ref.uid, ref.ns, ref.name, devices, node.machine); !reserved)
        return reserved.error();
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
    record.state = ClaimState::PrepareCompleted;

    auto undo = [&](const Error& error) -> Error {
        if (auto removed = s.removeFiles(record); !removed)
            spdlog::error("cleaning up a failed prepare error=\"{}\"", removed.error().message);
        if (auto removed = s.store.remove(ref.uid); !removed)
            spdlog::error("cleaning up a failed prepare error=\"{}\"", removed.error().message);
        s.release(ref.uid);
        return error;
    };
    // Files first, the record last, durable on return: the record is the one point after which
    // the prepare counts. Before it, a crash or a power cut leaves files no record owns, and the
    // next start removes them; after it, a start re-creates whatever a power cut took.
    if (auto written = s.writePlan(*plan, record); !written)
        return undo(written.error());
    if (auto saved = s.saveRecord(record); !saved)
        return undo(saved.error());
    s.commit(record);
    return detail::preparedDevices(record.devices);
}

Status Preparer::unprepare(const claims::ClaimRef& claim) {
    auto& s = *state_;
    // A UID that could not name a file was never prepared here.
    if (!state::CheckpointStore::isValidUid(claim.uid))
        return {};
    ClaimLocks::Guard guard(s.claimLocks, claim.uid);
    if (auto removed = s.store.removeQuarantined(claim.uid); !removed)
        return removed;
    auto record = s.recordOf(claim.uid);
    if (!record) {
        // Nothing recorded (never prepared, already unprepared, or quarantined): its files, if
        // any are left, are named after the claim.
        ClaimRecord leftover;
        leftover.claimNamespace = claim.ns;
        leftover.claimName = claim.name;
        leftover.claimUid = claim.uid;
        leftover.files.push_back(
            s.options.cdiDir + "/" +
            cdi::transientSpecFileName(s.options.driverName, "claim", claim.uid));
        const std::string metadataPrefix = s.options.driverName + "_metadata_" + claim.uid + "_";
        if (auto names = files::listDirectory(s.options.cdiDir)) {
            for (const auto& name : *names) {
                if (name.rfind(metadataPrefix, 0) == 0)
                    leftover.files.push_back(s.options.cdiDir + "/" + name);
            }
        }
        if (auto removed = s.removeFiles(leftover); !removed)
            return removed;
        s.release(claim.uid);
        return {};
    }
    // Files first (not synced), then the record (durably): the claim is unprepared once the
    // record is gone. A crash in between leaves a record whose files the next start re-creates
    // (the kubelet retries the Unprepare); a power cut that undoes a removal leaves files no record
    // owns, which the next start removes.
    if (auto removed = s.removeFiles(*record); !removed)
        return removed;
    if (auto removed = s.store.remove(claim.uid); !removed)
        return removed;
    s.release(claim.uid);
    return {};
}

Result<size_t> Preparer::syncWithCheckpoint() {
    auto& s = *state_;
    auto uids = s.store.recordedUids();
    if (!uids) {
        return Error{"reading the checkpoint folder " + s.store.directory() + ": " +
                     uids.error().message};
    }
    const auto& recorded = *uids;  // sorted
    std::vector<std::string> unpreparedElsewhere;
    {
        std::lock_guard lock(s.mutex);
        for (const auto& [uid, record] : s.records) {
            if (!std::binary_search(recorded.begin(), recorded.end(), uid))
                unpreparedElsewhere.push_back(uid);
        }
    }
    size_t changed = 0;
    for (const auto& uid : unpreparedElsewhere) {
        spdlog::info("claim unprepared by the driver's other instance on this node uid={}", uid);
        s.release(uid);
        ++changed;
    }
    for (const auto& uid : recorded) {
        if (s.recordOf(uid))
            continue;
        auto record = s.store.read(uid);
        if (!record) {
            if (!record.error().is(ErrorKind::NotFound)) {
                // Left in place: the next start's restore quarantines it with its reason.
                spdlog::warn("checkpoint record unreadable uid={} error=\"{}\"", uid,
                             record.error().message);
            }
            continue;
        }
        // A started record under the lock is a prepare the other instance did not finish (it
        // died): the kubelet asks again, and that prepare rewrites the same files.
        if (record->state != ClaimState::PrepareCompleted)
            continue;
        spdlog::info("claim prepared by the driver's other instance on this node claim={}",
                     claimText(record->claimNamespace, record->claimName, record->claimUid));
        s.commit(*record);
        ++changed;
    }
    return changed;
}

size_t Preparer::preparedClaimCount() const {
    std::lock_guard lock(state_->mutex);
    return state_->records.size();
}

}  // namespace numadra::prepare
