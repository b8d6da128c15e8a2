#include "bearer_token.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "numadra/common/errors.hpp"

namespace numadra::kube::detail {
namespace {

std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return "";
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

}  // namespace

BearerTokenSource::BearerTokenSource(std::string literalToken, std::string tokenFile)
    : literalToken_(std::move(literalToken)), tokenFile_(std::move(tokenFile)) {}

Result<std::string> BearerTokenSource::current() {
    if (tokenFile_.empty())
        return literalToken_;
    std::lock_guard lock(mutex_);
    struct stat info {};
    if (::stat(tokenFile_.c_str(), &info) != 0) {
        // A rotation in progress must not fail requests: keep the last token we read.
        if (cachedIdentity_)
            return cachedToken_;
        if (!literalToken_.empty())
            return literalToken_;
        return errorFromErrno(errno, "token file " + tokenFile_);
    }
    const FileIdentity identity{info.st_dev, info.st_ino, info.st_size, info.st_mtim.tv_sec,
                                info.st_mtim.tv_nsec};
    if (cachedIdentity_ == identity)
        return cachedToken_;
    std::ifstream in(tokenFile_, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in)
        return cachedIdentity_ ? Result<std::string>(cachedToken_)
                               : Error{"token file " + tokenFile_ + ": cannot read"};
    cachedToken_ = trimmed(text.str());
    cachedIdentity_ = identity;
    return cachedToken_;
}

}  // namespace numadra::kube::detail
