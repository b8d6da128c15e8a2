#pragma once
// An in-process kube-apiserver for tests: real HTTP(S) on 127.0.0.1, and the API semantics the
// driver relies on (resourceVersions from one etcd-like counter, optimistic concurrency,
// delete preconditions, field selectors, watches with bookmarks and 410 Gone), plus fault
// injection and a record of the requests it received. Thread-safe.

#include <chrono>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace numadra::fakes {

struct FakeApiServerOptions {
    int port = 0;  // 0: an ephemeral port
    // Both set: HTTPS with this certificate. clientCaFile set too: client certificates are
    // required and verified against it.
    std::string tlsCertFile, tlsKeyFile, clientCaFile;
    // How often an idle watch that asked for bookmarks gets one (it also tells the server that
    // the client went away).
    std::chrono::milliseconds bookmarkInterval{1000};
    // Watch events remembered; a watch from before the oldest gets 410 Gone.
    size_t historyLimit = 10'000;
    // Requests served at once (each open watch and each misbehaving answer holds one).
    size_t workerThreads = 32;
};

// An answer that misbehaves on the wire, as a broken proxy or a hostile server's would: HTTP
// 200 with a body that never ends, is huge, or trickles.
struct BadAnswer {
    enum class Body {
        Endless,    // chunked, 64 KiB after 64 KiB of an unfinished JSON array, until the client
                    // hangs up
        Oversized,  // `bytes` of it, with a Content-Length that says so
        Trickle,    // chunked, one byte every `interval`, until the client hangs up
    };
    Body body = Body::Endless;
    std::string method;                        // only requests of this method ("" = any)
    std::string pathPrefix;                    // and with this path prefix ("" = any)
    size_t bytes = 0;                          // Oversized
    std::chrono::milliseconds interval{1000};  // Trickle
};

class FakeApiServer {
  public:
    using Json = nlohmann::ordered_json;

    // Listens before returning. Throws std::runtime_error if it cannot (port taken, bad cert).
    explicit FakeApiServer(FakeApiServerOptions options = {});
    ~FakeApiServer();  // stop()
    FakeApiServer(const FakeApiServer&) = delete;
    FakeApiServer& operator=(const FakeApiServer&) = delete;

    std::string url() const;  // http(s)://127.0.0.1:<port>
    int port() const;
    // Ends every watch stream and stops listening. Idempotent.
    void stop();

    // Objects, as a controller or the kubelet would change them.
    void putResourceClaim(Json claim);  // metadata.namespace and metadata.name must be set
    bool removeResourceClaim(const std::string& ns, const std::string& name);
    std::optional<Json> resourceClaim(const std::string& ns, const std::string& name) const;
    // declaredFeatures: the node's status.declaredFeatures (NodeDeclaredFeatures), or none.
    void addNode(const std::string& name, const std::string& uid,
                 const std::optional<std::vector<std::string>>& declaredFeatures = std::nullopt);
    Json addResourceSlice(Json slice);  // as a create would, but never fails or counts
    bool deleteResourceSliceExternally(const std::string& name);  // a DELETED watch event
    std::vector<Json> resourceSlices() const;                     // by name
    std::optional<Json> resourceSlice(const std::string& name) const;
    std::int64_t currentResourceVersion() const;
    // Forgets every watch event so far, as an etcd compaction: a watch from an older
    // resourceVersion then gets 410 Gone.
    void compactHistory();
    // Compacts the history past every open watch, as etcd does while a watcher lags behind:
    // each gets 410 Gone at once.
    void expireWatches();
    // Cuts every open watch off mid-answer, as a dropped connection would: its client sees the
    // transfer fail (a watch opened later is not affected).
    void breakWatches();

    // The next `count` requests (of `methodFilter` only, when set) get `httpStatus` and a Status
    // body, with Retry-After when given. Calls queue up: the second applies after the first.
    void failNext(int count, int httpStatus, std::optional<int> retryAfterSeconds = {},
                  std::string methodFilter = "");
    // The next `count` requests that match `answer` get it instead of their real answer
    // (before any failNext fault). Calls queue up like failNext's.
    void misbehaveNext(int count, BadAnswer answer);
    // The bytes of misbehaving answers the server managed to send so far.
    std::uint64_t badAnswerBytesSent() const;
    // As kube-apiserver without the DRAListTypeAttributes feature gate (the 1.37 default): the
    // list-typed attribute values (ints, strings, bools, versions) are stripped, and a slice in
    // which that leaves an attribute without a value is refused, 422 Invalid, with a Status
    // naming each such attribute as a cause ("spec.devices[0].attributes[<name>]",
    // "Invalid value: \"\": must specify one of: `int`, ...", as kube-apiserver 1.37.2 words it).
    void setRefuseListAttributes(bool refuse);
    // Like a cluster without DRADeviceTaints: device taints are silently not stored.
    void setDropDeviceTaints(bool drop);
    // Like kube-apiserver 1.37.2, which has no DRASharedConsumableCapacity (KEP-5941): a counter's
    // requestPolicy is silently not stored.
    void setDropCounterRequestPolicies(bool drop);
    // Like kube-apiserver 1.37 without DRANodeAllocatableResources (alpha, off by default): a
    // device's nodeAllocatableResources are silently not stored.
    void setDropNodeAllocatableResources(bool drop);
    // Like kube-apiserver 1.37 with NodeDeclaredFeatures: a slice whose devices declare
    // nodeAllocatableResources is forbidden (403) unless its node declares
    // DRANodeAllocatableResources.
    void setCheckDeclaredFeatures(bool check);

    struct RecordedRequest {
        std::string method;
        std::string path;   // without the query
        std::string query;  // as sent, still encoded
        std::string authorization;
    };
    std::vector<RecordedRequest> requests() const;
    int requestCount(const std::string& method, const std::string& pathPrefix) const;

  private:
    class Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace numadra::fakes
