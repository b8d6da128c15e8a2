#pragma once
// Small helpers the daemon's end-to-end tests share (daemon_test.cpp, load_test.cpp).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace numadra::daemon::test_support {

// Polls until the predicate holds or the timeout passes (loaded CI machines: never a tight wait).
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (predicate())
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return predicate();
}

inline std::string procRoot(const std::string& machine) {
    return std::string(NUMADRA_GENERATED_SYSFS) + "/" + machine + "/proc";
}

// A loopback TCP port that was free a moment ago (0 when none could be bound).
inline int freePort() {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
        ::close(fd);
        return 0;
    }
    socklen_t length = sizeof address;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
    ::close(fd);
    return ntohs(address.sin_port);
}

// A kubeconfig at `path` for the API server at `url`, with a bearer token.
inline void writeKubeconfig(const std::string& path, const std::string& url) {
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: test\n"
                           "clusters:\n- name: fake\n  cluster:\n    server: "
                        << url
                        << "\nusers:\n- name: u\n  user:\n    token: t0ken\n"
                           "contexts:\n- name: test\n  context:\n    cluster: fake\n    user: u\n";
}

// The daemon's flags for node "node-a" on the mocked `machine`: its kubeconfig, and the
// kubelet, CDI, /dev and /proc folders, all below the test's folder `root`.
inline std::vector<std::string> nodeFlags(const std::string& root, const std::string& machine,
                                          const std::string& sysfsRoot,
                                          const std::string& devRoot) {
    return {"--kubeconfig", root + "/kubeconfig", "--node-name", "node-a", "--sysfs-root",
            sysfsRoot, "--kubelet-registry-dir", root + "/registry", "--kubelet-plugins-dir",
            root + "/plugins", "--cdi-dir", root + "/cdi", "--dev-root", devRoot, "--proc-root",
            procRoot(machine),
            // Never the host's runtime: a test must not pin the machine's real containers.
            "--nri-socket", root + "/nri.sock"};
}

// A ResourceClaim allocated one device of this driver in node-a's pool, for request "gpu".
inline nlohmann::ordered_json allocatedClaim(const std::string& name, const std::string& uid,
                                             const std::string& device) {
    using Json = nlohmann::ordered_json;
    return Json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceClaim"},
                {"metadata", {{"name", name}, {"namespace", "default"}, {"uid", uid}}},
                {"status",
                 {{"allocation",
                   {{"devices",
                     {{"results", Json::array({{{"request", "gpu"},
                                                {"driver", "numa.dra.dev"},
                                                {"pool", "node-a"},
                                                {"device", device}}})}}}}}}}};
}

}  // namespace numadra::daemon::test_support
