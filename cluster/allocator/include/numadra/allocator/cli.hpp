#pragma once
// The dra-allocate command: read slices, classes, claims, templates, pods and nodes; allocate
// the claims in input order, each answer counted against the next; print the claims with
// status.allocation filled. Exit 0 when every claim is allocated, 1 when some are not, 2 for
// invalid input or flags.

#include <iosfwd>
#include <string>
#include <vector>

namespace numadra::allocator {

int runDraAllocate(const std::vector<std::string>& args, std::istream& in, std::ostream& out,
                   std::ostream& err);

}  // namespace numadra::allocator
