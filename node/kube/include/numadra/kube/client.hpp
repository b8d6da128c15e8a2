#pragma once
// A small kube-apiserver client over libcurl: the few requests the driver makes (ResourceSlices,
// ResourceClaims, Nodes), with retries and backoff, and a ResourceSlice watch.
//
// Every call is thread-safe. A failed call's Error has the kind of the answer (kube/errors.hpp:
// NotFound, Conflict, Expired, InvalidArgument...), its httpStatus, the Status reason and field
// causes; httpStatus is 0 when no HTTP answer came (connection refused, TLS failure, timeout:
// kind Unavailable or DeadlineExceeded; an answer over its limit: ResourceExhausted). The message
// has the method, the path, the status and the API's Status.message.

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"
#include "numadra/kube/config.hpp"

namespace numadra::kube {

using Json = nlohmann::ordered_json;  // the same type as numadra::api::Json

inline constexpr const char* kResourceSlicesPath = "/apis/resource.k8s.io/v1/resourceslices";

struct ClientOptions {
    std::chrono::milliseconds requestTimeout{10'000};  // one attempt
    int maxAttempts = 6;                               // for retryable failures
    // Capped exponential backoff with full jitter between attempts.
    std::chrono::milliseconds initialBackoff{100}, maxBackoff{5'000};
    std::string userAgent = "numa-dra-driver";
    // All attempts of a call that takes no deadline must end within this.
    std::chrono::milliseconds operationTimeout{30'000};
    // The timeoutSeconds a watch asks for: the server ends the stream then, and the caller
    // resumes from the last resourceVersion it saw.
    std::chrono::seconds watchTimeout{300};
    // The most an answer may weigh. Whatever sends more (a broken proxy, a hostile server) is
    // cut off there with an error naming the request and the limit, never buffered to the end.
    // One object (a claim, a node, a slice, a Status, one watch event): kube-apiserver takes no
    // request body over 3 MiB, so no object a client wrote is larger, and etcd stores none
    // over 1.5 MiB.
    std::size_t maxObjectBytes = std::size_t{3} << 20;
    // The list of this node's ResourceSlices: a node publishes a handful of slices.
    std::size_t maxListBytes = std::size_t{32} << 20;
};

// What an answer may weigh, and what it is (for the error when it weighs more).
struct ResponseLimit {
    std::size_t bytes = 0;
    std::string what;  // "a ResourceClaim", "a list of ResourceSlices"...
};

class KubeClient {
  public:
    explicit KubeClient(ClusterConfig config, ClientOptions options = {});
    ~KubeClient();
    KubeClient(KubeClient&&) noexcept;
    KubeClient& operator=(KubeClient&&) noexcept;
    KubeClient(const KubeClient&) = delete;
    KubeClient& operator=(const KubeClient&) = delete;

    const ClusterConfig& config() const;

    // One API call. Retries 429 (honouring Retry-After), 500/502/503/504 and transport errors
    // with backoff, never sleeping past `deadline`; other statuses (404, 409, 410, 422...) are
    // returned at once. A POST is retried after a transport error only when the connection was
    // never made, since a lost answer may hide a created object. `body` may be null. An answer
    // over `limit` (default: maxObjectBytes) fails at once and is not retried.
    Result<Json> request(std::string_view method, const std::string& pathAndQuery, const Json* body,
                         std::chrono::steady_clock::time_point deadline);
    Result<Json> request(std::string_view method, const std::string& pathAndQuery, const Json* body,
                         std::chrono::steady_clock::time_point deadline,
                         const ResponseLimit& limit);

    Result<Json> getResourceClaim(const std::string& ns, const std::string& name,
                                  std::chrono::steady_clock::time_point deadline);
    Result<Json> getNode(const std::string& name);
    // Server-side apply of a ResourceClaim's status (apiVersion, kind, metadata.name and
    // namespace set; metadata.uid makes it a precondition): entries of status.devices this
    // field manager applied before and leaves out are removed.
    Result<Json> applyResourceClaimStatus(const std::string& ns, const std::string& name,
                                          const Json& claim, const std::string& fieldManager,
                                          std::chrono::steady_clock::time_point deadline);

    struct SliceList {
        std::vector<Json> items;
        std::string resourceVersion;  // where a watch resumes
    };
    // fieldSelector e.g. "spec.nodeName=n1,spec.driver=numa.dra.dev"; empty = all.
    Result<SliceList> listResourceSlices(const std::string& fieldSelector);
    // 409 (AlreadyExists) comes back as an Error with code 409.
    Result<Json> createResourceSlice(const Json& slice);
    // The API server's answer to that create without storing anything (dryRun=All): validation,
    // admission and dropped fields as a real create meets them.
    Result<Json> tryCreateResourceSlice(const Json& slice);
    // metadata.name and metadata.resourceVersion must be set; 409 when it is stale.
    Result<Json> updateResourceSlice(const Json& slice);
    // With a resourceVersion the delete happens only if the object still has it (409 if not).
    // An object already gone (404) counts as deleted.
    Status deleteResourceSlice(const std::string& name, const std::string& resourceVersion = "");

    struct WatchEvent {
        std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
        Json object;
    };
    // Streams the changes after `resourceVersion` (empty: the current objects as ADDED first),
    // calling onEvent for each, on this thread; each event may weigh maxObjectBytes (and a
    // little for its envelope), the stream as a whole is unbounded. Returns Ok when the server ends
    // the stream (resume from the last resourceVersion seen) or when `stop` is requested (promptly,
    // even on an idle stream); an Error with code 410 when `resourceVersion` is too old (relist),
    // be it an HTTP 410 or an ERROR event. Exceptions from onEvent propagate after the stream
    // closes.
    Status watchResourceSlices(const std::string& fieldSelector, const std::string& resourceVersion,
                               const std::function<void(const WatchEvent&)>& onEvent,
                               std::stop_token stop);

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Percent-encodes everything but RFC 3986's unreserved characters, for query values and
// path segments.
std::string urlEncode(std::string_view text);

}  // namespace numadra::kube
