#include "numadra/daemon/logging.hpp"

#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace numadra::daemon {

namespace {

// %* : the message, escaped for a JSON string.
class JsonEscapedMessage : public spdlog::custom_flag_formatter {
  public:
    void format(const spdlog::details::log_msg& message, const std::tm&,
                spdlog::memory_buf_t& out) override {
        for (char c : std::string_view(message.payload.data(), message.payload.size())) {
            switch (c) {
                case '"':
                    out.append(std::string_view("\\\""));
                    break;
                case '\\':
                    out.append(std::string_view("\\\\"));
                    break;
                case '\n':
                    out.append(std::string_view("\\n"));
                    break;
                case '\r':
                    out.append(std::string_view("\\r"));
                    break;
                case '\t':
                    out.append(std::string_view("\\t"));
                    break;
                default:
                    if (static_cast<unsigned char>(c) < 0x20) {
                        char escaped[8];
                        std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
                        out.append(std::string_view(escaped));
                    } else {
                        out.push_back(c);
                    }
            }
        }
    }
    std::unique_ptr<custom_flag_formatter> clone() const override {
        return std::make_unique<JsonEscapedMessage>();
    }
};

}  // namespace

void setupLogging(const std::string& format, const std::string& level) {
    auto logger = std::make_shared<spdlog::logger>(
        "numa-dra", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    auto formatter = std::make_unique<spdlog::pattern_formatter>(spdlog::pattern_time_type::utc);
    if (format == "json") {
        formatter->add_flag<JsonEscapedMessage>('*').set_pattern(
            R"({"time":"%Y-%m-%dT%H:%M:%S.%eZ","level":"%l","msg":"%*"})");
    } else {
        formatter->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %l %v");
    }
    logger->set_formatter(std::move(formatter));
    logger->set_level(spdlog::level::from_str(level));
    logger->flush_on(spdlog::level::info);
    spdlog::set_default_logger(std::move(logger));
}

}  // namespace numadra::daemon
