#pragma once
// A temporary folder for a test, removed with everything in it when the test ends.

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace numadra::testing {

class TempTree {
  public:
    TempTree() {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "numadra-test-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr)
            throw std::runtime_error("mkdtemp failed");
        root_ = pattern;
    }
    ~TempTree() {
        std::error_code ec;
        std::filesystem::remove_all(root_, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    const std::string& root() const { return root_; }
    std::string path(const std::string& relative) const { return root_ + "/" + relative; }

    void file(const std::string& relative, const std::string& content) const {
        std::filesystem::create_directories(std::filesystem::path(path(relative)).parent_path());
        std::ofstream(path(relative), std::ios::binary) << content;
    }
    void dir(const std::string& relative) const {
        std::filesystem::create_directories(path(relative));
    }
    void link(const std::string& relative, const std::string& target) const {
        std::filesystem::create_directories(std::filesystem::path(path(relative)).parent_path());
        std::filesystem::create_symlink(target, path(relative));
    }
    void remove(const std::string& relative) const { std::filesystem::remove_all(path(relative)); }
    // Copies a whole tree (symlinks as symlinks) into this one.
    void copyFrom(const std::string& source) const {
        std::filesystem::copy(source, root_,
                              std::filesystem::copy_options::recursive |
                                  std::filesystem::copy_options::copy_symlinks |
                                  std::filesystem::copy_options::overwrite_existing);
    }

  private:
    std::string root_;
};

}  // namespace numadra::testing
