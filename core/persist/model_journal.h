// ModelJournal: one model's durability. A model directory holds
//
//   MODEL                    the config (checksummed, published atomically)
//   snapshot-<seq>.snap      the newest K snapshots (docs/snapshot_format.md)
//   log/<first seq>.log      the update log after the oldest kept snapshot
//
// The update log is any UpdateLog (JournalOptions::open_log); the file
// layout above is the default, FileUpdateLog's.
//
// Commit appends a record to the log, applies it, then waits for the sync
// mode before the caller acknowledges. Appending and applying happen under one
// lock so that the log's order is the order of application, and a snapshot
// begun under that lock is exactly "every record up to its sequence": a
// restart (newest valid snapshot + replay of the records after it) rebuilds
// the same bytes. The snapshot holds the lock only to mark its moment
// (Model::BeginStateCopy); it copies, sorts and writes the state after
// releasing it, while learners go on.
//
// Thread safety: safe for concurrent use. Learners serialize on the model's
// learn lock; Predict never takes it.
#ifndef CLICKD_CORE_PERSIST_MODEL_JOURNAL_H_
#define CLICKD_CORE_PERSIST_MODEL_JOURNAL_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/background_thread.h"
#include "core/base/mutex.h"
#include "core/eval/metrics.h"
#include "core/feedback/feedback_loop.h"
#include "core/model/model.h"
#include "core/model/serving.h"
#include "core/persist/env.h"
#include "core/persist/idempotency_window.h"
#include "core/persist/update_log.h"

namespace clickd {

struct JournalOptions {
  Env* env = Env::Default();
  UpdateLogOptions log;
  // Opens a model's update log at <model dir>/log. Unset: FileUpdateLog::Open
  // (the embedded log, segment files in that directory).
  UpdateLogOpener open_log;
  int keep_snapshots = 2;
  // The operator's recovery mode (clickd --recover_damaged_log): a damaged
  // update log keeps the records before the damage, the damaged segments are
  // moved aside, and Open continues instead of failing with DataLoss.
  bool salvage_damaged_log = false;
  // The window of a model's idempotency keys (core/persist/idempotency_window.h).
  IdempotencyOptions idempotency;
};

// What a restart found, for the log line and the metrics.
struct RecoveryReport {
  uint64_t snapshot_sequence = 0;               // 0: no snapshot loaded
  std::vector<std::string> rejected_snapshots;  // "path: reason", newest first
  uint64_t replayed_records = 0;
  uint64_t torn_tail_bytes = 0;
  // Damage in log segments the loaded snapshot covers: they did not stop the
  // restore and go at the next snapshot's log truncation.
  std::vector<std::string> covered_log_damage;
  // With salvage_damaged_log: the damage that was dropped ("" if none), the
  // first record dropped, the highest known to have existed (0: unknown),
  // and the segments moved aside (relative to the model directory).
  std::string salvaged_log_damage;
  uint64_t dropped_from = 0;
  uint64_t dropped_at_least_through = 0;
  std::vector<std::string> moved_aside;
  // Why the update log's manifest was left as it was ("" if not).
  std::string manifest_kept;
  // The log was empty behind the snapshot and starts over after it.
  bool log_restarted = false;
  // When the loaded snapshot was written (Unix seconds; 0 without one).
  double snapshot_unix_seconds = 0;
  uint64_t snapshot_bytes = 0;
  double seconds = 0;
};

struct SnapshotReport {
  std::string path;
  uint64_t sequence = 0;
  uint64_t bytes = 0;
  uint64_t coordinates = 0;
  double seconds = 0;        // total
  double pause_seconds = 0;  // learning was paused to begin the copy
};

class ModelJournal {
 public:
  // Creates `dir` for a new model; AlreadyExists if it holds one.
  static absl::StatusOr<std::unique_ptr<ModelJournal>> Create(const std::string& dir,
                                                              const ModelConfig& config,
                                                              const JournalOptions& options);

  // Restores a model from `dir`: its config, the newest snapshot that reads
  // back whole (damaged ones are skipped and reported), then the log after
  // it. A model with the impression-to-click loop gets its loop back too.
  struct Opened {
    std::unique_ptr<Model> model;
    std::unique_ptr<FeedbackLoop> feedback;  // null unless config.feedback is enabled()
    std::unique_ptr<IdempotencyWindow> idempotency;
    // The snapshot's online calibration (OnlineCalibrator::Serialize, checked),
    // or empty: the log replayed after it does not add to it.
    std::string calibration;
    std::unique_ptr<ModelJournal> journal;
    RecoveryReport report;
  };
  static absl::StatusOr<Opened> Open(const std::string& dir, const JournalOptions& options);
  // The config a model directory holds (its MODEL file), read without
  // building the model: for a check before anything is allocated.
  static absl::StatusOr<ModelConfig> ReadConfig(Env* env, const std::string& dir);

  // Logs and applies one record, the journal's one write: under the learn
  // lock, `prepare` returns the record's bytes (an error logs and applies
  // nothing; work that needs no lock, such as encoding and hashing, belongs
  // before the call), the record is appended, `apply` applies it; then,
  // outside the lock, the wait for durability, which concurrent writers
  // share. Unavailable if the log cannot take the record (nothing is
  // applied then) or cannot sync; an allocation failure in `apply` marks
  // the model broken (Unavailable until a restart).
  absl::Status Commit(absl::FunctionRef<absl::StatusOr<std::string>()> prepare,
                      absl::FunctionRef<void()> apply);

  // Logs and learns a validated batch through Commit (for a journal used
  // without a ServedModel: tests and benchmarks; the server's updates take
  // ServedModel's learning path, which calls Commit itself).
  absl::StatusOr<std::vector<ScoredExample>> Learn(Model& model,
                                                   absl::Span<const TrainingExample> batch);

  // Writes a snapshot of `model` (and its loop and its idempotency window,
  // each may be null, and its calibration's bytes, kept only when its config
  // has calibration enabled), then drops log records and snapshots it
  // makes unnecessary. Learning pauses only while the copy begins
  // (microseconds plus the dense block's state; docs/durability.md). The
  // calling thread reads the shards; with `background`, the sort, the
  // encoding and the write run on that (low-priority) thread, which then
  // never holds a lock a learner waits for.
  absl::StatusOr<SnapshotReport> Snapshot(const Model& model,
                                          const FeedbackLoop* feedback = nullptr,
                                          const IdempotencyWindow* idempotency = nullptr,
                                          std::string calibration = {},
                                          BackgroundThread* background = nullptr);

  // Refuses every later Learn and Snapshot (FailedPrecondition) once a
  // snapshot in flight has finished, and waits for the learners still
  // waiting for their record's sync (a sync may publish the log's
  // MANIFEST): for a model being deleted, so that a request still holding
  // it cannot write into a directory that is about to go, or be reused by a
  // new model.
  void Close();

  // Removes a model's directory: renames it to a tombstone (a name no model
  // can have) in one step, then removes the tombstone's contents.
  static absl::Status Destroy(Env* env, const std::string& dir);

  // Removes the tombstones a crash during Destroy left in `models_dir`.
  static absl::Status RemoveTombstones(Env* env, const std::string& models_dir);

  // Model names cannot start with '.', so no model directory has this prefix.
  static constexpr char kTombstonePrefix[] = ".deleted-";

  const std::string& dir() const { return dir_; }
  uint64_t log_bytes() const { return log_->size_bytes(); }
  uint64_t log_sequence() const { return log_->last_sequence(); }
  // Records appended since the newest snapshot (what a restart would replay).
  uint64_t records_since_snapshot() const;

 private:
  ModelJournal(std::string dir, JournalOptions options, std::unique_ptr<UpdateLog> log,
               uint64_t snapshot_sequence);

  const std::string dir_;
  const JournalOptions options_;
  const std::unique_ptr<UpdateLog> log_;
  // Held exclusively to log + apply a batch, and to begin a snapshot's copy.
  Mutex learn_mu_;
  bool closed_ ABSL_GUARDED_BY(learn_mu_) = false;
  // The record whose learning ran out of memory after it was logged (0:
  // none): the model refuses updates and snapshots from then on.
  uint64_t broken_sequence_ ABSL_GUARDED_BY(learn_mu_) = 0;
  // OK unless closed or broken (the error to answer).
  absl::Status Writable() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(learn_mu_);
  // Marks the model broken at `sequence`, logs it, and returns the error.
  absl::Status Broken(uint64_t sequence) ABSL_EXCLUSIVE_LOCKS_REQUIRED(learn_mu_);
  // Learners between their append and the end of their durability wait.
  // Counted up under learn_mu_ too (after the closed_ check), down without
  // it, so that a learner's acknowledgement never waits for another's step.
  Mutex syncing_mu_;
  CondVar syncing_done_;
  int syncing_ ABSL_GUARDED_BY(syncing_mu_) = 0;
  mutable Mutex snapshot_mu_;  // one snapshot at a time
  uint64_t snapshot_sequence_ ABSL_GUARDED_BY(snapshot_mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_MODEL_JOURNAL_H_
