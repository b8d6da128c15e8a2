#include "numadra/nri/pinning.hpp"

#include <algorithm>
#include <iterator>
#include <set>

#include "numadra/common/text.hpp"

namespace numadra::nri {

namespace {

const PinnedClaim* findClaim(const PinningInputs& inputs, const std::string& uid) {
    auto it = std::find_if(inputs.claims.begin(), inputs.claims.end(),
                           [&](const PinnedClaim& claim) { return claim.uid == uid; });
    return it == inputs.claims.end() ? nullptr : &*it;
}

std::vector<int> sortedUnion(std::vector<int> values) {
    std::sort(values.begin(), values.end());
    values.erase(std::unique(values.begin(), values.end()), values.end());
    return values;
}

std::string describe(const PinnedClaim& claim) {
    return "claim " + claim.name + " (" + claim.uid + ")";
}

Status claimCpusOnNode(const PinnedClaim& claim, const std::vector<int>& nodeCpus) {
    std::vector<int> missing;
    for (int cpu : claim.cpus) {
        if (!std::binary_search(nodeCpus.begin(), nodeCpus.end(), cpu))
            missing.push_back(cpu);
    }
    if (missing.empty())
        return {};
    return Error{describe(claim) + " holds CPUs " + text::formatRangeList(missing) +
                 " that are not online on this node (online: " + text::formatRangeList(nodeCpus) +
                 ")"};
}

// The cpuset of a container using `claims` (every one prepared): their CPUs and memory nodes
// when any holds CPUs, otherwise the shared pool with the claims' memory binding.
Cpuset cpusetOfClaims(const std::vector<const PinnedClaim*>& claims, const std::vector<int>& pool) {
    std::vector<int> cpus, nodes;
    for (const PinnedClaim* claim : claims) {
        cpus.insert(cpus.end(), claim->cpus.begin(), claim->cpus.end());
        nodes.insert(nodes.end(), claim->memoryNodes.begin(), claim->memoryNodes.end());
    }
    cpus = sortedUnion(std::move(cpus));
    nodes = sortedUnion(std::move(nodes));
    return Cpuset{text::formatRangeList(cpus.empty() ? pool : cpus), text::formatRangeList(nodes)};
}

// A container not bound by any claim keeps the memory nodes it has when that is all of them
// ("" is never set: all); one bound earlier by a claim that is gone gets all of them back.
std::string memsToSet(const std::string& current, const std::string& wanted,
                      const std::vector<int>& nodeMemoryNodes) {
    if (!wanted.empty()) {
        auto parsed = text::parseRangeList(current);
        auto expected = text::parseRangeList(wanted);
        return parsed && expected && *parsed == *expected ? "" : wanted;
    }
    if (current.empty() || nodeMemoryNodes.empty())
        return "";
    auto parsed = text::parseRangeList(current);
    return parsed && *parsed == nodeMemoryNodes ? "" : text::formatRangeList(nodeMemoryNodes);
}

}  // namespace

Result<std::vector<int>> sharedPool(const PinningInputs& inputs) {
    const std::vector<int> nodeCpus = sortedUnion(inputs.nodeCpus);
    std::vector<int> exclusive;
    for (const PinnedClaim& claim : inputs.claims) {
        if (Status onNode = claimCpusOnNode(claim, nodeCpus); !onNode)
            return onNode.error();
        exclusive.insert(exclusive.end(), claim.cpus.begin(), claim.cpus.end());
    }
    exclusive = sortedUnion(std::move(exclusive));
    std::vector<int> pool;
    std::set_difference(nodeCpus.begin(), nodeCpus.end(), exclusive.begin(), exclusive.end(),
                        std::back_inserter(pool));
    if (pool.empty()) {
        return Error{"prepared claims hold every CPU of the node (" +
                     text::formatRangeList(nodeCpus) +
                     "): nothing is left for the containers that use none"};
    }
    return pool;
}

Result<Cpuset> cpusetForNewContainer(const ContainerView& container, const PinningInputs& inputs) {
    std::vector<const PinnedClaim*> claims;
    for (const std::string& uid : container.claimUids) {
        const PinnedClaim* claim = findClaim(inputs, uid);
        if (claim == nullptr) {
            return Error{"container " + container.name + " uses claim " + uid +
                         ", which is not prepared on this node: it would run unpinned"};
        }
        claims.push_back(claim);
    }
    auto pool = sharedPool(inputs);
    if (!pool)
        return Error{"container " + container.name + ": " + pool.error().message};
    return cpusetOfClaims(claims, *pool);
}

Result<std::vector<CpusetUpdate>> updatesForRunningContainers(
    const std::vector<ContainerView>& containers, const PinningInputs& inputs) {
    auto pool = sharedPool(inputs);
    if (!pool)
        return pool.error();
    const std::vector<int> nodeCpus = sortedUnion(inputs.nodeCpus);
    const std::vector<int> memoryNodes = sortedUnion(inputs.nodeMemoryNodes);
    std::vector<CpusetUpdate> updates;
    for (const ContainerView& container : containers) {
        std::vector<const PinnedClaim*> claims;
        for (const std::string& uid : container.claimUids) {
            if (const PinnedClaim* claim = findClaim(inputs, uid))
                claims.push_back(claim);
        }
        Cpuset wanted = cpusetOfClaims(claims, *pool);
        auto wantedCpus = text::parseRangeList(wanted.cpus);
        const std::string mems = memsToSet(container.mems, wanted.mems, memoryNodes);
        if (wantedCpus && sameCpus(container.cpus, *wantedCpus, nodeCpus) && mems.empty())
            continue;
        // The update names the whole cpuset wanted; "" memory nodes leaves them as they are.
        wanted.mems = mems.empty() ? container.mems : mems;
        updates.push_back(CpusetUpdate{container.id, container.name, std::move(wanted)});
    }
    return updates;
}

bool sameCpus(const std::string& current, const std::vector<int>& cpus,
              const std::vector<int>& nodeCpus) {
    if (current.empty())
        return cpus == nodeCpus;
    auto parsed = text::parseRangeList(current);
    return parsed && *parsed == cpus;
}

bool takesUnsolicitedUpdates(const std::string& runtimeName, const std::string& runtimeVersion) {
    if (runtimeName != "containerd")
        return false;
    // "v2.4.2", "2.4.2+unknown", "2.4.0-rc.1": major and minor are what matter.
    const std::string version =
        runtimeVersion.starts_with('v') ? runtimeVersion.substr(1) : runtimeVersion;
    const auto dot = version.find('.');
    if (dot == std::string::npos)
        return false;
    auto major = text::parseInt(version.substr(0, dot));
    std::string rest = version.substr(dot + 1);
    rest = rest.substr(0, rest.find_first_not_of("0123456789"));
    auto minor = text::parseInt(rest);
    if (!major || !minor)
        return false;
    return *major > 2 || (*major == 2 && *minor >= 4);
}

}  // namespace numadra::nri
