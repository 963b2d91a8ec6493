// harness/folder_lock.h — one process at a time sets up the outputs of a folder.
#pragma once

#include <string>

namespace tb {

// An exclusive flock on the folder that holds `file` (blocking), held for the few
// seconds a run takes to decide whether it starts FILE or appends to it, write the
// header and its FILE.env.json. Two runs started at once with one --out otherwise both
// found no file, each wrote env.json as the only run, and the last one replaced the
// other's (its rows kept, their environment lost); or both appended and one run's
// appended_runs entry was lost. A folder that cannot be locked (NFS without flock on
// directories) is not an error: the run goes on unserialized, as before. A SIGINT or
// SIGTERM while waiting throws Interrupted (interrupt.h): nothing was written yet.
class FolderLock {
 public:
  explicit FolderLock(const std::string& file);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace tb
