#pragma once
// pluginregistration.Registration: how the kubelet learns who we are and where the DRA
// service listens.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"

namespace numadra::plugin {

class RegistrationService final : public pluginregistration::Registration::CallbackService {
  public:
    RegistrationService(std::string driverName, std::string endpoint,
                        std::vector<std::string> supportedVersions);

    // The last status the kubelet reported; nullopt before the first report.
    std::optional<bool> registered() const;

    grpc::ServerUnaryReactor* GetInfo(grpc::CallbackServerContext* context,
                                      const pluginregistration::InfoRequest* request,
                                      pluginregistration::PluginInfo* response) override;
    grpc::ServerUnaryReactor* NotifyRegistrationStatus(
        grpc::CallbackServerContext* context, const pluginregistration::RegistrationStatus* request,
        pluginregistration::RegistrationStatusResponse* response) override;

  private:
    const pluginregistration::PluginInfo info_;
    mutable std::mutex mutex_;
    std::optional<bool> registered_;
};

}  // namespace numadra::plugin
