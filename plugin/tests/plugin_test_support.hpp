#pragma once
// Shared by the plugin tests: a temp folder with short paths, a scriptable ClaimPreparer, and
// gRPC clients playing the kubelet.

#include <dirent.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "numadra/plugin/server.hpp"
#include "numadra/testing/temp_tree.hpp"
#include "numadra/testing/threads.hpp"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/dra/v1beta1/api.grpc.pb.h"
#include "pkg/apis/pluginregistration/v1/api.grpc.pb.h"

namespace numadra::plugin::testing {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;
using namespace std::chrono_literals;

// A preparer whose behaviour each test scripts; records every call.
//   onRecords   the local lane's answer from records (default: none, so the claim is fetched)
//   onPrepare   what fetching and preparing a claim gives; runs as the fetch, on the API lane,
//               with the call's deadline
//   whilePreparing  runs in prepareFetched (after the fetch, under the rolling-update lock)
//   onUnprepare the local lane's Unprepare
//   onSync      syncWithOtherInstances (rolling-update mode, under the lock, before each claim)
class ScriptedPreparer : public claims::ClaimPreparer {
  public:
    std::function<void(const claims::ClaimRef&)> whilePreparing = [](const claims::ClaimRef&) {};
    std::function<std::optional<claims::ClaimPrepareResult>(const claims::ClaimRef&)> onRecords =
        [](const claims::ClaimRef&) { return std::optional<claims::ClaimPrepareResult>(); };
    std::function<claims::ClaimPrepareResult(const claims::ClaimRef&, claims::Deadline)> onPrepare =
        [](const claims::ClaimRef&, claims::Deadline) { return claims::ClaimPrepareResult{}; };
    std::function<std::string(const claims::ClaimRef&, claims::Deadline)> onUnprepare =
        [](const claims::ClaimRef&, claims::Deadline) { return std::string(); };
    std::function<std::string()> onSync = [] { return std::string(); };

    std::optional<claims::ClaimPrepareResult> prepareFromRecords(
        const claims::ClaimRef& claim) override {
        return onRecords(claim);
    }
    Result<claims::ClaimObject> fetch(const claims::ClaimRef& claim,
                                      claims::Deadline deadline) override {
        record(claim, deadline);
        claims::ClaimPrepareResult result = onPrepare(claim, deadline);
        std::lock_guard lock(mutex_);
        const std::uint64_t token = nextToken_++;
        scripted_.emplace(token, std::move(result));
        return claims::ClaimObject{{"token", token}};
    }
    claims::ClaimPrepareResult prepareFetched(const claims::ClaimRef& claim,
                                              const claims::ClaimObject& object) override {
        whilePreparing(claim);
        std::lock_guard lock(mutex_);
        auto scripted = scripted_.extract(object.at("token").get<std::uint64_t>());
        return std::move(scripted.mapped());
    }
    std::string unprepare(const claims::ClaimRef& claim, claims::Deadline deadline) override {
        record(claim, deadline);
        return onUnprepare(claim, deadline);
    }
    std::string syncWithOtherInstances() override { return onSync(); }
    void report(const claims::ClaimOutcome& outcome,
                const claims::ClaimPrepareResult& result) override {
        std::lock_guard lock(mutex_);
        reports_.emplace_back(outcome, result);
    }

    std::vector<claims::ClaimRef> calls() const {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    std::vector<claims::Deadline> deadlines() const {
        std::lock_guard lock(mutex_);
        return deadlines_;
    }
    std::vector<std::pair<claims::ClaimOutcome, claims::ClaimPrepareResult>> reports() const {
        std::lock_guard lock(mutex_);
        return reports_;
    }

  private:
    void record(const claims::ClaimRef& claim, claims::Deadline deadline) {
        std::lock_guard lock(mutex_);
        calls_.push_back(claim);
        deadlines_.push_back(deadline);
    }
    mutable std::mutex mutex_;
    std::vector<claims::ClaimRef> calls_;
    std::vector<claims::Deadline> deadlines_;
    std::vector<std::pair<claims::ClaimOutcome, claims::ClaimPrepareResult>> reports_;
    std::map<std::uint64_t, claims::ClaimPrepareResult> scripted_;
    std::uint64_t nextToken_ = 0;
};

// Tracks how many calls run at the same time.
class ConcurrencyGauge {
  public:
    void enter() {
        auto now = ++current_;
        auto seen = peak_.load();
        while (now > seen && !peak_.compare_exchange_weak(seen, now)) {
        }
    }
    void leave() { --current_; }
    int peak() const { return peak_.load(); }

  private:
    std::atomic<int> current_{0};
    std::atomic<int> peak_{0};
};

// Registry and plugin folders inside a fresh temp folder (short, so sockets fit in sun_path).
struct PluginDirs {
    numadra::testing::TempTree tree;
    std::string registry = tree.path("registry");
    std::string plugin = tree.path("plugin");

    PluginServerOptions options(std::string driver = "numa.dra.dev") const {
        PluginServerOptions options;
        options.driverName = std::move(driver);
        options.registryDir = registry;
        options.pluginDir = plugin;
        return options;
    }
};

inline std::shared_ptr<grpc::Channel> connect(const std::string& socketPath) {
    return grpc::CreateChannel("unix:" + socketPath, grpc::InsecureChannelCredentials());
}

inline std::chrono::system_clock::time_point in(std::chrono::milliseconds duration) {
    return std::chrono::system_clock::now() + duration;
}

inline bool isSocket(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && S_ISSOCK(info.st_mode);
}

inline bool exists(const std::string& path) {
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0;
}

inline int threadCount() {
    return static_cast<int>(numadra::testing::threadNames().size());
}

inline int openFileCount() {
    int count = 0;
    if (DIR* dir = ::opendir("/proc/self/fd")) {
        while (dirent* entry = ::readdir(dir)) {
            if (entry->d_name[0] != '.')
                ++count;
        }
        ::closedir(dir);
    }
    return count;
}

// Polls `condition` until it holds or `timeout` passes.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds timeout = 5s) {
    auto end = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < end) {
        if (condition())
            return true;
        std::this_thread::sleep_for(5ms);
    }
    return condition();
}

template <class Request>
void addClaim(Request& request, const std::string& ns, const std::string& name,
              const std::string& uid) {
    auto* claim = request.add_claims();
    claim->set_namespace_(ns);
    claim->set_name(name);
    claim->set_uid(uid);
}

}  // namespace numadra::plugin::testing
