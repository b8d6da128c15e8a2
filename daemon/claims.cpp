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

// A top-level request name: "gpu/sub0" -> "gpu" (containers refer to requests by it).
std::string topLevelRequest(const std::string& request) {
    return request.substr(0, request.find('/'));
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
                             std::string driverName, std::string poolName,
                             metrics::Registry& metrics)
    : source_(source),
      inventory_(inventory),
      driverName_(std::move(driverName)),
      poolName_(std::move(poolName)),
      metrics_(metrics) {}

Result<std::vector<plugin::PreparedDevice>> ClaimPreparer::devicesFor(
    const plugin::ClaimRef& ref, const api::Json& claim) const {
    const std::string what = "ResourceClaim " + claimName(ref);
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
    const auto snapshot = inventory_.current();
    std::vector<plugin::PreparedDevice> devices;
    for (const auto& result : claim[resultsPointer]) {
        if (result.value("driver", std::string()) != driverName_)
            continue;
        const std::string pool = result.value("pool", std::string());
        const std::string device = result.value("device", std::string());
        const std::string request = result.value("request", std::string());
        if (pool != poolName_) {
            return Error{what + ": device " + device + " of request " + request + " is in pool '" +
                         pool + "', not this node's pool '" + poolName_ + "'"};
        }
        if (!snapshot->deviceNames.count(device)) {
            return Error{what + ": device " + device + " of request " + request +
                         " is not published by this node"};
        }
        plugin::PreparedDevice prepared;
        prepared.requestNames = {topLevelRequest(request)};
        prepared.poolName = pool;
        prepared.deviceName = device;
        if (result.contains("shareID") && result["shareID"].is_string())
            prepared.shareId = result["shareID"].get<std::string>();
        devices.push_back(std::move(prepared));
    }
    if (devices.empty())
        return Error{what + " has no devices allocated by driver " + driverName_};
    return devices;
}

plugin::ClaimPrepareResult ClaimPreparer::prepare(const plugin::ClaimRef& ref,
                                                  plugin::Deadline deadline) {
    const auto started = std::chrono::steady_clock::now();
    plugin::ClaimPrepareResult result;
    auto claim = source_.getClaim(ref.ns, ref.name, deadline);
    if (!claim) {
        result.error =
            claim.error().code == kNotFound
                ? "ResourceClaim " + claimName(ref) + " not found"
                : "fetching ResourceClaim " + claimName(ref) + ": " + claim.error().message;
    } else if (auto devices = devicesFor(ref, claim.value()); !devices) {
        result.error = devices.error().message;
    } else {
        result.devices = std::move(devices).value();
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
    // Nothing is set up on the node for a claim yet (CDI specs, metadata and the checkpoint come
    // with device preparation), so undoing is always a success, as it must be for unknown claims.
    const auto started = std::chrono::steady_clock::now();
    metrics_.counterAdd("numadra_unprepare_claims_total", {"ok"});
    metrics_.histogramObserve("numadra_unprepare_duration_seconds", {},
                              std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    spdlog::info("claim unprepared claim={} uid={}", claimName(ref), ref.uid);
    return {};
}

}  // namespace numadra::daemon
