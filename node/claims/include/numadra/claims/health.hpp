#pragma once
// Device health as the daemon reports it to the server, which streams it to the kubelet
// (DRAResourceHealth.NodeWatchResources).

#include <cstdint>
#include <functional>
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

// Implemented by the daemon. The server asks for snapshots on one thread (its event loop) and
// fans each out to every open stream itself.
class HealthSource {
  public:
    using ChangeListener = std::function<void()>;

    virtual ~HealthSource() = default;
    // The complete, current list: every device the driver knows, healthy or not.
    virtual std::vector<DeviceHealthReport> snapshot() = 0;
    // `listener` is called after each change (a device's state or message) from the source's
    // own thread; it must return quickly and not call back into the source. An empty one ends
    // the calls. Once this returns, the previous listener is neither running nor called again.
    virtual void setChangeListener(ChangeListener listener) = 0;
};

}  // namespace numadra::claims
