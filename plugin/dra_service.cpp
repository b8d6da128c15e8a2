#include "dra_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <unordered_set>
#include <utility>
#include <vector>

#include "file_lock.hpp"
#include "numadra/common/text.hpp"
#include "pkg/apis/dra/v1/api.grpc.pb.h"
#include "pkg/apis/dra/v1beta1/api.grpc.pb.h"

namespace numadra::plugin {
namespace {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The generated types of one API version. v1beta1 is v1 without Device.share_id.
struct DraV1 {
    using Service = drav1::DRAPlugin::CallbackService;
    using PrepareRequest = drav1::NodePrepareResourcesRequest;
    using PrepareResponse = drav1::NodePrepareResourcesResponse;
    using UnprepareRequest = drav1::NodeUnprepareResourcesRequest;
    using UnprepareResponse = drav1::NodeUnprepareResourcesResponse;
    using Claim = drav1::Claim;
    static constexpr bool kHasShareId = true;
};

struct DraV1beta1 {
    using Service = drav1beta1::DRAPlugin::CallbackService;
    using PrepareRequest = drav1beta1::NodePrepareResourcesRequest;
    using PrepareResponse = drav1beta1::NodePrepareResourcesResponse;
    using UnprepareRequest = drav1beta1::NodeUnprepareResourcesRequest;
    using UnprepareResponse = drav1beta1::NodeUnprepareResourcesResponse;
    using Claim = drav1beta1::Claim;
    static constexpr bool kHasShareId = false;
};

enum class Operation { Prepare, Unprepare };

// The claims of one request: the distinct valid ones to run, and the entries answered without
// running anything (a claim without a UID cannot be prepared, and still needs its entry).
struct BatchPlan {
    std::vector<ClaimRef> claims;
    std::vector<std::pair<std::string, std::string>> rejected;  // map key, error
};

template <class Claims>
BatchPlan planBatch(const Claims& requested) {
    BatchPlan plan;
    std::unordered_set<std::string> seen;
    for (const auto& claim : requested) {
        if (claim.uid().empty()) {
            plan.rejected.emplace_back(
                "", "claim " + claim.namespace_() + "/" + claim.name() + " has no uid");
            continue;
        }
        // The response is a map keyed by UID: a claim listed twice gets one entry, run once.
        if (seen.insert(claim.uid()).second)
            plan.claims.push_back(ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
    }
    return plan;
}

Deadline toSteadyDeadline(std::chrono::system_clock::time_point deadline) {
    auto systemNow = std::chrono::system_clock::now();
    // gRPC reports "no deadline" as time_point::max(); anything this far away means the same.
    if (deadline > systemNow + std::chrono::hours(24 * 365))
        return Deadline::max();
    return std::chrono::steady_clock::now() +
           std::chrono::duration_cast<std::chrono::steady_clock::duration>(deadline - systemNow);
}

grpc::Status endedStatus(Deadline deadline) {
    if (std::chrono::steady_clock::now() >= deadline)
        return {grpc::StatusCode::DEADLINE_EXCEEDED,
                "deadline exceeded before all claims were done"};
    return {grpc::StatusCode::CANCELLED, "call cancelled before all claims were done"};
}

std::string describe(const std::exception_ptr& failure) {
    try {
        std::rethrow_exception(failure);
    } catch (const std::exception& e) {
        return std::string("internal error: ") + e.what();
    } catch (...) {
        return "internal error: unknown exception";
    }
}

// One NodePrepareResources / NodeUnprepareResources call in flight. Shared by its reactor and
// the pool tasks working on it; whoever ends the call first (the last claim done, or gRPC's
// cancellation) finishes it exactly once, and the other side then only drops its results.
class ClaimBatch {
  public:
    using FillResponse =
        std::function<void(const BatchPlan& plan, const std::vector<ClaimPrepareResult>& results)>;

    ClaimBatch(ClaimRunner& runner, Operation operation, BatchPlan plan, Deadline deadline,
               FillResponse fill, grpc::ServerUnaryReactor& reactor)
        : runner_(runner),
          operation_(operation),
          plan_(std::move(plan)),
          deadline_(deadline),
          fill_(std::move(fill)),
          reactor_(reactor),
          results_(plan_.claims.size()),
          remaining_(plan_.claims.size()) {}

    static void start(const std::shared_ptr<ClaimBatch>& batch) {
        if (batch->plan_.claims.empty()) {
            batch->complete();
            return;
        }
        auto lanes =
            std::min(batch->plan_.claims.size(),
                     std::max<std::size_t>(1, batch->runner_.settings().maxParallelClaimsPerCall));
        for (std::size_t lane = 0; lane < lanes; ++lane)
            batch->runner_.pool().submit([batch] { batch->drain(); });
    }

    // gRPC cancelled the call: its response may be freed once we finish, so never touch it again.
    void abandon() {
        if (finished_.exchange(true))
            return;
        reactor_.Finish(endedStatus(deadline_));
    }

  private:
    // A lane: takes the next unstarted claim until none is left.
    void drain() {
        for (auto index = next_.fetch_add(1); index < plan_.claims.size();
             index = next_.fetch_add(1)) {
            results_[index] = runClaim(plan_.claims[index]);
            if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
                complete();
        }
    }

    void complete() {
        if (finished_.exchange(true))
            return;
        fill_(plan_, results_);
        reactor_.Finish(grpc::Status::OK);
    }

    ClaimPrepareResult runClaim(const ClaimRef& claim) {
        if (finished_.load())
            return {{}, "call ended before this claim was handled"};
        if (std::chrono::steady_clock::now() >= deadline_)
            return {{}, "deadline exceeded before this claim was handled"};
        std::optional<FileLock> serialized;
        if (const auto& lockPath = runner_.settings().serializeLockPath) {
            auto lock = FileLock::acquire(*lockPath, deadline_);
            if (!lock)
                return {{}, lock.error().message};
            serialized.emplace(std::move(lock).value());
        }
        ClaimPrepareResult result = invokePreparer(claim);
        logOutcome(claim, result);
        return result;
    }

    ClaimPrepareResult invokePreparer(const ClaimRef& claim) {
        try {
            if (operation_ == Operation::Prepare)
                return runner_.preparer().prepare(claim, deadline_);
            return {{}, runner_.preparer().unprepare(claim, deadline_)};
        } catch (...) {
            return {{}, describe(std::current_exception())};
        }
    }

    void logOutcome(const ClaimRef& claim, const ClaimPrepareResult& result) const {
        const char* verb = operation_ == Operation::Prepare ? "prepare" : "unprepare";
        if (!result.error.empty())
            spdlog::error("claim {} failed claim={}/{} uid={} error={}", verb, claim.ns, claim.name,
                          claim.uid, result.error);
        else if (operation_ == Operation::Prepare)
            spdlog::info("claim prepared claim={}/{} uid={} devices={}", claim.ns, claim.name,
                         claim.uid, result.devices.size());
        else
            spdlog::info("claim unprepared claim={}/{} uid={}", claim.ns, claim.name, claim.uid);
    }

    ClaimRunner& runner_;
    const Operation operation_;
    const BatchPlan plan_;
    const Deadline deadline_;
    const FillResponse fill_;
    grpc::ServerUnaryReactor& reactor_;
    std::vector<ClaimPrepareResult> results_;  // slot i written only by the lane that took claim i
    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> remaining_;
    std::atomic<bool> finished_{false};
};

class BatchReactor final : public grpc::ServerUnaryReactor {
  public:
    void attach(std::shared_ptr<ClaimBatch> batch) { batch_ = std::move(batch); }
    void OnCancel() override {
        // A local reference: finishing may run OnDone, which deletes this reactor and batch_.
        if (auto batch = batch_)
            batch->abandon();
    }
    void OnDone() override { delete this; }

  private:
    ~BatchReactor() override = default;
    std::shared_ptr<ClaimBatch> batch_;
};

grpc::ServerUnaryReactor* runBatch(ClaimRunner& runner, grpc::CallbackServerContext& context,
                                   Operation operation, BatchPlan plan,
                                   ClaimBatch::FillResponse fill) {
    auto* reactor = new BatchReactor();
    auto deadline = toSteadyDeadline(context.deadline());
    // Nothing useful can be returned for a call that is already over: say why, not a partial map.
    if (context.IsCancelled() || std::chrono::steady_clock::now() >= deadline) {
        reactor->Finish(endedStatus(deadline));
        return reactor;
    }
    auto batch = std::make_shared<ClaimBatch>(runner, operation, std::move(plan), deadline,
                                              std::move(fill), *reactor);
    reactor->attach(batch);
    ClaimBatch::start(batch);
    return reactor;
}

template <class Api, class Entry>
void addDevices(Entry& entry, const std::vector<PreparedDevice>& devices) {
    for (const auto& device : devices) {
        auto* out = entry.add_devices();
        for (const auto& request : device.requestNames)
            out->add_request_names(request);
        out->set_pool_name(device.poolName);
        out->set_device_name(device.deviceName);
        for (const auto& id : device.cdiDeviceIds)
            out->add_cdi_device_ids(id);
        if constexpr (Api::kHasShareId) {
            if (device.shareId)
                out->set_share_id(*device.shareId);
        }
    }
}

template <class Api>
void fillPrepareResponse(typename Api::PrepareResponse& response, const BatchPlan& plan,
                         const std::vector<ClaimPrepareResult>& results) {
    auto& claims = *response.mutable_claims();
    for (const auto& [uid, error] : plan.rejected)
        claims[uid].set_error(text::escapeInvalidUtf8(error));
    for (std::size_t i = 0; i < plan.claims.size(); ++i) {
        auto& entry = claims[plan.claims[i].uid];
        if (!results[i].error.empty())
            entry.set_error(text::escapeInvalidUtf8(results[i].error));
        else
            addDevices<Api>(entry, results[i].devices);
    }
}

template <class Api>
void fillUnprepareResponse(typename Api::UnprepareResponse& response, const BatchPlan& plan,
                           const std::vector<ClaimPrepareResult>& results) {
    auto& claims = *response.mutable_claims();
    for (const auto& [uid, error] : plan.rejected)
        claims[uid].set_error(text::escapeInvalidUtf8(error));
    for (std::size_t i = 0; i < plan.claims.size(); ++i) {
        auto& entry = claims[plan.claims[i].uid];  // present even when empty: that is success
        if (!results[i].error.empty())
            entry.set_error(text::escapeInvalidUtf8(results[i].error));
    }
}

template <class Api>
class DraService final : public Api::Service {
  public:
    explicit DraService(ClaimRunner& runner) : runner_(runner) {}

    grpc::ServerUnaryReactor* NodePrepareResources(
        grpc::CallbackServerContext* context, const typename Api::PrepareRequest* request,
        typename Api::PrepareResponse* response) override {
        return runBatch(runner_, *context, Operation::Prepare, planBatch(request->claims()),
                        [response](const BatchPlan& plan, const auto& results) {
                            fillPrepareResponse<Api>(*response, plan, results);
                        });
    }

    grpc::ServerUnaryReactor* NodeUnprepareResources(
        grpc::CallbackServerContext* context, const typename Api::UnprepareRequest* request,
        typename Api::UnprepareResponse* response) override {
        return runBatch(runner_, *context, Operation::Unprepare, planBatch(request->claims()),
                        [response](const BatchPlan& plan, const auto& results) {
                            fillUnprepareResponse<Api>(*response, plan, results);
                        });
    }

  private:
    ClaimRunner& runner_;
};

}  // namespace

std::unique_ptr<grpc::Service> makeDraV1Service(ClaimRunner& runner) {
    return std::make_unique<DraService<DraV1>>(runner);
}

std::unique_ptr<grpc::Service> makeDraV1beta1Service(ClaimRunner& runner) {
    return std::make_unique<DraService<DraV1beta1>>(runner);
}

}  // namespace numadra::plugin
