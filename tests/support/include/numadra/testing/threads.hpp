#pragma once
// The threads of a process as the kernel lists them (/proc/PID/task), with their names.

#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace numadra::testing {

// The name (comm) of each thread of `pid` (this process by default); empty once it is gone.
inline std::vector<std::string> threadNames(pid_t pid = ::getpid()) {
    std::vector<std::string> names;
    std::error_code error;
    const std::filesystem::path tasks = "/proc/" + std::to_string(pid) + "/task";
    for (const auto& task : std::filesystem::directory_iterator(tasks, error)) {
        std::string name;
        std::getline(std::ifstream(task.path() / "comm"), name);
        names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

inline std::size_t threadsNamed(const std::string& name, pid_t pid = ::getpid()) {
    const auto names = threadNames(pid);
    return static_cast<std::size_t>(std::count(names.begin(), names.end(), name));
}

// "a, b, b, c": for failure messages.
inline std::string joinedThreadNames(pid_t pid = ::getpid()) {
    std::string out;
    for (const auto& name : threadNames(pid))
        out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace numadra::testing
