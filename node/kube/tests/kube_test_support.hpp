#pragma once
// Shared by the kube tests: quick client options, ResourceSlice bodies, and a watch running on
// its own thread with the events it saw.

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "numadra/fakes/apiserver.hpp"
#include "numadra/kube/client.hpp"

namespace numadra::kube::test {

using namespace std::chrono_literals;

// Retries in milliseconds rather than seconds, so that retry tests stay fast.
inline ClientOptions quickOptions() {
    ClientOptions options;
    options.requestTimeout = 2s;
    options.initialBackoff = 5ms;
    options.maxBackoff = 20ms;
    options.operationTimeout = 5s;
    return options;
}

inline ClusterConfig configFor(const fakes::FakeApiServer& server) {
    ClusterConfig config;
    config.server = server.url();
    return config;
}

inline Json sliceJson(const std::string& name, const std::string& node,
                      const std::string& driver = "numa.dra.dev") {
    return Json{{"apiVersion", "resource.k8s.io/v1"},
                {"kind", "ResourceSlice"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"driver", driver},
                  {"nodeName", node},
                  {"pool", {{"name", node}, {"generation", 1}, {"resourceSliceCount", 1}}},
                  {"devices", Json::array()}}}};
}

inline std::string resourceVersionOf(const Json& object) {
    return object["metadata"]["resourceVersion"].get<std::string>();
}

// A watch on its own thread; the destructor stops it.
class BackgroundWatch {
  public:
    BackgroundWatch(KubeClient& client, std::string fieldSelector, std::string resourceVersion)
        : thread_([this, &client, fieldSelector = std::move(fieldSelector),
                   resourceVersion = std::move(resourceVersion)](std::stop_token stop) {
              Status status = client.watchResourceSlices(
                  fieldSelector, resourceVersion,
                  [this](const KubeClient::WatchEvent& event) { record(event); }, stop);
              std::lock_guard lock(mutex_);
              result_ = std::move(status);
              changed_.notify_all();
          }) {}

    // Events other than BOOKMARK, as "TYPE name".
    std::vector<std::string> changes() const {
        std::lock_guard lock(mutex_);
        std::vector<std::string> seen;
        for (const auto& event : events_) {
            if (event.type != "BOOKMARK")
                seen.push_back(event.type + " " +
                               event.object["metadata"]["name"].get<std::string>());
        }
        return seen;
    }

    std::vector<KubeClient::WatchEvent> events() const {
        std::lock_guard lock(mutex_);
        return events_;
    }

    // Until `count` changes (not bookmarks) arrived; false on timeout.
    bool waitForChanges(size_t count, std::chrono::milliseconds timeout = 5s) const {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] { return changesLocked() >= count; });
    }

    bool waitForEventOfType(const std::string& type, std::chrono::milliseconds timeout = 5s) const {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, timeout, [&] {
            for (const auto& event : events_) {
                if (event.type == type)
                    return true;
            }
            return false;
        });
    }

    // The watch's own end (the server closed it, or an error), within `timeout`.
    std::optional<Status> waitForEnd(std::chrono::milliseconds timeout = 5s) const {
        std::unique_lock lock(mutex_);
        changed_.wait_for(lock, timeout, [&] { return result_.has_value(); });
        return result_;
    }

    // Requests the stop and returns the watch's result once it has returned.
    Status stop() {
        thread_.request_stop();
        if (thread_.joinable())
            thread_.join();
        std::lock_guard lock(mutex_);
        return result_.value_or(Status(Error{"watch did not return"}));
    }

  private:
    void record(const KubeClient::WatchEvent& event) {
        std::lock_guard lock(mutex_);
        events_.push_back(event);
        changed_.notify_all();
    }

    size_t changesLocked() const {
        size_t count = 0;
        for (const auto& event : events_)
            count += event.type != "BOOKMARK" ? 1 : 0;
        return count;
    }

    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::vector<KubeClient::WatchEvent> events_;
    std::optional<Status> result_;
    std::jthread thread_;  // last: it uses the members above
};

}  // namespace numadra::kube::test
