#include "health_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <optional>
#include <utility>

#include "pkg/apis/dra-health/v1/api.grpc.pb.h"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"

namespace numadra::plugin {

// --- Hub ---------------------------------------------------------------------------------------

void HealthHub::subscribe(HealthSubscriber& subscriber) {
    HealthSnapshot latest;
    bool closed = false;
    {
        std::lock_guard lock(mutex_);
        closed = closed_;
        if (!closed) {
            subscribers_.push_back(&subscriber);
            latest = latest_;
        }
    }
    // The caller holds gRPC's reference for the duration of this call: no ref() needed.
    if (closed)
        subscriber.close();
    else if (latest)
        subscriber.offer(latest);
}

void HealthHub::unsubscribe(HealthSubscriber& subscriber) {
    std::lock_guard lock(mutex_);
    std::erase(subscribers_, &subscriber);
}

void HealthHub::publish(HealthSnapshot snapshot) {
    {
        std::lock_guard lock(mutex_);
        latest_ = snapshot;
    }
    forEachSubscriber([&snapshot](HealthSubscriber& subscriber) { subscriber.offer(snapshot); });
}

void HealthHub::closeAll() {
    {
        std::lock_guard lock(mutex_);
        closed_ = true;
    }
    forEachSubscriber([](HealthSubscriber& subscriber) { subscriber.close(); });
}

template <class Action>
void HealthHub::forEachSubscriber(Action action) {
    std::vector<HealthSubscriber*> current;
    {
        std::lock_guard lock(mutex_);
        current = subscribers_;
        for (auto* subscriber : current)
            subscriber->ref();
    }
    for (auto* subscriber : current) {
        action(*subscriber);
        subscriber->unref();
    }
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

// Sleeps for `pause` unless stop is requested first.
void pauseUnlessStopped(std::chrono::milliseconds pause, const std::stop_token& stop) {
    std::mutex mutex;
    std::condition_variable_any never;
    std::unique_lock lock(mutex);
    never.wait_for(lock, stop, pause, [] { return false; });
}

void waitForChangeOrResend(claims::HealthSource& source, std::chrono::milliseconds resendInterval,
                           const std::stop_token& stop) {
    try {
        source.waitForChange(resendInterval, stop);
        return;
    } catch (const std::exception& e) {
        spdlog::error("waiting for health changes failed error={}", e.what());
    } catch (...) {
        spdlog::error("waiting for health changes failed error=unknown exception");
    }
    pauseUnlessStopped(resendInterval, stop);  // a failing source must not make us spin
}

void broadcast(claims::HealthSource& source, HealthHub& hub,
               std::chrono::milliseconds resendInterval, const std::stop_token& stop) {
    while (!stop.stop_requested()) {
        if (auto snapshot = takeSnapshot(source))
            hub.publish(std::move(snapshot));
        waitForChangeOrResend(source, resendInterval, stop);
    }
}

}  // namespace

HealthBroadcaster::HealthBroadcaster(claims::HealthSource& source, HealthHub& hub,
                                     std::chrono::milliseconds resendInterval)
    : thread_([&source, &hub, resendInterval](const std::stop_token& stop) {
          broadcast(source, hub, resendInterval, stop);
      }) {}

// --- Streams -----------------------------------------------------------------------------------

namespace {

struct HealthV1alpha1 {
    using Service = v1alpha1::DRAResourceHealth::CallbackService;
    using Request = v1alpha1::NodeWatchResourcesRequest;
    using Response = v1alpha1::NodeWatchResourcesResponse;
    using Status = v1alpha1::HealthStatus;
    static constexpr Status kUnknown = v1alpha1::UNKNOWN;
    static constexpr Status kHealthy = v1alpha1::HEALTHY;
    static constexpr Status kUnhealthy = v1alpha1::UNHEALTHY;
    static constexpr const char* kName = "v1alpha1";
};

struct HealthV1 {
    using Service = v1::DRAResourceHealth::CallbackService;
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
void toProto(const std::vector<claims::DeviceHealthReport>& reports, typename Api::Response& out) {
    out.Clear();
    for (const auto& report : reports) {
        auto* device = out.add_devices();
        device->mutable_device()->set_pool_name(report.poolName);
        device->mutable_device()->set_device_name(report.deviceName);
        device->set_health(toProtoState<Api>(report.state));
        device->set_last_updated_time(report.lastUpdatedUnix);
        device->set_health_check_timeout_seconds(report.timeoutSeconds);
        device->set_message(report.message);
    }
}

// At most one write in flight; a snapshot arriving meanwhile replaces any older pending one,
// since only the newest complete list matters. Finish waits for the write in flight.
template <class Api>
class HealthStream final : public grpc::ServerWriteReactor<typename Api::Response>,
                           public HealthSubscriber {
  public:
    explicit HealthStream(HealthHub& hub) : hub_(hub) {}

    void begin() {
        spdlog::debug("health stream opened version={}", Api::kName);
        // Headers at once, so the client sees the stream open even before the first snapshot.
        this->StartSendInitialMetadata();
        hub_.subscribe(*this);
    }

    void offer(const HealthSnapshot& snapshot) override {
        {
            std::lock_guard lock(mutex_);
            if (finishStatus_)
                return;
            if (writing_) {
                pending_ = snapshot;
                return;
            }
            writing_ = true;
            toProto<Api>(*snapshot, message_);
        }
        this->StartWrite(&message_);
    }

    void close() override { finish(grpc::Status::OK); }

    void OnWriteDone(bool ok) override {
        std::optional<grpc::Status> finishNow;
        bool writeNext = false;
        {
            std::lock_guard lock(mutex_);
            writing_ = false;
            if (!ok && !finishStatus_)  // the stream is broken: the client went away
                finishStatus_ = grpc::Status::CANCELLED;
            if (finishStatus_) {
                finishNow = finishStatus_;
            } else if (pending_) {
                toProto<Api>(*pending_, message_);
                pending_.reset();
                writing_ = writeNext = true;
            }
        }
        if (finishNow)
            this->Finish(*finishNow);
        else if (writeNext)
            this->StartWrite(&message_);
    }

    void OnCancel() override { finish(grpc::Status::CANCELLED); }

    void OnDone() override {
        spdlog::debug("health stream closed version={}", Api::kName);
        hub_.unsubscribe(*this);
        unref();
    }

  private:
    ~HealthStream() override = default;

    void finish(grpc::Status status) {
        {
            std::lock_guard lock(mutex_);
            if (finishStatus_)
                return;
            finishStatus_ = status;
            if (writing_)
                return;  // OnWriteDone finishes
        }
        this->Finish(std::move(status));
    }

    HealthHub& hub_;
    std::mutex mutex_;
    bool writing_ = false;
    HealthSnapshot pending_;
    std::optional<grpc::Status> finishStatus_;  // set once: Finish is called (or due) with it
    typename Api::Response message_;            // the write in flight; untouched until it is done
};

template <class Api>
class HealthService final : public Api::Service {
  public:
    explicit HealthService(HealthHub& hub) : hub_(hub) {}

    grpc::ServerWriteReactor<typename Api::Response>* NodeWatchResources(
        grpc::CallbackServerContext*, const typename Api::Request*) override {
        auto* stream = new HealthStream<Api>(hub_);
        stream->begin();
        return stream;
    }

  private:
    HealthHub& hub_;
};

}  // namespace

std::unique_ptr<grpc::Service> makeHealthV1alpha1Service(HealthHub& hub) {
    return std::make_unique<HealthService<HealthV1alpha1>>(hub);
}

std::unique_ptr<grpc::Service> makeHealthV1Service(HealthHub& hub) {
    return std::make_unique<HealthService<HealthV1>>(hub);
}

}  // namespace numadra::plugin
