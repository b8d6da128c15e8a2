#pragma once
// DRAResourceHealth (v1alpha1 and v1): NodeWatchResources streams. No thread per stream: one
// broadcaster thread asks the HealthSource and fans each snapshot out to every open stream,
// whose writes are asynchronous (gRPC callback API).

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "numadra/claims/health.hpp"

namespace numadra::plugin {

using HealthSnapshot = std::shared_ptr<const std::vector<claims::DeviceHealthReport>>;

// One open NodeWatchResources stream. Reference counted: gRPC holds one reference until OnDone,
// and the hub takes one while it talks to the stream outside its lock.
class HealthSubscriber {
  public:
    // Send this snapshot (or a newer one) when the previous write is done.
    virtual void offer(const HealthSnapshot& snapshot) = 0;
    // The server is stopping: end the stream with OK.
    virtual void close() = 0;

    void ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
    void unref() {
        if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            delete this;
    }

  protected:
    virtual ~HealthSubscriber() = default;

  private:
    std::atomic<int> refs_{1};
};

class HealthHub {
  public:
    // Adds an open stream and offers it the latest snapshot; closes it at once after closeAll().
    void subscribe(HealthSubscriber& subscriber);
    void unsubscribe(HealthSubscriber& subscriber);
    void publish(HealthSnapshot snapshot);
    // Ends every open stream and every stream opened from now on.
    void closeAll();

  private:
    // Runs `action` on each subscriber outside the lock: the streams' gRPC calls may run
    // reactions (and so unsubscribe) on this very thread.
    template <class Action>
    void forEachSubscriber(Action action);

    std::mutex mutex_;
    std::vector<HealthSubscriber*> subscribers_;
    HealthSnapshot latest_;
    bool closed_ = false;
};

// The single thread that calls the HealthSource: publishes a snapshot at once, after every
// change, and at least every `resendInterval` (the kubelet forgets a device's health when it
// has not heard about it for its timeout, 30 s by default).
class HealthBroadcaster {
  public:
    HealthBroadcaster(claims::HealthSource& source, HealthHub& hub,
                      std::chrono::milliseconds resendInterval);
    ~HealthBroadcaster() = default;  // the jthread asks the loop to stop and joins it
    HealthBroadcaster(const HealthBroadcaster&) = delete;
    HealthBroadcaster& operator=(const HealthBroadcaster&) = delete;

  private:
    std::jthread thread_;
};

std::unique_ptr<grpc::Service> makeHealthV1alpha1Service(HealthHub& hub);
std::unique_ptr<grpc::Service> makeHealthV1Service(HealthHub& hub);

}  // namespace numadra::plugin
