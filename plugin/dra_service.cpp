#include "dra_service.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <unordered_set>
#include <utility>
#include <vector>

#include "numadra/common/text.hpp"
#include "numadra/plugin/file_lock.hpp"
#include "pkg/apis/dra/v1/api.pb.h"
#include "pkg/apis/dra/v1beta1/api.pb.h"

namespace numadra::plugin {
namespace {

namespace drav1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace drav1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

// The generated types of one API version. v1beta1 is v1 without Device.share_id.
struct DraV1 {
    static constexpr const char* kService = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/";
    using PrepareRequest = drav1::NodePrepareResourcesRequest;
    using PrepareResponse = drav1::NodePrepareResourcesResponse;
    using UnprepareRequest = drav1::NodeUnprepareResourcesRequest;
    using UnprepareResponse = drav1::NodeUnprepareResourcesResponse;
    using Claim = drav1::Claim;
    static constexpr bool kHasShareId = true;
};

struct DraV1beta1 {
    static constexpr const char* kService = "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/";
    using PrepareRequest = drav1beta1::NodePrepareResourcesRequest;
    using PrepareResponse = drav1beta1::NodePrepareResourcesResponse;
    using UnprepareRequest = drav1beta1::NodeUnprepareResourcesRequest;
    using UnprepareResponse = drav1beta1::NodeUnprepareResourcesResponse;
    using Claim = drav1beta1::Claim;
    static constexpr bool kHasShareId = false;
};

using Operation = claims::ClaimOutcome::Operation;

// The claims of one request: the distinct valid ones to run, and the entries answered without
// running anything (a claim without a UID cannot be prepared, and still needs its entry).
struct BatchPlan {
    std::vector<claims::ClaimRef> claims;
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
            plan.claims.push_back(claims::ClaimRef{claim.namespace_(), claim.name(), claim.uid()});
    }
    return plan;
}

rpc::RpcStatus endedStatus(claims::Deadline deadline) {
    if (std::chrono::steady_clock::now() >= deadline)
        return {rpc::StatusCode::DeadlineExceeded, "deadline exceeded before all claims were done"};
    return {rpc::StatusCode::Cancelled, "call cancelled before all claims were done"};
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

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// One NodePrepareResources / NodeUnprepareResources call in flight. Shared by the lane tasks
// working on it; whoever ends the call first (the last claim answered, or its cancellation) ends
// it exactly once, and the other side then only drops its results.
//
// Each lane runs at most maxParallelClaimsPerCall tasks of one call; a task takes the call's
// next claim for its lane until none is left, so a call with many claims takes turns with the
// others instead of filling a lane.
class ClaimBatch : public std::enable_shared_from_this<ClaimBatch> {
  public:
    // The serialized response message.
    using FillResponse = std::function<std::string(
        const BatchPlan& plan, const std::vector<claims::ClaimPrepareResult>& results)>;

    ClaimBatch(ClaimRunner& runner, Operation operation, BatchPlan plan, claims::Deadline deadline,
               FillResponse fill, std::shared_ptr<rpc::UnaryCall> call)
        : runner_(runner),
          operation_(operation),
          plan_(std::move(plan)),
          deadline_(deadline),
          fill_(std::move(fill)),
          call_(std::move(call)),
          arrived_(Clock::now()),
          results_(plan_.claims.size()),
          waited_(plan_.claims.size()),
          remaining_(plan_.claims.size()) {}

    static void start(const std::shared_ptr<ClaimBatch>& batch) {
        if (batch->plan_.claims.empty()) {
            batch->complete();
            return;
        }
        const auto tasks = std::min(batch->plan_.claims.size(), batch->maxTasksPerLane());
        for (std::size_t task = 0; task < tasks; ++task)
            batch->runner_.localLane().submit([batch] { batch->drainLocalLane(); });
    }

    // The call was cancelled: the server has answered the client itself (CANCELLED, or
    // DEADLINE_EXCEEDED), so the claims still running only drop their results.
    void abandon() { finished_.store(true); }

  private:
    std::size_t maxTasksPerLane() const {
        return std::max<std::size_t>(1, runner_.settings().maxParallelClaimsPerCall);
    }

    void drainLocalLane() {
        for (auto index = nextLocal_.fetch_add(1); index < plan_.claims.size();
             index = nextLocal_.fetch_add(1)) {
            waited_[index] += Clock::now() - arrived_;
            runLocally(index);
        }
    }

    void runLocally(std::size_t index) {
        const claims::ClaimRef& claim = plan_.claims[index];
        if (auto ended = endedBeforeStart(index))
            return answer(index, std::move(*ended), claims::ClaimOutcome::Source::None);
        auto serialized = takeTurn();
        if (!serialized)
            return answer(index, {{}, serialized.error().message},
                          claims::ClaimOutcome::Source::None);
        if (operation_ == Operation::Unprepare) {
            auto error = guarded([&] {
                return claims::ClaimPrepareResult{{}, preparer().unprepare(claim, deadline_)};
            });
            return answer(index, std::move(error), claims::ClaimOutcome::Source::None);
        }
        std::optional<claims::ClaimPrepareResult> known;
        auto lookedUp = guarded([&] {
            known = preparer().prepareFromRecords(claim);
            return claims::ClaimPrepareResult{};
        });
        if (!lookedUp.error.empty())
            return answer(index, std::move(lookedUp), claims::ClaimOutcome::Source::None);
        if (known)
            return answer(index, std::move(*known), claims::ClaimOutcome::Source::Records);
        queueForApi(index);
    }

    void queueForApi(std::size_t index) {
        {
            std::lock_guard lock(apiMutex_);
            apiQueue_.push_back({index, Clock::now()});
            if (apiTasks_ == maxTasksPerLane())
                return;  // a running task of this call will take it
            ++apiTasks_;
        }
        runner_.apiLane().submit([batch = shared_from_this()] { batch->drainApiLane(); });
    }

    void drainApiLane() {
        while (true) {
            QueuedClaim next{};
            {
                std::lock_guard lock(apiMutex_);
                if (apiQueue_.empty()) {
                    --apiTasks_;
                    return;
                }
                next = apiQueue_.front();
                apiQueue_.pop_front();
            }
            waited_[next.index] += Clock::now() - next.queuedAt;
            runWithApi(next.index);
        }
    }

    void runWithApi(std::size_t index) {
        const claims::ClaimRef& claim = plan_.claims[index];
        if (auto ended = endedBeforeStart(index))
            return answer(index, std::move(*ended), claims::ClaimOutcome::Source::None);
        std::optional<claims::ClaimObject> object;
        auto fetched = guarded([&] {
            auto result = preparer().fetch(claim, deadline_);
            if (!result)
                return claims::ClaimPrepareResult{{}, result.error().message};
            object = std::move(result).value();
            return claims::ClaimPrepareResult{};
        });
        if (!object)
            return answer(index, std::move(fetched), claims::ClaimOutcome::Source::Api);
        // Only now, with the claim in hand: the lock is never held across a network wait.
        auto serialized = takeTurn();
        if (!serialized)
            return answer(index, {{}, serialized.error().message},
                          claims::ClaimOutcome::Source::Api);
        answer(index, guarded([&] { return preparer().prepareFetched(claim, *object); }),
               claims::ClaimOutcome::Source::Api);
    }

    // The answer for a claim whose call is over or whose deadline passed before it could
    // start; nullopt when it may start.
    std::optional<claims::ClaimPrepareResult> endedBeforeStart(std::size_t index) const {
        const char* why = finished_.load()            ? "the call ended"
                          : Clock::now() >= deadline_ ? "deadline exceeded"
                                                      : nullptr;
        if (why == nullptr)
            return std::nullopt;
        return claims::ClaimPrepareResult{{},
                                          std::string(why) +
                                              " before this claim was handled (it waited " +
                                              formatSeconds(waited_[index]) + " for a worker)"};
    }

    Result<std::optional<FileLock>> holdSerializeLock() const {
        const auto& lockPath = runner_.settings().serializeLockPath;
        if (!lockPath)
            return std::optional<FileLock>();
        auto lock = FileLock::acquire(*lockPath, deadline_);
        if (!lock)
            return lock.error();
        return std::optional<FileLock>(std::move(lock).value());
    }

    // Rolling-update mode: the node-wide lock, then what the other instance did meanwhile.
    Result<std::optional<FileLock>> takeTurn() {
        auto lock = holdSerializeLock();
        if (!lock || !lock->has_value())
            return lock;
        auto synced = guarded([&] {
            return claims::ClaimPrepareResult{{}, preparer().syncWithOtherInstances()};
        });
        if (!synced.error.empty())
            return Error{synced.error};
        return lock;
    }

    // A preparer step, with an exception turned into the claim's error.
    template <class Step>
    static claims::ClaimPrepareResult guarded(Step&& step) {
        try {
            return step();
        } catch (...) {
            return {{}, describe(std::current_exception())};
        }
    }

    void answer(std::size_t index, claims::ClaimPrepareResult result,
                claims::ClaimOutcome::Source source) {
        claims::ClaimOutcome outcome;
        outcome.operation = operation_;
        outcome.claim = plan_.claims[index];
        outcome.source = source;
        outcome.waited = waited_[index];
        outcome.took = Clock::now() - arrived_;
        outcome.deadlineMissed = finished_.load() || Clock::now() >= deadline_;
        try {
            preparer().report(outcome, result);
        } catch (...) {
            spdlog::error("reporting a claim failed claim={}/{} uid={} error=\"{}\"",
                          outcome.claim.ns, outcome.claim.name, outcome.claim.uid,
                          describe(std::current_exception()));
        }
        results_[index] = std::move(result);
        if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1)
            complete();
    }

    void complete() {
        if (finished_.exchange(true))
            return;
        call_->finish(rpc::RpcStatus::ok(), fill_(plan_, results_));
    }

    static std::string formatSeconds(Seconds seconds) {
        return fmt::format("{:.3f} s", seconds.count());
    }

    claims::ClaimPreparer& preparer() { return runner_.preparer(); }

    struct QueuedClaim {
        std::size_t index;
        Clock::time_point queuedAt;
    };

    ClaimRunner& runner_;
    const Operation operation_;
    const BatchPlan plan_;
    const claims::Deadline deadline_;
    const FillResponse fill_;
    const std::shared_ptr<rpc::UnaryCall> call_;
    const Clock::time_point arrived_;
    // Slot i of these is touched only by the task holding claim i (one at a time: a claim moves
    // from the local lane to the API lane through apiMutex_).
    std::vector<claims::ClaimPrepareResult> results_;
    std::vector<Seconds> waited_;
    std::atomic<std::size_t> nextLocal_{0};
    std::atomic<std::size_t> remaining_;
    std::atomic<bool> finished_{false};

    std::mutex apiMutex_;  // the two below
    std::deque<QueuedClaim> apiQueue_;
    std::size_t apiTasks_ = 0;
};

void runBatch(ClaimRunner& runner, const std::shared_ptr<rpc::UnaryCall>& call, Operation operation,
              BatchPlan plan, ClaimBatch::FillResponse fill) {
    const claims::Deadline deadline = call->deadline().value_or(claims::Deadline::max());
    // Nothing useful can be returned for a call that is already over: say why, not a partial map.
    if (call->cancelled() || std::chrono::steady_clock::now() >= deadline)
        return call->finish(endedStatus(deadline));
    auto batch = std::make_shared<ClaimBatch>(runner, operation, std::move(plan), deadline,
                                              std::move(fill), call);
    // Weak: the lane tasks keep the batch alive, and a call keeps its callback until it ends.
    call->onCancel([weak = std::weak_ptr<ClaimBatch>(batch)] {
        if (auto alive = weak.lock())
            alive->abandon();
    });
    ClaimBatch::start(batch);
}

template <class Api, class Entry>
void addDevices(Entry& entry, const std::vector<claims::PreparedDevice>& devices) {
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
                         const std::vector<claims::ClaimPrepareResult>& results) {
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
                           const std::vector<claims::ClaimPrepareResult>& results) {
    auto& claims = *response.mutable_claims();
    for (const auto& [uid, error] : plan.rejected)
        claims[uid].set_error(text::escapeInvalidUtf8(error));
    for (std::size_t i = 0; i < plan.claims.size(); ++i) {
        auto& entry = claims[plan.claims[i].uid];  // present even when empty: that is success
        if (!results[i].error.empty())
            entry.set_error(text::escapeInvalidUtf8(results[i].error));
    }
}

// What grpc++ answers to a request it cannot parse.
rpc::RpcStatus unparsable() {
    return {rpc::StatusCode::Internal, "cannot parse the request message"};
}

// On the loop's thread: parse, plan, and hand the claims to the lanes.
template <class Api>
void addDraService(rpc::GrpcServer& server, ClaimRunner& runner) {
    server.addUnary(
        std::string(Api::kService) + "NodePrepareResources",
        [&runner](const std::shared_ptr<rpc::UnaryCall>& call, const std::string& bytes) {
            typename Api::PrepareRequest request;
            if (!request.ParseFromString(bytes))
                return call->finish(unparsable());
            runBatch(runner, call, Operation::Prepare, planBatch(request.claims()),
                     [](const BatchPlan& plan, const auto& results) {
                         typename Api::PrepareResponse response;
                         fillPrepareResponse<Api>(response, plan, results);
                         return response.SerializeAsString();
                     });
        });
    server.addUnary(
        std::string(Api::kService) + "NodeUnprepareResources",
        [&runner](const std::shared_ptr<rpc::UnaryCall>& call, const std::string& bytes) {
            typename Api::UnprepareRequest request;
            if (!request.ParseFromString(bytes))
                return call->finish(unparsable());
            runBatch(runner, call, Operation::Unprepare, planBatch(request.claims()),
                     [](const BatchPlan& plan, const auto& results) {
                         typename Api::UnprepareResponse response;
                         fillUnprepareResponse<Api>(response, plan, results);
                         return response.SerializeAsString();
                     });
        });
}

}  // namespace

void addDraV1Service(rpc::GrpcServer& server, ClaimRunner& runner) {
    addDraService<DraV1>(server, runner);
}

void addDraV1beta1Service(rpc::GrpcServer& server, ClaimRunner& runner) {
    addDraService<DraV1beta1>(server, runner);
}

}  // namespace numadra::plugin
