#pragma once
// What a pod's NICs became, written into their claim (DRAResourceClaimDeviceStatus): for each
// prepared NIC with a kernel interface, a status.devices entry with its driver, pool and
// device, networkData (interfaceName, hardwareAddress) and a Ready condition, so users and
// controllers see which interface a pod got. Written by server-side apply under the driver's
// field manager, so an Unprepare (an apply without the entries) removes exactly what the
// driver wrote and nothing another writer added.
//
// The writes run on their own thread: the kubelet's Prepare and Unprepare never wait for them,
// and a slow or failing API server costs the status only (logged, counted, retried), never a
// pod's start.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/claims/claims.hpp"
#include "numadra/common/result.hpp"
#include "numadra/metrics/registry.hpp"

namespace numadra::daemon {

// The apply body for a claim: its status.devices entries for the prepared NICs with an
// interface (none: an apply that removes the driver's entries). `now` is RFC 3339.
api::Json claimStatusApply(const claims::ClaimRef& claim, const std::string& driverName,
                           const std::vector<claims::PreparedDevice>& devices,
                           const std::string& now);

// Where the applies go: the API server (a KubeClient), or a test's recorder.
class ClaimStatusSink {
  public:
    virtual ~ClaimStatusSink() = default;
    virtual Result<api::Json> apply(const claims::ClaimRef& claim, const api::Json& body) = 0;
};

class ClaimStatusPublisher {
  public:
    ClaimStatusPublisher(ClaimStatusSink& sink, std::string driverName, metrics::Registry& metrics);
    ~ClaimStatusPublisher();  // stops the thread; what is still queued is given up (logged)
    ClaimStatusPublisher(const ClaimStatusPublisher&) = delete;
    ClaimStatusPublisher& operator=(const ClaimStatusPublisher&) = delete;

    // A claim was prepared with these devices: its NICs' entries are applied (nothing is
    // written for a claim without a NIC interface, nor again for one applied already).
    void prepared(const claims::ClaimRef& claim,
                  const std::vector<claims::PreparedDevice>& devices);
    // A claim was unprepared: the driver's entries are removed.
    void unprepared(const claims::ClaimRef& claim);
    // Blocks until nothing is queued or being written, or the timeout passes (tests).
    bool waitIdle(std::chrono::milliseconds timeout);

  private:
    struct Pending {
        claims::ClaimRef claim;
        std::vector<claims::PreparedDevice> devices;  // empty: remove
        int attempt = 0;
        std::chrono::steady_clock::time_point notBefore{};
    };
    void run(std::stop_token stop);
    void write(Pending pending);

    ClaimStatusSink& sink_;
    std::string driverName_;
    metrics::Registry& metrics_;
    std::mutex mutex_;
    std::condition_variable_any changed_;
    std::map<std::string, Pending> pending_;      // by claim uid: the latest wish wins
    std::map<std::string, std::string> applied_;  // claim uid -> the entries applied last
    bool writing_ = false;
    std::uint64_t generation_ = 0;  // counts wishes, to wake the thread early
    std::jthread thread_;
};

void declareClaimStatusMetrics(metrics::Registry& registry);

}  // namespace numadra::daemon
