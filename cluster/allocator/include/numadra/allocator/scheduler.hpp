#pragma once
// kube-scheduler's part in dynamic resource allocation, emulated: place these pods on these
// nodes as kube-scheduler would. Claims and pods go in input order, each answer counted against
// the next (allocations already in the input first); a pod's claims are allocated together on
// the first node, by name, that passes the scheduler's Filter plugins (NodeResourcesFit, then
// DynamicResources with the node's allocatable resources); claims from templates and the
// extended-resource claim are made as the resource claim controller and the scheduler make
// them. A claim no pod uses is allocated on its own.

#include <chrono>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

#include "numadra/allocator/decode.hpp"

namespace numadra::allocator {

struct ScheduleOptions {
    std::optional<std::string> node;  // only this node, else every node known
    bool explain = false;             // say why each node refused (for diagnostics)
    std::chrono::nanoseconds timeBudget = std::chrono::seconds(10);  // per allocation; 0: none
};

struct Schedule {
    // In input order: claims as they ended (status.allocation where allocated), a pod's claims
    // from templates and extended-resource claim just before the pod, pods with their status.
    std::vector<documents::Json> objects;
    bool allAllocated = true;
};

// What could not be allocated (and with `explain`, why) is written to `diagnostics` as it is
// found. An error: the input cannot be scheduled at all (a bound pod's requests do not add up).
Result<Schedule> schedule(Inputs inputs, const ScheduleOptions& options, std::ostream& diagnostics);

}  // namespace numadra::allocator
