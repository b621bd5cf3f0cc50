// Durability metrics: the update log, snapshots and restores of every
// durable model. Gauges and counters are computed at scrape time from the
// ModelRegistry; the two latency histograms are fed as events happen (an
// update-log sync, a finished snapshot). docs/metrics.md lists them.
//
// Thread safety: safe for concurrent access.
#ifndef CLICKD_SERVER_METRICS_DURABILITY_METRICS_H_
#define CLICKD_SERVER_METRICS_DURABILITY_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "core/base/mutex.h"
#include "core/serving/registry.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {

class DurabilityMetrics {
 public:
  // Registers the histograms clickd_update_log_sync_duration_seconds and
  // clickd_snapshot_duration_seconds in `registry`.
  explicit DurabilityMetrics(Registry* registry);

  // Registers the scrape-time families clickd_update_log_{bytes,
  // lag_records}, clickd_snapshot_{bytes,last_success_timestamp_seconds,
  // failures_total} and clickd_restore_{duration_seconds,
  // rejected_snapshots}. `models` must outlive every Collect of `registry`.
  static void RegisterModelFamilies(Registry* registry, const ModelRegistry* models);

  // The observer of one model's update-log syncs (for
  // DurabilityOptions::sync_observer). It may outlive the model's series
  // (a deleted model's log may sync once more): it then observes nothing.
  std::function<void(double seconds)> SyncObserver(const std::string& model);

  // Records a finished snapshot's duration.
  void ObserveSnapshot(const std::string& model, double seconds);

  // Removes the histogram series of models `models` no longer holds (call
  // after a delete), so that a deleted model leaves no series behind.
  void RemoveDeletedModels(const ModelRegistry& models);

 private:
  // One model's sync histogram, shared with its observers; null once the
  // series was removed.
  struct SyncSeries {
    Mutex mu;
    Histogram* histogram ABSL_GUARDED_BY(mu) = nullptr;
  };

  Family<Histogram>& sync_durations_;
  Family<Histogram>& snapshot_durations_;
  Mutex mu_;
  std::map<std::string, std::shared_ptr<SyncSeries>> syncs_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Histogram*> snapshots_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_DURABILITY_METRICS_H_
