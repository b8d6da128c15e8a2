#pragma once
// What a pod's NICs became, written into their claim (DRAResourceClaimDeviceStatus): for each
// prepared NIC with a kernel interface, a status.devices entry with its driver, pool and
// device, networkData (interfaceName, hardwareAddress) and a Ready condition, so users and
// controllers see which interface a pod got. Written by server-side apply under the driver's
// field manager, so an Unprepare (an apply without the entries) removes exactly what the
// driver wrote and nothing another writer added.
//
// The writes run on a thread of their own, started when a write is queued and gone once nothing
// is left to write or retry (an idle daemon keeps none): the kubelet's Prepare and Unprepare
// never wait for them, and a slow or failing API server costs the status only (logged, counted,
// retried), never a pod's start.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/claims/claims.hpp"
#include "numadra/common/result.hpp"
#include "numadra/common/worker_pool.hpp"
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
    // `linger`: how long the writer's thread waits for more once nothing is left to write.
    ClaimStatusPublisher(ClaimStatusSink& sink, std::string driverName, metrics::Registry& metrics,
                         std::chrono::milliseconds linger = WorkerPool::kDefaultLinger);
    ~ClaimStatusPublisher();  // stops the writer; what is still queued is given up (logged)
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
    // Queues the writer's drain unless one is under way (mutex_ held).
    void scheduleDrain();
    // Writes what is ready, waits for the retries that are not, returns when nothing is left.
    void drain();
    void write(Pending pending);

    ClaimStatusSink& sink_;
    std::string driverName_;
    metrics::Registry& metrics_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::map<std::string, Pending> pending_;      // by claim uid: the latest wish wins
    std::map<std::string, std::string> applied_;  // claim uid -> the entries applied last
    bool writing_ = false;
    bool draining_ = false;  // a drain is queued or running
    bool stopping_ = false;
    std::uint64_t generation_ = 0;  // counts wishes, to wake a drain waiting for a retry
    WorkerPool writer_;             // one thread at most; last: stopped before the rest goes
};

void declareClaimStatusMetrics(metrics::Registry& registry);

}  // namespace numadra::daemon
