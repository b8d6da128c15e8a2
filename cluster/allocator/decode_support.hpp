#pragma once
// What the decoders of dra-allocate's inputs (decode_*.cpp) share: reading a field as the API
// types it (absent fields get the API's defaults), node selectors (of slices, devices and claim
// allocations), device selectors and opaque configuration (of classes and claims), and each
// object kind's decoder, for decode() to dispatch to.

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "numadra/allocator/decode.hpp"
#include "numadra/allocator/model.hpp"
#include "numadra/documents/documents.hpp"
#include "numadra/documents/reader.hpp"

namespace numadra::allocator::decoding {

using documents::Json;
using documents::Reader;

// --- fields (decode_fields.cpp) ---------------------------------------------------------------

Status readString(const Reader& r, std::string_view name, std::string& out);
// Absent or empty: "required value".
Status readRequiredString(const Reader& r, std::string_view name, std::string& out);
// An object's metadata, whose name every kind requires: the reader of the rest of it.
Result<Reader> readMetadata(const Reader& object, std::string& name);
Status readBool(const Reader& r, std::string_view name, bool& out);  // absent: false
Status readStrings(const Reader& r, std::string_view name, std::vector<std::string>& out,
                   size_t limit);
// A quantity as a string ("10Gi") or an integer.
Result<Quantity> asQuantity(const Reader& r);
Status readQuantity(const Reader& r, std::string_view name, std::optional<Quantity>& out);
Status readRequiredQuantity(const Reader& r, std::string_view name, Quantity& out);
// A map of quantities (requests, allocatable); a later key replaces an earlier one.
Status readResourceList(const Reader& r, std::string_view name, ResourceList& out);
// skipNodeOperations of a slice's spec and of an allocation's device result.
Status readSkipNodeOperations(const Reader& r, std::vector<std::string>& out);

template <class T>
Result<std::vector<T>> listOf(const Reader& list,
                              const std::function<Result<T>(const Reader&)>& one) {
    std::vector<T> out;
    Status s = list.each([&](const Reader& item) -> Status {
        auto value = one(item);
        if (!value)
            return value.error();
        out.push_back(std::move(*value));
        return Status::Ok();
    });
    if (!s)
        return s.error();
    return out;
}

// --- node selection (decode_node_selector.cpp) ------------------------------------------------

Result<NodeSelector> decodeNodeSelector(const Reader& r);
// The node selection fields of a slice or (perDeviceNodeSelection) of a device, each valid on
// its own: nodeName, when given, not empty (`emptyName` says so in upstream's words); allNodes,
// when given, true. The callers check that exactly one is set.
Status readNodeSelection(const Reader& r, std::optional<std::string>& nodeName,
                         std::optional<NodeSelector>& selector, bool& allNodes,
                         std::string_view emptyName);

// --- what classes and claims share (decode_class.cpp) -----------------------------------------

// selectors[].cel.expression, compiled as the API server compiles them.
Status decodeSelectors(const Reader& r, std::vector<std::string>& out);
// The `opaque` field of a class's or claim's config entry `r`.
Result<DeviceConfig> decodeOpaque(const Reader& r);

// --- the object kinds -----------------------------------------------------------------------

Result<Slice> decodeSlice(const Reader& object);        // decode_slice.cpp
Result<DeviceClass> decodeClass(const Reader& object);  // decode_class.cpp
// A ResourceClaim (with its status) or a ResourceClaimTemplate (decode_claim.cpp).
Result<ClaimItem> decodeClaimItem(const documents::Object& object);
Result<Pod> decodePod(const Reader& object);    // decode_pod.cpp
Result<Node> decodeNode(const Reader& object);  // decode_node.cpp

}  // namespace numadra::allocator::decoding
