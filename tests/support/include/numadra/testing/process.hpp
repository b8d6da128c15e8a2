#pragma once
// Starting a program of the build (the daemon, numa-probe) as a child process, for the
// benchmarks that time or watch it from outside.

#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace numadra::testing {

// Starts argv[0] with argv; its stdout goes to /dev/null when `quietStdout`. The child's pid, or
// -1 when fork failed (an exec failure ends the child with status 127).
inline pid_t startProcess(std::vector<std::string> argv, bool quietStdout = false) {
    const pid_t child = ::fork();
    if (child != 0)
        return child;
    if (quietStdout) {
        const int devNull = ::open("/dev/null", O_WRONLY);
        if (devNull >= 0)
            ::dup2(devNull, STDOUT_FILENO);
    }
    std::vector<char*> pointers;
    for (auto& argument : argv)
        pointers.push_back(argument.data());
    pointers.push_back(nullptr);
    ::execv(pointers[0], pointers.data());
    ::_exit(127);
}

}  // namespace numadra::testing
