#pragma once
// A small expected-style result: a value or an Error naming what went wrong.
// Used for failures that are part of normal operation (a malformed file, a bad flag);
// exceptions stay reserved for the truly exceptional.

#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace numadra {

// One field an answer found wrong, as the Kubernetes API server names it in a Status's
// details.causes: field "spec.devices[0].attributes[resource.kubernetes.io/numaNode]", message
// "Invalid value: \"\": must specify one of: `int`, `bool`, ...".
struct FieldCause {
    std::string field;
    std::string message;
    bool operator==(const FieldCause&) const = default;
};

struct Error {
    std::string message;
    int code = 0;  // errno from a system call, or the HTTP status of an API answer
    std::vector<FieldCause> causes = {};  // the fields an API answer named, when it named any
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
