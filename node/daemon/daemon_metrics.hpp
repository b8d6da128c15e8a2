#pragma once
// The daemon's own metrics (the claim and claim status metrics are declared beside their code).

#include "numadra/daemon/inventory.hpp"
#include "numadra/health/health.hpp"
#include "numadra/metrics/registry.hpp"

namespace numadra::daemon {

inline constexpr const char* kNumaListRefused = "numadra_numa_list_refused";
inline constexpr const char* kNodeAllocatableDropped = "numadra_node_allocatable_resources_dropped";

// Every metric the daemon reports, with its help text; numadra_build_info set.
void declareMetrics(metrics::Registry& registry);

// numadra_devices{type,health} from the published devices and their last health.
void recordDevices(metrics::Registry& registry, const InventorySnapshot& snapshot,
                   const health::Monitor* monitor);

}  // namespace numadra::daemon
