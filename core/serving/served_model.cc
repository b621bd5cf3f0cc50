#include "core/serving/served_model.h"

#include <chrono>

#include "absl/strings/str_cat.h"

namespace clickd {

ServedModel::ServedModel(std::unique_ptr<Model> model, std::unique_ptr<ModelJournal> journal,
                         RecoveryReport recovery, SnapshotObserver on_snapshot,
                         MonotonicClock clock)
    : model_(std::move(model)),
      journal_(std::move(journal)),
      recovery_(std::move(recovery)),
      on_snapshot_(std::move(on_snapshot)),
      clock_(std::move(clock)),
      metrics_(model_->config().loss),
      recent_(model_->config().loss) {
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
  absl::StatusOr<std::vector<ScoredExample>> scored =
      journal_ != nullptr ? journal_->Learn(*model_, batch) : LearnBatch(*model_, batch);
  if (scored.ok()) {
    RecordProgressive(*scored);
    RefreshStats();
  }
  return scored;
}

absl::StatusOr<SnapshotReport> ServedModel::Snapshot() {
  if (journal_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model \"", name(), "\" lives in memory only: start clickd with --data_dir to snapshot"));
  }
  absl::StatusOr<SnapshotReport> report = journal_->Snapshot(*model_);
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
}

}  // namespace clickd
