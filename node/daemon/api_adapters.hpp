#pragma once
// The daemon's adapters from its parts' interfaces to the API server (or, with --dry-run, to
// stdout): the publisher's SliceApi, the claim checks' ClaimSource, the claim status writer's
// ClaimStatusSink.

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/daemon/claim_status.hpp"
#include "numadra/daemon/claims.hpp"
#include "numadra/kube/client.hpp"
#include "numadra/slices/publisher.hpp"

namespace numadra::daemon {

// The API server as the publisher sees it.
class KubeSliceApi : public slices::SliceApi {
  public:
    KubeSliceApi(kube::KubeClient& client, std::string selector)
        : client_(client), selector_(std::move(selector)) {}
    Result<std::vector<api::Json>> list() override {
        auto listed = client_.listResourceSlices(selector_);
        if (!listed)
            return listed.error();
        return std::move(listed->items);
    }
    Result<api::Json> create(const api::Json& slice) override {
        return client_.createResourceSlice(slice);
    }
    Result<api::Json> tryCreate(const api::Json& slice) override {
        return client_.tryCreateResourceSlice(slice);
    }
    Result<api::Json> update(const api::Json& slice) override {
        return client_.updateResourceSlice(slice);
    }
    Status remove(const std::string& name, const std::string& resourceVersion) override {
        return client_.deleteResourceSlice(name, resourceVersion);
    }

  private:
    kube::KubeClient& client_;
    std::string selector_;
};

// --dry-run: the slices go to stdout as a v1 List whenever they change.
class StdoutSliceApi : public slices::SliceApi {
  public:
    Result<std::vector<api::Json>> list() override {
        std::lock_guard lock(mutex_);
        std::vector<api::Json> out;
        for (const auto& [name, object] : objects_)
            out.push_back(object);
        return out;
    }
    Result<api::Json> create(const api::Json& slice) override { return store(slice); }
    Result<api::Json> update(const api::Json& slice) override { return store(slice); }
    Status remove(const std::string& name, const std::string&) override {
        std::lock_guard lock(mutex_);
        objects_.erase(name);
        dirty_ = true;
        return Status::Ok();
    }
    void flush() {
        std::lock_guard lock(mutex_);
        if (!dirty_)
            return;
        dirty_ = false;
        api::Json list = {{"apiVersion", "v1"}, {"kind", "List"}, {"items", api::Json::array()}};
        for (const auto& [name, object] : objects_)
            list["items"].push_back(object);
        std::cout << list.dump(2) << std::endl;
    }

  private:
    Result<api::Json> store(api::Json slice) {
        std::lock_guard lock(mutex_);
        slice["metadata"]["resourceVersion"] = std::to_string(++version_);
        objects_[slice["metadata"]["name"].get<std::string>()] = slice;
        dirty_ = true;
        return slice;
    }
    std::mutex mutex_;
    std::map<std::string, api::Json> objects_;
    int version_ = 0;
    bool dirty_ = false;
};

// Short: the publisher retries later, and a shutdown waits for a write in flight.
inline constexpr std::chrono::seconds kClaimStatusWriteTimeout{5};
// A claim's GET never outlives the kubelet's call, and never takes longer than this.
inline constexpr std::chrono::seconds kClaimFetchTimeout{10};

// Server-side apply of claims' status under the driver's name as field manager.
class ApiClaimStatusSink : public ClaimStatusSink {
  public:
    ApiClaimStatusSink(kube::KubeClient& client, std::string fieldManager)
        : client_(client), fieldManager_(std::move(fieldManager)) {}
    Result<api::Json> apply(const claims::ClaimRef& claim, const api::Json& body) override {
        return client_.applyResourceClaimStatus(
            claim.ns, claim.name, body, fieldManager_,
            std::chrono::steady_clock::now() + kClaimStatusWriteTimeout);
    }

  private:
    kube::KubeClient& client_;
    std::string fieldManager_;
};

class ApiClaimSource : public ClaimSource {
  public:
    explicit ApiClaimSource(kube::KubeClient& client) : client_(client) {}
    Result<api::Json> getClaim(const std::string& ns, const std::string& name,
                               Deadline deadline) override {
        return client_.getResourceClaim(
            ns, name, std::min(deadline, std::chrono::steady_clock::now() + kClaimFetchTimeout));
    }

  private:
    kube::KubeClient& client_;
};

}  // namespace numadra::daemon
