#include "numadra/daemon/claims.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "numadra/documents/documents.hpp"

namespace numadra::daemon {

namespace {

std::string claimName(const claims::ClaimRef& ref) {
    return ref.ns + "/" + ref.name;
}

class FileClaimSource : public ClaimSource {
  public:
    explicit FileClaimSource(std::string directory) : directory_(std::move(directory)) {}

    Result<api::Json> getClaim(const std::string& ns, const std::string& name, Deadline) override {
        for (const char* extension : {".json", ".yaml", ".yml"}) {
            const std::string path = directory_ + "/" + ns + "_" + name + extension;
            std::ifstream in(path);
            if (!in)
                continue;
            std::stringstream content;
            content << in.rdbuf();
            // The reader dra-allocate uses: YAML's scalars typed (adminAccess: true is a bool),
            // JSON or YAML whatever the extension says.
            auto objects = documents::parse(content.str(), path);
            if (!objects)
                return Error{"claim file " + objects.error().message};
            if (objects->size() != 1) {
                return Error{"claim file " + path + ": holds " + std::to_string(objects->size()) +
                             " objects, not one ResourceClaim"};
            }
            return std::move(objects->front().json);
        }
        return Error{"ResourceClaim " + ns + "/" + name + " not found in " + directory_,
                     ErrorKind::NotFound};
    }

  private:
    std::string directory_;
};

// The driver's own configuration of a claim (status.allocation.devices.config[].opaque with
// this driver's name: from the claim, or from its DeviceClass):
//   apiVersion: numa.dra.dev/v1alpha1
//   kind: NumaPlacement
//   memoryBinding: NumaNode | None
// The value for a device is that of the last entry that applies to its request (an entry with
// no requests applies to all; one naming "req" applies to "req/sub" too), as upstream applies
// configurations in order, the class's before the claim's.
constexpr const char* kPlacementApiVersion = "numa.dra.dev/v1alpha1";
constexpr const char* kPlacementKind = "NumaPlacement";

struct PlacementEntry {
    std::vector<std::string> requests;  // empty: every request
    bool bindMemory = false;
};

Result<PlacementEntry> placementEntry(const api::Json& entry, const std::string& field) {
    PlacementEntry out;
    if (entry.contains("requests")) {
        if (!entry["requests"].is_array())
            return Error{field + ".requests is not a list"};
        for (const auto& request : entry["requests"]) {
            if (!request.is_string())
                return Error{field + ".requests has an entry that is not a string"};
            out.requests.push_back(request.get<std::string>());
        }
    }
    const auto& parameters = entry["opaque"]["parameters"];
    const std::string where = field + ".opaque.parameters";
    if (!parameters.is_object())
        return Error{where + " is not an object"};
    for (const auto& [key, value] : parameters.items()) {
        if (key != "apiVersion" && key != "kind" && key != "memoryBinding")
            return Error{where + "." + key + " is not a field of " + kPlacementKind +
                         " (apiVersion, kind, memoryBinding)"};
    }
    if (parameters.value("apiVersion", std::string()) != kPlacementApiVersion ||
        parameters.value("kind", std::string()) != kPlacementKind) {
        return Error{where + " must have apiVersion " + std::string(kPlacementApiVersion) +
                     " and kind " + kPlacementKind};
    }
    const std::string binding = parameters.value("memoryBinding", std::string("None"));
    if (binding != "NumaNode" && binding != "None")
        return Error{where + ".memoryBinding is \"" + binding + "\", not NumaNode or None"};
    out.bindMemory = binding == "NumaNode";
    return out;
}

bool appliesTo(const PlacementEntry& entry, const std::string& request) {
    if (entry.requests.empty())
        return true;
    const std::string parent = request.substr(0, request.find('/'));
    return std::any_of(entry.requests.begin(), entry.requests.end(), [&](const std::string& named) {
        return named == request || named == parent;
    });
}

// This driver's placement entries of the claim's allocation, in order.
Result<std::vector<PlacementEntry>> placementEntries(const api::Json& claim,
                                                     const std::string& driverName) {
    const auto pointer = "/status/allocation/devices/config"_json_pointer;
    std::vector<PlacementEntry> out;
    if (!claim.contains(pointer))
        return out;
    const auto& config = claim[pointer];
    if (!config.is_array())
        return Error{"status.allocation.devices.config is not a list"};
    for (size_t i = 0; i < config.size(); ++i) {
        const std::string field = "status.allocation.devices.config[" + std::to_string(i) + "]";
        const auto& entry = config[i];
        if (!entry.is_object())
            return Error{field + " is not an object"};
        if (!entry.contains("opaque") || !entry["opaque"].is_object() ||
            entry["opaque"].value("driver", std::string()) != driverName)
            continue;
        auto parsed = placementEntry(entry, field);
        if (!parsed)
            return parsed.error();
        out.push_back(std::move(parsed).value());
    }
    return out;
}

}  // namespace

std::unique_ptr<ClaimSource> makeFileClaimSource(std::string directory) {
    return std::make_unique<FileClaimSource>(std::move(directory));
}

ClaimPreparer::ClaimPreparer(ClaimSource& source, const Inventory& inventory,
                             prepare::Preparer& devices, std::string driverName,
                             std::string poolName, metrics::Registry& metrics,
                             ClaimStatusPublisher* status, PinningGate* pinning)
    : source_(source),
      inventory_(inventory),
      devicePreparer_(devices),
      driverName_(std::move(driverName)),
      poolName_(std::move(poolName)),
      metrics_(metrics),
      status_(status),
      pinning_(pinning) {}

Result<prepare::ClaimAllocation> ClaimPreparer::allocationFor(const claims::ClaimRef& ref,
                                                              const api::Json& claim) const {
    const std::string what = "ResourceClaim " + claimName(ref);
    if (!claim.is_object())
        return Error{what + ": the API returned " + std::string(claim.type_name()) +
                     ", not an object"};
    const std::string uid = claim.value("/metadata/uid"_json_pointer, std::string());
    if (uid != ref.uid) {
        return Error{what + " has UID " + uid + ", not " + ref.uid +
                     " (the claim was deleted and re-created)"};
    }
    const auto allocation = "/status/allocation"_json_pointer;
    if (!claim.contains(allocation) || claim[allocation].is_null())
        return Error{what + " is not allocated"};
    const auto resultsPointer = "/status/allocation/devices/results"_json_pointer;
    if (!claim.contains(resultsPointer) || !claim[resultsPointer].is_array()) {
        return Error{what + ": status.allocation.devices.results is missing"};
    }
    prepare::ClaimAllocation out;
    out.claim = ref;
    const auto podClaimName =
        "/metadata/annotations/resource.kubernetes.io~1pod-claim-name"_json_pointer;
    if (claim.contains(podClaimName) && claim[podClaimName].is_string())
        out.podClaimName = claim[podClaimName].get<std::string>();
    auto placement = placementEntries(claim, driverName_);
    if (!placement)
        return Error{what + ": " + placement.error().message};
    const auto& results = claim[resultsPointer];
    for (size_t i = 0; i < results.size(); ++i) {
        const auto& result = results[i];
        const std::string field = "status.allocation.devices.results[" + std::to_string(i) + "]";
        if (!result.is_object())
            return Error{what + ": " + field + " is not an object"};
        if (result.value("driver", std::string()) != driverName_)
            continue;
        prepare::AllocatedDevice device;
        for (auto [key, target] :
             {std::pair{"request", &device.request}, std::pair{"pool", &device.pool},
              std::pair{"device", &device.device}}) {
            if (!result.contains(key) || !result[key].is_string() ||
                result[key].get<std::string>().empty())
                return Error{what + ": " + field + "." + key + " is missing"};
            *target = result[key].get<std::string>();
        }
        if (device.pool != poolName_) {
            return Error{what + ": device " + device.device + " of request " + device.request +
                         " is in pool '" + device.pool + "', not this node's pool '" + poolName_ +
                         "'"};
        }
        if (result.contains("shareID") && result["shareID"].is_string())
            device.shareId = result["shareID"].get<std::string>();
        if (result.contains("adminAccess") && result["adminAccess"].is_boolean())
            device.adminAccess = result["adminAccess"].get<bool>();
        if (result.contains("consumedCapacity")) {
            if (!result["consumedCapacity"].is_object())
                return Error{what + ": " + field + ".consumedCapacity is not an object"};
            for (const auto& [name, value] : result["consumedCapacity"].items()) {
                auto quantity = value.is_string() ? api::Quantity::parse(value.get<std::string>())
                                                  : Result<api::Quantity>(Error{"not a string"});
                if (!quantity) {
                    return Error{what + ": " + field + ".consumedCapacity." + name + ": " +
                                 quantity.error().message};
                }
                device.consumedCapacity.emplace(name, std::move(quantity).value());
            }
        }
        for (const PlacementEntry& entry : *placement) {
            if (appliesTo(entry, device.request))
                device.bindMemory = entry.bindMemory;
        }
        out.devices.push_back(std::move(device));
    }
    if (out.devices.empty())
        return Error{what + " has no devices allocated by driver " + driverName_};
    return out;
}

std::optional<claims::ClaimPrepareResult> ClaimPreparer::prepareFromRecords(
    const claims::ClaimRef& ref) {
    const auto snapshot = inventory_.current();
    const prepare::NodeView node{snapshot->machine, snapshot->devices};
    auto known = devicePreparer_.preparedClaim(ref, node);
    if (!known)
        return std::nullopt;
    if (!*known)
        return claims::ClaimPrepareResult{{}, known->error().message};
    if (status_ != nullptr)
        status_->prepared(ref, known->value());
    return claims::ClaimPrepareResult{std::move(*known).value(), {}};
}

Result<api::Json> ClaimPreparer::fetch(const claims::ClaimRef& ref, claims::Deadline deadline) {
    // Keyed by UID too: a claim deleted and re-created under the same name is another claim.
    const std::string key = ref.ns + "/" + ref.name + "/" + ref.uid;
    auto fetched = fetches_.run(key, deadline, [&]() -> Result<api::Json> {
        auto claim = source_.getClaim(ref.ns, ref.name, deadline);
        if (claim)
            return claim;
        if (claim.error().is(ErrorKind::NotFound))
            return claim.error().withMessage("ResourceClaim " + claimName(ref) + " not found");
        return claim.error().withMessage("fetching ResourceClaim " + claimName(ref) + ": " +
                                         claim.error().message);
    });
    if (!fetched.value)
        return Error{"deadline exceeded waiting for the API server's answer for ResourceClaim " +
                     claimName(ref) + " (fetched for another call of the same claim)"};
    return std::move(*fetched.value);
}

claims::ClaimPrepareResult ClaimPreparer::prepareFetched(const claims::ClaimRef& ref,
                                                         const api::Json& claim) {
    auto allocation = allocationFor(ref, claim);
    if (!allocation)
        return {{}, allocation.error().message};
    const auto snapshot = inventory_.current();
    if (pinning_ != nullptr) {
        if (auto admitted = pinning_->admit(*allocation, *snapshot); !admitted)
            return {{}, "ResourceClaim " + claimName(ref) + ": " + admitted.error().message};
    }
    const prepare::NodeView node{snapshot->machine, snapshot->devices};
    auto prepared = devicePreparer_.prepare(*allocation, node);
    if (!prepared)
        return {{}, "ResourceClaim " + claimName(ref) + ": " + prepared.error().message};
    if (pinning_ != nullptr)
        pinning_->claimsChanged();
    if (status_ != nullptr)
        status_->prepared(ref, prepared.value());
    return {std::move(prepared).value(), {}};
}

claims::ClaimPrepareResult ClaimPreparer::prepare(const claims::ClaimRef& ref,
                                                  claims::Deadline deadline) {
    const auto started = std::chrono::steady_clock::now();
    claims::ClaimOutcome outcome;
    outcome.claim = ref;
    claims::ClaimPrepareResult result;
    if (auto known = prepareFromRecords(ref)) {
        outcome.source = claims::ClaimOutcome::Source::Records;
        result = std::move(*known);
    } else {
        outcome.source = claims::ClaimOutcome::Source::Api;
        auto claim = fetch(ref, deadline);
        result = claim ? prepareFetched(ref, *claim)
                       : claims::ClaimPrepareResult{{}, claim.error().message};
    }
    const auto answered = std::chrono::steady_clock::now();
    outcome.took = answered - started;
    outcome.deadlineMissed = answered >= deadline;
    report(outcome, result);
    return result;
}

std::string ClaimPreparer::syncWithOtherInstances() {
    auto synced = devicePreparer_.syncWithCheckpoint();
    if (!synced)
        return "the checkpoint shared with the driver's other instance: " + synced.error().message;
    return {};
}

std::string ClaimPreparer::unprepare(const claims::ClaimRef& ref, claims::Deadline) {
    auto undone = devicePreparer_.unprepare(ref);
    if (!undone)
        return "ResourceClaim " + claimName(ref) + ": " + undone.error().message;
    if (pinning_ != nullptr)
        pinning_->claimsChanged();
    if (status_ != nullptr)
        status_->unprepared(ref);
    return {};
}

namespace {

const char* sourceName(claims::ClaimOutcome::Source source) {
    switch (source) {
        case claims::ClaimOutcome::Source::Records:
            return "checkpoint";
        case claims::ClaimOutcome::Source::Api:
            return "api";
        case claims::ClaimOutcome::Source::None:
            break;
    }
    return "none";
}

}  // namespace

void ClaimPreparer::report(const claims::ClaimOutcome& outcome,
                           const claims::ClaimPrepareResult& result) {
    const bool prepare = outcome.operation == claims::ClaimOutcome::Operation::Prepare;
    const char* operation = prepare ? "prepare" : "unprepare";
    const bool ok = result.error.empty();
    const double took = outcome.took.count();
    const double waited = outcome.waited.count();
    metrics_.counterAdd(prepare ? "numadra_prepare_claims_total" : "numadra_unprepare_claims_total",
                        {ok ? "ok" : "error"});
    metrics_.histogramObserve(
        prepare ? "numadra_prepare_duration_seconds" : "numadra_unprepare_duration_seconds", {},
        took);
    metrics_.histogramObserve("numadra_claim_wait_seconds", {operation}, waited);
    if (outcome.deadlineMissed)
        metrics_.counterAdd("numadra_claim_deadline_missed_total", {operation});

    const std::string name = claimName(outcome.claim);
    const bool slow = outcome.deadlineMissed || outcome.waited >= kLongClaimWait;
    const auto level = !ok || slow ? spdlog::level::warn : spdlog::level::info;
    // One line per claim and operation, whatever happened to it.
    if (ok && prepare)
        spdlog::log(level,
                    "claim prepared claim={} uid={} devices={} source={} seconds={:.4f} "
                    "waited_seconds={:.4f} deadline_missed={}",
                    name, outcome.claim.uid, result.devices.size(), sourceName(outcome.source),
                    took, waited, outcome.deadlineMissed);
    else if (ok)
        spdlog::log(level,
                    "claim unprepared claim={} uid={} seconds={:.4f} waited_seconds={:.4f} "
                    "deadline_missed={}",
                    name, outcome.claim.uid, took, waited, outcome.deadlineMissed);
    else
        spdlog::log(level,
                    "claim not {}d claim={} uid={} source={} seconds={:.4f} waited_seconds={:.4f} "
                    "deadline_missed={} error=\"{}\"",
                    operation, name, outcome.claim.uid, sourceName(outcome.source), took, waited,
                    outcome.deadlineMissed, result.error);
}

void declareClaimMetrics(metrics::Registry& registry) {
    registry.declareCounter("numadra_prepare_claims_total", "Claims prepared, by result.",
                            {"result"});
    registry.declareCounter("numadra_unprepare_claims_total", "Claims unprepared, by result.",
                            {"result"});
    registry.declareHistogram("numadra_prepare_duration_seconds",
                              "Time to prepare one claim, from the kubelet's call to the answer.",
                              {}, metrics::latencyBuckets());
    registry.declareHistogram("numadra_unprepare_duration_seconds",
                              "Time to unprepare one claim, from the kubelet's call to the answer.",
                              {}, metrics::latencyBuckets());
    registry.declareHistogram("numadra_claim_wait_seconds",
                              "Time a claim waited for a worker thread, by operation.",
                              {"operation"}, metrics::latencyBuckets());
    registry.declareCounter("numadra_claim_deadline_missed_total",
                            "Claims answered after the kubelet's call had ended (deadline passed "
                            "or the kubelet gave up), by operation.",
                            {"operation"});
}

}  // namespace numadra::daemon
