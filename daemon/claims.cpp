#include "numadra/daemon/claims.hpp"

#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace numadra::daemon {

namespace {

constexpr int kNotFound = 404;

std::string claimName(const plugin::ClaimRef& ref) {
    return ref.ns + "/" + ref.name;
}

api::Json yamlToJson(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map: {
            api::Json out = api::Json::object();
            for (const auto& entry : node)
                out[entry.first.as<std::string>()] = yamlToJson(entry.second);
            return out;
        }
        case YAML::NodeType::Sequence: {
            api::Json out = api::Json::array();
            for (const auto& item : node)
                out.push_back(yamlToJson(item));
            return out;
        }
        case YAML::NodeType::Scalar:
            return node.as<std::string>();
        default:
            return nullptr;
    }
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
            try {
                if (std::string(extension) == ".json")
                    return api::Json::parse(content.str());
                return yamlToJson(YAML::Load(content.str()));
            } catch (const std::exception& e) {
                return Error{"claim file " + path + ": " + e.what()};
            }
        }
        return Error{"ResourceClaim " + ns + "/" + name + " not found in " + directory_, kNotFound};
    }

  private:
    std::string directory_;
};

}  // namespace

std::unique_ptr<ClaimSource> makeFileClaimSource(std::string directory) {
    return std::make_unique<FileClaimSource>(std::move(directory));
}

ClaimPreparer::ClaimPreparer(ClaimSource& source, const Inventory& inventory,
                             prepare::Preparer& devices, std::string driverName,
                             std::string poolName, metrics::Registry& metrics)
    : source_(source),
      inventory_(inventory),
      devices_(devices),
      driverName_(std::move(driverName)),
      poolName_(std::move(poolName)),
      metrics_(metrics) {}

Result<prepare::ClaimAllocation> ClaimPreparer::allocationFor(const plugin::ClaimRef& ref,
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
        out.devices.push_back(std::move(device));
    }
    if (out.devices.empty())
        return Error{what + " has no devices allocated by driver " + driverName_};
    return out;
}

plugin::ClaimPrepareResult ClaimPreparer::prepare(const plugin::ClaimRef& ref,
                                                  plugin::Deadline deadline) {
    const auto started = std::chrono::steady_clock::now();
    plugin::ClaimPrepareResult result;
    const auto snapshot = inventory_.current();
    const prepare::NodeView node{snapshot->machine, snapshot->devices};
    // A claim prepared before is answered from the checkpoint, without the API server.
    auto known = devices_.preparedClaim(ref, node);
    if (known && *known) {
        result.devices = std::move(*known).value();
    } else if (known) {
        result.error = known->error().message;
    } else if (auto claim = source_.getClaim(ref.ns, ref.name, deadline); !claim) {
        result.error =
            claim.error().code == kNotFound
                ? "ResourceClaim " + claimName(ref) + " not found"
                : "fetching ResourceClaim " + claimName(ref) + ": " + claim.error().message;
    } else if (auto allocation = allocationFor(ref, claim.value()); !allocation) {
        result.error = allocation.error().message;
    } else if (auto prepared = devices_.prepare(*allocation, node); !prepared) {
        result.error = "ResourceClaim " + claimName(ref) + ": " + prepared.error().message;
    } else {
        result.devices = std::move(prepared).value();
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.histogramObserve("numadra_prepare_duration_seconds", {}, seconds);
    metrics_.counterAdd("numadra_prepare_claims_total", {result.error.empty() ? "ok" : "error"});
    if (result.error.empty()) {
        spdlog::info("claim prepared claim={} uid={} devices={} seconds={:.4f}", claimName(ref),
                     ref.uid, result.devices.size(), seconds);
    } else {
        spdlog::warn("claim not prepared claim={} uid={} error=\"{}\"", claimName(ref), ref.uid,
                     result.error);
    }
    return result;
}

std::string ClaimPreparer::unprepare(const plugin::ClaimRef& ref, plugin::Deadline) {
    const auto started = std::chrono::steady_clock::now();
    auto undone = devices_.unprepare(ref);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.counterAdd("numadra_unprepare_claims_total", {undone ? "ok" : "error"});
    metrics_.histogramObserve("numadra_unprepare_duration_seconds", {}, seconds);
    if (!undone) {
        spdlog::warn("claim not unprepared claim={} uid={} error=\"{}\"", claimName(ref), ref.uid,
                     undone.error().message);
        return "ResourceClaim " + claimName(ref) + ": " + undone.error().message;
    }
    spdlog::info("claim unprepared claim={} uid={} seconds={:.4f}", claimName(ref), ref.uid,
                 seconds);
    return {};
}

}  // namespace numadra::daemon
