#pragma once
// An exclusive flock(2) on a file, held for the object's lifetime.

#include <string>

#include "numadra/claims/claims.hpp"
#include "numadra/common/result.hpp"
#include "numadra/common/unique_fd.hpp"

namespace numadra::plugin {

class FileLock {
  public:
    // Opens (creating, 0600) `path` and locks it exclusively, waiting at most until `deadline`.
    // Every acquire opens its own file description, so two locks on one file exclude each
    // other inside one process too, not only across processes.
    static Result<FileLock> acquire(const std::string& path, claims::Deadline deadline);

    FileLock(FileLock&&) noexcept = default;
    FileLock& operator=(FileLock&&) noexcept = default;
    ~FileLock() = default;  // closing the descriptor releases the lock

  private:
    explicit FileLock(UniqueFd fd) : fd_(std::move(fd)) {}
    UniqueFd fd_;
};

}  // namespace numadra::plugin
