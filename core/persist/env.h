// Env: every file and clock access of the durability code goes through this
// seam (LevelDB's Env), so that tests can swap in FaultInjectionEnv and
// inject short writes, failed syncs and lost unsynced data without luck.
//
// Thread safety: an Env is safe for concurrent use; a file object is used by
// one thread at a time (externally synchronized).
#ifndef CLICKD_CORE_PERSIST_ENV_H_
#define CLICKD_CORE_PERSIST_ENV_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace clickd {

class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends all of `data` or fails; a failed append may have written a
  // prefix (a short write), which readers must detect.
  virtual absl::Status Append(std::string_view data) = 0;
  // Makes everything appended so far durable (fdatasync).
  virtual absl::Status Sync() = 0;
  virtual absl::Status Close() = 0;
};

class SequentialFile {
 public:
  virtual ~SequentialFile() = default;
  // Reads up to n bytes into *out (replacing it); an empty *out means end of file.
  virtual absl::Status Read(size_t n, std::string* out) = 0;
};

class Env {
 public:
  virtual ~Env() = default;

  // The process-wide POSIX Env.
  static Env* Default();

  // Creates (or truncates) `path`, or opens it for appending.
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                        bool append) = 0;
  virtual absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) = 0;
  virtual absl::StatusOr<uint64_t> FileSize(const std::string& path) = 0;
  // When the file was last written, in seconds since the Unix epoch.
  virtual absl::StatusOr<double> FileModifiedSeconds(const std::string& path) = 0;
  virtual bool FileExists(const std::string& path) = 0;
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual absl::Status RemoveFile(const std::string& path) = 0;
  virtual absl::Status TruncateFile(const std::string& path, uint64_t size) = 0;
  // Creates the directory and its parents; OK if it exists.
  virtual absl::Status CreateDirs(const std::string& dir) = 0;
  // Removes an empty directory.
  virtual absl::Status RemoveDir(const std::string& dir) = 0;
  // Makes renames and creations in `dir` durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
  // Names (not paths) of the entries in `dir`.
  virtual absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) = 0;
  virtual uint64_t NowMicros() = 0;
};

// Reads a whole file through `env`.
absl::StatusOr<std::string> ReadWholeFile(Env* env, const std::string& path);

// Publishes a file at `path` atomically: `write` fills path + ".tmp", which
// is then synced, renamed over `path`, and the directory synced; the temp
// file is removed on any failure. Readers see the old file or the new one,
// never a mix.
absl::Status WriteFileAtomically(Env* env, const std::string& path,
                                 const std::function<absl::Status(WritableFile*)>& write);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_ENV_H_
