#pragma once
// A real container runtime reading the driver's CDI specs: podman (Debian 12: 4.3, with runc)
// starts a container that is given CDI device ids, exactly as a kubelet's runtime would be, and
// a shell inside reports what it sees. The runtime reads only the specs of the folder under test:
// podman 4.3 has no flag for CDI spec folders, so it runs in a private mount namespace where that
// folder is bind-mounted over /etc/cdi and an empty one over /var/run/cdi (the host's folders are
// not touched; empty /etc/cdi and /run/cdi mount points are created when missing). The
// container's root is a folder holding a static busybox (package busybox-static): no image, no
// registry.

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "numadra/common/result.hpp"

namespace numadra::conformance {

// What a shell in the container saw.
struct ContainerView {
    std::map<std::string, std::string> env;
    struct Node {
        std::string type;  // "character special file", ...
        unsigned major = 0, minor = 0;
    };
    std::map<std::string, Node> deviceNodes;  // by path, for the paths asked about
    struct MountedFile {
        std::vector<std::string> options;  // of its /proc/mounts line
        std::string content;               // without trailing newlines
        bool writable = false;
    };
    std::map<std::string, MountedFile> files;  // by container path, for the paths asked about
};

class ContainerRuntime {
  public:
    // Nullopt when containers can be run here, else why not (podman, runc or a static busybox
    // missing, not root, or a trivial container failed: the message has podman's words).
    // Probed once per process.
    static const std::optional<std::string>& unavailable();

    // Runs a container given `cdiIds`, with the specs of `cdiDir` only, and reports the
    // environment, the device nodes at `devicePaths` and the files at `filePaths`. Errors name
    // the command and carry podman's output.
    static Result<ContainerView> inspect(const std::filesystem::path& cdiDir,
                                         const std::vector<std::string>& cdiIds,
                                         const std::vector<std::string>& devicePaths,
                                         const std::vector<std::string>& filePaths,
                                         const std::filesystem::path& scratch);
};

}  // namespace numadra::conformance
