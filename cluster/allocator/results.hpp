#pragma once
// The AllocationResult of a solved claim: device results (already built during the search),
// the configuration entries, and the node selector.

#include "search.hpp"

namespace numadra::allocator::detail {

Result<Allocation> buildAllocation(const Allocator::Impl& impl, const Node& node,
                                   const ClaimState& state);

}  // namespace numadra::allocator::detail
