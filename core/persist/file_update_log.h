// FileUpdateLog: the embedded UpdateLog, append-only segment files in one
// directory, and a small manifest (format in docs/durability.md):
//
//   segment  := record*            file name: <first sequence, 20 digits>.log
//   record   := masked_crc32c u32 | length u32 | sequence u64 | payload
//               (the CRC covers length, sequence and payload)
//   MANIFEST := the newest segment's first sequence and a high-water mark,
//               a record known to be on disk (published at each segment
//               roll, at the first sync of a segment's records, and at
//               each Open), and a copy of it beside the directory
//               (<dir>.MANIFEST), so that deleting MANIFEST with the newest
//               segment is still seen
//
// Opening scans every segment. Only a torn tail of the newest segment (a
// last record whose header or payload runs past the end of the file, as a
// crash mid-append leaves it) is cut. Any other damage (a bad checksum, a
// sequence gap, a segment missing, a log shorter than the manifest's
// high-water mark) is DataLoss naming the file, the byte offset and the
// records at stake, and nothing on disk changes; unless a loaded snapshot
// covers every record of the damaged segment, or the caller asks to salvage
// (LogRecoveryOptions). Sync modes per update_log.h; group commit:
// concurrent WaitDurable callers share one fdatasync, which runs without
// the log's lock so that appends continue meanwhile. After a failed append
// the partial record is cut off (if that fails too, or after a failed sync,
// the log refuses every later append: a restart recovers from what is on
// disk).
//
// Thread safety: safe for concurrent use.
#ifndef CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_
#define CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/persist/env.h"
#include "core/persist/update_log.h"

namespace clickd {

class FileUpdateLog final : public UpdateLog {
 public:
  // Opens (creating) the log in `dir`, recovering as described above. It
  // fits UpdateLogOpener, and is ModelJournal's default opener.
  static absl::StatusOr<std::unique_ptr<FileUpdateLog>> Open(Env* env, const std::string& dir,
                                                             UpdateLogOptions options,
                                                             UpdateLogRecovery* recovery,
                                                             const LogRecoveryOptions& how = {});
  ~FileUpdateLog() override;

  // The largest payload a record may carry: what a reader accepts. Append
  // refuses a larger one (RESOURCE_EXHAUSTED) before writing anything, so
  // that no acknowledged record reads as damaged at the next start.
  static constexpr uint32_t kMaxPayloadBytes = 256u << 20;

  absl::StatusOr<uint64_t> Append(std::string_view record) override;
  absl::Status WaitDurable(uint64_t sequence) override;
  absl::Status ReadAfter(
      uint64_t after, const std::function<absl::Status(uint64_t, std::string_view)>& fn) override;
  absl::Status TruncateThrough(uint64_t sequence) override;

  // Removes the old segments and starts one at `sequence` + 1.
  absl::Status ResetAfter(uint64_t sequence) override;

  // The oldest segment's first sequence (a damaged segment the snapshot
  // covers counts until TruncateThrough removes it).
  uint64_t first_sequence() const override;
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
    // Damaged, but a loaded snapshot holds its records: never read again.
    bool damaged = false;
  };
  struct Damage;

  FileUpdateLog(Env* env, std::string dir, UpdateLogOptions options);
  std::string SegmentPath(uint64_t first_sequence) const;
  // "log/<name>" (the log directory's own name, then `name`), for messages.
  std::string RelativeName(std::string_view name) const;
  // "log/<first seq>.log", for messages.
  std::string SegmentName(uint64_t first_sequence) const;
  // The highest record known to exist in segments firsts[from..], or
  // MANIFEST's `high_water` if that is higher.
  uint64_t HighestSequenceFrom(const std::vector<uint64_t>& firsts, size_t from,
                               uint64_t high_water) const;
  // Checks where segment firsts[i] starts against what comes before it: the
  // snapshot, or the last scanned segment. Returns true with *damage set if
  // records are missing or doubled beyond the snapshot; notes in *found
  // those the snapshot holds. Part of ScanSegments.
  bool CheckSegmentStart(const std::vector<uint64_t>& firsts, size_t i,
                         const LogRecoveryOptions& how, uint64_t high_water,
                         UpdateLogRecovery* found, Damage* damage) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Scans the segments named `firsts` into segments_, stopping at the first
  // damage that the snapshot does not cover; returns it (code OK if none).
  absl::Status ScanSegments(const std::vector<uint64_t>& firsts, const LogRecoveryOptions& how,
                            uint64_t high_water, UpdateLogRecovery* found, Damage* damage)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Checks the scanned segments against MANIFEST (or its copy beside the
  // directory, `manifest_name` in messages): the newest segment it
  // names exists and the log reaches its high-water mark.
  Damage CheckManifest(const std::vector<uint64_t>& firsts, uint64_t newest_segment,
                       uint64_t high_water, uint64_t snapshot_sequence,
                       const std::string& manifest_name) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Opens the newest segment for appending (cutting a torn tail off first)
  // or starts one after last_sequence_, and publishes MANIFEST unless both
  // copies already say `published` (newest segment, high-water mark). When
  // `keep_on_failure` (nothing was salvaged, so the manifest on disk is
  // still true) a failed publish is noted in *found instead of failing
  // Open: a full disk leaves the model readable.
  absl::Status Resume(bool cut_torn_tail, std::optional<std::pair<uint64_t, uint64_t>> published,
                      bool keep_on_failure, UpdateLogRecovery* found)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the damaged segment and every later one aside, keeping the whole
  // records before the damage.
  absl::Status Salvage(const std::vector<uint64_t>& firsts, const Damage& damage,
                       UpdateLogRecovery* found) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Publishes MANIFEST: the newest segment and the high-water mark.
  absl::Status PublishManifest(uint64_t newest_segment, uint64_t high_water);
  // Closes the active segment (synced) and opens a new one. Not while
  // syncing_: the caller waits for that first.
  absl::Status StartSegment(uint64_t first_sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Raises MANIFEST's high-water mark to `synced`, just made durable, once
  // per segment.
  void ClaimSynced(uint64_t synced) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Syncs `file`, timing it for options_.on_sync and, if set, *micros.
  absl::Status TimedSync(WritableFile* file, uint64_t* micros = nullptr);
  // Called by the one WaitDurable about to sync (syncing_ set): waits, with
  // mu_ released, until as many records wait for a sync as the last sync
  // saw (expected_group_), for at most the last sync's duration
  // (options_.max_group_wait at most). Without it two writers that take
  // turns never share a sync: each one's record lands while the other's
  // sync runs, and is synced alone after it.
  void GatherGroup() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
  // Set when a failed append's partial record could not be cut off: every
  // later Append and WaitDurable fails, so that nothing more is acknowledged.
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // A WaitDurable is syncing the active segment with mu_ released.
  bool syncing_ ABSL_GUARDED_BY(mu_) = false;
  // The records the last sync covered plus those appended while it ran:
  // how many writers were taking turns then (1: one writer).
  uint64_t expected_group_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t last_sync_micros_ ABSL_GUARDED_BY(mu_) = 0;
  // Signalled by Append while GatherGroup waits (gathering_).
  CondVar appended_cv_;
  bool gathering_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // The segment whose records MANIFEST's high-water mark already reaches.
  uint64_t claimed_segment_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread syncer_;  // kInterval only
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_FILE_UPDATE_LOG_H_
