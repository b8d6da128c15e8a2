#pragma once
// File operations for state that must survive a crash at any instant: a reader (the container
// runtime, the kubelet, our own restart) sees either the old content or the whole new content,
// never a partial file. Errors name the path; their kind is errno's (common/errors.hpp), errno kept
// in Error::errnoValue.

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "numadra/common/result.hpp"

namespace numadra::files {

// How much of a change a call forces to disk before it returns. Every level is atomic against a
// crash of the process (SIGKILL, an abort): the kernel's page cache outlives the process,
// so a temp file renamed into place is never seen half-written. The levels differ only in what a
// power cut (or a kernel crash) keeps, and each fsync costs a disk round trip (~0.5 ms on ext4).
enum class Durability {
    // Nothing forced to disk. For a filesystem that a power cut erases anyway (tmpfs: see
    // isOnVolatileFilesystem), or for files the caller can re-create from a durable record.
    None,
    // The content reaches the disk before the name points at it (fsync before rename): after a
    // power cut the path holds the old content, the whole new content, or nothing (the name may
    // be lost: its folder is not fsynced) — never a partial file.
    Content,
    // Content and name on disk (the folder fsynced as well): once the call returns, the change
    // survives a power cut.
    Full,
};

// Whether `path` is on a filesystem that does not outlive a reboot (tmpfs, ramfs): fsyncing files
// there buys nothing, a power cut takes them either way. Errors (statfs) name the path.
Result<bool> isOnVolatileFilesystem(const std::string& path);

// What a write with `wanted` needs on the filesystem of `folder`: None on a volatile one (nothing
// there survives a power cut), `wanted` elsewhere or when statfs fails (the safe answer).
Durability durabilityFor(const std::string& folder, Durability wanted);

// Temp file in the same folder -> write -> (fsync) -> rename over `path` -> (fsync the folder),
// the fsyncs as `durability` asks. The temp file is removed when any step fails.
Status writeFileAtomically(const std::string& path, std::string_view content, mode_t mode = 0644,
                           Durability durability = Durability::Full);

// Truncates and rewrites an existing file keeping its inode (a single-file bind mount pins the
// inode, so a rename would never be seen by a running container), then fsyncs it.
// Fails with kind NotFound (ENOENT) when the file does not exist.
Status rewriteFileInPlace(const std::string& path, std::string_view content);

// Whole file; kind NotFound (ENOENT) when missing.
Result<std::string> readFile(const std::string& path);

// mkdir -p with `mode` for the folders it creates; with Durability::Full each new folder is made
// durable (its parent fsynced), any other level fsyncs nothing (a folder has no content).
Status makeDirectories(const std::string& path, mode_t mode = 0755,
                       Durability durability = Durability::Full);

// Removes a file, then fsyncs its folder with Durability::Full; a missing file is success.
Status removeFile(const std::string& path, Durability durability = Durability::Full);

// Removes a folder and everything below it (never following symlinks), then fsyncs its parent
// with Durability::Full; missing is success.
Status removeTree(const std::string& path, Durability durability = Durability::Full);

Status syncDirectory(const std::string& path);

// Names of the entries of a folder (no "." / ".."), sorted; kind NotFound when it does not
// exist.
Result<std::vector<std::string>> listDirectory(const std::string& path);

bool exists(const std::string& path);

}  // namespace numadra::files
