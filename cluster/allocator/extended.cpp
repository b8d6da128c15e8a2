// The special claim the scheduler creates for a Pod's DRA-backed extended resources.

#include "numadra/allocator/extended.hpp"

#include <algorithm>
#include <iterator>
#include <set>

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

namespace {

// The container's request for one resource, as a whole number of devices; nullopt when it asks
// for none. The API server refuses a fractional extended resource, so one here is invalid input.
Result<std::optional<int64_t>> devicesRequested(const Pod& pod, const Container& container,
                                                const std::string& resource) {
    for (const auto& [name, quantity] : container.requests) {
        if (name != resource)
            continue;
        auto count = quantity.asInteger();
        if (!count || *count < 0)
            return Error{"pod " + pod.name + ", container " + container.name + ": " + resource +
                         " must be a whole number of devices, is " + quantity.text()};
        if (*count == 0)
            return std::optional<int64_t>();
        return std::optional<int64_t>(*count);
    }
    return std::optional<int64_t>();
}

// Where `resource` stands among all of the container's requests in name order (cpu and memory
// included): the scheduler names a container's request after that position.
size_t positionAmongRequests(const Container& container, const std::string& resource) {
    for (size_t i = 0; i < container.requests.size(); ++i)
        if (container.requests[i].first == resource)
            return i;
    return 0;
}

// What one container asks of one resource: the requests of later long-lived containers it can
// reuse first (a non-sidecar init container runs before them), then a request of its own for the
// rest, if any. As the scheduler's createResourceRequestAndMappings.
struct ContainerShare {
    std::optional<Request> request;
    std::vector<ExtendedResourceMapping> mappings;
};

Result<ContainerShare> containerShare(const Pod& pod, size_t index, const Container& container,
                                      const std::string& resource, const DeviceClass& deviceClass,
                                      const std::vector<const Request*>& reusable) {
    ContainerShare share;
    auto wanted = devicesRequested(pod, container, resource);
    if (!wanted)
        return wanted.error();
    if (!*wanted)
        return share;
    int64_t covered = 0;
    for (const Request* request : reusable) {
        if (!request)
            continue;
        covered += request->exactly->count;
        share.mappings.push_back({container.name, resource, request->name});
        if (covered >= **wanted)
            return share;
    }
    Request request;
    request.name = "container-" + std::to_string(index) + "-request-" +
                   std::to_string(positionAmongRequests(container, resource));
    request.exactly.emplace();
    request.exactly->deviceClassName = deviceClass.name;
    request.exactly->count = **wanted - covered;
    share.mappings.push_back({container.name, resource, request.name});
    share.request = std::move(request);
    return share;
}

}  // namespace

Result<std::optional<ExtendedResourceClaim>> extendedResourceClaim(
    const Pod& pod, const std::vector<DeviceClass>& classes) {
    std::vector<const Container*> containers;
    for (const Container& container : pod.initContainers)
        containers.push_back(&container);
    for (const Container& container : pod.containers)
        containers.push_back(&container);
    const size_t initCount = pod.initContainers.size();
    auto shortLived = [&](size_t i) { return i < initCount && !containers[i]->restartable; };

    std::set<std::string> resources;  // name order, as the scheduler sorts them
    for (const Container* container : containers)
        for (const auto& [resource, quantity] : container->requests)
            if (classForExtendedResource(resource, classes))
                resources.insert(resource);

    ExtendedResourceClaim out;
    out.claim.namespace_ = pod.namespace_;
    out.claim.name = pod.name + "-extended-resources";
    std::vector<Request> requests;
    for (const std::string& resource : resources) {
        const DeviceClass& deviceClass = *classForExtendedResource(resource, classes);
        // Long-lived containers (regular ones and sidecars) each get their own request.
        std::vector<std::optional<Request>> longLived(containers.size());
        std::vector<ExtendedResourceMapping> longMappings;
        for (size_t i = 0; i < containers.size(); ++i) {
            if (shortLived(i))
                continue;
            auto share = containerShare(pod, i, *containers[i], resource, deviceClass, {});
            if (!share)
                return share.error();
            longLived[i] = std::move(share->request);
            std::move(share->mappings.begin(), share->mappings.end(),
                      std::back_inserter(longMappings));
        }
        // An init container runs alone: it reuses the requests of the long-lived containers
        // after it, and of its own requests only the largest is kept, shared by all of them.
        std::optional<Request> largestShort;
        std::set<std::string> shortNames;
        std::vector<ExtendedResourceMapping> shortMappings;
        for (size_t i = 0; i < containers.size(); ++i) {
            if (!shortLived(i))
                continue;
            std::vector<const Request*> reusable;
            for (size_t j = i; j < containers.size(); ++j)
                reusable.push_back(longLived[j] ? &*longLived[j] : nullptr);
            auto share = containerShare(pod, i, *containers[i], resource, deviceClass, reusable);
            if (!share)
                return share.error();
            if (share->request) {
                shortNames.insert(share->request->name);
                if (!largestShort || largestShort->exactly->count < share->request->exactly->count)
                    largestShort = std::move(share->request);
            }
            std::move(share->mappings.begin(), share->mappings.end(),
                      std::back_inserter(shortMappings));
        }
        if (largestShort && shortNames.size() > 1) {
            for (ExtendedResourceMapping& mapping : shortMappings)
                if (shortNames.contains(mapping.requestName))
                    mapping.requestName = largestShort->name;
        }
        if (largestShort)
            requests.push_back(std::move(*largestShort));
        for (std::optional<Request>& request : longLived)
            if (request)
                requests.push_back(std::move(*request));
        std::move(longMappings.begin(), longMappings.end(), std::back_inserter(out.mappings));
        std::move(shortMappings.begin(), shortMappings.end(), std::back_inserter(out.mappings));
    }
    if (requests.empty())
        return std::optional<ExtendedResourceClaim>();
    // The scheduler sorts the requests by name, as text (container-10 before container-2).
    std::stable_sort(requests.begin(), requests.end(),
                     [](const Request& a, const Request& b) { return a.name < b.name; });
    out.claim.requests = std::move(requests);
    return std::optional<ExtendedResourceClaim>(std::move(out));
}

documents::Json encodeExtendedResourceStatus(const ExtendedResourceClaim& claim) {
    documents::Json mappings = documents::Json::array();
    for (const ExtendedResourceMapping& mapping : claim.mappings)
        mappings.push_back({{"containerName", mapping.containerName},
                            {"resourceName", mapping.resourceName},
                            {"requestName", mapping.requestName}});
    // v1 PodExtendedResourceClaimStatus: requestMappings of containerName, resourceName and
    // requestName.
    return {{"resourceClaimName", claim.claim.name}, {"requestMappings", mappings}};
}

}  // namespace numadra::allocator
