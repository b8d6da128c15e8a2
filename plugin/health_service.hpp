#pragma once
// DRAResourceHealth (v1alpha1 and v1): NodeWatchResources streams. No thread of their own: the
// broadcaster takes the HealthSource's snapshots on the server's event loop and fans each out
// to every open stream, whose writes never block (rpc::ServerStream queues them).

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "numadra/claims/health.hpp"
#include "numadra/plugin/grpc/event_loop.hpp"
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

// Publishes the HealthSource's snapshot to the hub at once, after every change the source
// reports, and at least every `resendInterval` (the kubelet forgets a device's health when it
// has not heard about it for its timeout, 30 s by default). Every snapshot is taken on the
// loop's thread, the only one that calls the source's snapshot(); a burst of changes is one
// snapshot. After a snapshot that failed, the next one waits for the resend interval: a
// failing source does not make the loop spin.
class HealthBroadcaster {
  public:
    // `loop` outlives the broadcaster.
    HealthBroadcaster(claims::HealthSource& source, HealthHub& hub, rpc::EventLoop& loop,
                      std::chrono::milliseconds resendInterval);
    // Ends the source's calls and waits for the loop to let go of the source. Not on the loop.
    ~HealthBroadcaster();
    HealthBroadcaster(const HealthBroadcaster&) = delete;
    HealthBroadcaster& operator=(const HealthBroadcaster&) = delete;

  private:
    class OnLoop;
    claims::HealthSource& source_;
    rpc::EventLoop& loop_;
    std::shared_ptr<OnLoop> onLoop_;  // shared with the tasks and timers it has on the loop
};

// Serve v1alpha1 (v1) .DRAResourceHealth/NodeWatchResources on `server`; the hub outlives it.
void addHealthV1alpha1Service(rpc::GrpcServer& server, HealthHub& hub);
void addHealthV1Service(rpc::GrpcServer& server, HealthHub& hub);

}  // namespace numadra::plugin
