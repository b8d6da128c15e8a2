// Decoding of the inputs of dra-allocate: every field the allocator reads, with the API
// server's defaults and the limits it enforces, so an input the API would refuse is refused
// here too (with the source and field path) instead of giving an answer the cluster never would.
// This file dispatches by kind; each kind has its decode_<kind>.cpp, the API server's checks
// are in validation.cpp, and encode.cpp writes allocations back.

#include "numadra/allocator/decode.hpp"

#include <map>

#include "decode_support.hpp"

namespace numadra::allocator {

using documents::Reader;

namespace {

bool isResourceApi(const std::string& apiVersion) {
    return apiVersion == "resource.k8s.io/v1" || apiVersion == "resource.k8s.io/v1beta2";
}

}  // namespace

Result<Inputs> decode(const std::vector<documents::Object>& objects) {
    Inputs inputs;
    std::map<std::string, std::string> classSources;  // name -> where it was first given
    for (const documents::Object& object : objects) {
        const Reader r(object);
        const std::string kind = object.kind();
        const std::string apiVersion = object.apiVersion();
        const bool resource = isResourceApi(apiVersion);
        if (kind == "ResourceSlice" && resource) {
            auto slice = decoding::decodeSlice(r);
            if (!slice)
                return slice.error();
            inputs.slices.push_back(std::move(*slice));
        } else if (kind == "DeviceClass" && resource) {
            auto deviceClass = decoding::decodeClass(r);
            if (!deviceClass)
                return deviceClass.error();
            const auto [first, added] =
                classSources.emplace(deviceClass->name, object.source.describe());
            if (!added)
                return r.error("DeviceClass " + deviceClass->name + " is given twice (also in " +
                               first->second + ")");
            inputs.classes.push_back(std::move(*deviceClass));
        } else if ((kind == "ResourceClaim" || kind == "ResourceClaimTemplate") && resource) {
            auto claim = decoding::decodeClaimItem(object);
            if (!claim)
                return claim.error();
            inputs.order.emplace_back(Inputs::ClaimRef{inputs.claims.size()});
            inputs.claims.push_back(std::move(*claim));
        } else if (kind == "Pod" && apiVersion == "v1") {
            auto pod = decoding::decodePod(r);
            if (!pod)
                return pod.error();
            inputs.order.emplace_back(Inputs::PodRef{inputs.pods.size()});
            inputs.pods.push_back({std::move(*pod), object.json, object.source});
        } else if (kind == "Node" && apiVersion == "v1") {
            auto node = decoding::decodeNode(r);
            if (!node)
                return node.error();
            inputs.nodes.push_back(std::move(*node));
        } else {
            return Error{object.source.describe() + ": unsupported object: apiVersion \"" +
                         apiVersion + "\", kind \"" + kind +
                         "\" (expected resource.k8s.io/v1 ResourceSlice, DeviceClass, "
                         "ResourceClaim or ResourceClaimTemplate, or v1 Pod or Node)"};
        }
    }
    return inputs;
}

}  // namespace numadra::allocator
