#pragma once
// Helpers shared by the fuzz targets: reporting a broken contract (an abort, which libFuzzer
// records as a crash with the input), quiet logs, and scratch folders that live as long as the
// fuzzing process.

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace numadra::fuzz {

// A contract the code documents was broken: print why and abort (libFuzzer saves the input).
[[noreturn]] inline void fail(const std::string& what) {
    std::fprintf(stderr, "\n*** fuzz contract broken: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

inline void quietLogs() {
    spdlog::set_level(spdlog::level::off);
}

// A folder under /dev/shm (tmpfs: the fsyncs of atomic writes cost nothing) or the temp folder,
// removed at exit.
class ScratchDir {
  public:
    explicit ScratchDir(const std::string& tag) {
        std::filesystem::path base = "/dev/shm";
        std::error_code ec;
        if (!std::filesystem::is_directory(base, ec) || ::access(base.c_str(), W_OK) != 0)
            base = std::filesystem::temp_directory_path();
        std::string pattern = (base / ("numadra-fuzz-" + tag + "-XXXXXX")).string();
        if (::mkdtemp(pattern.data()) == nullptr)
            fail("mkdtemp " + pattern);
        root_ = pattern;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    ScratchDir(const ScratchDir&) = delete;
    ScratchDir& operator=(const ScratchDir&) = delete;

    const std::string& root() const { return root_; }
    std::string path(std::string_view relative) const {
        return root_ + "/" + std::string(relative);
    }

  private:
    std::string root_;
};

inline void writeFile(const std::string& path, std::string_view content) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(content.data(), static_cast<std::streamsize>(content.size()));
    if (!out)
        fail("cannot write " + path);
}

inline std::string readFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Every regular file and symlink below `root`, relative to it, sorted.
inline std::vector<std::string> listTree(const std::string& root) {
    std::vector<std::string> out;
    std::error_code ec;
    if (!std::filesystem::exists(root, ec))
        return out;
    for (auto it = std::filesystem::recursive_directory_iterator(root, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_directory(ec) || it->is_symlink(ec))
            out.push_back(std::filesystem::relative(it->path(), root, ec).string());
    }
    std::sort(out.begin(), out.end());
    return out;
}

}  // namespace numadra::fuzz
