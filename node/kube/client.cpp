#include "numadra/kube/client.hpp"

#include <algorithm>
#include <thread>

#include "client_impl.hpp"
#include "numadra/kube/errors.hpp"

namespace numadra::kube {
namespace {

using Clock = std::chrono::steady_clock;

bool isRetryableStatus(long status) {
    return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

// Nothing reached the server, so even a POST can safely go again.
bool failedBeforeSending(CURLcode code) {
    return code == CURLE_COULDNT_RESOLVE_HOST || code == CURLE_COULDNT_RESOLVE_PROXY ||
           code == CURLE_COULDNT_CONNECT || code == CURLE_SSL_CONNECT_ERROR;
}

bool isRetryable(std::string_view method, const detail::HttpResponse& response) {
    if (response.status != 0)
        return isRetryableStatus(response.status);
    return method != "POST" || failedBeforeSending(response.transportCode);
}

Error describeTransportFailure(std::string_view method, const std::string& pathAndQuery,
                               const detail::HttpResponse& response) {
    return Error{std::string(method) + " " + pathAndQuery + ": " + response.transportError,
                 detail::transportErrorKind(response.transportCode)};
}

Error describeOversizedAnswer(std::string_view method, const std::string& pathAndQuery,
                              const detail::HttpResponse& response, const ResponseLimit& limit) {
    std::string message = std::string(method) + " " + pathAndQuery + ": the answer";
    if (response.status != 0)
        message += " (HTTP " + std::to_string(response.status) + ")";
    return Error{message + " is over " + detail::describeBytes(limit.bytes) + ", more than " +
                     limit.what + " can weigh; it was cut off unread",
                 ErrorKind::ResourceExhausted};
}

Result<Json> parseSuccess(std::string_view method, const std::string& pathAndQuery,
                          const detail::HttpResponse& response) {
    if (response.body.empty())
        return Json::object();
    const std::string_view text = response.body.view();
    Json parsed = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    if (parsed.is_discarded())
        return Error{std::string(method) + " " + pathAndQuery + ": HTTP " +
                         std::to_string(response.status) + " with a body that is not JSON",
                     ErrorKind::Internal};
    return parsed;
}

std::string resourceSlicePath(const std::string& name) {
    return std::string(kResourceSlicesPath) + "/" + urlEncode(name);
}

std::string claimPath(const std::string& ns, const std::string& name) {
    return "/apis/resource.k8s.io/v1/namespaces/" + urlEncode(ns) + "/resourceclaims/" +
           urlEncode(name);
}

}  // namespace

namespace detail {

std::string stringField(const Json& object, const std::string& key) {
    if (!object.is_object())
        return "";
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string describeBytes(std::size_t bytes) {
    constexpr std::size_t kKiB = 1024;
    if (bytes >= kKiB * kKiB && bytes % (kKiB * kKiB) == 0)
        return std::to_string(bytes / (kKiB * kKiB)) + " MiB";
    if (bytes >= kKiB && bytes % kKiB == 0)
        return std::to_string(bytes / kKiB) + " KiB";
    return std::to_string(bytes) + " bytes";
}

ErrorKind transportErrorKind(CURLcode code) {
    switch (code) {
        case CURLE_OPERATION_TIMEDOUT:
            return ErrorKind::DeadlineExceeded;
        case CURLE_OUT_OF_MEMORY:
        case CURLE_FILESIZE_EXCEEDED:
            return ErrorKind::ResourceExhausted;
        default:
            // No answer came: refused, reset, unresolved, a TLS handshake that failed. Retried
            // like a 503, as it always was: a server being replaced looks exactly like this.
            return ErrorKind::Unavailable;
    }
}

Error describeHttpFailure(std::string_view method, const std::string& pathAndQuery, long status,
                          std::string_view body) {
    std::string message =
        std::string(method) + " " + pathAndQuery + ": HTTP " + std::to_string(status);
    const Json parsed = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    std::string reason;
    std::vector<FieldCause> causes;
    if (stringField(parsed, "kind") == "Status") {
        reason = stringField(parsed, "reason");
        if (!reason.empty())
            message += " " + reason;
        message += ": " + stringField(parsed, "message");
        causes = statusCauses(parsed);
    } else if (!body.empty()) {
        // Not the API server speaking (a proxy, a load balancer): its first words help.
        constexpr size_t kExcerpt = 200;
        message += ": " + std::string(body.substr(0, kExcerpt));
    }
    return errorFromHttp(static_cast<int>(status), std::move(reason), std::move(message),
                         std::move(causes));
}

std::vector<FieldCause> statusCauses(const Json& status) {
    std::vector<FieldCause> causes;
    const auto details = status.find("details");
    if (details == status.end() || !details->is_object())
        return causes;
    const auto listed = details->find("causes");
    if (listed == details->end() || !listed->is_array())
        return causes;
    for (const auto& cause : *listed) {
        FieldCause named{stringField(cause, "field"), stringField(cause, "message"),
                         stringField(cause, "reason")};
        if (!named.field.empty() || !named.message.empty() || !named.reason.empty())
            causes.push_back(std::move(named));
    }
    return causes;
}

}  // namespace detail

KubeClient::Impl::Impl(ClusterConfig config, ClientOptions clientOptions)
    : options(std::move(clientOptions)),
      transport(std::move(config), options.userAgent),
      random(std::random_device{}()) {
    options.maxAttempts = std::max(options.maxAttempts, 1);
}

std::chrono::milliseconds KubeClient::Impl::backoff(int attempt) {
    const auto initial = std::max<std::int64_t>(options.initialBackoff.count(), 0);
    const auto cap = std::max<std::int64_t>(options.maxBackoff.count(), 0);
    std::int64_t ceiling = initial;
    for (int i = 1; i < attempt && ceiling < cap; ++i)
        ceiling *= 2;
    ceiling = std::min(ceiling, cap);
    std::lock_guard lock(randomMutex);
    return std::chrono::milliseconds(
        std::uniform_int_distribution<std::int64_t>(0, ceiling)(random));
}

Result<Json> KubeClient::Impl::request(std::string_view method, const std::string& pathAndQuery,
                                       const Json* body, Clock::time_point deadline,
                                       const ResponseLimit& limit, std::string_view contentType) {
    const std::optional<std::string> bodyText =
        body != nullptr ? std::optional<std::string>(body->dump()) : std::nullopt;
    Error lastError{std::string(method) + " " + pathAndQuery + ": deadline passed before sending"};
    for (int attempt = 1; attempt <= options.maxAttempts; ++attempt) {
        // Rounded up: a deadline less than a millisecond away has not passed, and the
        // transfer that then times out says so ("timed out"), as every later one would.
        const auto remaining =
            std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
        if (remaining.count() <= 0)
            return lastError;
        auto transfer = transport.prepare(method, pathAndQuery, bodyText ? &*bodyText : nullptr,
                                          std::min(options.requestTimeout, remaining), limit.bytes,
                                          contentType);
        if (!transfer)
            return Error{std::string(method) + " " + pathAndQuery + ": " +
                         transfer.error().message};
        const detail::HttpResponse response = (*transfer)->perform();
        // Not retried: a server that sent too much once will again, and the next try would
        // cost as much memory and time as this one.
        if (response.bodyOverLimit)
            return describeOversizedAnswer(method, pathAndQuery, response, limit);
        if (response.status >= 200 && response.status < 300)
            return parseSuccess(method, pathAndQuery, response);

        lastError = response.status == 0
                        ? describeTransportFailure(method, pathAndQuery, response)
                        : detail::describeHttpFailure(method, pathAndQuery, response.status,
                                                      response.body.view());
        if (attempt > 1)
            lastError.message += " (attempt " + std::to_string(attempt) + ")";
        if (!isRetryable(method, response) || attempt == options.maxAttempts)
            return lastError;
        // The server's Retry-After wins over our backoff: it knows how loaded it is.
        const auto delay =
            response.retryAfter
                ? std::chrono::duration_cast<std::chrono::milliseconds>(*response.retryAfter)
                : backoff(attempt);
        if (Clock::now() + delay >= deadline)
            return lastError;
        std::this_thread::sleep_for(delay);
    }
    return lastError;
}

KubeClient::KubeClient(ClusterConfig config, ClientOptions options)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(options))) {}
KubeClient::~KubeClient() = default;
KubeClient::KubeClient(KubeClient&&) noexcept = default;
KubeClient& KubeClient::operator=(KubeClient&&) noexcept = default;

const ClusterConfig& KubeClient::config() const {
    return impl_->transport.config();
}

Result<Json> KubeClient::request(std::string_view method, const std::string& pathAndQuery,
                                 const Json* body, Clock::time_point deadline) {
    return impl_->request(method, pathAndQuery, body, deadline,
                          impl_->objectLimit("one API object"));
}

Result<Json> KubeClient::request(std::string_view method, const std::string& pathAndQuery,
                                 const Json* body, Clock::time_point deadline,
                                 const ResponseLimit& limit) {
    return impl_->request(method, pathAndQuery, body, deadline, limit);
}

Result<Json> KubeClient::getResourceClaim(const std::string& ns, const std::string& name,
                                          Clock::time_point deadline) {
    return impl_->request("GET", claimPath(ns, name), nullptr, deadline,
                          impl_->objectLimit("a ResourceClaim"));
}

Result<Json> KubeClient::applyResourceClaimStatus(const std::string& ns, const std::string& name,
                                                  const Json& claim,
                                                  const std::string& fieldManager,
                                                  Clock::time_point deadline) {
    // Server-side apply (JSON is YAML): the server owns the merge, and an entry this manager
    // applied before and leaves out now is removed. force: the entries are the driver's alone.
    return impl_->request(
        "PATCH",
        claimPath(ns, name) + "/status?fieldManager=" + urlEncode(fieldManager) + "&force=true",
        &claim, deadline, impl_->objectLimit("a ResourceClaim"), "application/apply-patch+yaml");
}

Result<Json> KubeClient::getNode(const std::string& name) {
    return impl_->request("GET", "/api/v1/nodes/" + urlEncode(name), nullptr,
                          impl_->defaultDeadline(), impl_->objectLimit("a Node"));
}

Result<KubeClient::SliceList> KubeClient::listResourceSlices(const std::string& fieldSelector) {
    std::string path = kResourceSlicesPath;
    if (!fieldSelector.empty())
        path += "?fieldSelector=" + urlEncode(fieldSelector);
    auto list =
        impl_->request("GET", path, nullptr, impl_->defaultDeadline(),
                       ResponseLimit{impl_->options.maxListBytes, "a list of ResourceSlices"});
    if (!list)
        return list.error();
    if (!list->is_object() || !list->contains("items") || !(*list)["items"].is_array())
        return Error{"GET " + path + ": the answer is not a list (no items array)"};
    SliceList slices;
    const Json& items = (*list)["items"];
    slices.items.assign(items.begin(), items.end());
    slices.resourceVersion =
        detail::stringField(list->value("metadata", Json::object()), "resourceVersion");
    return slices;
}

Result<Json> KubeClient::createResourceSlice(const Json& slice) {
    return impl_->request("POST", kResourceSlicesPath, &slice, impl_->defaultDeadline(),
                          impl_->objectLimit("a ResourceSlice"));
}

Result<Json> KubeClient::tryCreateResourceSlice(const Json& slice) {
    return impl_->request("POST", std::string(kResourceSlicesPath) + "?dryRun=All", &slice,
                          impl_->defaultDeadline(), impl_->objectLimit("a ResourceSlice"));
}

Result<Json> KubeClient::updateResourceSlice(const Json& slice) {
    const Json metadata = slice.is_object() ? slice.value("metadata", Json::object()) : Json();
    const std::string name = detail::stringField(metadata, "name");
    const std::string resourceVersion = detail::stringField(metadata, "resourceVersion");
    if (name.empty() || resourceVersion.empty())
        return Error{"update of a ResourceSlice: metadata." +
                     std::string(name.empty() ? "name" : "resourceVersion") + " is not set"};
    return impl_->request("PUT", resourceSlicePath(name), &slice, impl_->defaultDeadline(),
                          impl_->objectLimit("a ResourceSlice"));
}

Status KubeClient::deleteResourceSlice(const std::string& name,
                                       const std::string& resourceVersion) {
    std::optional<Json> options;
    if (!resourceVersion.empty())
        options = Json{{"kind", "DeleteOptions"},
                       {"apiVersion", "v1"},
                       {"preconditions", {{"resourceVersion", resourceVersion}}}};
    auto deleted = impl_->request("DELETE", resourceSlicePath(name), options ? &*options : nullptr,
                                  impl_->defaultDeadline(), impl_->objectLimit("a ResourceSlice"));
    if (!deleted && !deleted.error().is(ErrorKind::NotFound))
        return deleted.error();
    return Status::Ok();
}

Status KubeClient::watchResourceSlices(const std::string& fieldSelector,
                                       const std::string& resourceVersion,
                                       const std::function<void(const WatchEvent&)>& onEvent,
                                       std::stop_token stop) {
    std::string path = std::string(kResourceSlicesPath) + "?watch=true&allowWatchBookmarks=true";
    if (!resourceVersion.empty())
        path += "&resourceVersion=" + urlEncode(resourceVersion);
    if (!fieldSelector.empty())
        path += "&fieldSelector=" + urlEncode(fieldSelector);
    path += "&timeoutSeconds=" + std::to_string(impl_->options.watchTimeout.count());
    return impl_->watch(path, onEvent, std::move(stop));
}

std::string urlEncode(std::string_view text) {
    constexpr char kHex[] = "0123456789ABCDEF";
    std::string encoded;
    encoded.reserve(text.size());
    for (const char c : text) {
        const auto byte = static_cast<unsigned char>(c);
        const bool unreserved = (byte >= 'A' && byte <= 'Z') || (byte >= 'a' && byte <= 'z') ||
                                (byte >= '0' && byte <= '9') || c == '-' || c == '.' || c == '_' ||
                                c == '~';
        if (unreserved) {
            encoded.push_back(c);
        } else {
            encoded.push_back('%');
            encoded.push_back(kHex[byte >> 4]);
            encoded.push_back(kHex[byte & 0x0F]);
        }
    }
    return encoded;
}

}  // namespace numadra::kube
