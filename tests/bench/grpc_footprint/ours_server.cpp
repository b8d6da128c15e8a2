// grpc-footprint-ours SOCKET: plugin/grpc's server on SOCKET, as small as a daemon would hold it:
// Registration.GetInfo (answered at once) and DRAResourceHealth.NodeWatchResources (one update,
// then the stream stays open). Runs until SIGTERM. Links neither grpc++ nor protobuf: the two
// messages are encoded by hand, so what it costs is the transport's.

#include <cstdio>
#include <exception>
#include <mutex>
#include <vector>

#include "numadra/plugin/grpc/server.hpp"
#include "numadra/testing/stop_signals.hpp"
#include "numadra/testing/unix_socket.hpp"

namespace {

using numadra::rpc::RpcStatus;

// Protocol buffers' wire format for a string field: (number << 3 | 2), a length, the bytes.
std::string stringField(int number, const std::string& value) {
    return std::string(1, static_cast<char>((number << 3) | 2)) + static_cast<char>(value.size()) +
           value;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: grpc-footprint-ours SOCKET\n");
        return 2;
    }
    const numadra::testing::StopSignals stopSignals;  // inherited by the loop thread

    numadra::UniqueFd listening;
    try {
        listening = numadra::testing::listenOnUnixSocket(argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    auto loop = numadra::rpc::EventLoop::create();
    if (!loop) {
        std::fprintf(stderr, "%s\n", loop.error().message.c_str());
        return 1;
    }
    (*loop)->start();
    numadra::rpc::GrpcServer server(**loop);
    const std::string info = stringField(1, "DRAPlugin") + stringField(2, "numa.example.com");
    server.addUnary("/pluginregistration.Registration/GetInfo",
                    [&info](const std::shared_ptr<numadra::rpc::UnaryCall>& call,
                            const std::string&) { call->finish(RpcStatus::ok(), info); });
    std::mutex mutex;
    std::vector<std::shared_ptr<numadra::rpc::ServerStream>> streams;  // held open until exit
    server.addServerStreaming(
        "/v1alpha1.DRAResourceHealth/NodeWatchResources",
        [&](const std::shared_ptr<numadra::rpc::ServerStream>& stream, const std::string&) {
            stream->write("");
            std::lock_guard lock(mutex);
            streams.push_back(stream);
        });
    if (auto serving = server.serve(listening.get()); !serving) {
        std::fprintf(stderr, "%s\n", serving.error().message.c_str());
        return 1;
    }
    stopSignals.wait();
    server.stop(std::chrono::milliseconds(0));
    (*loop)->stop();
    return 0;
}
