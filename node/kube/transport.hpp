#pragma once
// One HTTP exchange with the API server over libcurl: the handle set up with the server's URL,
// TLS material, bearer token and headers. Retries and API semantics live in the client.

#include <curl/curl.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bearer_token.hpp"
#include "curl_handles.hpp"
#include "numadra/common/result.hpp"
#include "numadra/kube/config.hpp"
#include "response_body.hpp"

namespace numadra::kube::detail {

struct HttpResponse {
    long status = 0;  // 0: no HTTP answer (see transportCode)
    ResponseBody body{0};
    std::optional<std::chrono::seconds> retryAfter;
    CURLcode transportCode = CURLE_OK;
    std::string transportError;
    // The answer was longer than the request's limit: the transfer stopped there, unread.
    bool bodyOverLimit = false;
};

class HandlePool;

// A prepared request. Owns the handle and everything libcurl points into while it runs; the
// handle goes back to its pool at the end, keeping its connection alive for the next request.
class Transfer {
  public:
    Transfer() = default;
    ~Transfer();
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    CURL* handle() const { return easy_.get(); }
    // Runs the request to its end, collecting the answer's body.
    HttpResponse perform();
    long responseStatus() const;
    std::optional<std::chrono::seconds> retryAfter() const { return retryAfter_; }
    // libcurl's detailed message for a failed transfer.
    std::string describe(CURLcode code) const;

  private:
    friend class Transport;
    static size_t onHeaderLine(char* data, size_t size, size_t count, void* self);
    static size_t onBodyData(char* data, size_t size, size_t count, void* self);

    HandlePool* pool_ = nullptr;
    CurlEasy easy_;
    CurlHeaderList headers_;
    ResponseBody responseBody_{0};
    bool bodyOverLimit_ = false;
    bool bodyOutOfMemory_ = false;
    std::optional<std::chrono::seconds> retryAfter_;
    std::array<char, CURL_ERROR_SIZE> errorBuffer_{};
};

// Lets the transfers of one client reuse TLS sessions and DNS answers, with the locking
// libcurl needs when they run on several threads.
class ConnectionShare {
  public:
    ConnectionShare();
    ConnectionShare(const ConnectionShare&) = delete;
    ConnectionShare& operator=(const ConnectionShare&) = delete;

    CURLSH* handle() const { return share_.get(); }

  private:
    static void lock(CURL* easy, curl_lock_data data, curl_lock_access access, void* self);
    static void unlock(CURL* easy, curl_lock_data data, void* self);

    std::array<std::mutex, CURL_LOCK_DATA_LAST> locks_;
    CurlShare share_;
};

// Idle easy handles. Each keeps its own live connection, so reusing one saves a TCP and TLS
// handshake; libcurl forbids sharing one connection cache between threads.
class HandlePool {
  public:
    HandlePool() = default;
    HandlePool(const HandlePool&) = delete;
    HandlePool& operator=(const HandlePool&) = delete;

    CurlEasy acquire();
    void release(CurlEasy handle);

  private:
    static constexpr size_t kMaxIdle = 4;
    std::mutex mutex_;
    std::vector<CurlEasy> idle_;
};

class Transport {
  public:
    Transport(ClusterConfig config, std::string userAgent);
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    const ClusterConfig& config() const { return config_; }

    // A request ready to run; `timeout` bounds the whole exchange (zero: no bound), and
    // `maxBodyBytes` the answer's body (perform() collects at most that much); a stream's body
    // has no limit as a whole (nullopt: its reader bounds each of its parts). Fails when the token
    // file cannot be read or libcurl lacks a feature the config needs.
    Result<std::unique_ptr<Transfer>> prepare(std::string_view method,
                                              const std::string& pathAndQuery,
                                              const std::string* body,
                                              std::chrono::milliseconds timeout,
                                              std::optional<std::size_t> maxBodyBytes,
                                              std::string_view contentType = "application/json");

  private:
    Status applyTls(CURL* easy) const;

    ClusterConfig config_;
    std::string baseUrl_;
    std::string userAgent_;
    BearerTokenSource token_;
    ConnectionShare share_;
    HandlePool pool_;  // after share_: its handles must go before the share they use
};

}  // namespace numadra::kube::detail
