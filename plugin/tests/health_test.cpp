// NodeWatchResources (DRAResourceHealth v1alpha1 and v1) through real sockets.

#include <pthread.h>

#include <set>
#include <stdexcept>

#include "pkg/apis/dra-health/v1/api.grpc.pb.h"
#include "pkg/apis/dra-health/v1alpha1/api.grpc.pb.h"
#include "plugin_test_support.hpp"

namespace numadra::plugin::testing {
namespace {

// A HealthSource the test drives: set() is a change.
class FakeHealthSource : public claims::HealthSource {
  public:
    void set(std::vector<claims::DeviceHealthReport> reports) {
        {
            std::lock_guard lock(mutex_);
            reports_ = std::move(reports);
        }
        notifyChange();
    }

    // Tells the listener of a change (as a health round that changed something does).
    void notifyChange() {
        std::lock_guard lock(listenerMutex_);
        if (listener_)
            listener_();
    }

    // From now on every snapshot() throws.
    void fail() {
        std::lock_guard lock(mutex_);
        failing_ = true;
    }

    std::vector<claims::DeviceHealthReport> snapshot() override {
        std::lock_guard lock(mutex_);
        ++snapshots_;
        char name[16] = {};
        ::pthread_getname_np(::pthread_self(), name, sizeof name);
        snapshotThreads_.insert(name);
        if (failing_)
            throw std::runtime_error("the health source broke");
        return reports_;
    }

    void setChangeListener(ChangeListener listener) override {
        std::lock_guard lock(listenerMutex_);
        listener_ = std::move(listener);
    }

    int snapshots() const {
        std::lock_guard lock(mutex_);
        return snapshots_;
    }

    // The names of the threads snapshot() was called on.
    std::set<std::string> snapshotThreads() const {
        std::lock_guard lock(mutex_);
        return snapshotThreads_;
    }

  private:
    mutable std::mutex mutex_;
    std::vector<claims::DeviceHealthReport> reports_;
    bool failing_ = false;
    int snapshots_ = 0;
    std::set<std::string> snapshotThreads_;
    std::mutex listenerMutex_;  // held while the listener runs, as setChangeListener promises
    ChangeListener listener_;
};

claims::DeviceHealthReport report(const std::string& device,
                                  claims::DeviceHealthReport::State state,
                                  const std::string& message = "") {
    return claims::DeviceHealthReport{"node-1", device, state, message, 1'750'000'000, 20};
}

class HealthTest : public ::testing::Test {
  protected:
    void start(claims::HealthSource* healthSource, std::chrono::milliseconds resend = 10s) {
        auto options = dirs.options();
        options.healthResendInterval = resend;
        options.shutdownGrace = 2s;
        server = std::make_unique<PluginServer>(options, preparer, healthSource);
        auto started = server->start();
        ASSERT_TRUE(started.ok()) << started.error().message;
        channel = connect(server->draSocketPath());
        stub_ = v1alpha1::DRAResourceHealth::NewStub(channel);
    }

    // One kubelet-like watcher on the v1alpha1 service.
    struct Watch {
        grpc::ClientContext context;
        std::unique_ptr<grpc::ClientReader<v1alpha1::NodeWatchResourcesResponse>> reader;
    };
    std::unique_ptr<Watch> watch() {
        auto result = std::make_unique<Watch>();
        result->reader = stub_->NodeWatchResources(&result->context, {});
        return result;
    }

    PluginDirs dirs;
    ScriptedPreparer preparer;
    FakeHealthSource source;  // outlives the server, whose loop calls it
    std::unique_ptr<PluginServer> server;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<v1alpha1::DRAResourceHealth::Stub> stub_;
};

TEST_F(HealthTest, WithoutASourceTheStreamStaysOpenSilentlyUntilTheClientLeaves) {
    start(nullptr);
    auto w = watch();
    w->reader->WaitForInitialMetadata();  // the stream is open

    std::atomic<bool> readReturned{false};
    bool gotMessage = true;
    std::jthread reader([&] {
        v1alpha1::NodeWatchResourcesResponse message;
        gotMessage = w->reader->Read(&message);
        readReturned = true;
    });
    std::this_thread::sleep_for(300ms);
    EXPECT_FALSE(readReturned.load()) << "nothing is sent, and the stream does not end";
    w->context.TryCancel();
    reader.join();
    EXPECT_FALSE(gotMessage);
    EXPECT_EQ(w->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(HealthTest, WithoutASourceTheV1StreamStaysOpenToo) {
    start(nullptr);
    auto stub = v1::DRAResourceHealth::NewStub(channel);
    grpc::ClientContext context;
    context.set_deadline(in(300ms));
    auto reader = stub->NodeWatchResources(&context, {});
    reader->WaitForInitialMetadata();
    v1::NodeWatchResourcesResponse message;
    EXPECT_FALSE(reader->Read(&message));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED)
        << "open until the client's own deadline, never ended by the server";
}

TEST_F(HealthTest, StopEndsOpenStreamsPromptlyAndCleanly) {
    start(nullptr);
    std::vector<std::unique_ptr<Watch>> watches;
    for (int i = 0; i < 5; ++i) {
        watches.push_back(watch());
        watches.back()->reader->WaitForInitialMetadata();
    }
    auto begin = std::chrono::steady_clock::now();
    server->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
    for (auto& w : watches) {
        v1alpha1::NodeWatchResourcesResponse message;
        EXPECT_FALSE(w->reader->Read(&message));
        EXPECT_TRUE(w->reader->Finish().ok());
    }
}

TEST_F(HealthTest, SendsASnapshotAtOnceAndOnEveryChange) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy),
                report("gpu-1", claims::DeviceHealthReport::State::Unknown)});
    start(&source);
    auto w = watch();

    v1alpha1::NodeWatchResourcesResponse message;
    ASSERT_TRUE(w->reader->Read(&message));
    ASSERT_EQ(message.devices_size(), 2);
    const auto& first = message.devices(0);
    EXPECT_EQ(first.device().pool_name(), "node-1");
    EXPECT_EQ(first.device().device_name(), "gpu-0");
    EXPECT_EQ(first.health(), v1alpha1::HEALTHY);
    EXPECT_EQ(first.last_updated_time(), 1'750'000'000);
    EXPECT_EQ(first.health_check_timeout_seconds(), 20);
    EXPECT_EQ(message.devices(1).health(), v1alpha1::UNKNOWN);

    source.set(
        {report("gpu-0", claims::DeviceHealthReport::State::Unhealthy, "XID 79: fell off the bus"),
         report("gpu-1", claims::DeviceHealthReport::State::Healthy)});
    ASSERT_TRUE(w->reader->Read(&message));
    ASSERT_EQ(message.devices_size(), 2);
    EXPECT_EQ(message.devices(0).health(), v1alpha1::UNHEALTHY);
    EXPECT_EQ(message.devices(0).message(), "XID 79: fell off the bus");
    EXPECT_EQ(message.devices(1).health(), v1alpha1::HEALTHY);

    w->context.TryCancel();
}

TEST_F(HealthTest, TheV1ServiceSendsTheSameSnapshots) {
    source.set({report("nic-0", claims::DeviceHealthReport::State::Unhealthy, "link down")});
    start(&source);
    auto stub = v1::DRAResourceHealth::NewStub(channel);
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    v1::NodeWatchResourcesResponse message;
    ASSERT_TRUE(reader->Read(&message));
    ASSERT_EQ(message.devices_size(), 1);
    EXPECT_EQ(message.devices(0).device().device_name(), "nic-0");
    EXPECT_EQ(message.devices(0).health(), v1::UNHEALTHY);
    EXPECT_EQ(message.devices(0).message(), "link down");
    context.TryCancel();
}

TEST_F(HealthTest, ResendsTheSnapshotPeriodicallyWithoutChanges) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    start(&source, 100ms);
    auto w = watch();
    auto begin = std::chrono::steady_clock::now();
    v1alpha1::NodeWatchResourcesResponse message;
    for (int i = 0; i < 4; ++i) {
        ASSERT_TRUE(w->reader->Read(&message));
        EXPECT_EQ(message.devices_size(), 1);
    }
    auto elapsed = std::chrono::steady_clock::now() - begin;
    EXPECT_GE(elapsed, 250ms) << "resent every 100 ms, not in a burst";
    EXPECT_LT(elapsed, 2s);
    w->context.TryCancel();
}

TEST_F(HealthTest, SnapshotsAreTakenOnTheServersLoopThreadAlone) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    start(&source, 50ms);
    auto w = watch();
    v1alpha1::NodeWatchResourcesResponse message;
    for (int i = 0; i < 3; ++i) {
        source.notifyChange();
        ASSERT_TRUE(w->reader->Read(&message));
    }
    EXPECT_EQ(source.snapshotThreads(), std::set<std::string>{"plugin-grpc"});
    w->context.TryCancel();
}

TEST_F(HealthTest, AFailingSourceIsAskedAgainOnlyAtTheResendInterval) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    source.fail();
    start(&source, 200ms);
    // A source that reports a change every millisecond and fails every snapshot.
    std::jthread changes([this](const std::stop_token& stop) {
        while (!stop.stop_requested()) {
            source.notifyChange();
            std::this_thread::sleep_for(1ms);
        }
    });
    std::this_thread::sleep_for(1s);
    changes.request_stop();
    changes.join();
    const int snapshots = source.snapshots();
    EXPECT_GE(snapshots, 2) << "still asked at the resend interval";
    EXPECT_LE(snapshots, 8) << "about one a resend interval (200 ms) over 1 s, not one a change";
}

TEST_F(HealthTest, ManyStreamsGetTheSameSnapshots) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    start(&source);
    std::vector<std::unique_ptr<Watch>> watches;
    for (int i = 0; i < 10; ++i)
        watches.push_back(watch());
    for (auto& w : watches) {
        v1alpha1::NodeWatchResourcesResponse message;
        ASSERT_TRUE(w->reader->Read(&message));
        EXPECT_EQ(message.devices(0).health(), v1alpha1::HEALTHY);
    }
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Unhealthy)});
    for (auto& w : watches) {
        v1alpha1::NodeWatchResourcesResponse message;
        ASSERT_TRUE(w->reader->Read(&message));
        EXPECT_EQ(message.devices(0).health(), v1alpha1::UNHEALTHY);
        w->context.TryCancel();
    }
}

TEST_F(HealthTest, ReconnectingClientsLeaveNoThreadsBehind) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    start(&source, 50ms);
    auto round = [&] {
        std::vector<std::unique_ptr<Watch>> watches;
        for (int i = 0; i < 20; ++i)
            watches.push_back(watch());
        for (auto& w : watches) {
            v1alpha1::NodeWatchResourcesResponse message;
            EXPECT_TRUE(w->reader->Read(&message));
        }
        for (auto& w : watches) {
            w->context.TryCancel();
            v1alpha1::NodeWatchResourcesResponse message;
            while (w->reader->Read(&message)) {
            }
            w->reader->Finish();
        }
    };
    round();  // warm up: gRPC starts its own pools lazily
    std::this_thread::sleep_for(200ms);
    int before = threadCount();
    for (int i = 0; i < 10; ++i)
        round();
    std::this_thread::sleep_for(200ms);
    int after = threadCount();
    EXPECT_LE(after, before + 2) << "threads before " << before << ", after " << after;
}

TEST_F(HealthTest, StopEndsStreamsWithASourceToo) {
    source.set({report("gpu-0", claims::DeviceHealthReport::State::Healthy)});
    start(&source, 50ms);
    auto w = watch();
    v1alpha1::NodeWatchResourcesResponse message;
    ASSERT_TRUE(w->reader->Read(&message));
    auto begin = std::chrono::steady_clock::now();
    server->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - begin, 1s);
    while (w->reader->Read(&message)) {
    }
    EXPECT_TRUE(w->reader->Finish().ok());
}

TEST_F(HealthTest, WithHealthOffTheServiceIsNotServed) {
    auto options = dirs.options();
    options.serveHealth = false;
    server = std::make_unique<PluginServer>(options, preparer, nullptr);
    ASSERT_TRUE(server->start().ok());
    auto stub = v1alpha1::DRAResourceHealth::NewStub(connect(server->draSocketPath()));
    grpc::ClientContext context;
    auto reader = stub->NodeWatchResources(&context, {});
    v1alpha1::NodeWatchResourcesResponse message;
    EXPECT_FALSE(reader->Read(&message));
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace numadra::plugin::testing
