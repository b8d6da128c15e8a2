#pragma once
// File operations for state that must survive a crash at any instant: a reader (the container
// runtime, the kubelet, our own restart) sees either the old content or the whole new content,
// never a partial file. Errors name the path; their kind is errno's (common/errors.hpp), errno kept
// in Error::errnoValue.

#include <sys/types.h>

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::files {

// Folders whose fsync a batch of writes has put off: a writer that makes several files durable
// together syncs each folder once (syncAll) instead of once per file.
class PendingDirectorySyncs {
  public:
    void add(std::string folder) { folders_.insert(std::move(folder)); }
    Status syncAll();  // deepest folders first

  private:
    std::set<std::string> folders_;
};

// Temp file in the same folder -> write -> fsync -> rename over `path` -> fsync the folder
// (or, with `deferred`, record the folder there for the caller's syncAll()).
// The temp file is removed when any step fails.
Status writeFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0644,
                           PendingDirectorySyncs* deferred = nullptr);

// Truncates and rewrites an existing file keeping its inode (a single-file bind mount pins the
// inode, so a rename would never be seen by a running container), then fsyncs it.
// Fails with kind NotFound (ENOENT) when the file does not exist.
Status rewriteFileInPlace(const std::string& path, std::string_view content);

// Whole file; kind NotFound (ENOENT) when missing.
Result<std::string> readFile(const std::string& path);

// mkdir -p with `mode` for the folders it creates, each made durable (its parent fsynced, now or
// through `deferred`).
Status makeDirectories(const std::string& path, mode_t mode = 0755,
                       PendingDirectorySyncs* deferred = nullptr);

// Removes a file and fsyncs its folder; a missing file is success.
Status removeFile(const std::string& path);

// Removes a folder and everything below it (never following symlinks); missing is success.
Status removeTree(const std::string& path);

Status syncDirectory(const std::string& path);

// Names of the entries of a folder (no "." / ".."), sorted; kind NotFound when it does not
// exist.
Result<std::vector<std::string>> listDirectory(const std::string& path);

bool exists(const std::string& path);

}  // namespace numadra::files
