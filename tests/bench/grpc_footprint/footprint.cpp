// grpc-footprint OURS GRPCPP: what a server process costs, ours (plugin/grpc) against grpc++'s
// synchronous server, serving the same methods on a unix socket. Each runs as a child process;
// this one is the client (grpc++). Prints threads and resident memory of each server at rest
// after start, then while 10 connections make 1,000 GetInfo calls with 3 health streams open.

#include <grpcpp/grpcpp.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"

namespace {

using namespace std::chrono_literals;

struct Footprint {
    long threads = 0;
    long rssKiB = 0;
    long peakRssKiB = 0;
    double callsMs = 0;  // the 1,000 calls, wall time
};

Footprint footprintOf(pid_t pid) {
    Footprint footprint;
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string key;
    while (status >> key) {
        if (key == "Threads:")
            status >> footprint.threads;
        else if (key == "VmRSS:")
            status >> footprint.rssKiB;
        else if (key == "VmHWM:")
            status >> footprint.peakRssKiB;
    }
    return footprint;
}

bool accepts(const std::string& path) {
    const int socket = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::strncpy(address.sun_path, path.c_str(), sizeof(address.sun_path) - 1);
    const bool connected =
        ::connect(socket, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(socket);
    return connected;
}

std::shared_ptr<grpc::Channel> channel(const std::string& path, int distinct) {
    grpc::ChannelArguments arguments;
    arguments.SetInt("footprint.channel", distinct);  // one connection per channel
    arguments.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), arguments);
}

// Calls on 10 connections at once while 3 health streams stay open; measures before closing.
Footprint underLoad(const std::string& path, pid_t server) {
    constexpr int kConnections = 10;
    constexpr int kCallsEach = 100;
    std::vector<std::unique_ptr<grpc::ClientContext>> streamContexts;
    std::vector<std::unique_ptr<grpc::ClientReader<v1alpha1::NodeWatchResourcesResponse>>> streams;
    auto healthStub = v1alpha1::DRAResourceHealth::NewStub(channel(path, 100));
    for (int i = 0; i < 3; ++i) {
        streamContexts.push_back(std::make_unique<grpc::ClientContext>());
        streams.push_back(healthStub->NodeWatchResources(streamContexts.back().get(), {}));
        v1alpha1::NodeWatchResourcesResponse update;
        if (!streams.back()->Read(&update))
            std::fprintf(stderr, "health stream %d: no update\n", i);
    }
    std::atomic<int> failures{0};
    const auto started = std::chrono::steady_clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < kConnections; ++c) {
        clients.emplace_back([&, c] {
            auto stub = pluginregistration::Registration::NewStub(channel(path, c));
            for (int i = 0; i < kCallsEach; ++i) {
                grpc::ClientContext context;
                context.set_deadline(std::chrono::system_clock::now() + 5s);
                pluginregistration::PluginInfo reply;
                if (!stub->GetInfo(&context, {}, &reply).ok() || reply.name() != "numa.example.com")
                    ++failures;
            }
        });
    }
    for (auto& client : clients)
        client.join();
    Footprint loaded = footprintOf(server);
    loaded.callsMs =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
            .count();
    if (failures > 0)
        std::fprintf(stderr, "%d calls failed\n", failures.load());
    for (auto& context : streamContexts)
        context->TryCancel();
    for (auto& stream : streams)
        (void)stream->Finish();
    return loaded;
}

void measure(const char* label, const char* program, const std::string& path) {
    std::filesystem::remove(path);
    const pid_t server = ::fork();
    if (server == 0) {
        ::execl(program, program, path.c_str(), static_cast<char*>(nullptr));
        std::perror(program);
        ::_exit(127);
    }
    for (int i = 0; i < 500 && !accepts(path); ++i)
        std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(200ms);  // let start-up threads settle
    const Footprint idle = footprintOf(server);
    const Footprint loaded = underLoad(path, server);
    std::printf("%-22s %8ld %10ld %8ld %10ld %10ld %10.0f\n", label, idle.threads, idle.rssKiB,
                loaded.threads, loaded.rssKiB, loaded.peakRssKiB, loaded.callsMs);
    ::kill(server, SIGTERM);
    ::waitpid(server, nullptr, 0);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 3) {
        std::fprintf(stderr, "usage: grpc-footprint OURS_SERVER GRPCPP_SERVER\n");
        return 2;
    }
    char folder[] = "/tmp/grpc-footprint-XXXXXX";
    if (::mkdtemp(folder) == nullptr)
        return 1;
    const std::string path = std::string(folder) + "/grpc.sock";
    std::printf("%-22s %8s %10s %8s %10s %10s %10s\n", "server", "threads", "rss KiB", "threads",
                "rss KiB", "peak KiB", "calls ms");
    std::printf("%-22s %8s %10s %8s %10s %10s %10s\n", "", "(idle)", "(idle)", "(load)", "(load)",
                "", "(1,000)");
    measure("grpc++ sync server", argv[2], path);
    measure("plugin/grpc (nghttp2)", argv[1], path);
    std::filesystem::remove_all(folder);
    return 0;
}
