#include "registration_service.hpp"

#include <spdlog/spdlog.h>

#include <memory>

namespace numadra::plugin {
namespace {

constexpr const char* kGetInfo = "/pluginregistration.Registration/GetInfo";
constexpr const char* kNotifyRegistrationStatus =
    "/pluginregistration.Registration/NotifyRegistrationStatus";

pluginregistration::PluginInfo makeInfo(std::string driverName, std::string endpoint,
                                        std::vector<std::string> supportedVersions) {
    pluginregistration::PluginInfo info;
    info.set_type("DRAPlugin");
    info.set_name(std::move(driverName));
    info.set_endpoint(std::move(endpoint));
    for (auto& version : supportedVersions)
        info.add_supported_versions(std::move(version));
    return info;
}

// What grpc++ answers to a request it cannot parse.
rpc::RpcStatus unparsable() {
    return {rpc::StatusCode::Internal, "cannot parse the request message"};
}

}  // namespace

RegistrationService::RegistrationService(std::string driverName, std::string endpoint,
                                         std::vector<std::string> supportedVersions)
    : info_(makeInfo(std::move(driverName), std::move(endpoint), std::move(supportedVersions))) {}

std::optional<bool> RegistrationService::registered() const {
    std::lock_guard lock(mutex_);
    return registered_;
}

void RegistrationService::addTo(rpc::GrpcServer& server) {
    server.addUnary(kGetInfo, [this](const std::shared_ptr<rpc::UnaryCall>& call,
                                     const std::string& request) { getInfo(*call, request); });
    server.addUnary(kNotifyRegistrationStatus, [this](const std::shared_ptr<rpc::UnaryCall>& call,
                                                      const std::string& request) {
        notifyRegistrationStatus(*call, request);
    });
}

// The kubelet gives GetInfo 1 s: answer from memory, nothing else.
void RegistrationService::getInfo(rpc::UnaryCall& call, const std::string& request) const {
    if (pluginregistration::InfoRequest parsed; !parsed.ParseFromString(request))
        return call.finish(unparsable());
    call.finish(rpc::RpcStatus::ok(), info_.SerializeAsString());
}

// Answers OK even to a failure report: the kubelet retries registration on its own as long as
// our socket exists, and an error answer would only add a misleading failure to its log.
void RegistrationService::notifyRegistrationStatus(rpc::UnaryCall& call,
                                                   const std::string& request) {
    pluginregistration::RegistrationStatus status;
    if (!status.ParseFromString(request))
        return call.finish(unparsable());
    {
        std::lock_guard lock(mutex_);
        registered_ = status.plugin_registered();
    }
    if (status.plugin_registered())
        spdlog::info("kubelet registered the plugin driver={} endpoint={}", info_.name(),
                     info_.endpoint());
    else
        spdlog::error("kubelet rejected the plugin driver={} endpoint={} error={}", info_.name(),
                      info_.endpoint(), status.error());
    call.finish(rpc::RpcStatus::ok(),
                pluginregistration::RegistrationStatusResponse().SerializeAsString());
}

}  // namespace numadra::plugin
