#pragma once
// The DOM-based JSON encoding of the API types as it was before the streaming writer
// (common/api/slice_writer.hpp), verbatim but renamed (toJson -> legacyToJson, so
// argument-dependent lookup cannot mix the two): the reference the writer and today's toJson are
// proved byte-identical to. Tests only. YAML's reference is api::toYaml of these documents.

#include <vector>

#include "numadra/api/resource_slice.hpp"

namespace numadra::api {

Json legacyToJson(const AttributeValue& value);
Json legacyToJson(const CapacityRequestPolicy& policy);
Json legacyToJson(const Device& device);
Json legacyToJson(const ResourceSlice& slice);
Json legacyToJsonList(const std::vector<ResourceSlice>& slices);

}  // namespace numadra::api
