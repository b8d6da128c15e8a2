#include "registration_service.hpp"

#include <spdlog/spdlog.h>

namespace numadra::plugin {
namespace {

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

}  // namespace

RegistrationService::RegistrationService(std::string driverName, std::string endpoint,
                                         std::vector<std::string> supportedVersions)
    : info_(makeInfo(std::move(driverName), std::move(endpoint), std::move(supportedVersions))) {}

std::optional<bool> RegistrationService::registered() const {
    std::lock_guard lock(mutex_);
    return registered_;
}

// The kubelet gives GetInfo 1 s: answer from memory, nothing else.
grpc::ServerUnaryReactor* RegistrationService::GetInfo(grpc::CallbackServerContext* context,
                                                       const pluginregistration::InfoRequest*,
                                                       pluginregistration::PluginInfo* response) {
    *response = info_;
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
}

// Answers OK even to a failure report: the kubelet retries registration on its own as long as
// our socket exists, and an error answer would only add a misleading failure to its log.
grpc::ServerUnaryReactor* RegistrationService::NotifyRegistrationStatus(
    grpc::CallbackServerContext* context, const pluginregistration::RegistrationStatus* request,
    pluginregistration::RegistrationStatusResponse*) {
    {
        std::lock_guard lock(mutex_);
        registered_ = request->plugin_registered();
    }
    if (request->plugin_registered())
        spdlog::info("kubelet registered the plugin driver={} endpoint={}", info_.name(),
                     info_.endpoint());
    else
        spdlog::error("kubelet rejected the plugin driver={} endpoint={} error={}", info_.name(),
                      info_.endpoint(), request->error());
    auto* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
}

}  // namespace numadra::plugin
