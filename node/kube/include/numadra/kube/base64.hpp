#pragma once
// Base64 (RFC 4648, standard alphabet) decoding, for the *-data fields of a kubeconfig.

#include <optional>
#include <string>
#include <string_view>

namespace numadra::kube {

// Whitespace (kubeconfigs wrap long values) is skipped and the trailing '=' padding is optional;
// anything else outside the alphabet, or a length no encoder produces, gives nullopt.
std::optional<std::string> decodeBase64(std::string_view text);

}  // namespace numadra::kube
