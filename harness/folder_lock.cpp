// harness/folder_lock.cpp — see folder_lock.h.
#include "harness/folder_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "harness/interrupt.h"

namespace tb {

FolderLock::FolderLock(const std::string& file) {
  const std::filesystem::path parent = std::filesystem::path(file).parent_path();
  const std::string dir = parent.empty() ? "." : parent.string();
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) return;  // the writer names the missing or unreadable folder
  int rc;
  while ((rc = ::flock(fd_, LOCK_EX)) != 0 && errno == EINTR) {
    // Ctrl-C while another run holds the folder: end now (130), not once it lets go.
    if (interrupt_signal() != 0) {
      ::close(fd_);
      fd_ = -1;
      throw_if_interrupted();
    }
  }
  if (rc != 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

}  // namespace tb
