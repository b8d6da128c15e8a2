#pragma once
// Names the calling thread, so `top -H`, `ps -T` and /proc/PID/task/TID/comm tell the daemon's
// threads apart.

#include <pthread.h>

#include <string>
#include <string_view>

namespace numadra {

// The kernel keeps 15 characters of a thread's name: a longer one is cut, not refused.
inline constexpr std::size_t kMaxThreadNameLength = 15;

inline void nameThisThread(std::string_view name) {
    const std::string kept(name.substr(0, kMaxThreadNameLength));
    ::pthread_setname_np(::pthread_self(), kept.c_str());
}

}  // namespace numadra
