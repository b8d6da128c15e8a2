#include "numadra/common/errors.hpp"

#include <cerrno>
#include <system_error>
#include <utility>

namespace numadra {

ErrorKind errorKindOfErrno(int errnoValue) {
    switch (errnoValue) {
        case EINVAL:
        case ENAMETOOLONG:
        case E2BIG:
        case EFAULT:
        case EILSEQ:
        case ENOTSOCK:
        case ENOTTY:
        case ESPIPE:
            return ErrorKind::InvalidArgument;
        case ENOENT:
        case ENODEV:
        case ENXIO:
        case ESRCH:
            return ErrorKind::NotFound;
        case EEXIST:
        // absl says FailedPrecondition; for a socket path or a port, "in use" means someone
        // already holds that name, which is what callers ask.
        case EADDRINUSE:
            return ErrorKind::AlreadyExists;
        case EPERM:
        case EACCES:
        case EROFS:
            return ErrorKind::PermissionDenied;
        case ENOTEMPTY:
        case EISDIR:
        case ENOTDIR:
        case EBADF:
        case EBUSY:
        case ENOTCONN:
        case EPIPE:
        case ETXTBSY:
        case EXDEV:  // absl: Unimplemented; for a rename it means "not on one file system"
            return ErrorKind::FailedPrecondition;
        case ENOSPC:
        case EDQUOT:
        case EMFILE:
        case ENFILE:
        case EMLINK:
        case ENOBUFS:
        case ENOMEM:
        case EFBIG:  // absl: OutOfRange; for a write it means a file over its limit
            return ErrorKind::ResourceExhausted;
        case EAGAIN:
        case EINTR:
        case ECONNREFUSED:
        case ECONNRESET:
        case ECONNABORTED:
        case EHOSTUNREACH:
        case ENETUNREACH:
        case ENETDOWN:
            return ErrorKind::Unavailable;
        case ETIMEDOUT:
            return ErrorKind::DeadlineExceeded;
        case ENOSYS:
        case EOPNOTSUPP:
        case EAFNOSUPPORT:
        case EPROTONOSUPPORT:
            return ErrorKind::Unsupported;
        default:
            return ErrorKind::Unknown;
    }
}

Error errorFromErrno(int errnoValue, const std::string& what) {
    // generic_category().message, not std::strerror: it is thread-safe.
    const std::string description = std::generic_category().message(errnoValue);
    return errorWithErrno(errnoValue, what.empty() ? description : what + ": " + description);
}

Error errorWithErrno(int errnoValue, std::string message) {
    return Error{.message = std::move(message),
                 .kind = errorKindOfErrno(errnoValue),
                 .errnoValue = errnoValue};
}

}  // namespace numadra
