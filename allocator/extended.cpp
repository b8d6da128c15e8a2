// The special claim the scheduler creates for a Pod's DRA-backed extended resources.

#include "numadra/allocator/extended.hpp"

namespace numadra::allocator {

namespace {

constexpr std::string_view kClassPrefix = "deviceclass.resource.kubernetes.io/";

}  // namespace

const DeviceClass* classForExtendedResource(const std::string& resourceName,
                                            const std::vector<DeviceClass>& classes) {
    const DeviceClass* chosen = nullptr;
    for (const DeviceClass& deviceClass : classes) {
        if (deviceClass.extendedResourceName != resourceName)
            continue;
        // RFC 3339 timestamps in UTC compare as text; newest first, then the smaller name.
        if (!chosen || deviceClass.creationTimestamp > chosen->creationTimestamp ||
            (deviceClass.creationTimestamp == chosen->creationTimestamp &&
             deviceClass.name < chosen->name))
            chosen = &deviceClass;
    }
    if (chosen || !resourceName.starts_with(kClassPrefix))
        return chosen;
    const std::string className = resourceName.substr(kClassPrefix.size());
    for (const DeviceClass& deviceClass : classes)
        if (deviceClass.name == className)
            return &deviceClass;
    return nullptr;
}

Result<std::optional<ExtendedResourceClaim>> extendedResourceClaim(
    const Pod& pod, const std::vector<DeviceClass>& classes) {
    ExtendedResourceClaim out;
    out.claim.namespace_ = pod.namespace_;
    out.claim.name = pod.name + "-extended-resources";
    std::vector<const Container*> containers;
    for (const Container& container : pod.initContainers)
        containers.push_back(&container);
    for (const Container& container : pod.containers)
        containers.push_back(&container);
    for (size_t i = 0; i < containers.size(); ++i) {
        size_t j = 0;
        for (const auto& [resource, quantity] : containers[i]->requests) {
            const DeviceClass* deviceClass = classForExtendedResource(resource, classes);
            if (!deviceClass)
                continue;
            auto count = quantity.asInteger();
            if (!count || *count < 0)
                return Error{"pod " + pod.name + ", container " + containers[i]->name + ": " +
                             resource + " must be a whole number of devices, is " +
                             quantity.toString()};
            if (*count == 0)
                continue;
            Request request;
            request.name = "container-" + std::to_string(i) + "-request-" + std::to_string(j++);
            request.exactly.emplace();
            request.exactly->deviceClassName = deviceClass->name;
            request.exactly->count = *count;
            out.mappings.push_back({containers[i]->name, resource, request.name});
            out.claim.requests.push_back(std::move(request));
        }
    }
    if (out.claim.requests.empty())
        return std::optional<ExtendedResourceClaim>();
    return std::optional<ExtendedResourceClaim>(std::move(out));
}

documents::Json encodeExtendedResourceStatus(const ExtendedResourceClaim& claim) {
    documents::Json mappings = documents::Json::array();
    for (const ExtendedResourceMapping& mapping : claim.mappings)
        mappings.push_back({{"containerName", mapping.containerName},
                            {"extendedResourceName", mapping.extendedResourceName},
                            {"requestName", mapping.requestName}});
    return {{"resourceClaimName", claim.claim.name}, {"requestMapping", mappings}};
}

}  // namespace numadra::allocator
