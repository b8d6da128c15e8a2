// Node-allocatable accounting as upstream's scheduler does it: nodeallocatabledynamicresources.go
// (the claims' statuses and the fit check) and component-helpers' resource.PodRequests (what a
// pod takes).

#include "numadra/allocator/node_resources.hpp"

#include <algorithm>

#include "numadra/common/text.hpp"

namespace numadra::allocator {

namespace {

using Overhead = NodeAllocatableClaimStatus::Overhead;

// total += more, exactly (an error only beyond Quantity's digits).
Status accumulate(Quantity& total, const Quantity& more) {
    auto sum = total.add(more);
    if (!sum)
        return sum.error();
    total = std::move(*sum);
    return Status::Ok();
}

Status addTo(ResourceList& list, const std::string& name, const Quantity& quantity) {
    auto [it, inserted] = list.try_emplace(name, quantity);
    return inserted ? Status::Ok() : accumulate(it->second, quantity);
}

Status addOptional(std::optional<Quantity>& total, const std::optional<Quantity>& more) {
    if (!more)
        return Status::Ok();
    if (!total) {
        total = more;
        return Status::Ok();
    }
    return accumulate(*total, *more);
}

// upstream's addDeviceMapping: the device multiplier, or the consumed capacity times its
// multiplier (a capacity the allocation did not consume maps nothing).
Status addMapping(ResourceList& totals, const std::string& resource,
                  const NodeAllocatableResource& mapping, const DeviceResult& result,
                  const std::string& claimName) {
    if (mapping.capacityKey && !mapping.capacityKey->empty()) {
        if (result.consumedCapacity.empty()) {
            return Error{"claim " + claimName + ", device " + result.device +
                         ": ConsumedCapacity is nil, but Capacity key '" + *mapping.capacityKey +
                         "' is set in NodeAllocatableResources for resource " + resource};
        }
        auto consumed = result.consumedCapacity.find(*mapping.capacityKey);
        if (consumed == result.consumedCapacity.end())
            return Status::Ok();
        Quantity quantity = consumed->second;
        if (mapping.capacityMultiplier &&
            *mapping.capacityMultiplier != Quantity::fromInt(1, Quantity::Format::DecimalSI)) {
            auto product = quantity.mul(*mapping.capacityMultiplier);
            if (!product)
                return product.error();
            quantity = std::move(*product);
        }
        return addTo(totals, resource, quantity);
    }
    if (mapping.deviceMultiplier)
        return addTo(totals, resource, *mapping.deviceMultiplier);
    return Status::Ok();
}

Status addOverhead(std::map<std::string, Overhead>& totals, const std::string& resource,
                   const NodeAllocatableResource& device) {
    if (!device.perPod && !device.perContainer)
        return Status::Ok();
    Overhead& total = totals[resource];
    if (Status s = addOptional(total.perPod, device.perPod); !s)
        return s;
    return addOptional(total.perContainer, device.perContainer);
}

bool hasNodeAllocatableResources(const Allocation& allocation, const DeviceLookup& lookup) {
    return std::any_of(allocation.results.begin(), allocation.results.end(),
                       [&](const DeviceResult& result) {
                           const Device* device = lookup(result);
                           return device != nullptr && !device->nodeAllocatableResources.empty();
                       });
}

// One claim's status, or nullopt when its devices neither map nor add overhead.
Result<std::optional<NodeAllocatableClaimStatus>> claimStatus(const PodClaimAllocation& claim,
                                                              const DeviceLookup& lookup) {
    NodeAllocatableClaimStatus status;
    status.resourceClaimName = claim.claimName;
    for (const DeviceResult& result : claim.allocation->results) {
        const Device* device = lookup(result);
        if (device == nullptr) {
            return Error{"claim " + claim.claimName + ", device " + result.device + ", driver " +
                         result.driver + ": device " + result.device + " not found in pool " +
                         result.pool + " for driver " + result.driver};
        }
        for (const auto& [resource, entry] : device->nodeAllocatableResources) {
            if (entry.mapped) {
                if (Status s = addMapping(status.mapping, resource, entry, result, claim.claimName);
                    !s)
                    return s.error();
            }
            if (Status s = addOverhead(status.overhead, resource, entry); !s)
                return s.error();
        }
    }
    if (status.mapping.empty() && status.overhead.empty())
        return std::optional<NodeAllocatableClaimStatus>();
    return std::optional<NodeAllocatableClaimStatus>(std::move(status));
}

// The containers (init containers first) that use the pod claim.
std::vector<std::string> containersUsing(const Pod& pod, const std::string& podClaimName) {
    std::vector<std::string> names;
    for (const auto* list : {&pod.initContainers, &pod.containers}) {
        for (const Container& container : *list) {
            if (std::find(container.claims.begin(), container.claims.end(), podClaimName) !=
                container.claims.end())
                names.push_back(container.name);
        }
    }
    return names;
}

ResourceList requestsOf(const Container& container) {
    return ResourceList(container.requests.begin(), container.requests.end());
}

void maxInto(ResourceList& list, const ResourceList& other) {
    for (const auto& [name, quantity] : other) {
        auto it = list.find(name);
        if (it == list.end())
            list.emplace(name, quantity);
        else if (quantity > it->second)
            it->second = quantity;
    }
}

// upstream's aggregateContainerResourcesByFn over the spec: the containers' sum, and the
// largest need of any init container (the sidecars started before it included), sidecars
// counted with the containers.
Result<ResourceList> containerRequests(const Pod& pod) {
    ResourceList result;
    for (const Container& container : pod.containers) {
        if (Status s = addResources(result, requestsOf(container)); !s)
            return s.error();
    }
    ResourceList sidecars, initPeak;
    for (const Container& container : pod.initContainers) {
        ResourceList need = requestsOf(container);
        if (container.restartable) {
            if (Status s = addResources(result, need); !s)
                return s.error();
            if (Status s = addResources(sidecars, need); !s)
                return s.error();
            need = sidecars;
        } else if (Status s = addResources(need, sidecars); !s) {
            return s.error();
        }
        maxInto(initPeak, need);
    }
    maxInto(result, initPeak);
    return result;
}

// upstream's addDRANodeAllocatableClaimResources: every claim's mapping and overheads, the
// per-container overhead once per container using the claim.
Status addClaimResources(ResourceList& resources,
                         const std::vector<NodeAllocatableClaimStatus>& statuses) {
    for (const NodeAllocatableClaimStatus& status : statuses) {
        if (Status s = addResources(resources, status.mapping); !s)
            return s;
        for (const auto& [name, overhead] : status.overhead) {
            Quantity total;
            if (overhead.perPod) {
                if (Status s = accumulate(total, *overhead.perPod); !s)
                    return s;
            }
            if (overhead.perContainer && !status.containers.empty()) {
                auto times = overhead.perContainer->mul(
                    Quantity::fromInt(static_cast<std::int64_t>(status.containers.size()),
                                      Quantity::Format::DecimalSI));
                if (!times)
                    return times.error();
                if (Status s = accumulate(total, *times); !s)
                    return s;
            }
            if (Status s = addTo(resources, name, total); !s)
                return s;
        }
    }
    return Status::Ok();
}

bool isPodLevelResource(const std::string& name) {
    return name == "cpu" || name == "memory" || text::startsWith(name, "hugepages-");
}

}  // namespace

std::string formatAmount(const std::string& resource, std::int64_t amount) {
    if (resource == "cpu")
        return amount % 1000 == 0 ? std::to_string(amount / 1000) : std::to_string(amount) + "m";
    return std::to_string(amount);
}

Status addResources(ResourceList& a, const ResourceList& b) {
    for (const auto& [name, quantity] : b) {
        if (Status s = addTo(a, name, quantity); !s)
            return s;
    }
    return Status::Ok();
}

bool mapsNodeResources(const Allocation& allocation, const DeviceLookup& lookup) {
    for (const DeviceResult& result : allocation.results) {
        const Device* device = lookup(result);
        if (device == nullptr)
            continue;
        for (const auto& [resource, entry] : device->nodeAllocatableResources) {
            if (entry.mapped)
                return true;
        }
    }
    return false;
}

Result<std::vector<NodeAllocatableClaimStatus>> nodeAllocatableStatuses(
    const Pod& pod, const std::vector<PodClaimAllocation>& claims, const DeviceLookup& lookup) {
    std::vector<NodeAllocatableClaimStatus> statuses;
    for (const PodClaimAllocation& claim : claims) {
        if (claim.allocation == nullptr || !hasNodeAllocatableResources(*claim.allocation, lookup))
            continue;
        auto status = claimStatus(claim, lookup);
        if (!status)
            return status.error();
        if (!*status)
            continue;
        (*status)->containers = containersUsing(pod, claim.podClaimName);
        statuses.push_back(std::move(**status));
    }
    std::sort(statuses.begin(), statuses.end(), [](const auto& a, const auto& b) {
        return a.resourceClaimName < b.resourceClaimName;
    });
    return statuses;
}

Result<ResourceList> podRequests(const Pod& pod,
                                 const std::vector<NodeAllocatableClaimStatus>& statuses) {
    auto requests = containerRequests(pod);
    if (!requests)
        return requests.error();
    if (Status s = addClaimResources(*requests, statuses); !s)
        return s.error();
    // Pod-level requests (PodLevelResources, on by default) stand for the containers' sum.
    for (const auto& [name, quantity] : pod.podLevelRequests) {
        if (isPodLevelResource(name))
            requests->insert_or_assign(name, quantity);
    }
    if (Status s = addResources(*requests, pod.overhead); !s)
        return s.error();
    return requests;
}

ResourceAmounts amounts(const ResourceList& resources) {
    ResourceAmounts out;
    for (const auto& [name, quantity] : resources)
        out[name] = name == "cpu" ? quantity.milliValue() : quantity.value();
    return out;
}

std::vector<Shortfall> shortfalls(const ResourceAmounts& demand, const ResourceAmounts& allocatable,
                                  const ResourceAmounts& used, std::int64_t podsOnNode) {
    auto amountIn = [](const ResourceAmounts& list, const std::string& name) {
        auto it = list.find(name);
        return it == list.end() ? std::int64_t{0} : it->second;
    };
    std::vector<Shortfall> out;
    if (auto pods = allocatable.find("pods");
        pods != allocatable.end() && podsOnNode + 1 > pods->second)
        out.push_back({"pods", 1, podsOnNode, pods->second});
    std::vector<std::string> names = {"cpu", "memory", "ephemeral-storage"};
    for (const auto& [name, amount] : demand) {
        if (text::startsWith(name, "hugepages-"))
            names.push_back(name);
    }
    for (const std::string& name : names) {
        const std::int64_t requested = amountIn(demand, name);
        if (requested <= 0 || !allocatable.contains(name))
            continue;
        const std::int64_t capacity = amountIn(allocatable, name);
        const std::int64_t inUse = amountIn(used, name);
        if (requested > capacity - inUse)
            out.push_back({name, requested, inUse, capacity});
    }
    return out;
}

std::string describe(const Shortfall& s) {
    if (s.resource == "pods") {
        return "Too many pods (the node holds " + std::to_string(s.used) + " of its " +
               std::to_string(s.allocatable) + " allocatable pods)";
    }
    return "Insufficient " + s.resource + " (the pod requests " +
           formatAmount(s.resource, s.requested) + ", the node's other pods use " +
           formatAmount(s.resource, s.used) + " of its " + formatAmount(s.resource, s.allocatable) +
           " allocatable)";
}

documents::Json encodeNodeAllocatableStatuses(
    const std::vector<NodeAllocatableClaimStatus>& statuses) {
    documents::Json out = documents::Json::array();
    for (const NodeAllocatableClaimStatus& status : statuses) {
        documents::Json entry = {{"resourceClaimName", status.resourceClaimName}};
        if (!status.containers.empty())
            entry["containers"] = status.containers;
        if (!status.mapping.empty()) {
            entry["mapping"] = documents::Json::array();
            for (const auto& [name, quantity] : status.mapping)
                entry["mapping"].push_back({{"name", name}, {"quantity", quantity.text()}});
        }
        if (!status.overhead.empty()) {
            entry["overhead"] = documents::Json::array();
            for (const auto& [name, overhead] : status.overhead) {
                documents::Json o = {{"name", name}};
                if (overhead.perPod)
                    o["perPod"] = overhead.perPod->text();
                if (overhead.perContainer)
                    o["perContainer"] = overhead.perContainer->text();
                entry["overhead"].push_back(std::move(o));
            }
        }
        out.push_back(std::move(entry));
    }
    return out;
}

}  // namespace numadra::allocator
