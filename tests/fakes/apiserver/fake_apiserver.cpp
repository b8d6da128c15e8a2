// The fake API server: the part of kube-apiserver v1.37.2 the daemon talks to (ResourceSlices,
// ResourceClaims and their status, Nodes, Pods, list/watch with resourceVersions, field
// selectors, optimistic concurrency, the Status answers of validation and admission) plus the
// faults the reliability tests inject. One file over 800 lines, on purpose: it is one
// HTTP server whose handlers share the store, the watch fan-out and the fault queue under one
// lock, and reads top to bottom as the server does (store, answers, routes); split, every part
// would need the Impl's internals.

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include "numadra/common/text.hpp"
#include "numadra/fakes/apiserver.hpp"

namespace numadra::fakes {
namespace {

using Json = FakeApiServer::Json;
using Clock = std::chrono::steady_clock;

constexpr const char* kSlicesPattern = R"(/apis/resource\.k8s\.io/v1/resourceslices)";
constexpr const char* kSlicePattern = R"(/apis/resource\.k8s\.io/v1/resourceslices/([^/]+))";
constexpr const char* kClaimPattern =
    R"(/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+))";
constexpr const char* kClaimStatusPattern =
    R"(/apis/resource\.k8s\.io/v1/namespaces/([^/]+)/resourceclaims/([^/]+)/status)";
constexpr const char* kNodePattern = R"(/api/v1/nodes/([^/]+))";
constexpr const char* kSliceResource = "resourceslices.resource.k8s.io";
// The API server's default when a watch gives no timeoutSeconds is 30 to 60 minutes.
constexpr std::chrono::seconds kDefaultWatchTimeout{1800};
// resourceVersion 0 means "any" in list and watch; starting above it keeps them apart.
constexpr std::int64_t kFirstResourceVersion = 1000;

const char* reasonFor(int code) {
    switch (code) {
        case 400:
            return "BadRequest";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "NotFound";
        case 409:
            return "Conflict";
        case 410:
            return "Expired";
        case 422:
            return "Invalid";
        case 429:
            return "TooManyRequests";
        case 500:
            return "InternalError";
        case 503:
            return "ServiceUnavailable";
        case 504:
            return "Timeout";
        default:
            return "Unknown";
    }
}

Json statusObject(int code, const std::string& message, const std::string& reason = "") {
    return Json{{"kind", "Status"},
                {"apiVersion", "v1"},
                {"metadata", Json::object()},
                {"status", "Failure"},
                {"message", message},
                {"reason", reason.empty() ? reasonFor(code) : reason},
                {"code", code}};
}

void reply(httplib::Response& response, int code, const Json& body) {
    response.status = code;
    response.set_content(body.dump(), "application/json");
}

void replyStatus(httplib::Response& response, int code, const std::string& message,
                 const std::string& reason = "") {
    reply(response, code, statusObject(code, message, reason));
}

std::string stringAt(const Json& object, const std::string& key) {
    if (!object.is_object())
        return "";
    const auto found = object.find(key);
    return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}

std::string nameOf(const Json& object) {
    return object.is_object() && object.contains("metadata") ? stringAt(object["metadata"], "name")
                                                             : "";
}

std::string notFoundMessage(const std::string& resource, const std::string& name) {
    return resource + " \"" + name + "\" not found";
}

std::string conflictMessage(const std::string& name, const std::string& why) {
    return std::string("Operation cannot be fulfilled on ") + kSliceResource + " \"" + name +
           "\": " + why;
}

// What an API server without the field's feature gate does: the devices' field is not stored.
void dropDeviceField(Json& slice, const char* field) {
    if (!slice.contains("spec") || !slice["spec"].is_object() ||
        !slice["spec"].contains("devices") || !slice["spec"]["devices"].is_array())
        return;
    for (auto& device : slice["spec"]["devices"]) {
        if (device.is_object())
            device.erase(field);
    }
}

// What kube-apiserver 1.37.2 does with KEP-5941's counter request policies (no
// DRASharedConsumableCapacity yet): the unknown field is not stored.
void dropCounterRequestPolicies(Json& slice) {
    const auto sets = slice.value("/spec/sharedCounters"_json_pointer, Json());
    if (!sets.is_array())
        return;
    for (auto& set : slice["spec"]["sharedCounters"]) {
        if (!set.is_object() || !set.contains("counters") || !set["counters"].is_object())
            continue;
        for (auto& [name, counter] : set["counters"].items()) {
            if (counter.is_object())
                counter.erase("requestPolicy");
        }
    }
}

// The API server stamps device taints with the time they were added.
void stampTaints(Json& slice) {
    if (!slice.contains("spec") || !slice["spec"].is_object() ||
        !slice["spec"].contains("devices") || !slice["spec"]["devices"].is_array())
        return;
    for (auto& device : slice["spec"]["devices"]) {
        if (!device.is_object() || !device.contains("taints") || !device["taints"].is_array())
            continue;
        for (auto& taint : device["taints"]) {
            if (taint.is_object() && !taint.contains("timeAdded"))
                taint["timeAdded"] = "2026-11-22T00:00:00Z";
        }
    }
}

// One of a Status's details.causes, as apierrors.NewInvalid makes it of a field.Error: reason
// the error's type (FieldValueRequired, FieldValueInvalid...), message its ErrorBody ("Required
// value: ...", "Invalid value: \"x\": ..."), field its path.
Json fieldCause(const std::string& reason, const std::string& field, const std::string& message) {
    return Json{{"reason", reason}, {"message", message}, {"field", field}};
}

// kube-apiserver 1.37.2's words (declarative validation of the attribute union) for an attribute
// left without a value.
constexpr const char* kNoAttributeValue =
    "Invalid value: \"\": must specify one of: `int`, `bool`, `string`, `version`, `ints`, "
    "`bools`, `strings`, `versions`";

// As kube-apiserver without DRAListTypeAttributes (the 1.37 default): the list-typed values are
// stripped from the slice (dropDisabledFields), then validation finds attributes left without a
// value. Returns one cause per such attribute, in the API server's field path form.
std::vector<Json> stripListAttributeValues(Json& slice) {
    std::vector<Json> causes;
    if (!slice.contains("spec") || !slice["spec"].is_object())
        return causes;
    Json& spec = slice["spec"];
    if (!spec.contains("devices") || !spec["devices"].is_array())
        return causes;
    for (size_t index = 0; index < spec["devices"].size(); ++index) {
        Json& device = spec["devices"][index];
        if (!device.is_object() || !device.contains("attributes") ||
            !device["attributes"].is_object())
            continue;
        for (auto& [name, value] : device["attributes"].items()) {
            if (!value.is_object())
                continue;
            for (const char* listField : {"ints", "strings", "bools", "versions"})
                value.erase(listField);
            if (!value.empty())
                continue;
            causes.push_back(
                fieldCause("FieldValueInvalid",
                           "spec.devices[" + std::to_string(index) + "].attributes[" + name + "]",
                           kNoAttributeValue));
        }
    }
    return causes;
}

// kube-apiserver's 422 for an invalid object (apierrors.NewInvalid): "<Kind>.<group> "<name>" is
// invalid: <errors>", the errors bracketed when there are several, reason Invalid, and details
// with the group, the kind, the name and one cause per field.
Json invalidStatus(const std::string& group, const std::string& kind, const std::string& name,
                   const std::vector<Json>& causes) {
    std::vector<std::string> errors;
    for (const auto& cause : causes)
        errors.push_back(stringAt(cause, "field") + ": " + stringAt(cause, "message"));
    std::string joined;
    for (const auto& error : errors)
        joined += (joined.empty() ? "" : ", ") + error;
    if (errors.size() > 1)
        joined = "[" + joined + "]";
    Json status = statusObject(422, kind + "." + group + " \"" + name + "\" is invalid: " + joined,
                               "Invalid");
    status["details"] = Json{{"name", name}, {"group", group}, {"kind", kind}, {"causes", causes}};
    return status;
}

Json invalidSliceStatus(const std::string& name, const std::vector<Json>& causes) {
    return invalidStatus("resource.k8s.io", "ResourceSlice", name, causes);
}

// kube-apiserver's 403 of an admission plugin (admission.NewForbidden, so apierrors.NewForbidden):
// reason Forbidden, details naming the resource (not the kind) and the object, no causes.
Json forbiddenSliceStatus(const std::string& name, const std::string& message) {
    Json status = statusObject(403, message, "Forbidden");
    status["details"] =
        Json{{"name", name}, {"group", "resource.k8s.io"}, {"kind", "resourceslices"}};
    return status;
}

// One term of a field selector: spec.nodeName=n1, spec.driver!=x.
struct FieldRequirement {
    std::string field;
    std::string value;
    bool mustEqual = true;
};

std::string fieldValue(const Json& slice, const std::string& field) {
    if (field == "metadata.name")
        return nameOf(slice);
    const Json spec = slice.value("spec", Json::object());
    return field == "spec.nodeName" ? stringAt(spec, "nodeName") : stringAt(spec, "driver");
}

// The fields kube-apiserver accepts in a ResourceSlice field selector; others are a 400.
std::optional<std::vector<FieldRequirement>> parseFieldSelector(const std::string& selector,
                                                                std::string& problem) {
    std::vector<FieldRequirement> requirements;
    size_t start = 0;
    while (start < selector.size()) {
        size_t end = selector.find(',', start);
        if (end == std::string::npos)
            end = selector.size();
        const std::string term = selector.substr(start, end - start);
        start = end + 1;
        FieldRequirement requirement;
        size_t operatorAt = term.find("!=");
        size_t valueAt = operatorAt + 2;
        requirement.mustEqual = operatorAt == std::string::npos;
        if (requirement.mustEqual) {
            operatorAt = term.find('=');
            valueAt = term.compare(operatorAt, 2, "==") == 0 ? operatorAt + 2 : operatorAt + 1;
        }
        if (operatorAt == std::string::npos) {
            problem = "invalid selector: '" + selector + "'; can't understand '" + term + "'";
            return std::nullopt;
        }
        requirement.field = term.substr(0, operatorAt);
        requirement.value = term.substr(valueAt);
        if (requirement.field != "metadata.name" && requirement.field != "spec.nodeName" &&
            requirement.field != "spec.driver") {
            problem = "field label not supported: " + requirement.field;
            return std::nullopt;
        }
        requirements.push_back(std::move(requirement));
    }
    return requirements;
}

bool matches(const std::vector<FieldRequirement>& requirements, const Json& slice) {
    for (const auto& requirement : requirements) {
        if ((fieldValue(slice, requirement.field) == requirement.value) != requirement.mustEqual)
            return false;
    }
    return true;
}

std::string eventLine(const std::string& type, const Json& object) {
    return Json{{"type", type}, {"object", object}}.dump() + "\n";
}

struct WatchRecord {
    std::int64_t resourceVersion;
    std::string type;
    Json object;
};

struct Fault {
    int remaining;
    int status;
    std::optional<int> retryAfterSeconds;
    std::string method;
};

struct PendingBadAnswer {
    int remaining;
    BadAnswer answer;
};

// One open watch, owned by httplib's content provider for the life of the stream.
struct WatchState {
    std::vector<FieldRequirement> selector;
    std::int64_t cursor = 0;  // the last resourceVersion delivered
    bool bookmarks = false;
    Clock::time_point deadline;
    Clock::time_point nextBookmark;
    std::string pending;  // written before anything else
    bool finished = false;
    std::uint64_t cutsAtStart = 0;  // breakWatches() calls before it opened
    bool cut = false;               // a later one came: the connection is dropped
};

}  // namespace

class FakeApiServer::Impl {
  public:
    explicit Impl(FakeApiServerOptions options)
        : options_(std::move(options)), random_(std::random_device{}()) {
        const bool tls = !options_.tlsCertFile.empty() && !options_.tlsKeyFile.empty();
        if (tls) {
            server_ = std::make_unique<httplib::SSLServer>(
                options_.tlsCertFile.c_str(), options_.tlsKeyFile.c_str(),
                options_.clientCaFile.empty() ? nullptr : options_.clientCaFile.c_str());
        } else {
            server_ = std::make_unique<httplib::Server>();
        }
        if (!server_->is_valid())
            throw std::runtime_error("fake API server: cannot load the TLS certificate " +
                                     options_.tlsCertFile);
        if (tls) {
            // A server that verifies client certificates must name a session id context, or
            // OpenSSL refuses every resumed session with an internal_error alert; clients
            // (libcurl among them) resume when they can, as they do with the real API server.
            static constexpr unsigned char kSessionContext[] = "numadra-fake-apiserver";
            SSL_CTX_set_session_id_context(static_cast<httplib::SSLServer&>(*server_).ssl_context(),
                                           kSessionContext, sizeof kSessionContext - 1);
        }
        scheme_ = tls ? "https" : "http";
        server_->new_task_queue = [threads = std::max<size_t>(1, options_.workerThreads)] {
            return new httplib::ThreadPool(threads);
        };
        // Headers and body go out in two writes; Nagle would hold the body for the client's
        // delayed ACK (40 ms a request). Go's net/http, the real server, sets it too.
        server_->set_tcp_nodelay(true);
        routeRequests();
        port_ = options_.port == 0
                    ? server_->bind_to_any_port("127.0.0.1")
                    : (server_->bind_to_port("127.0.0.1", options_.port) ? options_.port : -1);
        if (port_ <= 0)
            throw std::runtime_error("fake API server: cannot listen on 127.0.0.1:" +
                                     std::to_string(options_.port));
        listener_ = std::thread([this] { server_->listen_after_bind(); });
        // stop() is a no-op until the server runs; wait so that an immediate stop() works.
        while (!server_->is_running())
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    ~Impl() { stop(); }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;

    std::string url() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_); }
    int port() const { return port_; }

    void stop() {
        std::lock_guard stopping(stopMutex_);
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        changed_.notify_all();
        server_->stop();
        if (listener_.joinable())
            listener_.join();
    }

    void putResourceClaim(Json claim) {
        std::lock_guard lock(mutex_);
        stampExisting(claim, "resource.k8s.io/v1", "ResourceClaim");
        const Json& metadata = claim["metadata"];
        claims_[{stringAt(metadata, "namespace"), stringAt(metadata, "name")}] = std::move(claim);
    }

    bool removeResourceClaim(const std::string& ns, const std::string& name) {
        std::lock_guard lock(mutex_);
        return claims_.erase({ns, name}) > 0;
    }

    std::optional<Json> resourceClaim(const std::string& ns, const std::string& name) const {
        std::lock_guard lock(mutex_);
        const auto found = claims_.find({ns, name});
        if (found == claims_.end())
            return std::nullopt;
        return found->second;
    }

    void addNode(const std::string& name, const std::string& uid,
                 const std::optional<std::vector<std::string>>& declaredFeatures) {
        std::lock_guard lock(mutex_);
        Json node{
            {"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", name}, {"uid", uid}}}};
        if (declaredFeatures)
            node["status"]["declaredFeatures"] = *declaredFeatures;
        stampExisting(node, "v1", "Node");
        nodes_[name] = std::move(node);
    }

    Json addResourceSlice(Json slice) {
        std::lock_guard lock(mutex_);
        std::string problem;
        const int code = storeNewSlice(slice, problem);
        if (code != 201)
            throw std::invalid_argument("addResourceSlice: " + problem);
        return slice;
    }

    bool deleteResourceSliceExternally(const std::string& name) {
        std::lock_guard lock(mutex_);
        if (slices_.count(name) == 0)
            return false;
        removeSlice(name);
        return true;
    }

    std::vector<Json> resourceSlices() const {
        std::lock_guard lock(mutex_);
        std::vector<Json> all;
        for (const auto& [name, slice] : slices_)
            all.push_back(slice);
        return all;
    }

    std::optional<Json> resourceSlice(const std::string& name) const {
        std::lock_guard lock(mutex_);
        const auto found = slices_.find(name);
        return found == slices_.end() ? std::nullopt : std::optional<Json>(found->second);
    }

    std::int64_t currentResourceVersion() const {
        std::lock_guard lock(mutex_);
        return resourceVersion_;
    }

    void compactHistory() {
        {
            std::lock_guard lock(mutex_);
            history_.clear();
            compactedRevision_ = resourceVersion_;
        }
        changed_.notify_all();
    }

    void expireWatches() {
        {
            std::lock_guard lock(mutex_);
            ++resourceVersion_;  // a write no watch was told of, then compacted away
            history_.clear();
            compactedRevision_ = resourceVersion_;
        }
        changed_.notify_all();
    }

    void breakWatches() {
        {
            std::lock_guard lock(mutex_);
            ++watchCuts_;
        }
        changed_.notify_all();
    }

    void failNext(int count, int status, std::optional<int> retryAfterSeconds, std::string method) {
        if (count <= 0)
            return;
        std::lock_guard lock(mutex_);
        faults_.push_back(Fault{count, status, retryAfterSeconds, std::move(method)});
    }

    void misbehaveNext(int count, BadAnswer answer) {
        if (count <= 0)
            return;
        std::lock_guard lock(mutex_);
        badAnswers_.push_back(PendingBadAnswer{count, std::move(answer)});
    }

    std::uint64_t badAnswerBytesSent() const { return badAnswerBytes_.load(); }

    void setRefuseListAttributes(bool refuse) {
        std::lock_guard lock(mutex_);
        refuseListAttributes_ = refuse;
    }

    void setDropDeviceTaints(bool drop) {
        std::lock_guard lock(mutex_);
        dropDeviceTaints_ = drop;
    }

    void setDropCounterRequestPolicies(bool drop) {
        std::lock_guard lock(mutex_);
        dropCounterRequestPolicies_ = drop;
    }

    void setDropNodeAllocatableResources(bool drop) {
        std::lock_guard lock(mutex_);
        dropNodeAllocatableResources_ = drop;
    }

    void setCheckDeclaredFeatures(bool check) {
        std::lock_guard lock(mutex_);
        checkDeclaredFeatures_ = check;
    }

    // The fields this server's feature gates (off) do not store.
    void dropWhatTheGatesDrop(Json& slice) const {
        if (dropDeviceTaints_)
            dropDeviceField(slice, "taints");
        if (dropCounterRequestPolicies_)
            dropCounterRequestPolicies(slice);
        if (dropNodeAllocatableResources_)
            dropDeviceField(slice, "nodeAllocatableResources");
    }

    // kube-apiserver 1.37's NodeDeclaredFeatures admission: a slice with node-allocatable
    // mappings for a node whose kubelet does not declare the feature is forbidden.
    std::optional<std::string> undeclaredNodeAllocatable(const Json& slice) const {
        if (!checkDeclaredFeatures_)
            return std::nullopt;
        const std::string node = slice.value("/spec/nodeName"_json_pointer, std::string());
        bool mapped = false;
        for (const auto& device : slice.value("/spec/devices"_json_pointer, Json::array()))
            mapped = mapped || (device.is_object() && device.contains("nodeAllocatableResources"));
        if (!mapped)
            return std::nullopt;
        auto it = nodes_.find(node);
        const Json declared =
            it == nodes_.end()
                ? Json::array()
                : it->second.value("/status/declaredFeatures"_json_pointer, Json::array());
        if (std::find(declared.begin(), declared.end(), "DRANodeAllocatableResources") !=
            declared.end())
            return std::nullopt;
        return std::string(kSliceResource) + " \"" + nameOf(slice) + "\" is forbidden: node \"" +
               node + "\" does not support DRANodeAllocatableResources feature";
    }

    std::vector<RecordedRequest> requests() const {
        std::lock_guard lock(mutex_);
        return requests_;
    }

    int requestCount(const std::string& method, const std::string& pathPrefix) const {
        std::lock_guard lock(mutex_);
        int count = 0;
        for (const auto& request : requests_) {
            if ((method.empty() || request.method == method) &&
                request.path.starts_with(pathPrefix))
                ++count;
        }
        return count;
    }

  private:
    using Request = httplib::Request;
    using Response = httplib::Response;

    void routeRequests() {
        server_->set_pre_routing_handler([this](const Request& request, Response& response) {
            return recordAndInjectFaults(request, response);
        });
        server_->Get(kSlicesPattern, [this](const Request& request, Response& response) {
            if (request.get_param_value("watch") == "true" ||
                request.get_param_value("watch") == "1")
                watchSlices(request, response);
            else
                listSlices(request, response);
        });
        server_->Post(kSlicesPattern, [this](const Request& request, Response& response) {
            createSlice(request, response);
        });
        server_->Get(kSlicePattern, [this](const Request& request, Response& response) {
            getSlice(request.matches[1], response);
        });
        server_->Put(kSlicePattern, [this](const Request& request, Response& response) {
            updateSlice(request.matches[1], request, response);
        });
        server_->Delete(kSlicePattern, [this](const Request& request, Response& response) {
            deleteSlice(request.matches[1], request, response);
        });
        server_->Get(kClaimPattern, [this](const Request& request, Response& response) {
            getClaim(request.matches[1], request.matches[2], response);
        });
        server_->Patch(kClaimStatusPattern, [this](const Request& request, Response& response) {
            applyClaimStatus(request.matches[1], request.matches[2], request, response);
        });
        server_->Get(kNodePattern, [this](const Request& request, Response& response) {
            getNode(request.matches[1], response);
        });
        server_->set_error_handler([](const Request& request, Response& response) {
            if (response.body.empty())
                replyStatus(response, response.status,
                            "the server could not find the requested resource (" + request.method +
                                " " + request.path + ")");
        });
        server_->set_exception_handler(
            [](const Request&, Response& response, const std::exception_ptr& failure) {
                std::string what = "unknown exception";
                try {
                    std::rethrow_exception(failure);
                } catch (const std::exception& e) {
                    what = e.what();
                } catch (...) {
                }
                replyStatus(response, 500, "fake API server: " + what);
            });
    }

    httplib::Server::HandlerResponse recordAndInjectFaults(const Request& request,
                                                           Response& response) {
        std::lock_guard lock(mutex_);
        const size_t queryAt = request.target.find('?');
        requests_.push_back(
            RecordedRequest{request.method, request.path,
                            queryAt == std::string::npos ? "" : request.target.substr(queryAt + 1),
                            request.get_header_value("Authorization")});
        if (takeBadAnswer(request, response))
            return httplib::Server::HandlerResponse::Handled;
        if (faults_.empty())
            return httplib::Server::HandlerResponse::Unhandled;
        Fault& fault = faults_.front();
        if (!fault.method.empty() && fault.method != request.method)
            return httplib::Server::HandlerResponse::Unhandled;
        replyStatus(response, fault.status, "injected fault: HTTP " + std::to_string(fault.status));
        if (fault.retryAfterSeconds)
            response.set_header("Retry-After", std::to_string(*fault.retryAfterSeconds));
        if (--fault.remaining == 0)
            faults_.pop_front();
        return httplib::Server::HandlerResponse::Handled;
    }

    // Under mutex_.
    bool takeBadAnswer(const Request& request, Response& response) {
        if (badAnswers_.empty())
            return false;
        PendingBadAnswer& pending = badAnswers_.front();
        const BadAnswer& answer = pending.answer;
        if ((!answer.method.empty() && answer.method != request.method) ||
            !request.path.starts_with(answer.pathPrefix))
            return false;
        serveBadAnswer(answer, response);
        if (--pending.remaining == 0)
            badAnswers_.pop_front();
        return true;
    }

    void serveBadAnswer(const BadAnswer& answer, Response& response) {
        response.status = 200;
        // An array that never closes: valid JSON as far as it goes, so only its size can stop it.
        auto chunk = std::make_shared<std::string>("[");
        while (chunk->size() < size_t{64} * 1024)
            chunk->append("1,");
        switch (answer.body) {
            case BadAnswer::Body::Endless:
                response.set_chunked_content_provider(
                    "application/json", [this, chunk](size_t, httplib::DataSink& sink) {
                        return sendBadBytes(sink, *chunk);
                    });
                break;
            case BadAnswer::Body::Oversized:
                response.set_content_provider(
                    answer.bytes, "application/json",
                    [this, chunk](size_t, size_t length, httplib::DataSink& sink) {
                        return sendBadBytes(sink, std::string_view(*chunk).substr(
                                                      0, std::min(length, chunk->size())));
                    });
                break;
            case BadAnswer::Body::Trickle:
                response.set_chunked_content_provider(
                    "application/json",
                    [this, interval = answer.interval](size_t offset, httplib::DataSink& sink) {
                        if (offset > 0 && waitForStop(interval))
                            return false;
                        return sendBadBytes(sink, offset == 0 ? "[" : "1");
                    });
                break;
        }
    }

    bool sendBadBytes(httplib::DataSink& sink, std::string_view bytes) {
        if (stopRequested() || !sink.write(bytes.data(), bytes.size()))
            return false;  // stopping, or the client hung up
        badAnswerBytes_ += bytes.size();
        return true;
    }

    bool stopRequested() const {
        std::lock_guard lock(mutex_);
        return stopping_;
    }

    // True when the server is stopping (sooner than `interval`).
    bool waitForStop(std::chrono::milliseconds interval) {
        std::unique_lock lock(mutex_);
        return changed_.wait_for(lock, interval, [this] { return stopping_; });
    }

    // Gives an object made outside the API (a helper's) what the API server would.
    void stampExisting(Json& object, const char* apiVersion, const char* kind) {
        if (!object.is_object())
            object = Json::object();
        // apiVersion and kind lead, as in the API server's answers.
        Json stamped{{"apiVersion", object.value("apiVersion", apiVersion)},
                     {"kind", object.value("kind", kind)}};
        for (auto& [key, value] : object.items()) {
            if (key != "apiVersion" && key != "kind")
                stamped[key] = std::move(value);
        }
        object = std::move(stamped);
        Json& metadata = object["metadata"];
        if (!metadata.is_object())
            metadata = Json::object();
        if (!metadata.contains("uid"))
            metadata["uid"] = newUid();
        if (!metadata.contains("creationTimestamp"))
            metadata["creationTimestamp"] = text::utcNow();
        metadata["resourceVersion"] = std::to_string(++resourceVersion_);
    }

    std::string newUid() {
        constexpr char kHex[] = "0123456789abcdef";
        std::string uid = "xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx";
        std::uniform_int_distribution<int> digit(0, 15);
        for (char& c : uid) {
            if (c == 'x')
                c = kHex[digit(random_)];
        }
        return uid;
    }

    // The API server's generateName suffix: 5 characters, no vowels (no words by accident).
    std::string nameSuffix() {
        constexpr std::string_view kAlphabet = "bcdfghjklmnpqrstvwxz2456789";
        std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
        std::string suffix;
        for (int i = 0; i < 5; ++i)
            suffix.push_back(kAlphabet[pick(random_)]);
        return suffix;
    }

    void recordEvent(const std::string& type, const Json& object) {
        history_.push_back(WatchRecord{resourceVersion_, type, object});
        while (history_.size() > options_.historyLimit) {
            compactedRevision_ = history_.front().resourceVersion;
            history_.pop_front();
        }
        changed_.notify_all();
    }

    // Validates and stores a new slice (mutex held). Returns the HTTP status, 201 on success;
    // `refusal` is set to the whole Status for a 422 that carries field causes and for a 403.
    // A dry run (dryRun=All) answers the same and stores nothing, as kube-apiserver does: no
    // resourceVersion, no watch event.
    int storeNewSlice(Json& slice, std::string& problem, std::optional<Json>* refusal = nullptr,
                      bool dryRun = false) {
        const auto revisionBefore = resourceVersion_;
        if (!slice.is_object() || (slice.contains("metadata") && !slice["metadata"].is_object())) {
            problem = "the body is not a ResourceSlice object";
            return 400;
        }
        Json& metadata = slice["metadata"];
        std::string name = stringAt(metadata, "name");
        const std::string generateName = stringAt(metadata, "generateName");
        if (name.empty() && generateName.empty()) {
            problem =
                "ResourceSlice.resource.k8s.io is invalid: metadata.name: Required value: "
                "name or generateName is required";
            return 422;
        }
        if (name.empty()) {
            do {
                name = generateName + nameSuffix();
            } while (slices_.count(name) > 0);
        }
        if (slices_.count(name) > 0) {
            problem = std::string(kSliceResource) + " \"" + name + "\" already exists";
            return 409;
        }
        metadata["name"] = name;
        metadata.erase("resourceVersion");
        metadata.erase("uid");
        metadata["generation"] = 1;
        stampExisting(slice, "resource.k8s.io/v1", "ResourceSlice");
        if (auto forbidden = undeclaredNodeAllocatable(slice)) {
            problem = *forbidden;
            if (refusal != nullptr)
                *refusal = forbiddenSliceStatus(name, *forbidden);
            return 403;
        }
        if (refuseListAttributes_) {
            if (auto causes = stripListAttributeValues(slice); !causes.empty()) {
                if (refusal != nullptr)
                    *refusal = invalidSliceStatus(name, causes);
                problem = "invalid";
                return 422;
            }
        }
        dropWhatTheGatesDrop(slice);
        stampTaints(slice);
        if (dryRun) {
            resourceVersion_ = revisionBefore;
            slice["metadata"].erase("resourceVersion");
            return 201;
        }
        slices_[name] = slice;
        recordEvent("ADDED", slice);
        return 201;
    }

    void removeSlice(const std::string& name) {
        Json slice = std::move(slices_.at(name));
        slices_.erase(name);
        // The DELETED event carries the resourceVersion of the deletion itself.
        slice["metadata"]["resourceVersion"] = std::to_string(++resourceVersion_);
        recordEvent("DELETED", slice);
    }

    static std::optional<Json> parseBody(const Request& request, Response& response) {
        Json body = Json::parse(request.body, nullptr, /*allow_exceptions=*/false);
        if (body.is_discarded() || !body.is_object()) {
            replyStatus(response, 400, "the request body is not a JSON object");
            return std::nullopt;
        }
        return body;
    }

    std::optional<std::vector<FieldRequirement>> selectorOf(const Request& request,
                                                            Response& response) {
        std::string problem;
        auto selector = parseFieldSelector(request.get_param_value("fieldSelector"), problem);
        if (!selector)
            replyStatus(response, 400, problem);
        return selector;
    }

    void listSlices(const Request& request, Response& response) {
        const auto selector = selectorOf(request, response);
        if (!selector)
            return;
        std::lock_guard lock(mutex_);
        Json items = Json::array();
        for (const auto& [name, slice] : slices_) {
            if (matches(*selector, slice))
                items.push_back(slice);
        }
        reply(response, 200,
              Json{{"kind", "ResourceSliceList"},
                   {"apiVersion", "resource.k8s.io/v1"},
                   {"metadata", {{"resourceVersion", std::to_string(resourceVersion_)}}},
                   {"items", std::move(items)}});
    }

    void getSlice(const std::string& name, Response& response) {
        std::lock_guard lock(mutex_);
        const auto found = slices_.find(name);
        if (found == slices_.end())
            return replyStatus(response, 404, notFoundMessage(kSliceResource, name));
        reply(response, 200, found->second);
    }

    void createSlice(const Request& request, Response& response) {
        auto slice = parseBody(request, response);
        if (!slice)
            return;
        std::lock_guard lock(mutex_);
        std::string problem;
        std::optional<Json> refusal;
        const bool dryRun = request.get_param_value("dryRun") == "All";
        const int code = storeNewSlice(*slice, problem, &refusal, dryRun);
        if (code == 201)
            return reply(response, 201, *slice);
        if (refusal)
            return reply(response, code, *refusal);
        replyStatus(response, code, problem, code == 409 ? "AlreadyExists" : "");
    }

    void updateSlice(const std::string& name, const Request& request, Response& response) {
        auto slice = parseBody(request, response);
        if (!slice)
            return;
        if (nameOf(*slice) != name)
            return replyStatus(response, 400,
                               "the name of the object (" + nameOf(*slice) +
                                   ") does not match the name on the URL (" + name + ")");
        std::lock_guard lock(mutex_);
        const auto found = slices_.find(name);
        if (found == slices_.end())
            return replyStatus(response, 404, notFoundMessage(kSliceResource, name));
        Json& stored = found->second;
        Json& metadata = (*slice)["metadata"];
        if (stringAt(metadata, "resourceVersion") !=
            stringAt(stored["metadata"], "resourceVersion"))
            return replyStatus(response, 409,
                               conflictMessage(name,
                                               "the object has been modified; please apply your "
                                               "changes to the latest version and try again"));
        for (const char* kept : {"uid", "creationTimestamp", "generation"})
            metadata[kept] = stored["metadata"][kept];
        if (slice->value("spec", Json()) != stored.value("spec", Json()))
            metadata["generation"] = metadata["generation"].get<std::int64_t>() + 1;
        stampExisting(*slice, "resource.k8s.io/v1", "ResourceSlice");
        if (auto forbidden = undeclaredNodeAllocatable(*slice))
            return reply(response, 403, forbiddenSliceStatus(name, *forbidden));
        if (refuseListAttributes_) {
            if (auto causes = stripListAttributeValues(*slice); !causes.empty())
                return reply(response, 422, invalidSliceStatus(name, causes));
        }
        dropWhatTheGatesDrop(*slice);
        stampTaints(*slice);
        stored = *slice;
        recordEvent("MODIFIED", stored);
        reply(response, 200, stored);
    }

    void deleteSlice(const std::string& name, const Request& request, Response& response) {
        std::optional<Json> options;
        if (!request.body.empty() && !(options = parseBody(request, response)))
            return;
        std::lock_guard lock(mutex_);
        const auto found = slices_.find(name);
        if (found == slices_.end())
            return replyStatus(response, 404, notFoundMessage(kSliceResource, name));
        const Json& metadata = found->second["metadata"];
        const Json preconditions =
            options ? options->value("preconditions", Json::object()) : Json::object();
        for (const char* field : {"resourceVersion", "uid"}) {
            const std::string expected = stringAt(preconditions, field);
            const std::string actual = stringAt(metadata, field);
            if (!expected.empty() && expected != actual)
                return replyStatus(
                    response, 409,
                    conflictMessage(name, std::string("Precondition failed: ") + field +
                                              " in precondition: " + expected + ", " + field +
                                              " in object meta: " + actual));
        }
        const std::string uid = stringAt(metadata, "uid");
        removeSlice(name);
        reply(response, 200,
              Json{{"kind", "Status"},
                   {"apiVersion", "v1"},
                   {"metadata", Json::object()},
                   {"status", "Success"},
                   {"details",
                    {{"name", name},
                     {"group", "resource.k8s.io"},
                     {"kind", "resourceslices"},
                     {"uid", uid}}}});
    }

    void getClaim(const std::string& ns, const std::string& name, Response& response) {
        std::lock_guard lock(mutex_);
        const auto found = claims_.find({ns, name});
        if (found == claims_.end())
            return replyStatus(response, 404,
                               notFoundMessage("resourceclaims.resource.k8s.io", name));
        reply(response, 200, found->second);
    }

    // status.devices entries are keyed by driver, pool, device and shareID (a map list).
    static std::string deviceStatusKey(const Json& entry) {
        return stringAt(entry, "driver") + "/" + stringAt(entry, "pool") + "/" +
               stringAt(entry, "device") + "/" + stringAt(entry, "shareID");
    }

    // Server-side apply of status.devices, as far as the driver uses it: the field manager's
    // entries are the ones it applied last; an entry must name an allocated device (as
    // kube-apiserver validates it); metadata.uid, when given, must match.
    void applyClaimStatus(const std::string& ns, const std::string& name, const Request& request,
                          Response& response) {
        if (request.get_header_value("Content-Type") != "application/apply-patch+yaml")
            return replyStatus(response, 415,
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/apply-patch+yaml");
        const std::string manager = request.get_param_value("fieldManager");
        // kube-apiserver v1.37.2 (apiserver's handlers/patch.go): ValidatePatchOptions, then
        // apierrors.NewInvalid(PatchOptions.meta.k8s.io, "", errs).
        if (manager.empty())
            return reply(response, 422,
                         invalidStatus("meta.k8s.io", "PatchOptions", "",
                                       {fieldCause("FieldValueRequired", "fieldManager",
                                                   "Required value: is required for apply "
                                                   "patch")}));
        auto body = parseBody(request, response);
        if (!body)
            return;
        std::lock_guard lock(mutex_);
        const auto found = claims_.find({ns, name});
        if (found == claims_.end())
            return replyStatus(response, 404,
                               notFoundMessage("resourceclaims.resource.k8s.io", name));
        Json& claim = found->second;
        const std::string uid = stringAt(body->value("metadata", Json::object()), "uid");
        if (!uid.empty() && uid != stringAt(claim["metadata"], "uid"))
            return replyStatus(response, 409,
                               "Operation cannot be fulfilled on resourceclaims.resource.k8s.io "
                               "\"" +
                                   name + "\": the UID in the precondition (" + uid +
                                   ") does not match the UID in record");
        std::set<std::string> allocated;
        for (const auto& result : claim["status"]
                                      .value("allocation", Json::object())
                                      .value("devices", Json::object())
                                      .value("results", Json::array()))
            allocated.insert(deviceStatusKey(Json{{"driver", stringAt(result, "driver")},
                                                  {"pool", stringAt(result, "pool")},
                                                  {"device", stringAt(result, "device")},
                                                  {"shareID", stringAt(result, "shareID")}}));
        const Json applied = body->value("status", Json::object()).value("devices", Json::array());
        std::set<std::string> keys;
        for (size_t index = 0; index < applied.size(); ++index) {
            const Json& entry = applied[index];
            // kube-apiserver v1.37.2 (pkg/apis/resource/validation, validateDeviceStatus):
            // field.Invalid(status.devices[i], <the shared device ID>, "must be an allocated
            // device in the claim"); the fake quotes the ID as driver/pool/device[/shareID].
            if (allocated.count(deviceStatusKey(entry)) == 0)
                return reply(
                    response, 422,
                    invalidStatus("resource.k8s.io", "ResourceClaim", name,
                                  {fieldCause("FieldValueInvalid",
                                              "status.devices[" + std::to_string(index) + "]",
                                              "Invalid value: \"" + deviceStatusKey(entry) +
                                                  "\": must be an allocated device in the "
                                                  "claim")}));
            keys.insert(deviceStatusKey(entry));
        }
        auto& owned = statusOwners_[{ns, name}][manager];
        Json devices = Json::array();
        for (const auto& entry : claim["status"].value("devices", Json::array())) {
            const std::string key = deviceStatusKey(entry);
            if (owned.count(key) == 0 && keys.count(key) == 0)
                devices.push_back(entry);
        }
        for (const auto& entry : applied)
            devices.push_back(entry);
        owned = keys;
        if (devices.empty())
            claim["status"].erase("devices");
        else
            claim["status"]["devices"] = std::move(devices);
        claim["metadata"]["resourceVersion"] = std::to_string(++resourceVersion_);
        reply(response, 200, claim);
    }

    void getNode(const std::string& name, Response& response) {
        std::lock_guard lock(mutex_);
        const auto found = nodes_.find(name);
        if (found == nodes_.end())
            return replyStatus(response, 404, notFoundMessage("nodes", name));
        reply(response, 200, found->second);
    }

    void watchSlices(const Request& request, Response& response) {
        auto selector = selectorOf(request, response);
        if (!selector)
            return;
        const std::string from = request.get_param_value("resourceVersion");
        std::int64_t fromVersion = 0;
        if (!from.empty()) {
            try {
                fromVersion = std::stoll(from);
            } catch (const std::exception&) {
                return replyStatus(response, 400, "invalid resourceVersion: " + from);
            }
        }
        auto watch = std::make_shared<WatchState>();
        watch->selector = std::move(*selector);
        watch->bookmarks = request.get_param_value("allowWatchBookmarks") == "true";
        const std::string timeout = request.get_param_value("timeoutSeconds");
        watch->deadline =
            Clock::now() +
            (timeout.empty() ? kDefaultWatchTimeout : std::chrono::seconds(std::stoll(timeout)));
        watch->nextBookmark = Clock::now() + options_.bookmarkInterval;
        startWatch(*watch, fromVersion);
        response.set_chunked_content_provider(
            "application/json",
            [this, watch](size_t, httplib::DataSink& sink) { return pumpWatch(*watch, sink); });
    }

    void startWatch(WatchState& watch, std::int64_t fromVersion) {
        std::lock_guard lock(mutex_);
        watch.cutsAtStart = watchCuts_;
        if (fromVersion == 0) {
            // No resourceVersion (or "0"): the current state as ADDED events, then the changes.
            for (const auto& [name, slice] : slices_) {
                if (matches(watch.selector, slice))
                    watch.pending += eventLine("ADDED", slice);
            }
            watch.cursor = resourceVersion_;
        } else if (fromVersion < compactedRevision_) {
            watch.pending = expiredLine(fromVersion);
            watch.finished = true;
        } else {
            watch.cursor = fromVersion;
        }
    }

    std::string expiredLine(std::int64_t fromVersion) const {
        return eventLine("ERROR",
                         statusObject(410,
                                      "too old resource version: " + std::to_string(fromVersion) +
                                          " (" + std::to_string(compactedRevision_) + ")",
                                      "Expired"));
    }

    std::int64_t newestEvent() const {
        return history_.empty() ? compactedRevision_ : history_.back().resourceVersion;
    }

    // Called by httplib in a loop until the stream ends: waits for something to send, sends it.
    bool pumpWatch(WatchState& watch, httplib::DataSink& sink) {
        std::string lines = std::move(watch.pending);
        watch.pending.clear();
        if (lines.empty() && !watch.finished)
            lines = nextLines(watch);
        if (watch.cut)
            return false;  // no last chunk: the client sees its transfer fail
        if (!lines.empty() && !sink.write(lines.data(), lines.size()))
            return false;  // the client went away
        if (watch.finished)
            sink.done();
        return true;
    }

    std::string nextLines(WatchState& watch) {
        std::unique_lock lock(mutex_);
        changed_.wait_until(lock, std::min(watch.deadline, watch.nextBookmark), [&] {
            return stopping_ || newestEvent() > watch.cursor || watch.cursor < compactedRevision_ ||
                   watch.cutsAtStart != watchCuts_;
        });
        std::string lines;
        const auto now = Clock::now();
        if (watch.cutsAtStart != watchCuts_) {
            watch.cut = true;
        } else if (stopping_ || now >= watch.deadline) {
            watch.finished = true;
        } else if (watch.cursor < compactedRevision_) {
            lines = expiredLine(watch.cursor);  // this watcher fell behind the history
            watch.finished = true;
        } else {
            for (const auto& event : history_) {
                if (event.resourceVersion > watch.cursor && matches(watch.selector, event.object))
                    lines += eventLine(event.type, event.object);
            }
            watch.cursor = std::max(watch.cursor, newestEvent());
            if (lines.empty() && watch.bookmarks && now >= watch.nextBookmark)
                lines = bookmarkLine(watch);
        }
        if (!lines.empty())
            watch.nextBookmark = now + options_.bookmarkInterval;
        return lines;
    }

    std::string bookmarkLine(WatchState& watch) const {
        // Everything up to the current version has been delivered (or filtered out).
        watch.cursor = std::max(watch.cursor, resourceVersion_);
        return eventLine("BOOKMARK",
                         Json{{"kind", "ResourceSlice"},
                              {"apiVersion", "resource.k8s.io/v1"},
                              {"metadata", {{"resourceVersion", std::to_string(watch.cursor)}}}});
    }

    FakeApiServerOptions options_;
    std::unique_ptr<httplib::Server> server_;
    std::string scheme_;
    int port_ = -1;
    std::thread listener_;
    std::mutex stopMutex_;

    mutable std::mutex mutex_;  // everything below
    std::condition_variable changed_;
    bool stopping_ = false;
    std::int64_t resourceVersion_ = kFirstResourceVersion;
    std::int64_t compactedRevision_ = 0;
    std::uint64_t watchCuts_ = 0;
    std::map<std::string, Json> slices_;
    std::map<std::pair<std::string, std::string>, Json> claims_;
    // Per claim and field manager: the status.devices keys it applied last.
    std::map<std::pair<std::string, std::string>, std::map<std::string, std::set<std::string>>>
        statusOwners_;
    std::map<std::string, Json> nodes_;
    std::deque<WatchRecord> history_;
    std::deque<Fault> faults_;
    std::deque<PendingBadAnswer> badAnswers_;
    std::atomic<std::uint64_t> badAnswerBytes_{0};
    bool refuseListAttributes_ = false;
    bool dropDeviceTaints_ = false;
    bool dropCounterRequestPolicies_ = false;
    bool dropNodeAllocatableResources_ = false;
    bool checkDeclaredFeatures_ = false;
    std::vector<RecordedRequest> requests_;
    std::mt19937_64 random_;
};

FakeApiServer::FakeApiServer(FakeApiServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(options))) {}
FakeApiServer::~FakeApiServer() = default;

std::string FakeApiServer::url() const {
    return impl_->url();
}
int FakeApiServer::port() const {
    return impl_->port();
}
void FakeApiServer::stop() {
    impl_->stop();
}
void FakeApiServer::putResourceClaim(Json claim) {
    impl_->putResourceClaim(std::move(claim));
}
bool FakeApiServer::removeResourceClaim(const std::string& ns, const std::string& name) {
    return impl_->removeResourceClaim(ns, name);
}
std::optional<FakeApiServer::Json> FakeApiServer::resourceClaim(const std::string& ns,
                                                                const std::string& name) const {
    return impl_->resourceClaim(ns, name);
}
void FakeApiServer::addNode(const std::string& name, const std::string& uid,
                            const std::optional<std::vector<std::string>>& declaredFeatures) {
    impl_->addNode(name, uid, declaredFeatures);
}
FakeApiServer::Json FakeApiServer::addResourceSlice(Json slice) {
    return impl_->addResourceSlice(std::move(slice));
}
bool FakeApiServer::deleteResourceSliceExternally(const std::string& name) {
    return impl_->deleteResourceSliceExternally(name);
}
std::vector<FakeApiServer::Json> FakeApiServer::resourceSlices() const {
    return impl_->resourceSlices();
}
std::optional<FakeApiServer::Json> FakeApiServer::resourceSlice(const std::string& name) const {
    return impl_->resourceSlice(name);
}
std::int64_t FakeApiServer::currentResourceVersion() const {
    return impl_->currentResourceVersion();
}
void FakeApiServer::expireWatches() {
    impl_->expireWatches();
}

void FakeApiServer::breakWatches() {
    impl_->breakWatches();
}

void FakeApiServer::compactHistory() {
    impl_->compactHistory();
}
void FakeApiServer::failNext(int count, int httpStatus, std::optional<int> retryAfterSeconds,
                             std::string methodFilter) {
    impl_->failNext(count, httpStatus, retryAfterSeconds, std::move(methodFilter));
}
void FakeApiServer::misbehaveNext(int count, BadAnswer answer) {
    impl_->misbehaveNext(count, std::move(answer));
}
std::uint64_t FakeApiServer::badAnswerBytesSent() const {
    return impl_->badAnswerBytesSent();
}
void FakeApiServer::setRefuseListAttributes(bool refuse) {
    impl_->setRefuseListAttributes(refuse);
}
void FakeApiServer::setDropDeviceTaints(bool drop) {
    impl_->setDropDeviceTaints(drop);
}
void FakeApiServer::setDropCounterRequestPolicies(bool drop) {
    impl_->setDropCounterRequestPolicies(drop);
}
void FakeApiServer::setDropNodeAllocatableResources(bool drop) {
    impl_->setDropNodeAllocatableResources(drop);
}
void FakeApiServer::setCheckDeclaredFeatures(bool check) {
    impl_->setCheckDeclaredFeatures(check);
}
std::vector<FakeApiServer::RecordedRequest> FakeApiServer::requests() const {
    return impl_->requests();
}
int FakeApiServer::requestCount(const std::string& method, const std::string& pathPrefix) const {
    return impl_->requestCount(method, pathPrefix);
}

}  // namespace numadra::fakes
