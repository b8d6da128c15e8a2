#pragma once
// Test support: a journal of the file-system calls a test binary makes below one folder, by
// interposition. fs_journal.cpp defines open, openat, write, close, fsync, fdatasync, rename,
// unlink, unlinkat, mkdir, rmdir and statfs in the test executable itself: the static libraries
// linked into it call these instead of the C library's, which they forward to with syscall().
// Link it only into a test binary of its own.
//
// Also the injectable answer for "is this folder on tmpfs?": statfs reports TMPFS_MAGIC for
// folders marked volatile, so the code under test decides as it would on a node.

#include <string>
#include <vector>

namespace numadra::testing::fsjournal {

enum class Op {
    Create,    // a new file (open with O_CREAT where nothing was)
    Truncate,  // O_TRUNC of an existing file
    Write,     // appended bytes (the writers under test write files front to back)
    Fsync,     // fsync or fdatasync, of a file or a folder
    Rename,
    Unlink,
    Mkdir,
    Rmdir,
};

struct Entry {
    Op op;
    std::string path;    // absolute
    std::string target;  // Rename: the new path
    std::string data;    // Write: the bytes
};

// Starts journaling the calls on paths below `root` (absolute, no trailing '/').
void start(const std::string& root);
// Stops and returns what was journaled since start().
std::vector<Entry> stop();

// statfs of these folders, or of anything below them, answers tmpfs. Empty: none.
void markVolatile(std::vector<std::string> folders);

size_t countFsyncs(const std::vector<Entry>& entries);
std::string describe(const Entry& entry);

}  // namespace numadra::testing::fsjournal
