#pragma once
// Owning wrappers for libcurl's handles, so that no early return can leak one.

#include <curl/curl.h>

#include <memory>

namespace numadra::kube::detail {

struct CurlEasyDeleter {
    void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
using CurlEasy = std::unique_ptr<CURL, CurlEasyDeleter>;

struct CurlMultiDeleter {
    void operator()(CURLM* handle) const { curl_multi_cleanup(handle); }
};
using CurlMulti = std::unique_ptr<CURLM, CurlMultiDeleter>;

struct CurlShareDeleter {
    void operator()(CURLSH* handle) const { curl_share_cleanup(handle); }
};
using CurlShare = std::unique_ptr<CURLSH, CurlShareDeleter>;

struct CurlSlistDeleter {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using CurlHeaderList = std::unique_ptr<curl_slist, CurlSlistDeleter>;

// An easy handle added to a multi handle; removed again (as libcurl requires before either is
// cleaned up) when this goes out of scope, so declare it after both handles.
class MultiMembership {
  public:
    MultiMembership(CURLM* multi, CURL* easy) : multi_(multi), easy_(easy) {
        added_ = curl_multi_add_handle(multi_, easy_) == CURLM_OK;
    }
    ~MultiMembership() {
        if (added_)
            curl_multi_remove_handle(multi_, easy_);
    }
    MultiMembership(const MultiMembership&) = delete;
    MultiMembership& operator=(const MultiMembership&) = delete;

    [[nodiscard]] bool added() const { return added_; }

  private:
    CURLM* multi_;
    CURL* easy_;
    bool added_ = false;
};

// libcurl wants one process-wide initialisation before any thread uses it; a function-local
// static runs it exactly once, thread-safely, on first use.
inline bool curlGloballyInitialised() {
    static const bool initialised = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    return initialised;
}

}  // namespace numadra::kube::detail
