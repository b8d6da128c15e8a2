#pragma once
// The DRA node service (NodePrepareResources / NodeUnprepareResources), served as both
// k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and ...v1beta1.DRAPlugin by one implementation.

#include <grpcpp/grpcpp.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>

#include "numadra/plugin/claims.hpp"
#include "worker_pool.hpp"

namespace numadra::plugin {

struct ClaimRunnerSettings {
    std::size_t maxParallelClaimsPerCall = 8;
    // Set in rolling-update mode: each prepare/unprepare holds a flock on this file.
    std::optional<std::string> serializeLockPath;
};

// Runs the claims of one call on the worker pool and finishes the call when the last one is
// done, or when gRPC cancels it (deadline, client gone, server shutdown), whichever is first.
// The runner and the pool must outlive the gRPC server.
class ClaimRunner {
  public:
    ClaimRunner(ClaimPreparer& preparer, WorkerPool& pool, ClaimRunnerSettings settings)
        : preparer_(preparer), pool_(pool), settings_(std::move(settings)) {}

    ClaimPreparer& preparer() { return preparer_; }
    WorkerPool& pool() { return pool_; }
    const ClaimRunnerSettings& settings() const { return settings_; }

  private:
    ClaimPreparer& preparer_;
    WorkerPool& pool_;
    ClaimRunnerSettings settings_;
};

std::unique_ptr<grpc::Service> makeDraV1Service(ClaimRunner& runner);
std::unique_ptr<grpc::Service> makeDraV1beta1Service(ClaimRunner& runner);

}  // namespace numadra::plugin
