#pragma once
// spdlog set up for a DaemonSet: one line per event on stderr, "text" (time level message) or
// "json" ({"time","level","msg"}), messages carrying key=value context.

#include <string>

namespace numadra::daemon {

void setupLogging(const std::string& format, const std::string& level);

}  // namespace numadra::daemon
