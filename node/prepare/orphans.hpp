#pragma once
// Internal: the files of prepares that never got their checkpoint record. A prepare writes its
// files first and its record last (the record is the one point that makes it count), and an
// unprepare removes the files before the record without syncing their folders: so a crash, or a
// power cut that loses what was not synced, can leave files that no record owns. They are named
// after their claim (CDI specs carry its UID, metadata files its UID inside), which is how the
// start-up finds and removes them.

#include <set>
#include <string>

#include "numadra/common/result.hpp"

namespace numadra::prepare::detail {

// Who may still use files: the claims with a record (prepared), and those whose record was
// quarantined (their pods may run until the kubelet unprepares them).
struct FileOwners {
    std::set<std::string> claimUids;
    std::set<std::string> claimFolders;  // "<namespace>_<name>" of the claims with a record
};

struct OrphanFolders {
    std::string driverName;
    std::string cdiDir;
    std::string metadataDir;
};

// Removes, in the CDI folder, this driver's specs of claims that `owners` does not list and the
// temp files of interrupted writes; in the metadata folder, the claim folders that no listed
// claim uses (and whose files name no other driver's device) and the temp files of interrupted
// writes in the others. Nothing is fsynced: a removal
// a power cut undoes is found again at the next start. Returns how many files and folders were
// removed; the first error stops nothing.
Result<size_t> removeOrphans(const OrphanFolders& folders, const FileOwners& owners);

}  // namespace numadra::prepare::detail
