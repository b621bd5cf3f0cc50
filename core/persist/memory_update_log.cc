#include "core/persist/memory_update_log.h"

#include <algorithm>
#include <deque>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "core/base/mutex.h"
#include "core/persist/env.h"

namespace clickd {

// The records first..first + kept.size() - 1, shared by the logs an opener
// opened on one directory.
struct MemoryUpdateLog::Records {
  Mutex mu;
  std::deque<std::string> kept ABSL_GUARDED_BY(mu);
  uint64_t first ABSL_GUARDED_BY(mu) = 1;
  uint64_t bytes ABSL_GUARDED_BY(mu) = 0;

  uint64_t last() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return first + kept.size() - 1; }
};

MemoryUpdateLog::MemoryUpdateLog()
    : MemoryUpdateLog(std::make_shared<Records>(), "the memory update log") {}

MemoryUpdateLog::MemoryUpdateLog(std::shared_ptr<Records> records, std::string name)
    : records_(std::move(records)), name_(std::move(name)) {}

UpdateLogOpener MemoryUpdateLog::Opener() {
  struct Shelf {
    Mutex mu;
    absl::flat_hash_map<std::string, std::shared_ptr<Records>> logs ABSL_GUARDED_BY(mu);
  };
  auto shelf = std::make_shared<Shelf>();
  return [shelf](Env* env, const std::string& dir, const UpdateLogOptions&,
                 UpdateLogRecovery* recovery,
                 const LogRecoveryOptions&) -> absl::StatusOr<std::unique_ptr<UpdateLog>> {
    const bool existed = env->FileExists(dir);
    if (absl::Status s = env->CreateDirs(dir); !s.ok()) return s;
    Shelf& kept = *shelf;
    std::shared_ptr<Records> records;
    {
      MutexLock lock(&kept.mu);
      std::shared_ptr<Records>& slot = kept.logs[dir];
      if (slot == nullptr || !existed) slot = std::make_shared<Records>();
      records = slot;
    }
    if (recovery != nullptr) {
      *recovery = UpdateLogRecovery();
      MutexLock lock(&records->mu);
      recovery->records = records->kept.size();
    }
    return std::unique_ptr<UpdateLog>(new MemoryUpdateLog(std::move(records), dir));
  };
}

absl::StatusOr<uint64_t> MemoryUpdateLog::Append(std::string_view record) {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  r.kept.emplace_back(record);
  r.bytes += record.size();
  return r.last();
}

absl::Status MemoryUpdateLog::WaitDurable(uint64_t) { return absl::OkStatus(); }

absl::Status MemoryUpdateLog::ReadAfter(
    uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) {
  // A copy, so that fn runs without the lock (it may call into the log).
  uint64_t sequence;
  std::vector<std::string> records;
  {
    Records& r = *records_;
    MutexLock lock(&r.mu);
    sequence = std::max(after + 1, r.first);
    for (uint64_t s = sequence; s <= r.last(); ++s) records.push_back(r.kept[s - r.first]);
  }
  for (const std::string& record : records) {
    if (absl::Status s = fn(sequence++, record); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status MemoryUpdateLog::TruncateThrough(uint64_t sequence) {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  while (!r.kept.empty() && r.first <= sequence) {
    r.bytes -= r.kept.front().size();
    r.kept.pop_front();
    ++r.first;
  }
  return absl::OkStatus();
}

absl::Status MemoryUpdateLog::ResetAfter(uint64_t sequence) {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  if (r.last() > sequence) {
    return absl::FailedPreconditionError(absl::StrCat(name_, " holds records after ", sequence,
                                                      "; only a log without them can start over"));
  }
  r.kept.clear();
  r.bytes = 0;
  r.first = sequence + 1;
  return absl::OkStatus();
}

uint64_t MemoryUpdateLog::first_sequence() const {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  return r.first;
}

uint64_t MemoryUpdateLog::last_sequence() const {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  return r.last();
}

uint64_t MemoryUpdateLog::size_bytes() const {
  Records& r = *records_;
  MutexLock lock(&r.mu);
  return r.bytes;
}

}  // namespace clickd
