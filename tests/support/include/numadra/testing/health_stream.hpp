#pragma once
// Reading the kubelet's device-health stream (DRAResourceHealth NodeWatchResources responses,
// v1alpha1 or v1) in tests.

#include <string>

namespace numadra::testing {

// The entry of `device` in one response, or null.
template <class Response>
const auto* healthOf(const Response& response, const std::string& device) {
    for (const auto& entry : response.devices()) {
        if (entry.device().device_name() == device)
            return &entry;
    }
    return static_cast<decltype(&response.devices(0))>(nullptr);
}

}  // namespace numadra::testing
