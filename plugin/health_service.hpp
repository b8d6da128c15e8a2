#pragma once
// DRAResourceHealth (v1alpha1 and v1): NodeWatchResources streams. No thread per stream: one
// broadcaster thread asks the HealthSource and fans each snapshot out to every open stream,
// whose writes never block (rpc::ServerStream queues them for the event loop).

#include <chrono>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "numadra/claims/health.hpp"
#include "numadra/plugin/grpc/server.hpp"

namespace numadra::plugin {

using HealthSnapshot = std::shared_ptr<const std::vector<claims::DeviceHealthReport>>;

// One open NodeWatchResources stream. Shared: the hub holds it while the stream is open.
class HealthSubscriber {
  public:
    virtual ~HealthSubscriber() = default;
    // Send this snapshot. False when the stream is over: the hub then forgets it.
    virtual bool offer(const HealthSnapshot& snapshot) = 0;
    // The server is stopping: end the stream with OK.
    virtual void close() = 0;
};

class HealthHub {
  public:
    // Adds an open stream and offers it the latest snapshot; closes it at once after closeAll().
    void subscribe(const std::shared_ptr<HealthSubscriber>& subscriber);
    void unsubscribe(const HealthSubscriber& subscriber);
    void publish(HealthSnapshot snapshot);
    // Ends every open stream and every stream opened from now on.
    void closeAll();

  private:
    // Runs `action` on each subscriber outside the lock (a stream's cancel unsubscribes it from
    // the loop's thread meanwhile), and forgets those for which it returns false.
    template <class Action>
    void forEachSubscriber(Action action);

    std::mutex mutex_;
    std::vector<std::shared_ptr<HealthSubscriber>> subscribers_;
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

// Serve v1alpha1 (v1) .DRAResourceHealth/NodeWatchResources on `server`; the hub outlives it.
void addHealthV1alpha1Service(rpc::GrpcServer& server, HealthHub& hub);
void addHealthV1Service(rpc::GrpcServer& server, HealthHub& hub);

}  // namespace numadra::plugin
