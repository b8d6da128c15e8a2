#include "container_runtime.hpp"

#include <unistd.h>

#include <sstream>

namespace numadra::conformance {

namespace fs = std::filesystem;

namespace {

constexpr const char* kUnshare = "/usr/bin/unshare";
constexpr const char* kBusybox = "/bin/busybox";  // busybox-static installs a static one here
// Lines of the report a container prints; the env comes first.
constexpr const char* kDevicesMark = "@@devices";
constexpr const char* kMountsMark = "@@mounts";
constexpr const char* kFileMark = "@@file ";
constexpr const char* kWritableMark = "@@writable ";
constexpr const char* kEndMark = "@@end";

// Runs in the private mount namespace: only the folder under test is a CDI folder, then podman.
constexpr const char* kHostScript = R"(set -e
cdi="$1"; empty="$2"; shift 2
mkdir -p /etc/cdi /run/cdi
mount --bind "$cdi" /etc/cdi
mount --bind "$empty" /run/cdi
exec podman "$@"
)";

std::string quoted(const std::string& text) {
    return "'" + text + "'";
}

// The shell inside the container: env, then a line per device node, /proc/mounts, each file.
std::string containerScript(const std::vector<std::string>& devicePaths,
                            const std::vector<std::string>& filePaths) {
    std::string script = "env; echo " + std::string(kDevicesMark) + "; ";
    for (const auto& path : devicePaths) {
        script += "if [ -e " + quoted(path) + " ]; then stat -c '%n|%F|%t|%T' " + quoted(path) +
                  "; else echo " + quoted(path + "|missing|0|0") + "; fi; ";
    }
    script += "echo " + std::string(kMountsMark) + "; cat /proc/mounts; ";
    for (const auto& path : filePaths) {
        script += "echo " + quoted(kFileMark + path) + "; cat " + quoted(path) + "; echo; ";
        // Opened for appending, nothing written: EROFS on a read-only bind mount, even for root
        // (busybox's [ -w ] says yes to root without asking the kernel).
        script += "if (: >> " + quoted(path) + ") 2>/dev/null; then echo " +
                  quoted(kWritableMark + path) + "; fi; ";
    }
    return script + "echo " + kEndMark;
}

// A folder a container can use as its root: busybox and the commands the script calls.
Status makeRootfs(const fs::path& rootfs) {
    std::error_code error;
    fs::create_directories(rootfs / "bin", error);
    if (!error)
        fs::copy_file(kBusybox, rootfs / "bin" / "busybox", fs::copy_options::overwrite_existing,
                      error);
    for (const char* command : {"sh", "env", "cat", "stat", "echo"}) {
        if (!error && !fs::exists(rootfs / "bin" / command))
            fs::create_symlink("busybox", rootfs / "bin" / command, error);
    }
    if (error)
        return Error{"cannot make a container root at " + rootfs.string() + ": " + error.message()};
    return Status::Ok();
}

RunResult runContainer(const fs::path& cdiDir, const std::vector<std::string>& cdiIds,
                       const std::string& script, const fs::path& scratch) {
    const fs::path rootfs = scratch / "container-root";
    if (auto made = makeRootfs(rootfs); !made)
        return {-1, "", made.error().message};
    const fs::path emptyDir = scratch / "container-empty-cdi";
    fs::create_directories(emptyDir);
    writeFile(scratch / "container-host.sh", kHostScript);
    // Limits lowered, never raised: podman's defaults are above what an unprivileged CI sandbox
    // may set (no CAP_SYS_RESOURCE), and runc refuses to start then.
    std::vector<std::string> argv{kUnshare,
                                  "--mount",
                                  "--propagation",
                                  "private",
                                  "/bin/sh",
                                  (scratch / "container-host.sh").string(),
                                  fs::absolute(cdiDir).string(),
                                  emptyDir.string(),
                                  "--runtime",
                                  "runc",
                                  "run",
                                  "--rm",
                                  "--network",
                                  "none",
                                  "--ulimit",
                                  "nofile=1024:1024",
                                  "--ulimit",
                                  "nproc=4096:4096"};
    for (const auto& id : cdiIds) {
        argv.push_back("--device");
        argv.push_back(id);
    }
    for (const auto& word : {std::string("--rootfs"), rootfs.string(), std::string("/bin/sh"),
                             std::string("-c"), script})
        argv.push_back(word);
    return runCommand(argv, "", scratch, 120s);
}

std::string describe(const RunResult& run) {
    return "exit status " + std::to_string(run.status) + "; stdout: " + run.out +
           "; stderr: " + run.err;
}

std::optional<std::string> probe() {
    if (::geteuid() != 0)
        return "not root (the tests run rootful podman; rootless podman would need user "
               "namespaces and cgroup delegation)";
    for (const char* program : {"/usr/bin/podman", "/usr/sbin/runc", kUnshare, kBusybox}) {
        if (::access(program, X_OK) != 0)
            return std::string(program) +
                   " is missing (Debian: apt-get install podman runc busybox-static)";
    }
    std::error_code error;
    const fs::path scratch =
        fs::temp_directory_path() / ("numadra-container-probe-" + std::to_string(::getpid()));
    fs::create_directories(scratch / "cdi", error);
    if (error)
        return "cannot create " + scratch.string() + ": " + error.message();
    const RunResult run =
        runContainer(scratch / "cdi", {}, "echo " + std::string(kEndMark), scratch);
    fs::remove_all(scratch, error);
    if (run.status != 0 || run.out.find(kEndMark) == std::string::npos)
        return "a container without devices did not run (is /bin/busybox static? Debian: "
               "busybox-static): " +
               describe(run);
    return std::nullopt;
}

std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

std::vector<std::string> splitOn(const std::string& text, char separator) {
    std::vector<std::string> parts;
    std::istringstream in(text);
    for (std::string part; std::getline(in, part, separator);)
        parts.push_back(part);
    return parts;
}

// "/dev/vda /var/run/x ext4 ro,relatime 0 0" -> mount point and options.
std::optional<std::pair<std::string, std::vector<std::string>>> mountLine(const std::string& line) {
    std::istringstream in(line);
    std::string source, target, type, options;
    if (!(in >> source >> target >> type >> options))
        return std::nullopt;
    return std::make_pair(target, splitOn(options, ','));
}

Result<ContainerView> parseView(const std::string& out) {
    ContainerView view;
    enum class Section { Env, Devices, Mounts, Files } section = Section::Env;
    std::map<std::string, std::vector<std::string>> mountOptions;
    std::string file;
    bool ended = false;
    for (const auto& line : splitLines(out)) {
        if (line == kEndMark) {
            ended = true;
            break;
        }
        if (line == kDevicesMark) {
            section = Section::Devices;
        } else if (line == kMountsMark) {
            section = Section::Mounts;
        } else if (line.rfind(kFileMark, 0) == 0) {
            section = Section::Files;
            file = line.substr(std::string(kFileMark).size());
            view.files[file].options = mountOptions[file];
        } else if (line.rfind(kWritableMark, 0) == 0) {
            view.files[line.substr(std::string(kWritableMark).size())].writable = true;
        } else if (section == Section::Env) {
            if (const auto eq = line.find('='); eq != std::string::npos)
                view.env[line.substr(0, eq)] = line.substr(eq + 1);
        } else if (section == Section::Devices) {
            const auto fields = splitOn(line, '|');
            if (fields.size() != 4)
                return Error{"unexpected device line from the container: " + line};
            view.deviceNodes[fields[0]] = {
                fields[1], static_cast<unsigned>(std::stoul(fields[2], nullptr, 16)),
                static_cast<unsigned>(std::stoul(fields[3], nullptr, 16))};
        } else if (section == Section::Mounts) {
            if (auto mount = mountLine(line))
                mountOptions[mount->first] = mount->second;
        } else {
            auto& content = view.files[file].content;
            content += (content.empty() ? "" : "\n") + line;
        }
    }
    if (!ended)
        return Error{"the container's report ended early: " + out};
    for (auto& [path, mounted] : view.files) {
        while (!mounted.content.empty() && mounted.content.back() == '\n')
            mounted.content.pop_back();
    }
    return view;
}

}  // namespace

const std::optional<std::string>& ContainerRuntime::unavailable() {
    static const std::optional<std::string> reason = probe();
    return reason;
}

Result<ContainerView> ContainerRuntime::inspect(const fs::path& cdiDir,
                                                const std::vector<std::string>& cdiIds,
                                                const std::vector<std::string>& devicePaths,
                                                const std::vector<std::string>& filePaths,
                                                const fs::path& scratch) {
    for (const auto& path : devicePaths) {
        if (path.find('\'') != std::string::npos)
            return Error{"a path with a quote cannot be checked: " + path};
    }
    for (const auto& path : filePaths) {
        if (path.find('\'') != std::string::npos)
            return Error{"a path with a quote cannot be checked: " + path};
    }
    const RunResult run =
        runContainer(cdiDir, cdiIds, containerScript(devicePaths, filePaths), scratch);
    if (run.status != 0)
        return Error{"podman run with " + std::to_string(cdiIds.size()) +
                     " CDI devices failed: " + describe(run)};
    return parseView(run.out);
}

}  // namespace numadra::conformance
