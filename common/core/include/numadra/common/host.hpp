#pragma once
// Facts about the machine the process runs on.

#include <string>

namespace numadra {

// The host name in lower case, as Kubernetes names nodes by default ("localhost" if unknown).
std::string defaultNodeName();

}  // namespace numadra
