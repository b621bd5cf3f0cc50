// FaultInjectionEnv: an Env over a real Env that can fail on purpose, for
// tests that must not depend on luck (LevelDB's FaultInjectionTestEnv).
//
//   - a byte budget: once spent, an append writes what fits (a short write)
//     and fails with ResourceExhausted, as a full disk does;
//   - failing syncs, renames, truncations and directory syncs;
//   - a hook at the start of every file sync, to hold one in flight;
//   - DropUnsyncedData(): truncates every file written through this Env to
//     its size at its last successful Sync, as a power loss would.
//
// Thread safety: safe for concurrent use.
#ifndef CLICKD_CORE_PERSIST_FAULT_INJECTION_ENV_H_
#define CLICKD_CORE_PERSIST_FAULT_INJECTION_ENV_H_

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <string>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/persist/env.h"

namespace clickd {

class FaultInjectionEnv final : public Env {
 public:
  explicit FaultInjectionEnv(Env* base) : base_(base) {}

  // Bytes that appends may still write; negative means unlimited.
  void SetWriteBudget(int64_t bytes);
  void SetSyncFails(bool fails);
  void SetRenameFails(bool fails);
  void SetTruncateFails(bool fails);
  // Called with the file's path at the start of every file sync (not
  // directory syncs), without this Env's lock, so that a test can hold a
  // sync in flight by blocking in it. Null: none.
  void SetSyncHook(std::function<void(const std::string& path)> hook);
  // Truncates every file written through this Env to its last synced size.
  absl::Status DropUnsyncedData();

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                bool append) override;
  absl::StatusOr<std::unique_ptr<SequentialFile>> NewSequentialFile(
      const std::string& path) override {
    return base_->NewSequentialFile(path);
  }
  absl::StatusOr<uint64_t> FileSize(const std::string& path) override {
    return base_->FileSize(path);
  }
  absl::StatusOr<double> FileModifiedSeconds(const std::string& path) override {
    return base_->FileModifiedSeconds(path);
  }
  bool FileExists(const std::string& path) override { return base_->FileExists(path); }
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status RemoveFile(const std::string& path) override;
  absl::Status TruncateFile(const std::string& path, uint64_t size) override;
  absl::Status CreateDirs(const std::string& dir) override { return base_->CreateDirs(dir); }
  absl::Status RemoveDir(const std::string& dir) override { return base_->RemoveDir(dir); }
  absl::Status SyncDir(const std::string& dir) override;
  absl::StatusOr<std::vector<std::string>> ListDir(const std::string& dir) override {
    return base_->ListDir(dir);
  }
  uint64_t NowMicros() override { return base_->NowMicros(); }

 private:
  friend class FaultInjectionFile;

  // Returns how many of `want` bytes may be written now, spending them.
  size_t TakeBudget(size_t want);
  bool sync_fails() const;
  void RunSyncHook(const std::string& path);
  void RecordSynced(const std::string& path, uint64_t size);

  Env* const base_;
  mutable Mutex mu_;
  int64_t budget_ ABSL_GUARDED_BY(mu_) = -1;
  bool sync_fails_ ABSL_GUARDED_BY(mu_) = false;
  bool rename_fails_ ABSL_GUARDED_BY(mu_) = false;
  bool truncate_fails_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void(const std::string& path)> sync_hook_ ABSL_GUARDED_BY(mu_);
  // Every file written through this Env, with its size at its last sync.
  std::map<std::string, uint64_t> synced_size_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_FAULT_INJECTION_ENV_H_
