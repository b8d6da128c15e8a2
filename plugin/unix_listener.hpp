#pragma once
// A listening unix socket that we bind ourselves (rather than letting gRPC do it), so the file
// has its final mode and group before it becomes visible under its real name. The gRPC server
// accepts its connections on its event loop (rpc::GrpcServer::serve).

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>

#include "numadra/common/result.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::plugin {

struct SocketAccess {
    std::optional<gid_t> group;  // 0600 without a group, 0660 + chgrp with one
};

class UnixListener {
  public:
    // Binds in a private hidden directory next to `path` (the kubelet ignores names starting
    // with '.'), sets the mode and group, listens, then renames onto `path`, which atomically
    // replaces a stale socket. Refuses when `path` exists and is not a socket.
    static Result<std::unique_ptr<UnixListener>> open(const std::string& path,
                                                      const SocketAccess& access);

    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;
    ~UnixListener();  // closes the socket and removes the socket file

    const std::string& path() const { return path_; }
    // The listening socket (non-blocking, close-on-exec), or -1 once closed.
    int fd() const { return socket_.get(); }

    // Closes the listening socket, after its server stopped accepting on it; the file stays.
    // Idempotent.
    void closeSocket();
    // Unlinks the socket file if it is still the one we created (a newer instance may have
    // replaced it: that one is not ours to remove), then the private bind directory. Idempotent.
    void removeSocketFile();

  private:
    class BindSite;

    UnixListener(std::string path, std::string bindDirectory, UniqueFd socket, dev_t device,
                 ino_t inode);
    void unlinkSocketIfOurs();
    void removeBindDirectory();

    std::string path_;
    std::string bindDirectory_;  // the private directory the socket was bound in, or ""
    UniqueFd socket_;
    dev_t device_ = 0;
    ino_t inode_ = 0;
    bool fileRemoved_ = false;
};

// Whether a server listens on the unix socket at `path` (a connect succeeds), as opposed to a
// socket file its server left behind.
bool acceptsConnections(const std::string& path);

}  // namespace numadra::plugin
