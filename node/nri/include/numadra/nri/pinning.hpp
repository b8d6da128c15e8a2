#pragma once
// Which cpuset each container on the node gets: the decisions of CPU pinning, as values, with
// no I/O (the NRI plugin feeds them what the runtime and the checkpoint say, and sends what
// they decide).
//
// - A container that uses a prepared claim holding CPUs (a CPU share) runs on exactly the CPUs
//   of its claims, its memory on their NUMA nodes (cpuset.cpus and cpuset.mems).
// - Those CPUs are exclusive: every other container runs on the shared pool, the node's CPUs
//   minus every prepared claim's CPUs, from the moment the claim is prepared until it is
//   unprepared (not only while its container runs: the kubelet may restart it at any time).
// - A claim that asks for memory binding (GPU/NIC claims, opt-in) confines its containers'
//   memory to its devices' NUMA nodes; their CPUs stay the shared pool.
// A container knows its claims by the variable the claim's CDI spec puts in its environment
// (cdi::claimVariable): the runtime applies CDI edits before asking NRI plugins, and only
// containers that reference the claim get them.

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::nri {

// A prepared claim, as pinning sees it.
struct PinnedClaim {
    std::string uid;
    std::string name;              // "namespace/name", for messages
    std::vector<int> cpus;         // its exclusive CPUs; empty: it holds no CPU share
    std::vector<int> memoryNodes;  // NUMA nodes its containers' memory is bound to; empty: none
    bool operator==(const PinnedClaim&) const = default;
};

struct PinningInputs {
    std::vector<int> nodeCpus;         // the node's online CPUs
    std::vector<int> nodeMemoryNodes;  // its NUMA nodes with memory (a container's full mems)
    std::vector<PinnedClaim> claims;
};

// A container as the runtime described it (Synchronize, CreateContainer).
struct ContainerView {
    std::string id;
    std::string name;                    // "namespace/pod/container", for messages
    std::vector<std::string> claimUids;  // cdi::claimUidsInEnvironment of its environment
    std::string cpus;                    // cpuset.cpus as set now; "" when never set
    std::string mems;                    // cpuset.mems as set now; "" when never set
    // The runtime said it runs. A container only created may already have its cgroup (a start
    // in progress): an update then reaches its spec, not the cgroup (see plugin.cpp), so one
    // updated meanwhile is updated again once it runs.
    bool running = false;
    bool updatedWhileCreated = false;
};

// What a container gets. An empty `mems` leaves the memory nodes as they are.
struct Cpuset {
    std::string cpus;
    std::string mems;
    bool operator==(const Cpuset&) const = default;
};

struct CpusetUpdate {
    std::string containerId;
    std::string containerName;
    Cpuset cpuset;
};

// The node's CPUs minus every claim's CPUs. Errors: a claim's CPU that is not on the node
// (named with the claim), or nothing left for everything else.
Result<std::vector<int>> sharedPool(const PinningInputs& inputs);

// The cpuset a container is created with. A container naming a claim that is not prepared on
// this node is an error (it would otherwise start unpinned), as is a claim whose CPUs are no
// longer on the node; each names the claim and the container.
Result<Cpuset> cpusetForNewContainer(const ContainerView& container, const PinningInputs& inputs);

// The updates that bring running containers to the policy: a container whose claim is gone (a
// crash between the runtime and the checkpoint, an unprepare) is treated as not using it, and
// gets the shared pool and every memory node back; containers already as decided are left
// alone. An error when the inputs themselves are unusable (sharedPool).
Result<std::vector<CpusetUpdate>> updatesForRunningContainers(
    const std::vector<ContainerView>& containers, const PinningInputs& inputs);

// True when `current` (a cpuset.cpus string, "" for never set) holds exactly `cpus`; "" holds
// every CPU of the node.
bool sameCpus(const std::string& current, const std::vector<int>& cpus,
              const std::vector<int>& nodeCpus);

// True when the runtime may be sent UpdateContainers of the plugin's own accord (when a claim is
// prepared or unprepared): containerd 2.4.0 and later. Before NRI v0.12.1 (containerd/nri#301)
// the runtime held its NRI lock across such an update while the kubelet's
// UpdateContainerResources takes the locks in the other order: containerd up to 2.3 (NRI 0.8 to
// 0.12.0) can deadlock (containerd/containerd#13733). Other runtimes are not known safe. Without
// it the others' cpusets change only in the answers to the runtime's own calls (a container's
// creation, a Synchronize).
bool takesUnsolicitedUpdates(const std::string& runtimeName, const std::string& runtimeVersion);

}  // namespace numadra::nri
