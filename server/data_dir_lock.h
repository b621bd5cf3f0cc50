// DataDirLock: one clickd per data directory. Two servers on one directory
// would append to the same update logs and remove each other's snapshots;
// the second one to start is refused before it reads anything.
//
// An advisory lock (flock) on <data_dir>/LOCK, held by an open descriptor
// for the life of the process: the kernel drops it when the process exits,
// however it exits, so a crash never leaves a stale lock behind.
#ifndef CLICKD_SERVER_DATA_DIR_LOCK_H_
#define CLICKD_SERVER_DATA_DIR_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace clickd {

class DataDirLock {
 public:
  // Creates `data_dir` if needed and locks it. FailedPrecondition naming the
  // directory if another process holds it; Unavailable if it cannot be
  // created or opened.
  static absl::StatusOr<std::unique_ptr<DataDirLock>> Acquire(const std::string& data_dir);
  ~DataDirLock();

  DataDirLock(const DataDirLock&) = delete;
  DataDirLock& operator=(const DataDirLock&) = delete;

 private:
  explicit DataDirLock(int fd) : fd_(fd) {}
  const int fd_;
};

}  // namespace clickd

#endif  // CLICKD_SERVER_DATA_DIR_LOCK_H_
