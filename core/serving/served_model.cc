#include "core/serving/served_model.h"

#include <chrono>
#include <new>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "core/base/call_deadline.h"
#include "core/base/quote.h"
#include "core/optim/loss.h"
#include "core/persist/batch_codec.h"
#include "core/persist/feedback_codec.h"

namespace clickd {

int64_t WallNowMicros() { return absl::GetCurrentTimeNanos() / 1000; }

namespace {

std::unique_ptr<FeedbackLoop> LoopFor(const ModelConfig& config,
                                      std::unique_ptr<FeedbackLoop> restored) {
  if (!config.feedback.enabled()) return nullptr;
  if (restored != nullptr) return restored;
  return std::make_unique<FeedbackLoop>(config);
}

// The restored calibrator if it has the options `config` gives, else a
// fresh one (snapshot decoding has checked the bytes already).
std::optional<OnlineCalibrator> CalibratorFor(const CalibrationConfig& config,
                                              std::string_view restored) {
  if (!config.enabled) return std::nullopt;
  OnlineCalibrationOptions options;
  options.half_life = config.half_life;
  if (!restored.empty()) {
    auto calibrator = OnlineCalibrator::Deserialize(restored);
    if (calibrator.ok() && calibrator->options() == options) return *std::move(calibrator);
  }
  // The config was validated: the options are in range.
  auto calibrator = OnlineCalibrator::Create(options);
  if (!calibrator.ok()) return std::nullopt;
  return *std::move(calibrator);
}

}  // namespace

ServedModel::ServedModel(std::unique_ptr<Model> model, std::unique_ptr<ModelJournal> journal,
                         RecoveryReport recovery, SnapshotObserver on_snapshot,
                         MonotonicClock clock, std::unique_ptr<FeedbackLoop> feedback,
                         WallClockMicros wall_clock, std::unique_ptr<IdempotencyWindow> idempotency,
                         std::string_view calibration)
    : model_(std::move(model)),
      journal_(std::move(journal)),
      recovery_(std::move(recovery)),
      on_snapshot_(std::move(on_snapshot)),
      clock_(std::move(clock)),
      wall_clock_(std::move(wall_clock)),
      feedback_(LoopFor(model_->config(), std::move(feedback))),
      idempotency_(idempotency != nullptr
                       ? std::move(idempotency)
                       : std::make_unique<IdempotencyWindow>(IdempotencyOptions{})),
      metrics_(model_->config().loss),
      recent_(model_->config().loss) {
  feedback_counters_.delay_counts.assign(std::size(kFeedbackDelayBuckets) + 1, 0);
  {
    MutexLock lock(&metrics_mu_);
    calibrator_ = CalibratorFor(model_->config().calibration, calibration);
  }
  snapshot_stats_.last_success_unix_seconds = recovery_.snapshot_unix_seconds;
  snapshot_stats_.last_bytes = recovery_.snapshot_bytes;
  RefreshStats();
}

void ServedModel::RefreshStats() {
  const ModelStats stats = model_->Stats();  // outside stats_mu_: it may wait for shards
  MutexLock lock(&stats_mu_);
  if (stats.updates >= stats_.updates) stats_ = stats;
}

absl::StatusOr<std::vector<ScoredExample>> ServedModel::Learn(
    absl::Span<const TrainingExample> batch) {
  absl::StatusOr<KeyedLearn> learned = LearnBatch(batch, "", 0, /*replicated=*/false);
  if (!learned.ok()) return learned.status();
  return std::move(learned->scored);
}

absl::Status ServedModel::Commit(absl::FunctionRef<absl::StatusOr<std::string>()> prepare,
                                 absl::FunctionRef<void()> apply) {
  if (journal_ != nullptr) return journal_->Commit(prepare, apply);
  MutexLock lock(&write_mu_);
  // Held behind another learner past the call's deadline: refused whole
  // (core/base/call_deadline.h), as the journal does.
  if (absl::Status s = CallDeadline::Check(); !s.ok()) return s;
  absl::StatusOr<std::string> prepared = prepare();
  if (!prepared.ok()) return prepared.status();
  apply();
  return absl::OkStatus();
}

absl::StatusOr<SnapshotReport> ServedModel::Snapshot(BackgroundThread* background) {
  if (journal_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model \"", name(), "\" lives in memory only: start clickd with --data_dir to snapshot"));
  }
  // The calibration is read before the journal marks the snapshot's
  // sequence, so it holds no example after it (RecordProgressive follows an
  // example's logging).
  absl::StatusOr<SnapshotReport> report;
  try {
    report = journal_->Snapshot(*model_, feedback_.get(), idempotency_.get(), EncodeCalibration(),
                                background);
  } catch (const std::bad_alloc&) {
    // The copy (whole state, encoded) did not fit: the snapshot fails, the
    // model goes on serving and learning from its log (docs/limits.md).
    report = absl::ResourceExhaustedError(
        absl::StrCat("out of memory snapshotting model ", Quote(name()),
                     ": no snapshot was written; the model keeps serving and its update log "
                     "keeps every record"));
  }
  RecordSnapshot(report);
  return report;
}

void ServedModel::RecordSnapshot(const absl::StatusOr<SnapshotReport>& report) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  {
    MutexLock lock(&snapshot_stats_mu_);
    if (report.ok()) {
      ++snapshot_stats_.successes;
      snapshot_stats_.last_success_unix_seconds = now;
      snapshot_stats_.last_bytes = report->bytes;
      snapshot_stats_.last_seconds = report->seconds;
    } else {
      ++snapshot_stats_.failures;
    }
  }
  if (on_snapshot_) on_snapshot_(*this, report);
}

SnapshotStats ServedModel::snapshot_stats() const {
  MutexLock lock(&snapshot_stats_mu_);
  return snapshot_stats_;
}

void ServedModel::RecordProgressive(const std::vector<ScoredExample>& scored) {
  const auto now = clock_();
  update_examples_.fetch_add(scored.size(), std::memory_order_relaxed);
  MutexLock lock(&metrics_mu_);
  for (const ScoredExample& s : scored) {
    metrics_.Add(s.margin, s.label, s.importance);
    recent_.Add(now, s.margin, s.label, s.importance);
  }
  if (!calibrator_.has_value()) return;
  for (const ScoredExample& s : scored) {
    const double p = Sigmoid(s.margin);
    const double click = s.label == 1.0f ? 1.0 : 0.0;
    raw_sum_ += s.importance * p;
    calibrated_sum_ += s.importance * calibrator_->Apply(p);
    label_sum_ += s.importance * click;
    // Refused only for values no learned example has (non-finite weight).
    (void)calibrator_->Add(p, click, s.importance);
  }
}

void ServedModel::Calibrate(absl::Span<const double> p, absl::Span<double> out) const {
  ReaderMutexLock lock(&metrics_mu_);
  for (size_t i = 0; i < p.size(); ++i) {
    out[i] = calibrator_.has_value() ? calibrator_->Apply(p[i]) : p[i];
  }
}

std::string ServedModel::EncodeCalibration() const {
  ReaderMutexLock lock(&metrics_mu_);
  return calibrator_.has_value() ? calibrator_->Serialize() : std::string();
}

void ServedModel::RestoreCalibration(std::string_view bytes) {
  MutexLock lock(&metrics_mu_);
  calibrator_ = CalibratorFor(model_->config().calibration, bytes);
}

CalibrationSummary ServedModel::calibration() const {
  ReaderMutexLock lock(&metrics_mu_);
  CalibrationSummary summary;
  if (!calibrator_.has_value()) return summary;
  summary.fitted = calibrator_->fitted();
  summary.gamma = calibrator_->gamma();
  summary.kappa = calibrator_->kappa();
  summary.examples = calibrator_->examples();
  if (label_sum_ > 0) {
    summary.raw_ratio = raw_sum_ / label_sum_;
    summary.calibrated_ratio = calibrated_sum_ / label_sum_;
  }
  return summary;
}

}  // namespace clickd

namespace clickd {

absl::Status NoFeedbackLoopError(std::string_view model) {
  return absl::FailedPreconditionError(
      absl::StrCat("model ", Quote(model),
                   " has no impression-to-click loop: create it with feedback.ttl_seconds > 0"));
}

absl::StatusOr<uint64_t> ServedModel::LogImpressions(
    absl::Span<const ImpressionExample> impressions) {
  if (feedback_ == nullptr) return NoFeedbackLoopError(name());
  const int64_t now = wall_clock_();
  uint64_t first = 0;
  bool full = false;  // the buffer refused them (not the log: a full disk)
  absl::StatusOr<FeedbackApplied> applied = absl::InternalError("impressions not applied");
  auto prepare = [&]() -> absl::StatusOr<std::string> {
    absl::StatusOr<uint64_t> reserved = feedback_->ReserveIds(now, impressions);
    if (!reserved.ok()) {
      full = true;
      return reserved.status();
    }
    first = *reserved;
    std::string record;
    if (journal_ != nullptr) EncodeImpressions(now, first, impressions, &record);
    return record;
  };
  auto apply = [&] { applied = feedback_->ApplyImpressions(*model_, now, first, impressions); };
  // The ids are reserved under the write lock, which orders this record
  // with every other: the record is encoded there too.
  const absl::Status committed = Commit(prepare, apply);
  if (!committed.ok()) {
    if (full) RecordRefusedImpressions(impressions.size());
    return committed;
  }
  // Reserved under the same lock as the apply: a failure here is a bug.
  if (!applied.ok()) return absl::InternalError(applied.status().message());
  RecordFeedback(*applied);
  return first;
}

absl::StatusOr<std::vector<JoinOutcome>> ServedModel::ApplyFeedback(
    absl::Span<const FeedbackItem> items) {
  bool duplicate = false;
  return ApplyFeedback(items, "", &duplicate);
}

namespace {

// What `prepare` returns for a key seen within the window: not an error to
// the caller, who answers "duplicate".
absl::Status Duplicate() { return absl::AlreadyExistsError("idempotency key seen"); }

}  // namespace

absl::Status ServedModel::CommitKeyed(std::string_view key, std::string_view window_key,
                                      int64_t now, std::string record, bool replicated,
                                      absl::FunctionRef<void()> admit,
                                      absl::FunctionRef<void()> apply, bool* duplicate) {
  *duplicate = false;
  if (journal_ != nullptr && !key.empty()) {
    std::string keyed;
    EncodeKeyed(now, key, record, &keyed);
    record = std::move(keyed);
  }
  auto prepare = [&]() -> absl::StatusOr<std::string> {
    if (!key.empty() && !replicated && idempotency_->Contains(window_key, now)) {
      *duplicate = true;
      return Duplicate();
    }
    admit();
    return std::move(record);
  };
  auto keyed_apply = [&] {
    if (!key.empty()) idempotency_->Insert(window_key, now);
    apply();
  };
  const absl::Status committed = Commit(prepare, keyed_apply);
  return *duplicate ? absl::OkStatus() : committed;
}

absl::StatusOr<std::vector<JoinOutcome>> ServedModel::ApplyFeedback(
    absl::Span<const FeedbackItem> items, std::string_view idempotency_key, bool* duplicate) {
  if (feedback_ == nullptr) return NoFeedbackLoopError(name());
  const int64_t now = wall_clock_();
  std::string record;
  if (journal_ != nullptr) {
    FeedbackRecord logged;
    logged.time_us = now;
    logged.items.assign(items.begin(), items.end());
    EncodeFeedback(logged, &record);
  }
  FeedbackApplied applied;
  auto apply = [&] { applied = feedback_->ApplyFeedback(*model_, now, items); };
  const std::string window_key = IdempotencyWindow::FeedbackKey(idempotency_key);
  const absl::Status committed = CommitKeyed(
      idempotency_key, window_key, now, std::move(record),
      /*replicated=*/false, [] {}, apply, duplicate);
  if (!committed.ok()) return committed;
  if (*duplicate) return std::vector<JoinOutcome>();
  RecordFeedback(applied);
  return applied.outcomes;
}

absl::StatusOr<ServedModel::KeyedLearn> ServedModel::Learn(absl::Span<const TrainingExample> batch,
                                                           std::string_view idempotency_key) {
  const int64_t now = idempotency_key.empty() ? 0 : wall_clock_();
  return LearnBatch(batch, idempotency_key, now, /*replicated=*/false);
}

absl::StatusOr<ServedModel::KeyedLearn> ServedModel::LearnBatch(
    absl::Span<const TrainingExample> batch, std::string_view key, int64_t now, bool replicated) {
  // Before the write lock: only the log's order and the steps need it.
  thread_local HashedBatch hashed;
  HashBatch(*model_, batch, &hashed);
  std::string record;
  if (journal_ != nullptr) EncodeBatch(batch, &record);
  KeyedLearn out;
  // Under the journal's learn lock, before the record is appended: the
  // room learning it needs (ModelJournal::Learn says why).
  auto admit = [&] {
    if (journal_ != nullptr) model_->ReserveFor(hashed.features);
  };
  auto apply = [&] { out.scored = LearnHashedBatch(*model_, batch, hashed); };
  const absl::Status committed =
      CommitKeyed(key, key, now, std::move(record), replicated, admit, apply, &out.duplicate);
  ReleaseIfLarge(&hashed);
  if (!committed.ok()) return committed;
  if (!out.duplicate) {
    RecordProgressive(out.scored);
    RefreshStats();
  }
  return out;
}

absl::Status ServedModel::ExpireImpressions() {
  if (feedback_ == nullptr) return absl::OkStatus();
  const int64_t now = wall_clock_();
  const std::optional<int64_t> due = feedback_->buffer().NextExpiryUs();
  if (!due.has_value() || *due > now) return absl::OkStatus();
  absl::StatusOr<std::vector<JoinOutcome>> ticked = ApplyFeedback({});
  return ticked.status();
}

absl::StatusOr<AppliedRecord> ServedModel::ApplyReplicated(std::string_view record) {
  if (journal_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("model ", Quote(name()),
                     " has its own update log: only a replica's memory-only models apply records "
                     "of the replicated log"));
  }
  // A batch, keyed or not, takes the learning path every update takes. A
  // keyed record's key is a source position (a Kafka batch,
  // Replica::LearnAt) or a client's key the writer checked: it goes into
  // the window, as a restart's replay puts it there.
  std::string_view inner = record;
  absl::StatusOr<KeyedRecord> keyed = KeyedRecord{};
  if (ClassifyPayload(record) == PayloadKind::kKeyed) {
    keyed = DecodeKeyed(record);
    if (!keyed.ok()) return keyed.status();
    inner = keyed->inner;
  }
  if (ClassifyPayload(inner) == PayloadKind::kBatch) {
    absl::StatusOr<DecodedBatch> decoded = DecodeBatch(inner);
    if (!decoded.ok()) return decoded.status();
    absl::StatusOr<KeyedLearn> learned =
        LearnBatch(decoded->batch, keyed->key, keyed->time_us, /*replicated=*/true);
    if (!learned.ok()) return learned.status();
    AppliedRecord applied;
    applied.kind = PayloadKind::kBatch;
    applied.scored = std::move(learned->scored);
    return applied;
  }
  // A record of the loop, under the same write lock as LogImpressions and
  // ApplyFeedback (which a replica does not call, but a test may).
  absl::StatusOr<AppliedRecord> applied;
  const absl::Status committed = Commit(
      []() -> absl::StatusOr<std::string> { return ""; },
      [&] { applied = ApplyLoggedRecord(record, *model_, feedback_.get(), idempotency_.get()); });
  if (!committed.ok()) return committed;
  if (!applied.ok()) return applied;
  RecordFeedback(applied->feedback);
  return applied;
}

void ServedModel::RecordFeedback(const FeedbackApplied& applied) {
  const uint64_t impressions = applied.impressions;
  if (!applied.final_labels.empty()) RecordProgressive(applied.final_labels);
  if (applied.steps > 0) RefreshStats();
  MutexLock lock(&feedback_counters_mu_);
  FeedbackCounters& c = feedback_counters_;
  c.impressions += impressions;
  c.expired += applied.expired;
  c.steps += applied.steps;
  for (JoinOutcome outcome : applied.outcomes) {
    switch (outcome) {
      case JoinOutcome::kJoined:
        ++c.joined;
        break;
      case JoinOutcome::kUnknown:
        ++c.unknown;
        break;
      case JoinOutcome::kExpired:
        ++c.late;
        break;
      case JoinOutcome::kAlreadyLabelled:
        ++c.already_labelled;
        break;
      case JoinOutcome::kOtherModel:
        ++c.other_model;
        break;
    }
  }
  for (double delay : applied.delays_seconds) {
    size_t bucket = 0;
    while (bucket < std::size(kFeedbackDelayBuckets) && delay > kFeedbackDelayBuckets[bucket]) {
      ++bucket;
    }
    ++c.delay_counts[bucket];
    c.delay_sum_seconds += delay;
  }
}

void ServedModel::RecordRefusedImpressions(uint64_t impressions) {
  MutexLock lock(&feedback_counters_mu_);
  feedback_counters_.refused_full += impressions;
}

FeedbackCounters ServedModel::feedback_counters() const {
  MutexLock lock(&feedback_counters_mu_);
  return feedback_counters_;
}

}  // namespace clickd
