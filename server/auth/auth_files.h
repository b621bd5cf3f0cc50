// AuthFiles: the Authorizer of an --auth_tokens_file and an
// --auth_cert_roles_file, re-read when they change, so that tokens are
// added, rotated and revoked without a restart (docs/security.md).
//
// A change is noticed by ReloadIfChanged (main.cc calls it every
// --auth_reload_interval_seconds) from each file's modification time, size,
// inode and content (SHA-256): a Kubernetes Secret update, which swaps a
// symlink, changes all of them; a same-size rewrite with the mtime restored
// (cp -p, tar) changes only the content. A file that no longer parses leaves the previous tables in
// force; the error is returned for the log.
//
// Thread safety: safe for concurrent use. Current() hands out an immutable
// snapshot, so a reload never changes the tables under a call.
#ifndef CLICKD_SERVER_AUTH_AUTH_FILES_H_
#define CLICKD_SERVER_AUTH_AUTH_FILES_H_

#include <sys/types.h>

#include <array>
#include <chrono>
#include <ctime>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "server/auth/authorizer.h"

namespace clickd::auth {

class AuthFiles {
 public:
  // Reads the files now (an empty path: that table is not configured).
  // Errors name the flag and, for a bad line, the line.
  static absl::StatusOr<std::unique_ptr<AuthFiles>> Load(std::string tokens_path,
                                                         std::string cert_roles_path);

  // The tables in force.
  std::shared_ptr<const Authorizer> Current() const ABSL_LOCKS_EXCLUDED(mu_);

  // Re-reads both files if either changed: true if it did, false if
  // nothing changed, an error (the previous tables stay) if one cannot be
  // read or parsed.
  absl::StatusOr<bool> ReloadIfChanged() ABSL_LOCKS_EXCLUDED(mu_);

  // When the files were last read: what ReloadIfChanged compares.
  struct Stamp {
    timespec mtime{};
    off_t size = -1;
    ino_t inode = 0;
    std::array<unsigned char, 32> content{};  // SHA-256 of the bytes
    bool operator==(const Stamp& o) const {
      return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size &&
             inode == o.inode && content == o.content;
    }
  };

 private:
  AuthFiles(std::string tokens_path, std::string cert_roles_path)
      : tokens_path_(std::move(tokens_path)), cert_roles_path_(std::move(cert_roles_path)) {}

  // Reads both files into a new Authorizer.
  absl::StatusOr<std::shared_ptr<const Authorizer>> Read() const;

  const std::string tokens_path_;
  const std::string cert_roles_path_;
  mutable Mutex mu_;
  std::shared_ptr<const Authorizer> current_ ABSL_GUARDED_BY(mu_);
  Stamp tokens_stamp_ ABSL_GUARDED_BY(mu_);
  Stamp cert_roles_stamp_ ABSL_GUARDED_BY(mu_);
};

// Calls ReloadIfChanged on `files` every `interval` on a thread of its own
// until destroyed, and logs what happened (reloads to stdout, errors to
// stderr).
class AuthFilesReloader {
 public:
  AuthFilesReloader(AuthFiles* files, std::chrono::milliseconds interval);
  // Stops the thread and joins it.
  ~AuthFilesReloader();

 private:
  void Run();

  AuthFiles* const files_;
  const std::chrono::milliseconds interval_;
  Mutex mu_;
  CondVar stop_cv_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace clickd::auth

#endif  // CLICKD_SERVER_AUTH_AUTH_FILES_H_
