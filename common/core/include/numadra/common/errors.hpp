#pragma once
// Errors of system calls: the one place an errno becomes an ErrorKind.

#include <string>

#include "numadra/common/result.hpp"

namespace numadra {

// The kind of failure an errno means (absl's ErrnoToStatusCode, with our few departures noted in
// errors.cpp); Unknown for errnos no caller distinguishes.
ErrorKind errorKindOfErrno(int errnoValue);

// "<what>: <the system's description of errnoValue>" (just the description when `what` is empty),
// of the kind errnoValue means, errnoValue kept. Pass errno straight from the failed call.
Error errorFromErrno(int errnoValue, const std::string& what);

// The same, in the caller's own words (no description appended): a failure the code found
// itself, told as the errno that names it ("exists and is not a folder": ENOTDIR).
Error errorWithErrno(int errnoValue, std::string message);

}  // namespace numadra
