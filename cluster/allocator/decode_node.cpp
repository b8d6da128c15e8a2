// Nodes (v1): name, labels, declared features and allocatable resources; all node selectors and
// the scheduler emulation read of a node.

#include "decode_support.hpp"

namespace numadra::allocator::decoding {

Result<Node> decodeNode(const Reader& object) {
    Node node;
    auto metadata = readMetadata(object, node.name);
    if (!metadata)
        return metadata.error();
    auto labels = metadata->stringMap("labels");
    if (!labels)
        return labels.error();
    for (auto& [key, value] : *labels)
        node.labels.emplace(key, value);
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (*status) {
        if (Status s = readStrings(**status, "declaredFeatures", node.declaredFeatures, SIZE_MAX);
            !s)
            return s.error();
        if ((*status)->has("allocatable")) {
            ResourceList allocatable;
            if (Status s = readResourceList(**status, "allocatable", allocatable); !s)
                return s.error();
            node.allocatable = std::move(allocatable);
        }
    }
    return node;
}

}  // namespace numadra::allocator::decoding
