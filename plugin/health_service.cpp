#include "health_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <future>
#include <utility>

#include "pkg/apis/dra-health/v1/api.pb.h"
#include "pkg/apis/dra-health/v1alpha1/api.pb.h"

namespace numadra::plugin {

// --- Hub ---------------------------------------------------------------------------------------

void HealthHub::subscribe(const std::shared_ptr<HealthSubscriber>& subscriber) {
    HealthSnapshot latest;
    bool closed = false;
    {
        std::lock_guard lock(mutex_);
        closed = closed_;
        if (!closed) {
            subscribers_.push_back(subscriber);
            latest = latest_;
        }
    }
    if (closed)
        subscriber->close();
    else if (latest && !subscriber->offer(latest))
        unsubscribe(*subscriber);
}

void HealthHub::unsubscribe(const HealthSubscriber& subscriber) {
    std::lock_guard lock(mutex_);
    std::erase_if(subscribers_,
                  [&subscriber](const auto& held) { return held.get() == &subscriber; });
}

void HealthHub::publish(HealthSnapshot snapshot) {
    {
        std::lock_guard lock(mutex_);
        latest_ = snapshot;
    }
    forEachSubscriber(
        [&snapshot](HealthSubscriber& subscriber) { return subscriber.offer(snapshot); });
}

void HealthHub::closeAll() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    forEachSubscriber([](HealthSubscriber& subscriber) {
        subscriber.close();
        return false;  // ended: nothing more to send it
    });
}

template <class Action>
void HealthHub::forEachSubscriber(Action action) {
    std::vector<std::shared_ptr<HealthSubscriber>> current;
    {
        std::lock_guard lock(mutex_);
        current = subscribers_;
    }
    for (const auto& subscriber : current)
        if (!action(*subscriber))
            unsubscribe(*subscriber);
}

// --- Broadcaster -------------------------------------------------------------------------------

namespace {

HealthSnapshot takeSnapshot(claims::HealthSource& source) {
    try {
        return std::make_shared<const std::vector<claims::DeviceHealthReport>>(source.snapshot());
    } catch (const std::exception& e) {
        spdlog::error("health snapshot failed error={}", e.what());
    } catch (...) {
        spdlog::error("health snapshot failed error=unknown exception");
    }
    return nullptr;
}

}  // namespace

// What the broadcaster does on the loop. Only changeQueued_ is touched from other threads.
class HealthBroadcaster::OnLoop : public std::enable_shared_from_this<OnLoop> {
  public:
    OnLoop(claims::HealthSource& source, HealthHub& hub, rpc::EventLoop& loop,
           std::chrono::milliseconds resendInterval)
        : source_(source), hub_(hub), loop_(loop), resendInterval_(resendInterval) {}

    // From the source's thread (or the constructor's): one snapshot for a burst of changes.
    void changed() {
        if (changeQueued_.exchange(true))
            return;
        loop_.post([self = shared_from_this()] {
            self->changeQueued_ = false;
            self->publish();
        });
    }

    // On the loop, once: nothing of the source is touched after this.
    void stop() {
        stopped_ = true;
        loop_.cancelTimer(resendTimer_);
    }

  private:
    void publish() {
        if (stopped_ || rpc::Clock::now() < quietUntil_)
            return;  // quiet after a failure: the resend timer takes the snapshot then
        loop_.cancelTimer(resendTimer_);
        if (auto snapshot = takeSnapshot(source_))
            hub_.publish(std::move(snapshot));
        else
            quietUntil_ = rpc::Clock::now() + resendInterval_;
        resendTimer_ = loop_.runAt(rpc::Clock::now() + resendInterval_,
                                   [self = shared_from_this()] { self->publish(); });
    }

    claims::HealthSource& source_;
    HealthHub& hub_;
    rpc::EventLoop& loop_;
    const std::chrono::milliseconds resendInterval_;
    std::atomic<bool> changeQueued_{false};
    // The loop's alone.
    bool stopped_ = false;
    rpc::EventLoop::TimerId resendTimer_ = 0;
    rpc::Clock::time_point quietUntil_{};
};

HealthBroadcaster::HealthBroadcaster(claims::HealthSource& source, HealthHub& hub,
                                     rpc::EventLoop& loop, std::chrono::milliseconds resendInterval)
    : source_(source),
      loop_(loop),
      onLoop_(std::make_shared<OnLoop>(source, hub, loop, resendInterval)) {
    source_.setChangeListener([onLoop = onLoop_] { onLoop->changed(); });
    onLoop_->changed();  // the first snapshot, at once
}

HealthBroadcaster::~HealthBroadcaster() {
    source_.setChangeListener({});
    if (!loop_.running()) {
        onLoop_->stop();  // no loop thread: nothing runs there
        return;
    }
    // Once the loop ran this (or dropped it, stopping), no snapshot is under way or to come. A
    // dropped task breaks the promise, which ends the wait too.
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    if (loop_.post([onLoop = onLoop_, done] {
            onLoop->stop();
            done->set_value();
        }))
        finished.wait();
}

// --- Streams -----------------------------------------------------------------------------------

namespace {

struct HealthV1alpha1 {
    static constexpr const char* kMethod = "/v1alpha1.DRAResourceHealth/NodeWatchResources";
    using Request = v1alpha1::NodeWatchResourcesRequest;
    using Response = v1alpha1::NodeWatchResourcesResponse;
    using Status = v1alpha1::HealthStatus;
    static constexpr Status kUnknown = v1alpha1::UNKNOWN;
    static constexpr Status kHealthy = v1alpha1::HEALTHY;
    static constexpr Status kUnhealthy = v1alpha1::UNHEALTHY;
    static constexpr const char* kName = "v1alpha1";
};

struct HealthV1 {
    static constexpr const char* kMethod = "/v1.DRAResourceHealth/NodeWatchResources";
    using Request = v1::NodeWatchResourcesRequest;
    using Response = v1::NodeWatchResourcesResponse;
    using Status = v1::HealthStatus;
    static constexpr Status kUnknown = v1::UNKNOWN;
    static constexpr Status kHealthy = v1::HEALTHY;
    static constexpr Status kUnhealthy = v1::UNHEALTHY;
    static constexpr const char* kName = "v1";
};

template <class Api>
typename Api::Status toProtoState(claims::DeviceHealthReport::State state) {
    switch (state) {
        case claims::DeviceHealthReport::State::Healthy:
            return Api::kHealthy;
        case claims::DeviceHealthReport::State::Unhealthy:
            return Api::kUnhealthy;
        case claims::DeviceHealthReport::State::Unknown:
            break;
    }
    return Api::kUnknown;
}

template <class Api>
std::string serialize(const std::vector<claims::DeviceHealthReport>& reports) {
    typename Api::Response out;
    for (const auto& report : reports) {
        auto* device = out.add_devices();
        device->mutable_device()->set_pool_name(report.poolName);
        device->mutable_device()->set_device_name(report.deviceName);
        device->set_health(toProtoState<Api>(report.state));
        device->set_last_updated_time(report.lastUpdatedUnix);
        device->set_health_check_timeout_seconds(report.timeoutSeconds);
        device->set_message(report.message);
    }
    return out.SerializeAsString();
}

// A snapshot the stream's queue has no room for is dropped: the client is behind on a complete
// list already, and the broadcaster sends the newest one again within the resend interval.
template <class Api>
class HealthStream final : public HealthSubscriber {
  public:
    explicit HealthStream(std::shared_ptr<rpc::ServerStream> stream) : stream_(std::move(stream)) {
        spdlog::debug("health stream opened version={}", Api::kName);
    }
    ~HealthStream() override { spdlog::debug("health stream closed version={}", Api::kName); }
    HealthStream(const HealthStream&) = delete;
    HealthStream& operator=(const HealthStream&) = delete;

    bool offer(const HealthSnapshot& snapshot) override {
        return stream_->write(serialize<Api>(*snapshot)) != rpc::ServerStream::WriteResult::Closed;
    }

    void close() override { stream_->finish(rpc::RpcStatus::ok()); }

  private:
    const std::shared_ptr<rpc::ServerStream> stream_;
};

template <class Api>
void addHealthService(rpc::GrpcServer& server, HealthHub& hub) {
    server.addServerStreaming(
        Api::kMethod, [&hub](const std::shared_ptr<rpc::ServerStream>& stream, const std::string&) {
            // Headers at once, so the client sees the stream open even before the first snapshot.
            stream->sendHeaders();
            auto subscriber = std::make_shared<HealthStream<Api>>(stream);
            hub.subscribe(subscriber);
            // The client left or the server stopped: nothing of the stream stays behind. After
            // subscribe, so a stream cancelled already is forgotten at once.
            stream->onCancel([&hub, weak = std::weak_ptr<HealthStream<Api>>(subscriber)] {
                if (auto gone = weak.lock())
                    hub.unsubscribe(*gone);
            });
        });
}

}  // namespace

void addHealthV1alpha1Service(rpc::GrpcServer& server, HealthHub& hub) {
    addHealthService<HealthV1alpha1>(server, hub);
}

void addHealthV1Service(rpc::GrpcServer& server, HealthHub& hub) {
    addHealthService<HealthV1>(server, hub);
}

}  // namespace numadra::plugin
