#pragma once
// The seam between the kubelet-facing gRPC server and the rest of the daemon: the server turns
// NodePrepareResources / NodeUnprepareResources calls into ClaimPreparer calls, claim by claim.

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::claims {

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
    // A NIC's kernel interface as prepared (empty for other devices and interface-less NICs):
    // the daemon reports it in the claim's status.devices[].networkData.
    std::string interfaceName = {};
    std::string hardwareAddress = {};
};

struct ClaimPrepareResult {
    std::vector<PreparedDevice> devices;
    std::string error;  // non-empty = this claim failed (devices are then ignored)
};

// The end of the kubelet's call (its 45 s gRPC deadline), or time_point::max() when it sent none.
using Deadline = std::chrono::steady_clock::time_point;

// A ResourceClaim as the API server returned it.
using ClaimObject = nlohmann::ordered_json;

// How one claim of a call went: what the one log line and the metrics of it say.
struct ClaimOutcome {
    enum class Operation { Prepare, Unprepare };
    // Where a Prepare's answer came from: the node's records, the API server's claim, or
    // neither (the call ended first, or the claim failed before either was asked).
    enum class Source { Records, Api, None };

    Operation operation = Operation::Prepare;
    ClaimRef claim;
    Source source = Source::None;
    // Time spent queued for a worker (the local lane, and the API lane when it went there).
    std::chrono::duration<double> waited{};
    // From the call's arrival to this claim's answer.
    std::chrono::duration<double> took{};
    // The call was over (deadline passed, or the kubelet gave up) when this claim was answered:
    // the kubelet never saw this answer.
    bool deadlineMissed = false;
};

// Implemented by the daemon. Must be thread-safe: calls for different claims (and for the same
// claim, when the kubelet retries) arrive concurrently. Both operations must be idempotent, and
// unprepare of a claim that is not prepared is a success.
//
// The server runs the steps on two lanes of worker threads so that a slow API server can only
// delay the claims that need it: prepareFromRecords and unprepare on the local lane, fetch and
// then prepareFetched on the API lane. Only fetch may wait on the network.
class ClaimPreparer {
  public:
    virtual ~ClaimPreparer() = default;
    // A claim this node prepared before, answered from its own records; nullopt when the claim
    // has to be fetched.
    virtual std::optional<ClaimPrepareResult> prepareFromRecords(const ClaimRef& claim) = 0;
    // The claim from the API server, given up at `deadline`. The error is the claim's answer.
    virtual Result<ClaimObject> fetch(const ClaimRef& claim, Deadline deadline) = 0;
    // Prepares a claim just fetched.
    virtual ClaimPrepareResult prepareFetched(const ClaimRef& claim, const ClaimObject& object) = 0;
    virtual std::string unprepare(const ClaimRef& claim, Deadline deadline) = 0;  // "" = success
    // Rolling-update mode only, with the node-wide serialize lock held, before each claim:
    // another instance of the driver on this node (the old or the new pod of an update) may
    // have prepared or unprepared claims since. "" = success; an error fails the claim.
    virtual std::string syncWithOtherInstances() { return {}; }
    // Once for every claim of every call, when its answer is known, or when the call ended
    // before it was (then result.error says so).
    virtual void report(const ClaimOutcome& outcome, const ClaimPrepareResult& result) {
        static_cast<void>(outcome);
        static_cast<void>(result);
    }
};

}  // namespace numadra::claims
