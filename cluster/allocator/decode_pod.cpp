// Pods (v1): containers' requests, the claims they use, overhead, pod-level requests, and what
// the scheduler counted for a bound pod's claims; all the scheduler emulation reads of a pod.

#include <algorithm>

#include "decode_support.hpp"

namespace numadra::allocator::decoding {

namespace {

Result<std::vector<Container>> decodeContainers(const Reader& spec, std::string_view field) {
    std::vector<Container> containers;
    Status s = spec.each(field, [&](const Reader& item) -> Status {
        Container container;
        if (Status e = readRequiredString(item, "name", container.name); !e)
            return e;
        auto resources = item.optionalObject("resources");
        if (!resources)
            return resources.error();
        if (*resources) {
            // The API server defaults a request from its limit; an extended resource is often
            // given as a limit only.
            for (const char* part : {"requests", "limits"}) {
                Status e =
                    (*resources)->eachEntry(part, [&](const std::string& key, const Reader& v) {
                        auto quantity = asQuantity(v);
                        if (!quantity)
                            return Status(quantity.error());
                        bool known =
                            std::any_of(container.requests.begin(), container.requests.end(),
                                        [&](const auto& entry) { return entry.first == key; });
                        if (!known)
                            container.requests.emplace_back(key, std::move(*quantity));
                        return Status::Ok();
                    });
                if (!e)
                    return e;
            }
        }
        std::sort(container.requests.begin(), container.requests.end(),
                  [](const auto& a, const auto& b) { return a.first < b.first; });
        if (*resources) {
            Status e = (*resources)->each("claims", [&](const Reader& claim) -> Status {
                std::string name;
                if (Status n = readRequiredString(claim, "name", name); !n)
                    return n;
                container.claims.push_back(std::move(name));
                return Status::Ok();
            });
            if (!e)
                return e;
        }
        std::string restartPolicy;
        if (Status e = readString(item, "restartPolicy", restartPolicy); !e)
            return e;
        container.restartable = restartPolicy == "Always";
        containers.push_back(std::move(container));
        return Status::Ok();
    });
    if (!s)
        return s.error();
    return containers;
}

// status.nodeAllocatableResourceClaimStatuses: what the scheduler counted for a bound pod.
Status decodeNodeAllocatableStatuses(const Reader& status, Pod& pod) {
    return status.each("nodeAllocatableResourceClaimStatuses", [&](const Reader& item) -> Status {
        NodeAllocatableClaimStatus entry;
        if (Status s = readRequiredString(item, "resourceClaimName", entry.resourceClaimName); !s)
            return s;
        if (Status s = readStrings(item, "containers", entry.containers, SIZE_MAX); !s)
            return s;
        Status mapping = item.each("mapping", [&](const Reader& m) -> Status {
            std::string name;
            if (Status n = readRequiredString(m, "name", name); !n)
                return n;
            std::optional<Quantity> quantity;
            if (Status q = readQuantity(m, "quantity", quantity); !q)
                return q;
            if (quantity)
                entry.mapping.insert_or_assign(name, std::move(*quantity));
            return Status::Ok();
        });
        if (!mapping)
            return mapping;
        Status overhead = item.each("overhead", [&](const Reader& o) -> Status {
            std::string name;
            if (Status n = readRequiredString(o, "name", name); !n)
                return n;
            NodeAllocatableClaimStatus::Overhead value;
            if (Status q = readQuantity(o, "perPod", value.perPod); !q)
                return q;
            if (Status q = readQuantity(o, "perContainer", value.perContainer); !q)
                return q;
            entry.overhead.insert_or_assign(name, std::move(value));
            return Status::Ok();
        });
        if (!overhead)
            return overhead;
        pod.nodeAllocatableStatuses.push_back(std::move(entry));
        return Status::Ok();
    });
}

}  // namespace

Result<Pod> decodePod(const Reader& object) {
    Pod pod;
    auto metadata = readMetadata(object, pod.name);
    if (!metadata)
        return metadata.error();
    if (Status s = readString(*metadata, "namespace", pod.namespace_); !s)
        return s.error();
    if (Status s = readString(*metadata, "uid", pod.uid); !s)
        return s.error();
    auto spec = object.requiredObject("spec");
    if (!spec)
        return spec.error();
    if (Status s = readString(*spec, "nodeName", pod.nodeName); !s)
        return s.error();
    if (Status s = readResourceList(*spec, "overhead", pod.overhead); !s)
        return s.error();
    auto podResources = spec->optionalObject("resources");
    if (!podResources)
        return podResources.error();
    if (*podResources) {
        if (Status s = readResourceList(**podResources, "requests", pod.podLevelRequests); !s)
            return s.error();
    }
    auto status = object.optionalObject("status");
    if (!status)
        return status.error();
    if (*status) {
        if (Status s = decodeNodeAllocatableStatuses(**status, pod); !s)
            return s.error();
    }
    auto init = decodeContainers(*spec, "initContainers");
    if (!init)
        return init.error();
    pod.initContainers = std::move(*init);
    auto containers = decodeContainers(*spec, "containers");
    if (!containers)
        return containers.error();
    pod.containers = std::move(*containers);
    Status claims = spec->each("resourceClaims", [&](const Reader& item) -> Status {
        PodClaim claim;
        if (Status e = readRequiredString(item, "name", claim.name); !e)
            return e;
        auto claimName = item.optionalString("resourceClaimName");
        if (!claimName)
            return claimName.error();
        auto templateName = item.optionalString("resourceClaimTemplateName");
        if (!templateName)
            return templateName.error();
        if (claimName->has_value() == templateName->has_value())
            return item.error(
                "exactly one of resourceClaimName and resourceClaimTemplateName "
                "must be set");
        claim.resourceClaimName = *claimName;
        claim.resourceClaimTemplateName = *templateName;
        pod.resourceClaims.push_back(std::move(claim));
        return Status::Ok();
    });
    if (!claims)
        return claims.error();
    return pod;
}

}  // namespace numadra::allocator::decoding
