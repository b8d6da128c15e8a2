#include "harness.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace numadra::conformance {

std::chrono::milliseconds scaled(std::chrono::milliseconds deadline) {
    static const double scale = [] {
        const char* text = std::getenv("NUMADRA_CONFORMANCE_TIME_SCALE");
        if (text == nullptr)
            return 1.0;
        char* end = nullptr;
        const double value = std::strtod(text, &end);
        return end != text && value >= 1.0 ? value : 1.0;
    }();
    return std::chrono::milliseconds(static_cast<std::int64_t>(deadline.count() * scale));
}

std::vector<std::string> machineNames() {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(NUMADRA_GENERATED_SYSFS, ec)) {
        if (std::filesystem::is_directory(entry.path() / "sys"))
            names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

// ---- processes ---------------------------------------------------------------------------------

std::vector<std::string> childEnvironment(const std::vector<std::string>& extra) {
    std::vector<std::string> env;
    static const char* const kKept[] = {"PATH", "HOME", "TMPDIR", "LANG"};
    static const char* const kKeptPrefixes[] = {"ASAN_", "UBSAN_", "LSAN_", "TSAN_", "MSAN_"};
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string variable(*entry);
        const std::string name = variable.substr(0, variable.find('='));
        bool keep = std::any_of(std::begin(kKept), std::end(kKept),
                                [&](const char* kept) { return name == kept; });
        keep = keep || std::any_of(std::begin(kKeptPrefixes), std::end(kKeptPrefixes),
                                   [&](const char* prefix) { return name.starts_with(prefix); });
        if (keep)
            env.push_back(variable);
    }
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
}

namespace {

std::vector<char*> pointers(std::vector<std::string>& strings) {
    std::vector<char*> out;
    for (auto& s : strings)
        out.push_back(s.data());
    out.push_back(nullptr);
    return out;
}

void check(int error, const char* what) {
    if (error != 0)
        throw std::runtime_error(std::string(what) + ": " + std::strerror(error));
}

}  // namespace

Process::Process(const Options& options) {
    posix_spawn_file_actions_t actions;
    check(posix_spawn_file_actions_init(&actions), "posix_spawn_file_actions_init");
    int inPipe[2] = {-1, -1}, outPipe[2] = {-1, -1};
    auto redirect = [&](int fd, const std::string& file, int flags) {
        check(posix_spawn_file_actions_addopen(
                  &actions, fd, file.empty() ? "/dev/null" : file.c_str(), flags, 0644),
              "posix_spawn_file_actions_addopen");
    };
    if (options.pipeStdin) {
        if (::pipe2(inPipe, O_CLOEXEC) != 0)
            throw std::runtime_error("pipe2 failed");
        check(posix_spawn_file_actions_adddup2(&actions, inPipe[0], 0), "adddup2");
    } else {
        redirect(0, options.stdinFile, O_RDONLY);
    }
    if (options.pipeStdout) {
        if (::pipe2(outPipe, O_CLOEXEC) != 0)
            throw std::runtime_error("pipe2 failed");
        check(posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1), "adddup2");
    } else {
        redirect(1, options.stdoutFile, O_WRONLY | O_CREAT | O_TRUNC);
    }
    redirect(2, options.stderrFile, O_WRONLY | O_CREAT | O_TRUNC);

    std::vector<std::string> argv = options.argv;
    std::vector<std::string> env = options.env.empty() ? childEnvironment() : options.env;
    auto argvPointers = pointers(argv);
    auto envPointers = pointers(env);
    const int error = ::posix_spawn(&pid_, argv.at(0).c_str(), &actions, nullptr,
                                    argvPointers.data(), envPointers.data());
    posix_spawn_file_actions_destroy(&actions);
    for (int fd : {inPipe[0], outPipe[1]}) {
        if (fd >= 0)
            ::close(fd);
    }
    stdin_ = inPipe[1];
    stdout_ = outPipe[0];
    if (error != 0) {
        pid_ = -1;
        throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(error));
    }
    // A child that went away must not kill the suite when it writes to the pipe.
    ::signal(SIGPIPE, SIG_IGN);
}

Process::~Process() {
    if (running()) {
        ::kill(pid_, SIGKILL);
        int status = 0;
        ::waitpid(pid_, &status, 0);
    }
    for (int fd : {stdin_, stdout_}) {
        if (fd >= 0)
            ::close(fd);
    }
}

bool Process::running() {
    if (pid_ <= 0 || status_)
        return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        return false;
    }
    return true;
}

void Process::signal(int number) const {
    if (pid_ > 0 && !status_)
        ::kill(pid_, number);
}

std::optional<int> Process::wait(std::chrono::milliseconds timeout) {
    eventually([&] { return !running(); }, timeout);
    return status_;
}

void Process::writeLine(const std::string& line) {
    const std::string data = line + "\n";
    size_t written = 0;
    while (written < data.size()) {
        const ssize_t n = ::write(stdin_, data.data() + written, data.size() - written);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw std::runtime_error("write to the child's stdin failed");
        written += static_cast<size_t>(n);
    }
}

std::optional<std::string> Process::readLine(std::chrono::milliseconds timeout) {
    const auto end = std::chrono::steady_clock::now() + scaled(timeout);
    while (true) {
        if (const size_t newline = buffered_.find('\n'); newline != std::string::npos) {
            std::string line = buffered_.substr(0, newline);
            buffered_.erase(0, newline + 1);
            return line;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            end - std::chrono::steady_clock::now());
        if (left.count() <= 0)
            return std::nullopt;
        pollfd fd{stdout_, POLLIN, 0};
        if (::poll(&fd, 1, static_cast<int>(left.count())) <= 0)
            continue;
        char buffer[4096];
        const ssize_t n = ::read(stdout_, buffer, sizeof buffer);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return std::nullopt;
        buffered_.append(buffer, static_cast<size_t>(n));
    }
}

void Process::closeStdin() {
    if (stdin_ >= 0)
        ::close(stdin_);
    stdin_ = -1;
}

RunResult runCommand(const std::vector<std::string>& argv, const std::string& input,
                     const std::filesystem::path& scratch, std::chrono::milliseconds timeout) {
    static std::atomic<int> counter{0};
    const std::string stem = (scratch / ("run-" + std::to_string(++counter))).string();
    writeFile(stem + ".in", input);
    Process::Options options;
    options.argv = argv;
    options.stdinFile = stem + ".in";
    options.stdoutFile = stem + ".out";
    options.stderrFile = stem + ".err";
    RunResult result;
    {
        Process process(options);
        result.status = process.wait(timeout).value_or(-1);
    }
    result.out = readFile(stem + ".out");
    result.err = readFile(stem + ".err");
    for (const char* suffix : {".in", ".out", ".err"})
        std::filesystem::remove(stem + suffix);
    return result;
}

// ---- HTTP ---------------------------------------------------------------------------------------

namespace {

std::string decodeChunked(const std::string& body) {
    std::string out;
    size_t at = 0;
    while (at < body.size()) {
        const size_t lineEnd = body.find("\r\n", at);
        if (lineEnd == std::string::npos)
            break;
        const size_t size = std::stoul(body.substr(at, lineEnd - at), nullptr, 16);
        if (size == 0)
            break;
        out += body.substr(lineEnd + 2, size);
        at = lineEnd + 2 + size + 2;
    }
    return out;
}

}  // namespace

HttpResponse httpGet(int port, const std::string& target) {
    HttpResponse response;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(static_cast<std::uint16_t>(port));
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    timeval timeout{30, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    std::string raw;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0) {
        const std::string request = "GET " + target +
                                    " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n"
                                    "Connection: close\r\n\r\n";
        ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
        char buffer[65536];
        for (ssize_t n; (n = ::recv(fd, buffer, sizeof buffer, 0)) > 0;)
            raw.append(buffer, static_cast<size_t>(n));
    }
    ::close(fd);
    const size_t headersEnd = raw.find("\r\n\r\n");
    if (raw.rfind("HTTP/1.", 0) != 0 || headersEnd == std::string::npos)
        return response;
    response.status = std::atoi(raw.c_str() + raw.find(' ') + 1);
    std::string headers = raw.substr(0, headersEnd);
    std::transform(headers.begin(), headers.end(), headers.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    response.body = raw.substr(headersEnd + 4);
    if (headers.find("transfer-encoding: chunked") != std::string::npos)
        response.body = decodeChunked(response.body);
    return response;
}

// ---- files --------------------------------------------------------------------------------------

std::string readFile(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream content;
    content << in.rdbuf();
    return content.str();
}

void writeFile(const std::filesystem::path& path, const std::string& content) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
}

std::vector<std::string> entriesBelow(const std::filesystem::path& root) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!std::filesystem::exists(root, ec))
        return out;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
        out.push_back(std::filesystem::relative(it->path(), root).string());
    std::sort(out.begin(), out.end());
    return out;
}

std::vector<std::pair<std::string, std::string>> filesBelow(const std::filesystem::path& root) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& relative : entriesBelow(root)) {
        if (std::filesystem::is_regular_file(root / relative))
            out.emplace_back(relative, readFile(root / relative));
    }
    return out;
}

}  // namespace numadra::conformance
