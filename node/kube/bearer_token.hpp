#pragma once
// The bearer token to send: a literal one, or the contents of a token file that the kubelet
// rotates (projected service-account tokens expire; the file is replaced well before that).

#include <sys/types.h>

#include <ctime>
#include <mutex>
#include <optional>
#include <string>

#include "numadra/common/result.hpp"

namespace numadra::kube::detail {

class BearerTokenSource {
  public:
    BearerTokenSource(std::string literalToken, std::string tokenFile);

    // "" when there is no token to send. Thread-safe.
    Result<std::string> current();

  private:
    // The kubelet swaps a symlink to a new file, so the inode changes even when the mtime's
    // coarse clock does not; either change means "read it again".
    struct FileIdentity {
        dev_t device = 0;
        ino_t inode = 0;
        off_t size = 0;
        std::time_t mtimeSeconds = 0;
        long mtimeNanoseconds = 0;
        bool operator==(const FileIdentity&) const = default;
    };

    std::string literalToken_;
    std::string tokenFile_;
    std::mutex mutex_;
    std::optional<FileIdentity> cachedIdentity_;
    std::string cachedToken_;
};

}  // namespace numadra::kube::detail
