#pragma once
// Device health as the daemon reports it to the server, which streams it to the kubelet
// (DRAResourceHealth.NodeWatchResources).

#include <chrono>
#include <cstdint>
#include <stop_token>
#include <string>
#include <vector>

namespace numadra::claims {

struct DeviceHealthReport {
    enum class State { Unknown, Healthy, Unhealthy };

    std::string poolName, deviceName;
    State state = State::Unknown;
    std::string message;               // optional detail; the kubelet cuts it to 1024 chars
    std::int64_t lastUpdatedUnix = 0;  // when the device was last checked (Unix seconds)
    std::int64_t timeoutSeconds = 0;  // how long the kubelet may trust this; 0 = its default (30 s)
};

// Implemented by the daemon. The server calls both functions from ONE thread only (it fans the
// snapshots out to every open stream itself), so "changed since the last call" is well defined.
class HealthSource {
  public:
    virtual ~HealthSource() = default;
    // The complete, current list: every device the driver knows, healthy or not.
    virtual std::vector<DeviceHealthReport> snapshot() = 0;
    // Blocks until something changed, `timeout` passed or `stop` was requested; true if changed.
    // Must return promptly once `stop` is requested: server shutdown waits for it.
    virtual bool waitForChange(std::chrono::milliseconds timeout, std::stop_token stop) = 0;
};

}  // namespace numadra::claims
