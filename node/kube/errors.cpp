#include "numadra/kube/errors.hpp"

#include <optional>
#include <utility>

namespace numadra::kube {
namespace {

// metav1.StatusReason values (k8s.io/apimachinery/pkg/apis/meta/v1/types.go).
std::optional<ErrorKind> kindOfReason(std::string_view reason) {
    struct Entry {
        std::string_view reason;
        ErrorKind kind;
    };
    static constexpr Entry kReasons[] = {
        {"BadRequest", ErrorKind::InvalidArgument},
        {"Invalid", ErrorKind::InvalidArgument},
        {"Unauthorized", ErrorKind::Unauthenticated},
        {"Forbidden", ErrorKind::PermissionDenied},
        {"NotFound", ErrorKind::NotFound},
        {"AlreadyExists", ErrorKind::AlreadyExists},
        {"Conflict", ErrorKind::Conflict},
        {"Gone", ErrorKind::Expired},
        {"Expired", ErrorKind::Expired},
        {"MethodNotAllowed", ErrorKind::Unsupported},
        {"NotAcceptable", ErrorKind::Unsupported},
        {"UnsupportedMediaType", ErrorKind::Unsupported},
        {"RequestEntityTooLarge", ErrorKind::ResourceExhausted},
        {"TooManyRequests", ErrorKind::Unavailable},
        {"ServerTimeout", ErrorKind::Unavailable},  // "try again": the server could not finish
        {"ServiceUnavailable", ErrorKind::Unavailable},
        {"Timeout", ErrorKind::DeadlineExceeded},
        {"InternalError", ErrorKind::Internal},
    };
    for (const auto& entry : kReasons) {
        if (entry.reason == reason)
            return entry.kind;
    }
    return std::nullopt;
}

ErrorKind kindOfStatus(int httpStatus) {
    switch (httpStatus) {
        case 400:
        case 422:
            return ErrorKind::InvalidArgument;
        case 401:
            return ErrorKind::Unauthenticated;
        case 403:
            return ErrorKind::PermissionDenied;
        case 404:
            return ErrorKind::NotFound;
        case 405:
        case 415:
        case 501:
            return ErrorKind::Unsupported;
        case 408:
        case 504:
            return ErrorKind::DeadlineExceeded;
        case 409:
            return ErrorKind::Conflict;
        case 410:
            return ErrorKind::Expired;
        case 413:
            return ErrorKind::ResourceExhausted;
        case 429:
        case 502:
        case 503:
            return ErrorKind::Unavailable;
        case 500:
            return ErrorKind::Internal;
        default:
            return ErrorKind::Unknown;
    }
}

}  // namespace

ErrorKind errorKindOfHttp(int httpStatus, std::string_view reason) {
    return kindOfReason(reason).value_or(kindOfStatus(httpStatus));
}

Error errorFromHttp(int httpStatus, std::string reason, std::string message,
                    std::vector<FieldCause> causes) {
    const ErrorKind kind = errorKindOfHttp(httpStatus, reason);
    return Error{.message = std::move(message),
                 .kind = kind,
                 .httpStatus = httpStatus,
                 .reason = std::move(reason),
                 .causes = std::move(causes)};
}

}  // namespace numadra::kube
