#pragma once
// KubeClient's insides, shared by client.cpp (requests, retries) and watch.cpp (streams).

#include <chrono>
#include <mutex>
#include <optional>
#include <random>

#include "numadra/kube/client.hpp"
#include "transport.hpp"

namespace numadra::kube {

struct KubeClient::Impl {
    Impl(ClusterConfig config, ClientOptions clientOptions);

    Result<Json> request(std::string_view method, const std::string& pathAndQuery, const Json* body,
                         std::chrono::steady_clock::time_point deadline, const ResponseLimit& limit,
                         std::string_view contentType = "application/json");
    ResponseLimit objectLimit(std::string what) const {
        return ResponseLimit{options.maxObjectBytes, std::move(what)};
    }
    Status watch(const std::string& pathAndQuery,
                 const std::function<void(const WatchEvent&)>& onEvent, std::stop_token stop);

    std::chrono::steady_clock::time_point defaultDeadline() const {
        return std::chrono::steady_clock::now() + options.operationTimeout;
    }
    // Full jitter: uniform in [0, min(maxBackoff, initialBackoff * 2^(attempt-1))].
    std::chrono::milliseconds backoff(int attempt);

    ClientOptions options;
    detail::Transport transport;
    std::mutex randomMutex;
    std::mt19937_64 random;
};

namespace detail {

// object[key] when object is an object and that is a string, else "": bodies come from the
// network and must not throw.
std::string stringField(const Json& object, const std::string& key);

// The field causes of a Status body (details.causes[]: field, message, reason); none when absent.
std::vector<FieldCause> statusCauses(const Json& status);

// "GET /path: HTTP 404 NotFound: <Status.message>", from the API's Status body when it has one,
// with its reason and field causes.
Error describeHttpFailure(std::string_view method, const std::string& pathAndQuery, long status,
                          std::string_view body);

// The kind of a transfer that got no HTTP answer: a timeout, an answer too big to hold, or
// (mostly) a server that cannot be reached for now.
ErrorKind transportErrorKind(CURLcode code);

// "3 MiB", "512 KiB", "100 bytes": a limit as a person reads it.
std::string describeBytes(std::size_t bytes);

}  // namespace detail
}  // namespace numadra::kube
