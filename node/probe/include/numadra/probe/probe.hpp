#pragma once
// numa-probe: shows a machine's topology and the ResourceSlices the driver would publish.
// The command is a function of its arguments and streams so tests can run it in-process.

#include <iosfwd>
#include <string>
#include <vector>

#include "numadra/discovery/machine.hpp"
#include "numadra/slices/builder.hpp"

namespace numadra::probe {

// What becomes of the machine and the slices once the output is written. numa-probe's main
// keeps them until the process exits: the kernel takes the heap back at once, where freeing
// them first is ~10,000 frees (~4.5 M instructions on big-2s-8n). In-process callers (tests)
// free them.
enum class AfterOutput { Free, KeepUntilExit };

// Exit codes: 0 success, 1 failure while building, 2 usage error or unusable --sysfs-root.
int runNumaProbe(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
                 AfterOutput afterOutput = AfterOutput::Free);

// The readable tree: sockets -> NUMA nodes -> devices, then the slices.
std::string renderTable(const discovery::Machine& machine, const slices::SliceOptions& options,
                        const std::vector<api::ResourceSlice>& slices);

}  // namespace numadra::probe
