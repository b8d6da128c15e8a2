#pragma once
// A small expected-style result: a value or an Error naming what went wrong.
// Used for failures that are part of normal operation (a malformed file, a bad flag);
// exceptions stay reserved for the truly exceptional.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace numadra {

// What went wrong, as far as a caller needs to decide what to do next (in the spirit of
// absl::StatusCode). Decide by kind; the errno, the HTTP status and the Kubernetes reason stay in
// the Error as details. The errno mapping is common/errors.hpp's, the HTTP one kube/errors.hpp's.
enum class ErrorKind {
    // Nothing more specific is known: the default, so Error{"text"} stays simple.
    Unknown,
    // The input is wrong and will stay wrong: a malformed file or flag, an object the API server
    // found invalid (HTTP 400, 422 Invalid), EINVAL.
    InvalidArgument,
    // What was named does not exist: ENOENT, HTTP 404.
    NotFound,
    // What was to be created exists already: EEXIST, a socket address in use, HTTP 409
    // AlreadyExists.
    AlreadyExists,
    // The object changed since it was read, or is another one under the same name (HTTP 409
    // Conflict: a stale resourceVersion, a uid precondition): read it again.
    Conflict,
    // What a request resumed from is no longer kept (HTTP 410: a watch's resourceVersion that
    // is too old): start over from a fresh list.
    Expired,
    // The peer does not know who we are (HTTP 401).
    Unauthenticated,
    // We may not do this: EACCES, EPERM, EROFS, HTTP 403 (RBAC, or an admission plugin's refusal).
    PermissionDenied,
    // The system is not in the state the operation needs, and retrying will not change that by
    // itself: EBUSY, ENOTEMPTY, a device that changed under a prepared claim, a cluster without a
    // feature the driver's flags rely on (slices::Refusal).
    FailedPrecondition,
    // A limit was reached: ENOSPC, EMFILE, ENOMEM, an answer over its size limit, HTTP 413.
    ResourceExhausted,
    // Try again later: EAGAIN, a connection refused or reset, HTTP 429, 502, 503.
    Unavailable,
    // A deadline passed before the work was done: ETIMEDOUT, HTTP 504, a transfer timing out.
    DeadlineExceeded,
    // Not implemented, here or by the peer: ENOSYS, EOPNOTSUPP, HTTP 415, 501.
    Unsupported,
    // The peer (or we) broke an invariant: HTTP 500, an answer that is not what it must be.
    Internal,
    // Data read back is corrupt: a checkpoint that fails its checksum.
    DataLoss,
};

// One field an answer found wrong, as the Kubernetes API server names it in a Status's
// details.causes: field "spec.devices[0].attributes[resource.kubernetes.io/numaNode]", message
// "Invalid value: \"\": must specify one of: `int`, `bool`, ...", reason "FieldValueInvalid"
// (the cause's type: FieldValueRequired, FieldValueInvalid, FieldValueNotSupported, ...).
struct FieldCause {
    std::string field;
    std::string message;
    std::string reason = {};
    bool operator==(const FieldCause&) const = default;
};

struct Error {
    std::string message;
    ErrorKind kind = ErrorKind::Unknown;
    // Details of where the failure came from, for messages, metrics and the rare caller that
    // needs more than the kind. Zero or empty when they do not apply.
    int errnoValue = 0;  // the errno of the failed system call
    int httpStatus = 0;  // the HTTP status of the API server's answer
    // Why, in one CamelCase word: the Status reason of an API answer ("AlreadyExists",
    // "Conflict", "Invalid", "Forbidden", ...), or a library's name for its own refusal
    // (slices::Refusal).
    std::string reason = {};
    std::vector<FieldCause> causes = {};  // the fields an API answer named, when it named any

    [[nodiscard]] bool is(ErrorKind expected) const { return kind == expected; }
    // The same failure (kind and details kept) told in other words, usually with more context.
    [[nodiscard]] Error withMessage(std::string text) const {
        Error copy = *this;
        copy.message = std::move(text);
        return copy;
    }
};

template <class T>
class Result {
  public:
    Result(T value) : state_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
    Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

    [[nodiscard]] bool ok() const { return std::holds_alternative<T>(state_); }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<T>(state_); }
    const T& value() const& { return std::get<T>(state_); }
    T&& value() && { return std::get<T>(std::move(state_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<Error>(state_); }

    template <class U>
    T value_or(U&& fallback) const {
        return ok() ? value() : static_cast<T>(std::forward<U>(fallback));
    }

  private:
    std::variant<T, Error> state_;
};

// Result<void> counterpart.
class Status {
  public:
    Status() = default;
    Status(Error error)
        : error_(std::move(error)), ok_(false) {}  // NOLINT(google-explicit-constructor)
    static Status Ok() { return {}; }
    [[nodiscard]] bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    const Error& error() const { return error_; }

  private:
    Error error_;
    bool ok_ = true;
};

}  // namespace numadra
