#pragma once
// What the conformance suite needs around the driver's binaries: child processes with a clean
// environment, a plain HTTP client for the API server, polling with generous deadlines, files.

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace numadra::conformance {

using Json = nlohmann::json;
using namespace std::chrono_literals;

// Every deadline of the suite is multiplied by NUMADRA_CONFORMANCE_TIME_SCALE (default 1; the
// sanitizer build or a loaded machine may want more).
std::chrono::milliseconds scaled(std::chrono::milliseconds deadline);

// Polls `predicate` every `poll` until it holds or `timeout` (scaled) has passed.
template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds timeout = 20s,
                std::chrono::milliseconds poll = 25ms) {
    const auto end = std::chrono::steady_clock::now() + scaled(timeout);
    while (std::chrono::steady_clock::now() < end) {
        if (predicate())
            return true;
        std::this_thread::sleep_for(poll);
    }
    return predicate();
}

// The mocked machines the build generated (folders of NUMADRA_GENERATED_SYSFS with a sys/).
std::vector<std::string> machineNames();

// ---- processes ---------------------------------------------------------------------------------

// The environment a child gets: PATH, HOME, TMPDIR, LANG and the sanitizers' options, nothing
// else (the daemon reads every flag from an environment variable too: NODE_NAME, HEALTH, ...),
// plus `extra` ("NAME=value").
std::vector<std::string> childEnvironment(const std::vector<std::string>& extra = {});

class Process {
  public:
    struct Options {
        std::vector<std::string> argv;                  // argv[0]: the executable's path
        std::vector<std::string> env;                   // childEnvironment() when empty
        bool pipeStdin = false;                         // else /dev/null
        bool pipeStdout = false;                        // else stdoutFile or /dev/null
        std::string stdoutFile, stderrFile, stdinFile;  // truncated; "" = /dev/null
    };
    // Throws std::runtime_error when posix_spawn fails.
    explicit Process(const Options& options);
    ~Process();  // SIGKILL and reap if still running
    Process(const Process&) = delete;
    Process& operator=(const Process&) = delete;

    pid_t pid() const { return pid_; }
    bool running();
    void signal(int number) const;
    // Exit status (0-255) or 128 + signal; nullopt when still running after `timeout` (scaled).
    std::optional<int> wait(std::chrono::milliseconds timeout);
    std::optional<int> exitStatus() const { return status_; }

    // The pipes, when asked for.
    void writeLine(const std::string& line);
    // One line from stdout (without '\n'); nullopt at end of file or after `timeout` (scaled).
    std::optional<std::string> readLine(std::chrono::milliseconds timeout = 20s);
    void closeStdin();

  private:
    pid_t pid_ = -1;
    int stdin_ = -1, stdout_ = -1;
    std::string buffered_;
    std::optional<int> status_;
};

struct RunResult {
    int status = -1;  // as Process::wait; -1: timed out (the process was killed)
    std::string out, err;
};
// Runs a command to completion with `input` on stdin (through files in `scratch`).
RunResult runCommand(const std::vector<std::string>& argv, const std::string& input,
                     const std::filesystem::path& scratch, std::chrono::milliseconds timeout = 60s);

// ---- HTTP ---------------------------------------------------------------------------------------

struct HttpResponse {
    int status = 0;  // 0: no answer
    std::string body;
};
// GET http://127.0.0.1:<port><target>, Connection: close (chunked bodies are decoded).
HttpResponse httpGet(int port, const std::string& target);

// ---- files --------------------------------------------------------------------------------------

std::string readFile(const std::filesystem::path& path);
void writeFile(const std::filesystem::path& path, const std::string& content);
// Every entry below `root` (files, folders, sockets), relative, sorted; empty if it is missing.
std::vector<std::string> entriesBelow(const std::filesystem::path& root);
// Every regular file below `root` with its content, by relative path.
std::vector<std::pair<std::string, std::string>> filesBelow(const std::filesystem::path& root);

}  // namespace numadra::conformance
