#pragma once
// JSON documents as YAML a human reads and `kubectl apply -f -` accepts. Every string is
// double-quoted, so "0x10de", "true" or "1e3" can never change type on the way.

#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"

namespace numadra::api {

std::string toYaml(const Json& document);
// "---"-separated multi-document stream.
std::string toYamlStream(const std::vector<Json>& documents);

}  // namespace numadra::api
