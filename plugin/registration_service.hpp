#pragma once
// pluginregistration.Registration: how the kubelet learns who we are and where the DRA
// service listens.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "numadra/plugin/grpc/server.hpp"
#include "pkg/apis/pluginregistration/v1/api.pb.h"

namespace numadra::plugin {

class RegistrationService {
  public:
    RegistrationService(std::string driverName, std::string endpoint,
                        std::vector<std::string> supportedVersions);

    // The last status the kubelet reported; nullopt before the first report.
    std::optional<bool> registered() const;

    // Serves GetInfo and NotifyRegistrationStatus on `server`; this service must outlive it.
    void addTo(rpc::GrpcServer& server);

  private:
    void getInfo(rpc::UnaryCall& call, const std::string& request) const;
    void notifyRegistrationStatus(rpc::UnaryCall& call, const std::string& request);

    const pluginregistration::PluginInfo info_;
    mutable std::mutex mutex_;
    std::optional<bool> registered_;
};

}  // namespace numadra::plugin
