#include "transport.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace numadra::kube::detail {
namespace {

bool startsWithIgnoringCase(std::string_view text, std::string_view prefix) {
    return text.size() >= prefix.size() &&
           std::equal(prefix.begin(), prefix.end(), text.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           });
}

// Retry-After in its delta-seconds form (the API server's); an HTTP date gives nullopt.
std::optional<std::chrono::seconds> parseRetryAfter(std::string_view value) {
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    long seconds = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
    if (error != std::errc() || seconds < 0)
        return std::nullopt;
    const std::string_view rest(end, static_cast<size_t>(value.data() + value.size() - end));
    if (rest.find_first_not_of(" \t\r\n") != std::string_view::npos)
        return std::nullopt;
    return std::chrono::seconds(seconds);
}

void appendHeader(CurlHeaderList& list, const std::string& header) {
    curl_slist* extended = curl_slist_append(list.get(), header.c_str());
    if (extended == nullptr)
        return;
    // curl_slist_append returns the same head once the list exists.
    static_cast<void>(list.release());
    list.reset(extended);
}

template <class Value>
Status setTlsOption(CURL* easy, CURLoption option, Value value, const char* what) {
    const CURLcode code = curl_easy_setopt(easy, option, value);
    if (code != CURLE_OK)
        return Error{std::string("libcurl cannot use ") + what + ": " + curl_easy_strerror(code)};
    return Status::Ok();
}

// A PEM held in memory. libcurl copies it, so the blob may point into the config.
curl_blob blobOf(const std::string& pem) {
    return curl_blob{const_cast<char*>(pem.data()), pem.size(), CURL_BLOB_COPY};
}

}  // namespace

Transfer::~Transfer() {
    if (pool_ != nullptr && easy_)
        pool_->release(std::move(easy_));
}

size_t Transfer::onHeaderLine(char* data, size_t size, size_t count, void* self) {
    auto* transfer = static_cast<Transfer*>(self);
    const std::string_view line(data, size * count);
    constexpr std::string_view kRetryAfter = "retry-after:";
    if (line.starts_with("HTTP/"))
        transfer->retryAfter_.reset();  // a new response (after a 100 Continue, say)
    else if (startsWithIgnoringCase(line, kRetryAfter))
        transfer->retryAfter_ = parseRetryAfter(line.substr(kRetryAfter.size()));
    return size * count;
}

size_t Transfer::onBodyData(char* data, size_t size, size_t count, void* self) {
    auto* transfer = static_cast<Transfer*>(self);
    switch (transfer->responseBody_.append(std::string_view(data, size * count))) {
        case ResponseBody::Append::Ok:
            return size * count;
        case ResponseBody::Append::OverLimit:
            transfer->bodyOverLimit_ = true;
            break;
        case ResponseBody::Append::NoMemory:
            transfer->bodyOutOfMemory_ = true;
            break;
    }
    return 0;  // less than offered: libcurl ends the transfer (and drops the connection)
}

long Transfer::responseStatus() const {
    long status = 0;
    curl_easy_getinfo(easy_.get(), CURLINFO_RESPONSE_CODE, &status);
    return status;
}

std::string Transfer::describe(CURLcode code) const {
    const std::string detail(errorBuffer_.data());
    return detail.empty() ? curl_easy_strerror(code) : detail;
}

HttpResponse Transfer::perform() {
    curl_easy_setopt(easy_.get(), CURLOPT_WRITEFUNCTION, &Transfer::onBodyData);
    curl_easy_setopt(easy_.get(), CURLOPT_WRITEDATA, this);
    HttpResponse response;
    response.transportCode = curl_easy_perform(easy_.get());
    if (response.transportCode != CURLE_OK) {
        // CURLE_FILESIZE_EXCEEDED: the Content-Length alone was over the limit.
        response.bodyOverLimit =
            bodyOverLimit_ || response.transportCode == CURLE_FILESIZE_EXCEEDED;
        response.transportError =
            bodyOutOfMemory_ ? "no memory for the answer's body" : describe(response.transportCode);
        response.status = response.bodyOverLimit ? responseStatus() : 0;
        return response;
    }
    response.status = responseStatus();
    response.body = std::move(responseBody_);
    response.retryAfter = retryAfter_;
    return response;
}

ConnectionShare::ConnectionShare() : share_(curl_share_init()) {
    if (!share_)
        return;  // transfers then simply keep their own caches
    curl_share_setopt(share_.get(), CURLSHOPT_LOCKFUNC, &ConnectionShare::lock);
    curl_share_setopt(share_.get(), CURLSHOPT_UNLOCKFUNC, &ConnectionShare::unlock);
    curl_share_setopt(share_.get(), CURLSHOPT_USERDATA, this);
    curl_share_setopt(share_.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
    curl_share_setopt(share_.get(), CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
}

void ConnectionShare::lock(CURL*, curl_lock_data data, curl_lock_access, void* self) {
    auto& locks = static_cast<ConnectionShare*>(self)->locks_;
    locks.at(static_cast<size_t>(data)).lock();
}

void ConnectionShare::unlock(CURL*, curl_lock_data data, void* self) {
    auto& locks = static_cast<ConnectionShare*>(self)->locks_;
    locks.at(static_cast<size_t>(data)).unlock();
}

CurlEasy HandlePool::acquire() {
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            CurlEasy handle = std::move(idle_.back());
            idle_.pop_back();
            return handle;
        }
    }
    return CurlEasy(curl_easy_init());
}

void HandlePool::release(CurlEasy handle) {
    // Reset now, not at the next acquire: the options point into the finished Transfer (error
    // buffer, header list), which is about to be freed. Live connections survive a reset.
    curl_easy_reset(handle.get());
    std::lock_guard lock(mutex_);
    if (idle_.size() < kMaxIdle)
        idle_.push_back(std::move(handle));
}

Transport::Transport(ClusterConfig config, std::string userAgent)
    : config_(std::move(config)),
      baseUrl_(config_.server),
      userAgent_(std::move(userAgent)),
      token_(config_.bearerToken, config_.tokenFile) {
    while (baseUrl_.ends_with('/'))
        baseUrl_.pop_back();
}

Status Transport::applyTls(CURL* easy) const {
    // With a cluster CA, trust it alone, as client-go does: the system's CAs have no say.
    if (!config_.caData.empty() || !config_.caFile.empty()) {
        curl_easy_setopt(easy, CURLOPT_CAPATH, nullptr);
        curl_easy_setopt(easy, CURLOPT_CAINFO, nullptr);
    }
    if (!config_.caData.empty()) {
        curl_blob ca = blobOf(config_.caData);
        if (Status set = setTlsOption(easy, CURLOPT_CAINFO_BLOB, &ca, "certificate-authority-data");
            !set)
            return set;
    } else if (!config_.caFile.empty()) {
        curl_easy_setopt(easy, CURLOPT_CAINFO, config_.caFile.c_str());
    }
    if (!config_.clientCertData.empty()) {
        curl_blob cert = blobOf(config_.clientCertData);
        if (Status set = setTlsOption(easy, CURLOPT_SSLCERT_BLOB, &cert, "client-certificate-data");
            !set)
            return set;
        curl_easy_setopt(easy, CURLOPT_SSLCERTTYPE, "PEM");
    } else if (!config_.clientCertFile.empty()) {
        curl_easy_setopt(easy, CURLOPT_SSLCERT, config_.clientCertFile.c_str());
    }
    if (!config_.clientKeyData.empty()) {
        curl_blob key = blobOf(config_.clientKeyData);
        if (Status set = setTlsOption(easy, CURLOPT_SSLKEY_BLOB, &key, "client-key-data"); !set)
            return set;
        curl_easy_setopt(easy, CURLOPT_SSLKEYTYPE, "PEM");
    } else if (!config_.clientKeyFile.empty()) {
        curl_easy_setopt(easy, CURLOPT_SSLKEY, config_.clientKeyFile.c_str());
    }
    if (config_.insecureSkipTlsVerify) {
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    return Status::Ok();
}

Result<std::unique_ptr<Transfer>> Transport::prepare(std::string_view method,
                                                     const std::string& pathAndQuery,
                                                     const std::string* body,
                                                     std::chrono::milliseconds timeout,
                                                     std::optional<std::size_t> maxBodyBytes,
                                                     std::string_view contentType) {
    if (!curlGloballyInitialised())
        return Error{"libcurl failed to initialise"};
    auto token = token_.current();
    if (!token)
        return token.error();
    auto transfer = std::make_unique<Transfer>();
    transfer->easy_ = pool_.acquire();
    if (!transfer->easy_)
        return Error{"libcurl: cannot create a handle"};
    transfer->pool_ = &pool_;
    transfer->responseBody_ = ResponseBody(maxBodyBytes.value_or(0));
    CURL* easy = transfer->handle();

    const std::string url = baseUrl_ + pathAndQuery;
    curl_easy_setopt(easy, CURLOPT_URL, url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
    // Signals are process-wide; timeouts by SIGALRM would race between threads.
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_SHARE, share_.handle());
    curl_easy_setopt(easy, CURLOPT_USERAGENT, userAgent_.c_str());
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, transfer->errorBuffer_.data());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Transfer::onHeaderLine);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, transfer.get());
    // An answer that announces more than the limit fails before its body is read.
    if (maxBodyBytes)
        curl_easy_setopt(easy, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(*maxBodyBytes));
    if (timeout.count() > 0) {
        curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout.count()));
        curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(timeout.count()));
    }
    if (method == "GET")
        curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    else
        curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
    if (body != nullptr) {
        curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
        curl_easy_setopt(easy, CURLOPT_COPYPOSTFIELDS, body->c_str());
    }

    appendHeader(transfer->headers_, "Accept: application/json");
    if (body != nullptr)
        appendHeader(transfer->headers_, "Content-Type: " + std::string(contentType));
    if (!token->empty())
        appendHeader(transfer->headers_, "Authorization: Bearer " + *token);
    appendHeader(transfer->headers_, "Expect:");  // no 100-continue round trip for small bodies
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, transfer->headers_.get());

    if (Status tls = applyTls(easy); !tls)
        return tls.error();
    return transfer;
}

}  // namespace numadra::kube::detail
