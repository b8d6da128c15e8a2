#pragma once
// The DRA node service (NodePrepareResources / NodeUnprepareResources), served as both
// k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and ...v1beta1.DRAPlugin by one implementation.

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "numadra/claims/claims.hpp"
#include "numadra/common/worker_pool.hpp"
#include "numadra/plugin/grpc/server.hpp"

namespace numadra::plugin {

struct ClaimRunnerSettings {
    // Claims of one call handled in parallel, on each lane.
    std::size_t maxParallelClaimsPerCall = 8;
    // Set in rolling-update mode: each step that touches the node's state (never a fetch)
    // holds a flock on this file.
    std::optional<std::string> serializeLockPath;
};

// Runs the claims of one call and finishes the call when the last one is answered, or when
// the call is cancelled (deadline, client gone, server shutdown), whichever is first. The
// handlers only parse on the server's loop thread; the lane thread that answers a call's last
// claim finishes it.
//
// Two lanes, so that a slow API server never holds up what does not need it: every claim
// starts on the local lane (Unprepare, and a Prepare answered from the node's records, end
// there); a Prepare that needs the claim from the API server moves to the API lane. No work on
// the local lane ever waits on the network, so a full API lane cannot delay it.
// The runner and the pools must outlive the gRPC server's calls (the pools stop after it).
class ClaimRunner {
  public:
    ClaimRunner(claims::ClaimPreparer& preparer, WorkerPool& localLane, WorkerPool& apiLane,
                ClaimRunnerSettings settings)
        : preparer_(preparer),
          localLane_(localLane),
          apiLane_(apiLane),
          settings_(std::move(settings)) {}

    claims::ClaimPreparer& preparer() { return preparer_; }
    WorkerPool& localLane() { return localLane_; }
    WorkerPool& apiLane() { return apiLane_; }
    const ClaimRunnerSettings& settings() const { return settings_; }

  private:
    claims::ClaimPreparer& preparer_;
    WorkerPool& localLane_;
    WorkerPool& apiLane_;
    ClaimRunnerSettings settings_;
};

// Serve NodePrepareResources and NodeUnprepareResources of k8s.io.kubelet.pkg.apis.dra.v1
// (v1beta1) .DRAPlugin on `server`.
void addDraV1Service(rpc::GrpcServer& server, ClaimRunner& runner);
void addDraV1beta1Service(rpc::GrpcServer& server, ClaimRunner& runner);

}  // namespace numadra::plugin
