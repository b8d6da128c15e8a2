#include <cstdint>
#include <cstdio>
#include <filesystem>

#include "hash.hpp"
#include "numadra/plugin/server.hpp"

namespace numadra::plugin {
namespace {

std::string hex16(std::uint64_t value) {
    char buffer[17];
    std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(value));
    return buffer;
}

std::string absoluteDirectory(const std::string& dir) {
    auto path = std::filesystem::absolute(dir).lexically_normal();
    auto text = path.string();
    while (text.size() > 1 && text.back() == '/')
        text.pop_back();
    return text;
}

Result<std::string> socketPath(const std::string& dir, const std::string& preferredName,
                               const std::string& kind) {
    std::string path = dir + "/" + preferredName;
    if (path.size() <= kMaxSocketPathLength)
        return path;
    path = dir + "/" + kind + "-" + hex16(fnv1a64(preferredName)) + ".sock";
    if (path.size() <= kMaxSocketPathLength)
        return path;
    return Error{"directory " + dir + " is too long for a unix socket path (max " +
                 std::to_string(kMaxSocketPathLength) + " bytes)"};
}

}  // namespace

Result<SocketPaths> resolveSocketPaths(const PluginServerOptions& options) {
    const auto& driver = options.driverName;
    if (driver.empty() || driver.find('/') != std::string::npos || driver.front() == '.')
        return Error{"invalid driver name \"" + driver + "\""};
    if (options.podUid.find('/') != std::string::npos)
        return Error{"invalid pod uid \"" + options.podUid + "\""};
    if (options.registryDir.empty())
        return Error{"the registry directory is empty"};
    auto registryDir = absoluteDirectory(options.registryDir);
    auto pluginDir = absoluteDirectory(
        options.pluginDir.empty() ? "/var/lib/kubelet/plugins/" + driver : options.pluginDir);

    bool rollingUpdate = !options.podUid.empty();
    auto registration = socketPath(
        registryDir,
        rollingUpdate ? driver + "-" + options.podUid + "-reg.sock" : driver + "-reg.sock", "reg");
    if (!registration)
        return registration.error();
    auto dra = socketPath(pluginDir, rollingUpdate ? "dra-" + options.podUid + ".sock" : "dra.sock",
                          "dra");
    if (!dra)
        return dra.error();
    return SocketPaths{std::move(registration).value(), std::move(dra).value(),
                       pluginDir + "/serialize.lock"};
}

}  // namespace numadra::plugin
