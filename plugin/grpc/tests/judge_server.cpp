// grpc-judge-server SOCKET: plugin/grpc's server with the methods tests/upstream/grpc (grpc-go,
// the kubelet's own client library, with the kubelet's generated stubs) calls. Runs until SIGTERM.
//
//   Registration.GetInfo: answers at once; its endpoint field reports "cancelled=<n>", the calls
//     and streams the server has seen cancelled so far.
//   Registration.NotifyRegistrationStatus, by the request's error field:
//     "hold" never answers (for deadlines and cancels), "later" answers OK from another thread
//     after 50 ms, "fail" answers FAILED_PRECONDITION "100% full\nno é", anything else OK at once.
//   DRAResourceHealth(v1alpha1).NodeWatchResources: three updates ("update 0".."update 2"), then
//     stays open until cancelled.

#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "numadra/plugin/grpc/server.hpp"
#include "numadra/testing/stop_signals.hpp"
#include "numadra/testing/unix_socket.hpp"
#include "pkg/apis/dra-health/v1alpha1/api.pb.h"
#include "pkg/apis/pluginregistration/v1/api.pb.h"

namespace {

using numadra::rpc::RpcStatus;
using numadra::rpc::ServerStream;
using numadra::rpc::StatusCode;
using numadra::rpc::UnaryCall;

class JudgedMethods {
  public:
    void registerWith(numadra::rpc::GrpcServer& server) {
        server.addUnary("/pluginregistration.Registration/GetInfo",
                        [this](const std::shared_ptr<UnaryCall>& call, const std::string&) {
                            pluginregistration::PluginInfo info;
                            info.set_type("DRAPlugin");
                            info.set_name("numa.example.com");
                            info.set_endpoint("cancelled=" + std::to_string(cancelled_.load()));
                            call->finish(RpcStatus::ok(), info.SerializeAsString());
                        });
        server.addUnary("/pluginregistration.Registration/NotifyRegistrationStatus",
                        [this](const std::shared_ptr<UnaryCall>& call, const std::string& bytes) {
                            pluginregistration::RegistrationStatus request;
                            request.ParseFromString(bytes);
                            notify(call, request.error());
                        });
        server.addServerStreaming("/v1alpha1.DRAResourceHealth/NodeWatchResources",
                                  [this](const std::shared_ptr<ServerStream>& stream,
                                         const std::string&) { watch(stream); });
    }
    void joinWorkers() {
        for (auto& worker : workers_)
            worker.join();
    }

  private:
    void notify(const std::shared_ptr<UnaryCall>& call, const std::string& what) {
        const std::string answer =
            pluginregistration::RegistrationStatusResponse().SerializeAsString();
        if (what == "hold") {
            hold(call);
        } else if (what == "later") {
            workers_.emplace_back([call, answer] {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                call->finish(RpcStatus::ok(), answer);
            });
        } else if (what == "fail") {
            call->finish({StatusCode::FailedPrecondition, "100% full\nno é"});
        } else {
            call->finish(RpcStatus::ok(), answer);
        }
    }
    void watch(const std::shared_ptr<ServerStream>& stream) {
        for (int i = 0; i < 3; ++i) {
            v1alpha1::NodeWatchResourcesResponse update;
            update.add_devices()->set_message("update " + std::to_string(i));
            stream->write(update.SerializeAsString());
        }
        hold(stream);
    }
    void hold(const std::shared_ptr<numadra::rpc::CallContext>& call) {
        call->onCancel([this] { ++cancelled_; });
        std::lock_guard lock(mutex_);
        held_.push_back(call);
    }

    std::atomic<int> cancelled_{0};
    std::mutex mutex_;
    std::vector<std::shared_ptr<numadra::rpc::CallContext>> held_;
    std::vector<std::thread> workers_;  // only the loop thread adds to it
};

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: grpc-judge-server SOCKET\n");
        return 2;
    }
    const numadra::testing::StopSignals stopSignals;

    numadra::UniqueFd listening;
    try {
        listening = numadra::testing::listenOnUnixSocket(argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    auto loop = std::move(numadra::rpc::EventLoop::create().value());
    loop->start();
    JudgedMethods methods;
    {
        numadra::rpc::GrpcServer server(*loop);
        methods.registerWith(server);
        if (auto serving = server.serve(listening.get()); !serving) {
            std::fprintf(stderr, "%s\n", serving.error().message.c_str());
            return 1;
        }
        stopSignals.wait();
        server.stop(std::chrono::milliseconds(0));
    }
    loop->stop();
    methods.joinWorkers();
    return 0;
}
