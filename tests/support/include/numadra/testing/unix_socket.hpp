#pragma once
// A listening unix socket for the test programs that serve on one (plugin/grpc's tests, its
// grpc-go judge, the footprint benchmark). The daemon's own sockets are plugin::UnixListener's.

#include <sys/socket.h>
#include <sys/un.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "numadra/common/unique_fd.hpp"

namespace numadra::testing {

// Binds and listens at `path`; throws naming the path and the reason when it cannot.
inline UniqueFd listenOnUnixSocket(const std::string& path, int backlog = 64) {
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    if (path.size() >= sizeof address.sun_path)
        throw std::runtime_error("unix socket path too long: " + path);
    std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
    UniqueFd socket(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!socket ||
        ::bind(socket.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(socket.get(), backlog) != 0)
        throw std::runtime_error("cannot listen on " + path + ": " + std::strerror(errno));
    return socket;
}

}  // namespace numadra::testing
