// The daemon's own metrics: declared once at start, the device gauges after each scan.

#include "daemon_metrics.hpp"

#include <map>
#include <utility>

#include "numadra/daemon/claim_status.hpp"
#include "numadra/daemon/claims.hpp"

#ifndef NUMADRA_VERSION
#define NUMADRA_VERSION "0.0.0"
#endif

namespace numadra::daemon {

namespace {

const char* healthName(health::State state) {
    switch (state) {
        case health::State::Healthy:
            return "healthy";
        case health::State::Unhealthy:
            return "unhealthy";
        case health::State::Unknown:
            break;
    }
    return "unknown";
}

}  // namespace

void declareMetrics(metrics::Registry& registry) {
    registry.declareGauge("numadra_build_info", "Build information.", {"version"});
    registry.gaugeSet("numadra_build_info", {NUMADRA_VERSION}, 1);
    declareClaimMetrics(registry);
    declareClaimStatusMetrics(registry);
    registry.declareCounter("numadra_publish_total",
                            "ResourceSlice reconciliations that wrote something.");
    registry.declareCounter("numadra_publish_errors_total",
                            "ResourceSlice reconciliations that failed.");
    registry.declareGauge("numadra_devices", "Published devices by type and health.",
                          {"type", "health"});
    registry.declareGauge("numadra_startup_seconds",
                          "From process start to registered and published.");
    registry.declareHistogram("numadra_discovery_duration_seconds",
                              "Time of one sysfs scan and slice build.", {},
                              metrics::latencyBuckets());
    registry.declareGauge(kNumaListRefused,
                          "1 when --numa-list=auto fell back to scalar numaNode and pcieRoot "
                          "attributes because the API server refuses list-typed attributes.");
    registry.gaugeSet(kNumaListRefused, {}, 0);
    registry.declareGauge(kNodeAllocatableDropped,
                          "1 when --node-allocatable-resources=auto publishes without the CPU "
                          "devices' node-allocatable mappings because the API server drops them.");
    registry.gaugeSet(kNodeAllocatableDropped, {}, 0);
    registry.declareCounter(
        "numadra_kernel_events_total",
        "Kernel events that started an immediate check: device uevents, link changes of watched "
        "interfaces, and link messages the kernel dropped (source=link_lost).",
        {"source"});
}

void recordDevices(metrics::Registry& registry, const InventorySnapshot& snapshot,
                   const health::Monitor* monitor) {
    const auto health =
        monitor ? monitor->current() : std::map<std::string, health::DeviceHealth>{};
    std::map<std::pair<std::string, std::string>, double> counts;
    for (const auto& slice : snapshot.slices) {
        for (const auto& device : slice.devices) {
            auto it = device.attributes.find("type");
            const auto* type =
                it == device.attributes.end() ? nullptr : std::get_if<std::string>(&it->second);
            auto state = health.find(device.name);
            counts[{type ? *type : "unknown",
                    healthName(state == health.end() ? health::State::Unknown
                                                     : state->second.state)}] += 1;
        }
    }
    registry.gaugeClear("numadra_devices");
    for (const auto& [labels, count] : counts)
        registry.gaugeSet("numadra_devices", {labels.first, labels.second}, count);
}

}  // namespace numadra::daemon
