// The ResourceSlice watch: one long GET whose chunked answer is a stream of JSON lines.
// It runs on a multi handle so that a stop request can wake the poll at once (curl_multi_wakeup)
// instead of waiting for libcurl's next progress tick.

#include <exception>

#include "client_impl.hpp"
#include "numadra/kube/errors.hpp"

namespace numadra::kube {
namespace {

using WatchEvent = KubeClient::WatchEvent;

// The answer to a non-200 watch is a Status, not events; no Status is larger than this.
constexpr size_t kMaxErrorBody = size_t{64} * 1024;
// An idle watch is normal (no change for minutes): no low-speed limit, but TCP keepalive probes
// so that a peer that vanished without a FIN is noticed within a couple of minutes.
constexpr long kKeepAliveIdleSeconds = 30;
constexpr long kKeepAliveIntervalSeconds = 10;
// A stop request wakes the poll at once (curl_multi_wakeup), and libcurl shortens the wait to its
// own next timer (the transfer's time limit): this bounds only a stop whose wake-up failed. An
// idle watch wakes once per bound, so not every second (issue 27: idle CPU).
constexpr int kPollMilliseconds = 10'000;
// On top of timeoutSeconds, for a server that rounds it or forgets it.
constexpr std::chrono::seconds kWatchGrace{60};
// An event is an object and a line of envelope ({"type":"MODIFIED","object":...}).
constexpr size_t kEventEnvelopeBytes = 1024;
// The line buffer keeps at most this much capacity between events: one big event must not
// leave its size behind for the life of the stream.
constexpr size_t kKeptLineCapacity = size_t{64} * 1024;

// Splits the answer into lines, one JSON event each, and hands each on as it arrives.
class WatchStream {
  public:
    WatchStream(CURL* easy, std::string description, size_t maxEventBytes,
                const std::function<void(const WatchEvent&)>& onEvent)
        : easy_(easy),
          description_(std::move(description)),
          maxEventBytes_(maxEventBytes),
          onEvent_(onEvent) {}

    static size_t onData(char* data, size_t size, size_t count, void* self) {
        auto* stream = static_cast<WatchStream*>(self);
        const size_t bytes = size * count;
        long status = 0;
        curl_easy_getinfo(stream->easy_, CURLINFO_RESPONSE_CODE, &status);
        if (status != 200) {
            const size_t room = kMaxErrorBody - std::min(kMaxErrorBody, stream->errorBody_.size());
            stream->errorBody_.append(data, std::min(bytes, room));
            return bytes;
        }
        // Returning less than `bytes` makes libcurl abort the transfer.
        return stream->consume(std::string_view(data, bytes)) ? bytes : 0;
    }

    // A last event the server did not end with a newline.
    Status finish() {
        if (!buffer_.empty() && !handleLine(buffer_))
            return failure_.value_or(Error{description_ + ": the event handler failed"});
        return Status::Ok();
    }

    const std::optional<Error>& failure() const { return failure_; }
    const std::string& errorBody() const { return errorBody_; }
    void rethrowCallbackException() const {
        if (callbackException_)
            std::rethrow_exception(callbackException_);
    }

  private:
    bool consume(std::string_view data) {
        buffer_.append(data);
        size_t start = 0;
        for (size_t end = buffer_.find('\n'); end != std::string::npos;
             end = buffer_.find('\n', start)) {
            if (end - start > maxEventBytes_)
                return oversizedEvent();
            const bool keepGoing = handleLine(std::string_view(buffer_).substr(start, end - start));
            start = end + 1;
            if (!keepGoing)
                return false;
        }
        buffer_.erase(0, start);
        if (buffer_.size() > maxEventBytes_)
            return oversizedEvent();  // no end in sight: not buffered any further
        if (buffer_.capacity() > kKeptLineCapacity && buffer_.size() < kKeptLineCapacity)
            buffer_.shrink_to_fit();
        return true;
    }

    bool oversizedEvent() {
        failure_ = Error{description_ + ": a watch event is over " +
                         detail::describeBytes(maxEventBytes_) +
                         ", more than one object can weigh; the stream was cut off there"};
        buffer_.clear();
        buffer_.shrink_to_fit();
        return false;
    }

    bool handleLine(std::string_view line) {
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.empty())
            return true;
        Json event = Json::parse(line, nullptr, /*allow_exceptions=*/false);
        std::string type = detail::stringField(event, "type");
        if (type.empty()) {
            constexpr size_t kExcerpt = 200;
            failure_ = Error{description_ +
                             ": not a watch event: " + std::string(line.substr(0, kExcerpt))};
            return false;
        }
        if (type == "ERROR") {
            failure_ = errorEvent(event["object"]);
            return false;
        }
        try {
            onEvent_(WatchEvent{std::move(type), std::move(event["object"])});
        } catch (...) {
            // Exceptions must not cross libcurl's C frames; rethrown once the stream is closed.
            callbackException_ = std::current_exception();
            return false;
        }
        return true;
    }

    // The object of an ERROR event is a Status; its code (410 for an expired resourceVersion)
    // and reason ("Expired") make the Error's kind.
    Error errorEvent(const Json& status) const {
        const auto code =
            status.is_object() && status.contains("code") && status["code"].is_number_integer()
                ? status["code"].get<int>()
                : 0;
        std::string message = description_ + ": ERROR event";
        if (code != 0)
            message += " " + std::to_string(code);
        const std::string text = detail::stringField(status, "message");
        if (!text.empty())
            message += ": " + text;
        return errorFromHttp(code, detail::stringField(status, "reason"), std::move(message),
                             detail::statusCauses(status));
    }

    CURL* easy_;
    std::string description_;
    size_t maxEventBytes_;
    const std::function<void(const WatchEvent&)>& onEvent_;
    std::string buffer_;
    std::string errorBody_;
    std::optional<Error> failure_;
    std::exception_ptr callbackException_;
};

CURLcode completionCode(CURLM* multi) {
    int pending = 0;
    while (CURLMsg* message = curl_multi_info_read(multi, &pending)) {
        if (message->msg == CURLMSG_DONE)
            return message->data.result;
    }
    return CURLE_OK;
}

}  // namespace

Status KubeClient::Impl::watch(const std::string& pathAndQuery,
                               const std::function<void(const WatchEvent&)>& onEvent,
                               std::stop_token stop) {
    const std::string description = "GET " + pathAndQuery;
    const auto limit =
        std::chrono::duration_cast<std::chrono::milliseconds>(options.watchTimeout + kWatchGrace);
    auto transfer = transport.prepare("GET", pathAndQuery, nullptr, limit, std::nullopt);
    if (!transfer)
        return Error{description + ": " + transfer.error().message};
    CURL* easy = (*transfer)->handle();
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(options.requestTimeout.count()));
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPIDLE, kKeepAliveIdleSeconds);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPINTVL, kKeepAliveIntervalSeconds);
    WatchStream stream(easy, description, options.maxObjectBytes + kEventEnvelopeBytes, onEvent);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &WatchStream::onData);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &stream);

    detail::CurlMulti multi(curl_multi_init());
    if (!multi)
        return Error{description + ": libcurl: cannot create a multi handle"};
    const detail::MultiMembership membership(multi.get(), easy);
    if (!membership.added())
        return Error{description + ": libcurl: cannot add the transfer to a multi handle"};
    // Runs on the thread that requests the stop; curl_multi_wakeup is safe from any thread.
    const std::stop_callback wakeUp(stop, [handle = multi.get()] { curl_multi_wakeup(handle); });

    std::optional<CURLcode> result;
    while (!result && !stop.stop_requested()) {
        int running = 0;
        if (const CURLMcode code = curl_multi_perform(multi.get(), &running); code != CURLM_OK)
            return Error{description + ": libcurl: " + curl_multi_strerror(code)};
        if (running == 0)
            result = completionCode(multi.get());
        else
            curl_multi_poll(multi.get(), nullptr, 0, kPollMilliseconds, nullptr);
    }
    stream.rethrowCallbackException();
    if (!result)
        return Status::Ok();  // stopped
    if (stream.failure())
        return *stream.failure();
    const long status = (*transfer)->responseStatus();
    if (status != 0 && status != 200)
        return detail::describeHttpFailure("GET", pathAndQuery, status, stream.errorBody());
    if (*result != CURLE_OK)
        return Error{description + ": " + (*transfer)->describe(*result),
                     detail::transportErrorKind(*result)};
    Status lastLine = stream.finish();
    stream.rethrowCallbackException();
    return lastLine;
}

}  // namespace numadra::kube
