// ServedModel: one model as the server holds it: the model, its journal
// when the server runs with a data directory (every learned batch is logged
// before it is acknowledged; snapshots on demand), the progressive metrics
// of every example it has learned while serving (over its lifetime and over
// a recent window) and counters for monitoring.
//
// Thread safety: safe for concurrent access. Every change of the model
// (a batch, keyed or not, local or replicated; a record of the loop) takes
// one write lock per model: its journal's learn lock when durable,
// write_mu_ otherwise (docs/architecture.md, "The learning path"). The
// metrics and the snapshot statistics are guarded by their own locks, held
// only to add or read.
#ifndef CLICKD_CORE_SERVING_SERVED_MODEL_H_
#define CLICKD_CORE_SERVING_SERVED_MODEL_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/base/mutex.h"
#include "core/eval/metrics.h"
#include "core/eval/online_calibration.h"
#include "core/eval/windowed_metrics.h"
#include "core/feedback/feedback_loop.h"
#include "core/model/model.h"
#include "core/model/serving.h"
#include "core/persist/idempotency_window.h"
#include "core/persist/logged_record.h"
#include "core/persist/model_journal.h"

namespace clickd {

// What the snapshots of one model have done since the process started.
// Since the process started, except that the last success starts as the
// snapshot the model was restored from.
struct SnapshotStats {
  uint64_t successes = 0;
  uint64_t failures = 0;
  double last_success_unix_seconds = 0;  // 0: none on disk yet
  uint64_t last_bytes = 0;
  double last_seconds = 0;
};

inline std::chrono::steady_clock::time_point SteadyNow() {
  return std::chrono::steady_clock::now();
}

class ServedModel;

// The impression-to-click loop's counts since the process started, for
// /metrics (docs/feedback.md).
struct FeedbackCounters {
  uint64_t impressions = 0;   // logged by Predict
  uint64_t refused_full = 0;  // impressions refused: the buffer was full
  uint64_t expired = 0;       // reached their TTL unlabelled
  uint64_t steps = 0;         // learning steps the loop took
  // Feedback items by outcome (JoinOutcome).
  uint64_t joined = 0;
  uint64_t unknown = 0;
  uint64_t late = 0;  // kExpired: the impression's TTL had passed
  uint64_t already_labelled = 0;
  uint64_t other_model = 0;
  // Label delays of joined items: counts per bucket (upper bounds in
  // kFeedbackDelayBuckets seconds, then +Inf) and their sum.
  std::vector<uint64_t> delay_counts;
  double delay_sum_seconds = 0;
};
inline constexpr double kFeedbackDelayBuckets[] = {1,    10,    60,    300,   900,
                                                   3600, 14400, 43200, 86400, 604800};

// The online calibration of a model with config.calibration.enabled, as of
// now: the fit, and how calibrated the progressive predictions were before
// and after it (sum of p / sum of labels, weighted; 1 is calibrated).
struct CalibrationSummary {
  bool fitted = false;
  double gamma = 1, kappa = 1;
  uint64_t examples = 0;
  double raw_ratio = 0;         // what the model predicted
  double calibrated_ratio = 0;  // what Predict served after the correction
};

// FailedPrecondition for a call of the impression-to-click loop on `model`,
// which has no loop: the one message of Predict's log_impressions, Feedback
// and ServedModel.
absl::Status NoFeedbackLoopError(std::string_view model);

// Microseconds since the Unix epoch: the clock of the impression-to-click
// loop's records (tests inject a fake).
using WallClockMicros = std::function<int64_t()>;
int64_t WallNowMicros();

// Called after every snapshot attempt of a model, whatever asked for it
// (for the log and the metrics).
using SnapshotObserver =
    std::function<void(const ServedModel& model, const absl::StatusOr<SnapshotReport>& result)>;

class ServedModel {
 public:
  // A model that lives in memory only. `clock` dates the examples of the
  // recent window (tests inject a fake).
  explicit ServedModel(std::unique_ptr<Model> model, MonotonicClock clock = SteadyNow)
      : ServedModel(std::move(model), nullptr, RecoveryReport{}, nullptr, std::move(clock)) {}

  // A durable model: `journal` logs what it learns; `recovery` says how it
  // was restored (empty for a new model); `on_snapshot` may be null.
  // `feedback`: the restored loop of a model whose config has one (a new
  // model gets an empty one when null).
  // `idempotency`: the restored window of idempotency keys (a new model
  // gets an empty one with default options when null).
  // `calibration`: the restored calibration (ModelJournal::Opened), used
  // only if it was fitted with the options the config gives now: the config
  // wins, and a changed half_life starts a fresh fit.
  ServedModel(std::unique_ptr<Model> model, std::unique_ptr<ModelJournal> journal,
              RecoveryReport recovery, SnapshotObserver on_snapshot = nullptr,
              MonotonicClock clock = SteadyNow, std::unique_ptr<FeedbackLoop> feedback = nullptr,
              WallClockMicros wall_clock = WallNowMicros,
              std::unique_ptr<IdempotencyWindow> idempotency = nullptr,
              std::string_view calibration = {});

  Model& model() { return *model_; }
  const Model& model() const { return *model_; }
  const std::string& name() const { return model_->config().name; }

  // Learns a validated batch: logged first when durable (acknowledged once
  // durable per the sync mode; Unavailable, with nothing applied, when the
  // log cannot take it), then records the pre-update scores in the
  // progressive metrics and returns them. The keyed Learn below without a
  // key: every batch takes LearnBatch.
  absl::StatusOr<std::vector<ScoredExample>> Learn(absl::Span<const TrainingExample> batch);

  // --- The impression-to-click loop (null feedback(): not configured) ---
  const FeedbackLoop* feedback() const { return feedback_.get(); }
  FeedbackLoop* feedback() { return feedback_.get(); }

  // Remembers checked, hashed impressions (logged first when durable) and
  // returns the first one's id; the others follow in order.
  // FailedPrecondition without a loop; ResourceExhausted, nothing logged,
  // when the join buffer cannot take them all.
  absl::StatusOr<uint64_t> LogImpressions(absl::Span<const ImpressionExample> impressions);

  // Joins checked labels to impressions (logged first when durable) and
  // learns them by the model's policy. One outcome per item.
  absl::StatusOr<std::vector<JoinOutcome>> ApplyFeedback(absl::Span<const FeedbackItem> items);

  // Expires what is due now, through a tick record when durable: the
  // server's clock calls it. Does nothing (and logs nothing) when no
  // impression is due.
  absl::Status ExpireImpressions();

  // Adds a loop record's effects to the progressive metrics, the statistics
  // and the counters.
  void RecordFeedback(const FeedbackApplied& applied);

  // --- Replicas (replication/replica.h) ---
  // Applies one record of the replicated log to a memory-only model: a
  // learned batch, or a record of the loop (feedback_codec.h; its
  // impressions get their ids here, kIdsAssignedAtApply), then records its
  // effects as the writing calls above do. The replica's applier is the
  // model's one writer. DataLoss for a record that does not decode or
  // belongs to no loop; ResourceExhausted, changing nothing, for
  // impressions the join buffer cannot take. A batch (keyed or not) is
  // decoded here and learned by LearnBatch, as a local update is.
  absl::StatusOr<AppliedRecord> ApplyReplicated(std::string_view record);

  FeedbackCounters feedback_counters() const;
  // Counts impressions refused before they reached the buffer (a request
  // larger than the whole budget).
  void RecordRefusedImpressions(uint64_t impressions);

  // --- Calibration (config.calibration.enabled; otherwise the identity) ---
  // Sets out[i] to the calibrated probability of p[i], with one read of
  // the fit for all of them. The fit goes into snapshots and continues
  // after a restart from one; the examples the restart replays from the
  // log after the snapshot are not added to it, and the summary's ratios
  // count from the process start.
  void Calibrate(absl::Span<const double> p, absl::Span<double> out) const;
  bool calibrated() const { return model_->config().calibration.enabled; }
  CalibrationSummary calibration() const;
  // The calibrator's bytes for a snapshot (OnlineCalibrator::Serialize), or
  // empty when the config has no calibration.
  std::string EncodeCalibration() const;
  // Replaces the fit with a snapshot's, as the constructor restores it (the
  // config wins): a replica's models are created, then restored.
  void RestoreCalibration(std::string_view bytes);

  // --- Safe retries (docs/api.md#idempotency) ---
  // As Learn, under an idempotency key (empty: plain Learn). A key learned
  // within the window is not learned again: `duplicate`, nothing scored.
  struct KeyedLearn {
    std::vector<ScoredExample> scored;
    bool duplicate = false;
  };
  absl::StatusOr<KeyedLearn> Learn(absl::Span<const TrainingExample> batch,
                                   std::string_view idempotency_key);
  // As ApplyFeedback, under an idempotency key; a duplicate returns no
  // outcomes and sets *duplicate.
  absl::StatusOr<std::vector<JoinOutcome>> ApplyFeedback(absl::Span<const FeedbackItem> items,
                                                         std::string_view idempotency_key,
                                                         bool* duplicate);
  const IdempotencyWindow& idempotency() const { return *idempotency_; }
  // Replaces the window (and the source positions) with a snapshot's: a
  // replica's models are created, then restored. DataLoss if damaged.
  absl::Status RestoreIdempotency(std::string_view bytes) { return idempotency_->Restore(bytes); }

  // Writes a snapshot (FailedPrecondition for a memory-only model), updates
  // snapshot_stats() and tells the observer. `background`: where the
  // snapshot sorts, encodes and writes (ModelJournal::Snapshot).
  absl::StatusOr<SnapshotReport> Snapshot(BackgroundThread* background = nullptr);

  // Counts a snapshot attempt that holds this model in snapshot_stats()
  // and tells the observer: Snapshot() does, and so does a replica, whose
  // snapshots hold every model at one sequence (replication/replica.h).
  void RecordSnapshot(const absl::StatusOr<SnapshotReport>& report);

  bool durable() const { return journal_ != nullptr; }
  // The journal of a durable model, or null.
  const ModelJournal* journal() const { return journal_.get(); }
  const RecoveryReport& recovery() const { return recovery_; }
  SnapshotStats snapshot_stats() const;

  // Stops the journal (see ModelJournal::Close): the model is being deleted.
  void CloseJournal() {
    if (journal_ != nullptr) journal_->Close();
  }

  // Adds pre-update margins of learned examples to the lifetime metrics and
  // to the recent window.
  void RecordProgressive(const std::vector<ScoredExample>& scored);

  MetricsSummary ProgressiveSummary() const {
    ReaderMutexLock lock(&metrics_mu_);
    return metrics_.Summary();
  }

  // The progressive metrics of the examples learned in the recent window
  // (the last 9 to 10 minutes: see WindowedMetrics).
  MetricsSummary RecentProgressiveSummary() const {
    const auto now = clock_();
    ReaderMutexLock lock(&metrics_mu_);
    return recent_.Summary(now);
  }

  // The model's statistics as of its last learned batch (or its creation),
  // read without waiting for a learner: Model::Stats reads every shard
  // under its lock, which a learner holds for a whole step. What GetModel
  // and ListModels report.
  ModelStats CachedStats() const {
    MutexLock lock(&stats_mu_);
    return stats_;
  }
  // Publishes the statistics of a state imported whole (a replica's
  // snapshot), which no learned batch has refreshed.
  void StatsAfterImport() { RefreshStats(); }

  // Counts candidates scored for Predict.
  void RecordPredictions(uint64_t candidates) {
    predictions_.fetch_add(candidates, std::memory_order_relaxed);
  }

  // Candidates scored and examples learned since this model was created.
  uint64_t predictions() const { return predictions_.load(std::memory_order_relaxed); }
  uint64_t update_examples() const { return update_examples_.load(std::memory_order_relaxed); }

 private:
  // The model's one write: under its write lock (the journal's learn lock
  // when durable, write_mu_ otherwise) `prepare` gives the record (an error
  // stops the write), the journal appends it when durable, `apply` applies
  // it; a durable model's wait for durability follows, outside the lock.
  // Work that needs no lock (hashing, encoding) is done before the call.
  absl::Status Commit(absl::FunctionRef<absl::StatusOr<std::string>()> prepare,
                      absl::FunctionRef<void()> apply);

  // Commit under an idempotency key `key` (may be empty) at `now`: under
  // the lock a key seen within the window (as `window_key`: the key in its
  // record kind's space) sets *duplicate and nothing is logged or applied
  // (a `replicated` record's key was checked by its writer: it is only
  // remembered); otherwise `admit` runs (what must precede the append),
  // the key is remembered and `apply` runs. `record`: the unkeyed record's
  // bytes (empty for a memory-only model), wrapped with the key here,
  // before the lock.
  absl::Status CommitKeyed(std::string_view key, std::string_view window_key, int64_t now,
                           std::string record, bool replicated, absl::FunctionRef<void()> admit,
                           absl::FunctionRef<void()> apply, bool* duplicate);

  // The learning path: every batch, keyed or not, local or replicated,
  // memory-only or durable. Hashed (and encoded, when durable) before the
  // lock, learned under it through CommitKeyed, then recorded in the
  // progressive metrics and the statistics.
  absl::StatusOr<KeyedLearn> LearnBatch(absl::Span<const TrainingExample> batch,
                                        std::string_view key, int64_t now, bool replicated);

  // Publishes model_->Stats() unless a later learner has already published
  // newer figures (learners may finish out of order).
  void RefreshStats();

  const std::unique_ptr<Model> model_;
  const std::unique_ptr<ModelJournal> journal_;
  const RecoveryReport recovery_;
  const SnapshotObserver on_snapshot_;
  const MonotonicClock clock_;
  const WallClockMicros wall_clock_;
  const std::unique_ptr<FeedbackLoop> feedback_;
  const std::unique_ptr<IdempotencyWindow> idempotency_;
  // A memory-only model's write lock (a durable one's is its journal's
  // learn lock, never held across the durability wait). It orders the
  // idempotency check with the insert and the loop's records with their
  // ids. For learning it is not needed for correctness (the shard locks
  // keep every step atomic) but for speed: steps interleaved example by
  // example moved every shard's lock and the hot coordinates between cores
  // at every step, so two callers learned slower than one; in turns, one
  // learns while the other validates and hashes
  // (docs/archive/performance_training.md, "Two callers of the Update
  // path").
  Mutex write_mu_;
  mutable Mutex feedback_counters_mu_;
  FeedbackCounters feedback_counters_ ABSL_GUARDED_BY(feedback_counters_mu_);
  std::atomic<uint64_t> predictions_{0};
  std::atomic<uint64_t> update_examples_{0};
  mutable Mutex metrics_mu_;
  StreamingMetrics metrics_ ABSL_GUARDED_BY(metrics_mu_);
  WindowedMetrics recent_ ABSL_GUARDED_BY(metrics_mu_);
  // Set once at construction when config.calibration.enabled (restored from
  // a snapshot, or fresh); fed by RecordProgressive, each example scored as
  // served before it is added.
  std::optional<OnlineCalibrator> calibrator_ ABSL_GUARDED_BY(metrics_mu_);
  double raw_sum_ ABSL_GUARDED_BY(metrics_mu_) = 0;
  double calibrated_sum_ ABSL_GUARDED_BY(metrics_mu_) = 0;
  double label_sum_ ABSL_GUARDED_BY(metrics_mu_) = 0;
  mutable Mutex stats_mu_;  // held only to copy stats_
  ModelStats stats_ ABSL_GUARDED_BY(stats_mu_);
  mutable Mutex snapshot_stats_mu_;
  SnapshotStats snapshot_stats_ ABSL_GUARDED_BY(snapshot_stats_mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_SERVING_SERVED_MODEL_H_
