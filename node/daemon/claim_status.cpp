#include "numadra/daemon/claim_status.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "numadra/common/text.hpp"

namespace numadra::daemon {

namespace {

constexpr int kMaxAttempts = 8;
constexpr std::chrono::milliseconds kFirstRetry{500};
constexpr std::chrono::milliseconds kMaxRetry{30'000};

std::string claimName(const claims::ClaimRef& claim) {
    return claim.ns + "/" + claim.name;
}

// Answers that another attempt cannot change: the claim is gone or was re-created (NotFound,
// Conflict on the uid), the entry is refused (InvalidArgument: 400, 422; Unsupported: 415), or
// the driver may not write it (Unauthenticated, PermissionDenied: 401, 403).
bool permanent(const Error& error) {
    switch (error.kind) {
        case ErrorKind::InvalidArgument:
        case ErrorKind::Unauthenticated:
        case ErrorKind::PermissionDenied:
        case ErrorKind::NotFound:
        case ErrorKind::AlreadyExists:
        case ErrorKind::Conflict:
        case ErrorKind::Unsupported:
            return true;
        default:
            return false;
    }
}

}  // namespace

api::Json claimStatusApply(const claims::ClaimRef& claim, const std::string& driverName,
                           const std::vector<claims::PreparedDevice>& devices,
                           const std::string& now) {
    api::Json entries = api::Json::array();
    std::set<std::string> seen;  // a device of two requests is one entry
    for (const auto& device : devices) {
        if (device.interfaceName.empty())
            continue;
        const std::string key =
            device.poolName + "/" + device.deviceName + "/" + device.shareId.value_or("");
        if (!seen.insert(key).second)
            continue;
        api::Json entry = {
            {"driver", driverName}, {"pool", device.poolName}, {"device", device.deviceName}};
        if (device.shareId)
            entry["shareID"] = *device.shareId;
        entry["conditions"] =
            api::Json::array({{{"type", "Ready"},
                               {"status", "True"},
                               {"lastTransitionTime", now},
                               {"reason", "Prepared"},
                               {"message", "the driver prepared the device; its interface is " +
                                               device.interfaceName}}});
        api::Json network = {{"interfaceName", device.interfaceName}};
        if (!device.hardwareAddress.empty())
            network["hardwareAddress"] = device.hardwareAddress;
        entry["networkData"] = std::move(network);
        entries.push_back(std::move(entry));
    }
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", claim.name}, {"namespace", claim.ns}, {"uid", claim.uid}}},
            {"status", {{"devices", std::move(entries)}}}};
}

ClaimStatusPublisher::ClaimStatusPublisher(ClaimStatusSink& sink, std::string driverName,
                                           metrics::Registry& metrics,
                                           std::chrono::milliseconds linger)
    : sink_(sink),
      driverName_(std::move(driverName)),
      metrics_(metrics),
      writer_(1, "claim-status", linger) {}

ClaimStatusPublisher::~ClaimStatusPublisher() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    changed_.notify_all();
    writer_.stop();  // a write under way finishes; a drain not yet started is dropped
    if (!pending_.empty())
        spdlog::warn("claim status writes given up at exit claims={}", pending_.size());
}

void ClaimStatusPublisher::prepared(const claims::ClaimRef& claim,
                                    const std::vector<claims::PreparedDevice>& devices) {
    if (std::none_of(devices.begin(), devices.end(),
                     [](const auto& d) { return !d.interfaceName.empty(); }))
        return;
    std::lock_guard lock(mutex_);
    pending_[claim.uid] = Pending{claim, devices};
    scheduleDrain();
}

void ClaimStatusPublisher::unprepared(const claims::ClaimRef& claim) {
    std::lock_guard lock(mutex_);
    pending_[claim.uid] = Pending{claim, {}};
    scheduleDrain();
}

void ClaimStatusPublisher::scheduleDrain() {
    ++generation_;
    if (draining_) {
        changed_.notify_all();  // a drain waiting for a retry looks again
        return;
    }
    draining_ = true;
    writer_.submit([this] { drain(); });
}

bool ClaimStatusPublisher::waitIdle(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, timeout, [&] { return pending_.empty() && !writing_; });
}

void ClaimStatusPublisher::drain() {
    std::unique_lock lock(mutex_);
    while (!stopping_ && !pending_.empty()) {
        const auto now = std::chrono::steady_clock::now();
        auto ready = std::find_if(pending_.begin(), pending_.end(),
                                  [&](const auto& entry) { return entry.second.notBefore <= now; });
        if (ready == pending_.end()) {
            auto next = std::chrono::steady_clock::time_point::max();
            for (const auto& [uid, pending] : pending_)
                next = std::min(next, pending.notBefore);
            const std::uint64_t seen = generation_;
            changed_.wait_until(lock, next, [&] { return stopping_ || generation_ != seen; });
            continue;
        }
        Pending pending = std::move(ready->second);
        pending_.erase(ready);
        writing_ = true;
        lock.unlock();
        write(std::move(pending));
        lock.lock();
        writing_ = false;
        changed_.notify_all();  // waitIdle
    }
    draining_ = false;
}

// Off the lock. A failure worth another try goes back in the queue unless a newer wish for the
// claim arrived meanwhile.
void ClaimStatusPublisher::write(Pending pending) {
    const api::Json body = claimStatusApply(pending.claim, driverName_, pending.devices, "");
    const std::string entries = body["status"]["devices"].dump();
    {
        std::lock_guard lock(mutex_);
        auto known = applied_.find(pending.claim.uid);
        if (known != applied_.end() && known->second == entries)
            return;  // applied already (a kubelet retry, a restart's re-prepare)
    }
    const bool removing = pending.devices.empty();
    auto result = sink_.apply(pending.claim, claimStatusApply(pending.claim, driverName_,
                                                              pending.devices, text::utcNow()));
    if (result) {
        metrics_.counterAdd("numadra_claim_status_writes_total", {"ok"});
        std::lock_guard lock(mutex_);
        if (removing)
            applied_.erase(pending.claim.uid);
        else
            applied_[pending.claim.uid] = entries;
        if (!removing)
            spdlog::info("claim status written claim={} devices={}", claimName(pending.claim),
                         body["status"]["devices"].size());
        return;
    }
    if (removing &&
        result.error().is(ErrorKind::NotFound)) {  // the claim is gone, and its status with it
        std::lock_guard lock(mutex_);
        applied_.erase(pending.claim.uid);
        return;
    }
    metrics_.counterAdd("numadra_claim_status_writes_total", {"error"});
    const bool retry = !permanent(result.error()) && ++pending.attempt < kMaxAttempts;
    spdlog::warn("claim status not written claim={} error=\"{}\" retry={}",
                 claimName(pending.claim), result.error().message, retry);
    if (!retry)
        return;
    const auto delay = std::min(kMaxRetry, kFirstRetry * (1 << (pending.attempt - 1)));
    pending.notBefore = std::chrono::steady_clock::now() + delay;
    std::lock_guard lock(mutex_);
    pending_.try_emplace(pending.claim.uid, std::move(pending));
}

void declareClaimStatusMetrics(metrics::Registry& registry) {
    registry.declareCounter("numadra_claim_status_writes_total",
                            "Applies of prepared NICs' status.devices entries to their claims, by "
                            "result.",
                            {"result"});
}

}  // namespace numadra::daemon
