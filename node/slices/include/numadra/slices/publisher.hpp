#pragma once
// Keeps this node's ResourceSlices in the cluster equal to what the driver wants published,
// following upstream's resourceslice controller rules: Node owner reference, deterministic
// names, the pool generation bumped when more than one slice changes or slices are added,
// obsolete slices deleted first, then updates, then creates. Fields the API server silently
// dropped (a feature gate off) are a fatal configuration error, never a silent downgrade.

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "numadra/api/resource_slice.hpp"
#include "numadra/common/result.hpp"

namespace numadra::slices {

// What the publisher needs from the API server, already scoped to this node and driver
// (list = field selector spec.nodeName=<node>,spec.driver=<driver>). A failed call's Error is
// the kube client's: its kind (Conflict, AlreadyExists, NotFound, InvalidArgument,
// PermissionDenied, ...), the Status reason and field causes. create and update are called from
// several threads at once (a node's slices are written in parallel: each write waits on the API
// server's validation and admission, not on us).
class SliceApi {
  public:
    virtual ~SliceApi() = default;
    virtual Result<std::vector<api::Json>> list() = 0;
    virtual Result<api::Json> create(const api::Json& slice) = 0;
    // What create would answer, nothing stored (an API server's dry run). Where there is no
    // server to ask (stdout, tests' memory), the slice as sent.
    virtual Result<api::Json> tryCreate(const api::Json& slice) { return slice; }
    virtual Result<api::Json> update(const api::Json& slice) = 0;  // metadata.resourceVersion set
    virtual Status remove(const std::string& name, const std::string& resourceVersion) = 0;
};

struct NodeOwner {
    std::string name;
    std::string uid;
};

struct PublishStats {
    size_t created = 0;
    size_t updated = 0;
    size_t deleted = 0;
    std::int64_t generation = 0;
    bool changed() const { return created + updated + deleted > 0; }
};

// Why the cluster would not keep what the publisher wrote: a feature gate the driver's flags
// rely on is off. The publisher's Error then has kind FailedPrecondition and the refusal's name
// as its reason; refusalOf reads it back.
enum class Refusal {
    None,  // not a refusal: an ordinary error (the API server's answer, a transport failure)
    // The API server dropped fields we sent: a fatal configuration error.
    DroppedFields,
    // The only fields dropped were device taints (the cluster runs without DRADeviceTaints): not
    // fatal, the caller publishes without taints and keeps reporting health on the streams.
    DroppedTaints,
    // The API server refused list-typed attributes (a 422 naming attributes sent as lists: the
    // cluster runs without DRAListTypeAttributes). The caller may publish the scalar form.
    ListAttributesRefused,
    // The API server dropped the devices' nodeAllocatableResources (the cluster runs without
    // DRANodeAllocatableResources), perhaps with their taints, or refused them (403: the node's
    // kubelet does not declare the feature). The caller may publish without them.
    NodeAllocatableRefused,
};

// The refusal an Error of the publisher stands for; Refusal::None for any other Error.
Refusal refusalOf(const Error& error);

class Publisher {
  public:
    Publisher(SliceApi& api, std::string driverName, std::string poolName,
              std::optional<NodeOwner> owner);

    // Makes the cluster hold exactly `desired` (names, devices, counters; pool generation and
    // resourceSliceCount are the publisher's). Retries conflicts a few times by re-listing.
    Result<PublishStats> reconcile(const std::vector<api::ResourceSlice>& desired);
    // Deletes every slice of this driver on this node (clean shutdown).
    Result<size_t> removeAll();
    // The API server's verdict on the slice without storing it (SliceApi::tryCreate): the
    // refusals and dropped fields reconcile() would meet, before the first write.
    Status tryPublishing(const api::ResourceSlice& slice);

  private:
    Result<PublishStats> reconcileOnce(const std::vector<api::ResourceSlice>& desired);
    api::Json encode(const api::ResourceSlice& slice, std::int64_t generation,
                     std::int64_t count) const;

    SliceApi& api_;
    std::string driverName_;
    std::string poolName_;
    std::optional<NodeOwner> owner_;
};

// True when every field of `sent` is in `stored` with an equal value (quantities compared by
// value, so "1000M" equals "1G"); fields the server added are ignored. `dropped` receives the
// paths of sent fields missing from `stored`.
bool sentFieldsPreserved(const api::Json& sent, const api::Json& stored,
                         std::vector<std::string>* dropped = nullptr);

}  // namespace numadra::slices
