#pragma once
// Errors of the API server's answers: the one place an HTTP status and a Kubernetes Status reason
// become an ErrorKind.

#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::kube {

// The kind an answer means. The Status reason decides when it names one we know (it is the more
// precise: a 409 is AlreadyExists or Conflict, a 500 InternalError or ServerTimeout), else the
// HTTP status; Unknown for statuses no caller distinguishes.
ErrorKind errorKindOfHttp(int httpStatus, std::string_view reason = {});

// An Error for an answer that failed: its kind from errorKindOfHttp, the status, the reason and
// the field causes kept.
Error errorFromHttp(int httpStatus, std::string reason, std::string message,
                    std::vector<FieldCause> causes = {});

}  // namespace numadra::kube
