#include "core/persist/fault_injection_env.h"

#include <algorithm>
#include <utility>

namespace clickd {

class FaultInjectionFile final : public WritableFile {
 public:
  FaultInjectionFile(FaultInjectionEnv* env, std::string path, std::unique_ptr<WritableFile> base,
                     uint64_t size)
      : env_(env), path_(std::move(path)), base_(std::move(base)), size_(size) {}

  absl::Status Append(std::string_view data) override {
    const size_t allowed = env_->TakeBudget(data.size());
    if (allowed > 0) {
      if (absl::Status s = base_->Append(data.substr(0, allowed)); !s.ok()) return s;
      size_ += allowed;
    }
    if (allowed < data.size()) {
      return absl::ResourceExhaustedError("write " + path_ +
                                          ": No space left on device (injected)");
    }
    return absl::OkStatus();
  }

  // May run concurrently with Append (the update log syncs without its
  // lock): what was appended before the sync started is what it makes
  // durable.
  absl::Status Sync() override {
    const uint64_t size = size_.load();
    env_->RunSyncHook(path_);
    if (env_->sync_fails()) {
      return absl::InternalError("fdatasync " + path_ + ": Input/output error (injected)");
    }
    if (absl::Status s = base_->Sync(); !s.ok()) return s;
    env_->RecordSynced(path_, size);
    return absl::OkStatus();
  }

  absl::Status Close() override { return base_->Close(); }

 private:
  FaultInjectionEnv* const env_;
  const std::string path_;
  const std::unique_ptr<WritableFile> base_;
  std::atomic<uint64_t> size_;
};

void FaultInjectionEnv::SetWriteBudget(int64_t bytes) {
  MutexLock lock(&mu_);
  budget_ = bytes;
}

void FaultInjectionEnv::SetSyncFails(bool fails) {
  MutexLock lock(&mu_);
  sync_fails_ = fails;
}

void FaultInjectionEnv::SetSyncHook(std::function<void(const std::string& path)> hook) {
  MutexLock lock(&mu_);
  sync_hook_ = std::move(hook);
}

void FaultInjectionEnv::RunSyncHook(const std::string& path) {
  std::function<void(const std::string& path)> hook;
  {
    ReaderMutexLock lock(&mu_);
    hook = sync_hook_;
  }
  if (hook) hook(path);
}

void FaultInjectionEnv::SetRenameFails(bool fails) {
  MutexLock lock(&mu_);
  rename_fails_ = fails;
}

void FaultInjectionEnv::SetTruncateFails(bool fails) {
  MutexLock lock(&mu_);
  truncate_fails_ = fails;
}

size_t FaultInjectionEnv::TakeBudget(size_t want) {
  MutexLock lock(&mu_);
  if (budget_ < 0) return want;
  const size_t allowed = std::min<size_t>(want, static_cast<size_t>(budget_));
  budget_ -= static_cast<int64_t>(allowed);
  return allowed;
}

bool FaultInjectionEnv::sync_fails() const {
  ReaderMutexLock lock(&mu_);
  return sync_fails_;
}

void FaultInjectionEnv::RecordSynced(const std::string& path, uint64_t size) {
  MutexLock lock(&mu_);
  synced_size_[path] = size;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path, bool append) {
  auto base = base_->NewWritableFile(path, append);
  if (!base.ok()) return base.status();
  uint64_t size = 0;
  if (append) {
    auto existing = base_->FileSize(path);
    if (existing.ok()) size = *existing;
  }
  {
    MutexLock lock(&mu_);
    // A file opened for appending keeps what it had as synced; a new or
    // truncated file has nothing synced yet.
    if (!append || !synced_size_.count(path)) synced_size_[path] = append ? size : 0;
  }
  return std::unique_ptr<WritableFile>(new FaultInjectionFile(this, path, *std::move(base), size));
}

absl::Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  {
    MutexLock lock(&mu_);
    if (rename_fails_) return absl::InternalError("rename " + from + ": injected failure");
  }
  if (absl::Status s = base_->RenameFile(from, to); !s.ok()) return s;
  MutexLock lock(&mu_);
  auto it = synced_size_.find(from);
  if (it != synced_size_.end()) {
    synced_size_[to] = it->second;
    synced_size_.erase(it);
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::RemoveFile(const std::string& path) {
  if (absl::Status s = base_->RemoveFile(path); !s.ok()) return s;
  MutexLock lock(&mu_);
  synced_size_.erase(path);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::TruncateFile(const std::string& path, uint64_t size) {
  {
    MutexLock lock(&mu_);
    if (truncate_fails_) return absl::InternalError("truncate " + path + ": injected failure");
  }
  if (absl::Status s = base_->TruncateFile(path, size); !s.ok()) return s;
  MutexLock lock(&mu_);
  auto it = synced_size_.find(path);
  if (it != synced_size_.end()) it->second = std::min(it->second, size);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  if (sync_fails()) return absl::InternalError("fsync " + dir + ": injected failure");
  return base_->SyncDir(dir);
}

absl::Status FaultInjectionEnv::DropUnsyncedData() {
  std::map<std::string, uint64_t> files;
  {
    MutexLock lock(&mu_);
    files = synced_size_;
  }
  for (const auto& [path, size] : files) {
    if (!base_->FileExists(path)) continue;
    if (absl::Status s = base_->TruncateFile(path, size); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace clickd
