#pragma once
// The seam between the kubelet-facing gRPC server and the rest of the daemon: the server turns
// NodePrepareResources / NodeUnprepareResources calls into one ClaimPreparer call per claim.

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace numadra::plugin {

// What the kubelet tells us about a claim: nothing but its identity. The allocation result has
// to be read from the API server (prepare) or from our own records (unprepare).
struct ClaimRef {
    std::string ns, name, uid;
};

struct PreparedDevice {
    std::vector<std::string> requestNames;  // top-level request names ("gpu", never "gpu/sub0")
    std::string poolName, deviceName;
    std::vector<std::string> cdiDeviceIds;
    std::optional<std::string> shareId;  // sent on v1 only
};

struct ClaimPrepareResult {
    std::vector<PreparedDevice> devices;
    std::string error;  // non-empty = this claim failed (devices are then ignored)
};

// The end of the kubelet's call (its 45 s gRPC deadline), or time_point::max() when it sent none.
using Deadline = std::chrono::steady_clock::time_point;

// Implemented by the daemon. Must be thread-safe: calls for different claims (and for the same
// claim, when the kubelet retries) arrive concurrently. Both operations must be idempotent, and
// unprepare of a claim that is not prepared is a success.
class ClaimPreparer {
  public:
    virtual ~ClaimPreparer() = default;
    virtual ClaimPrepareResult prepare(const ClaimRef& claim, Deadline deadline) = 0;
    virtual std::string unprepare(const ClaimRef& claim, Deadline deadline) = 0;  // "" = success
};

}  // namespace numadra::plugin
