// grpc-footprint-grpcpp SOCKET: the same two methods as grpc-footprint-ours, served by grpc++'s
// synchronous server, as the daemon served them before plugin/grpc. Runs until SIGTERM.

#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <memory>
#include <thread>

#include "numadra/testing/stop_signals.hpp"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"

namespace {

class Registration final : public pluginregistration::Registration::Service {
    grpc::Status GetInfo(grpc::ServerContext*, const pluginregistration::InfoRequest*,
                         pluginregistration::PluginInfo* reply) override {
        reply->set_type("DRAPlugin");
        reply->set_name("numa.example.com");
        return grpc::Status::OK;
    }
};

// One update, then the stream stays open (one sync-server thread per stream, as grpc++ does it).
class Health final : public v1alpha1::DRAResourceHealth::Service {
    grpc::Status NodeWatchResources(
        grpc::ServerContext* context, const v1alpha1::NodeWatchResourcesRequest*,
        grpc::ServerWriter<v1alpha1::NodeWatchResourcesResponse>* writer) override {
        writer->Write({});
        while (!context->IsCancelled())
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return grpc::Status::CANCELLED;
    }
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: grpc-footprint-grpcpp SOCKET\n");
        return 2;
    }
    const numadra::testing::StopSignals stopSignals;
    Registration registration;
    Health health;
    grpc::ServerBuilder builder;
    builder.AddListeningPort(std::string("unix:") + argv[1], grpc::InsecureServerCredentials());
    builder.RegisterService(&registration);
    builder.RegisterService(&health);
    auto server = builder.BuildAndStart();
    if (!server)
        return 1;
    stopSignals.wait();
    server->Shutdown(std::chrono::system_clock::now());
    return 0;
}
