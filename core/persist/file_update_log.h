// FileUpdateLog: the embedded UpdateLog, append-only segment files in one
// directory (format in docs/durability.md):
//
//   segment  := record*            file name: <first sequence, 20 digits>.log
//   record   := masked_crc32c u32 | length u32 | sequence u64 | payload
//               (the CRC covers length, sequence and payload)
//
// Opening scans every segment. A torn tail of the newest segment (a partial
// record, or a bad CRC with nothing valid after it) is cut at the last whole
// record, as a crash mid-append leaves it; damage anywhere else is DataLoss.
// Sync modes per update_log.h; group commit: concurrent WaitDurable callers
// share one fdatasync, which runs without the log's lock so that appends
// continue meanwhile. After a failed append the partial record is cut off;
// after a failed sync the log refuses further appends (the state of unsynced
// data is unknown), and a restart recovers from what is on disk.
//
// Thread safety: safe for concurrent use.
#ifndef CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_
#define CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/persist/env.h"
#include "core/persist/update_log.h"

namespace clickd {

struct UpdateLogOptions {
  SyncMode sync = SyncMode::kEveryRequest;
  std::chrono::milliseconds sync_interval{100};
  // If set, called with the seconds each fdatasync of a segment took (for
  // the sync latency metric), from any thread and sometimes with the log's
  // lock held: it must be thread-safe, quick, and not call into the log.
  std::function<void(double seconds)> on_sync;
};

// What Open found and repaired, for logs and metrics.
struct UpdateLogRecovery {
  uint64_t records = 0;
  uint64_t torn_tail_bytes = 0;  // cut from the newest segment
};

class FileUpdateLog final : public UpdateLog {
 public:
  static absl::StatusOr<std::unique_ptr<FileUpdateLog>> Open(Env* env, const std::string& dir,
                                                             UpdateLogOptions options,
                                                             UpdateLogRecovery* recovery);
  ~FileUpdateLog() override;

  absl::StatusOr<uint64_t> Append(std::string_view record) override;
  absl::Status WaitDurable(uint64_t sequence) override;
  absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) override;
  absl::Status TruncateThrough(uint64_t sequence) override;

  // Makes an empty log continue after `sequence`: for a model restored from
  // a snapshot whose log is gone (a backup of MODEL + snapshot).
  // FailedPrecondition if the log holds records.
  absl::Status ResetAfter(uint64_t sequence);

  // The sequence of the oldest record kept (last_sequence() + 1 if none).
  uint64_t first_sequence() const;
  uint64_t last_sequence() const override;
  uint64_t size_bytes() const override;

  // Decodes a segment's bytes into records, stopping at the first damaged
  // one; returns how many bytes were whole records. Exposed for the fuzzer.
  static size_t ParseSegment(
      std::string_view bytes,
      const std::function<void(uint64_t sequence, std::string_view payload)>& record);

 private:
  struct Segment {
    uint64_t first_sequence;
    uint64_t last_sequence;  // first_sequence - 1 while empty
    uint64_t bytes;
  };

  FileUpdateLog(Env* env, std::string dir, UpdateLogOptions options);
  std::string SegmentPath(uint64_t first_sequence) const;
  // Closes the active segment (synced) and opens a new one. Not while
  // syncing_: the caller waits for that first.
  absl::Status StartSegment(uint64_t first_sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Syncs `file`, timing it for options_.on_sync.
  absl::Status TimedSync(WritableFile* file);
  void SyncLoop();

  Env* const env_;
  const std::string dir_;
  const UpdateLogOptions options_;

  mutable Mutex mu_;
  CondVar synced_cv_;
  std::vector<Segment> segments_ ABSL_GUARDED_BY(mu_);  // oldest first; back() is active
  std::unique_ptr<WritableFile> active_ ABSL_GUARDED_BY(mu_);
  uint64_t last_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t synced_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status sync_failure_ ABSL_GUARDED_BY(mu_);
  // A WaitDurable is syncing the active segment with mu_ released.
  bool syncing_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread syncer_;  // kInterval only
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_
