// grpc-footprint-ours SOCKET: plugin/grpc's server on SOCKET, as small as a daemon would hold it:
// Registration.GetInfo (answered at once) and DRAResourceHealth.NodeWatchResources (one update,
// then the stream stays open). Runs until SIGTERM. Links neither grpc++ nor protobuf: the two
// messages are encoded by hand, so what it costs is the transport's.

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <vector>

#include "numadra/plugin/grpc/server.hpp"

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
    sigset_t stopSignals;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopSignals, nullptr);  // inherited by the loop thread

    numadra::UniqueFd listening(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, argv[1], sizeof(address.sun_path) - 1);
    if (::bind(listening.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(listening.get(), 64) != 0) {
        std::perror("listen");
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
    int received = 0;
    sigwait(&stopSignals, &received);
    server.stop(std::chrono::milliseconds(0));
    (*loop)->stop();
    return 0;
}
