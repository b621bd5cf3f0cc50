#include "server/metrics/durability_metrics.h"

#include <memory>
#include <vector>

namespace clickd::metrics {
namespace {

const Histogram::BucketBoundaries& SyncBuckets() {
  static const auto* const kBuckets = new Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3, 1};
  return *kBuckets;
}

const Histogram::BucketBoundaries& SnapshotBuckets() {
  static const auto* const kBuckets =
      new Histogram::BucketBoundaries{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300};
  return *kBuckets;
}

using DurableValue = std::function<double(const ServedModel&)>;

// One series per durable model: value(model).
SampleCallback PerDurableModel(const ModelRegistry* models, DurableValue value) {
  return [models, value = std::move(value)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      if (served->durable()) samples.push_back({{{"model", served->name()}}, value(*served)});
    }
    return samples;
  };
}

// One series per model that snapshots: a durable model, or a replica's
// model once a replica snapshot held it (memory-only models on a server
// without replication never do).
SampleCallback PerSnapshottedModel(const ModelRegistry* models, DurableValue value) {
  return [models, value = std::move(value)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      const SnapshotStats stats = served->snapshot_stats();
      if (served->durable() || stats.successes + stats.failures > 0) {
        samples.push_back({{{"model", served->name()}}, value(*served)});
      }
    }
    return samples;
  };
}

}  // namespace

void DurabilityMetrics::RegisterModelFamilies(Registry* registry, const ModelRegistry* models) {
  registry->BuildCallback("clickd_update_log_bytes", "Bytes of the model's update log on disk.",
                          MetricType::kGauge, PerDurableModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.journal()->log_bytes());
                          }));
  registry->BuildCallback(
      "clickd_update_log_lag_records",
      "Update-log records appended since the model's newest snapshot: what a restart would "
      "replay.",
      MetricType::kGauge, PerDurableModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.journal()->records_since_snapshot());
      }));
  registry->BuildCallback("clickd_snapshot_bytes", "Size of the model's newest snapshot file.",
                          MetricType::kGauge, PerSnapshottedModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.snapshot_stats().last_bytes);
                          }));
  registry->BuildCallback(
      "clickd_snapshot_last_success_timestamp_seconds",
      "When the model's newest snapshot written by this process finished (Unix seconds); 0 "
      "before the first.",
      MetricType::kGauge, PerSnapshottedModel(models, [](const ServedModel& m) {
        return m.snapshot_stats().last_success_unix_seconds;
      }));
  registry->BuildCallback("clickd_snapshot_failures_total",
                          "Snapshots of the model that failed since the process started.",
                          MetricType::kCounter,
                          PerSnapshottedModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.snapshot_stats().failures);
                          }));
  registry->BuildCallback(
      "clickd_restore_duration_seconds",
      "Time the model took to restore at startup (snapshot load plus log replay); 0 for a "
      "model created by this process.",
      MetricType::kGauge,
      PerDurableModel(models, [](const ServedModel& m) { return m.recovery().seconds; }));
  registry->BuildCallback(
      "clickd_restore_rejected_snapshots",
      "Snapshots found damaged (truncated, corrupt, unreadable) and skipped when the model "
      "was restored at startup.",
      MetricType::kGauge, PerDurableModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.recovery().rejected_snapshots.size());
      }));
}

DurabilityMetrics::DurabilityMetrics(Registry* registry)
    : sync_durations_(
          registry->BuildHistogram("clickd_update_log_sync_duration_seconds",
                                   "Time each fdatasync of the model's update log took.")),
      snapshot_durations_(registry->BuildHistogram(
          "clickd_snapshot_duration_seconds",
          "Time each snapshot of the model took, from the state copy to the published file.")) {}

std::function<void(double)> DurabilityMetrics::SyncObserver(const std::string& model) {
  std::shared_ptr<SyncSeries> series;
  {
    MutexLock lock(&mu_);
    std::shared_ptr<SyncSeries>& slot = syncs_[model];
    if (slot == nullptr) {
      slot = std::make_shared<SyncSeries>();
      MutexLock series_lock(&slot->mu);
      slot->histogram = &sync_durations_.Add({{"model", model}}, SyncBuckets());
    }
    series = slot;
  }
  return [series = std::move(series)](double seconds) {
    MutexLock lock(&series->mu);
    if (series->histogram != nullptr) series->histogram->Observe(seconds);
  };
}

void DurabilityMetrics::RemoveDeletedModels(const ModelRegistry& models) {
  MutexLock lock(&mu_);
  for (auto it = syncs_.begin(); it != syncs_.end();) {
    if (models.Get(it->first) != nullptr) {
      ++it;
      continue;
    }
    {
      MutexLock series_lock(&it->second->mu);
      sync_durations_.Remove(it->second->histogram);
      it->second->histogram = nullptr;
    }
    it = syncs_.erase(it);
  }
  for (auto it = snapshots_.begin(); it != snapshots_.end();) {
    if (models.Get(it->first) != nullptr) {
      ++it;
      continue;
    }
    snapshot_durations_.Remove(it->second);
    it = snapshots_.erase(it);
  }
}

void DurabilityMetrics::ObserveSnapshot(const std::string& model, double seconds) {
  MutexLock lock(&mu_);
  Histogram*& histogram = snapshots_[model];
  if (histogram == nullptr)
    histogram = &snapshot_durations_.Add({{"model", model}}, SnapshotBuckets());
  histogram->Observe(seconds);
}

}  // namespace clickd::metrics
