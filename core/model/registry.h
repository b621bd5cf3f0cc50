// ModelRegistry: the named models one process serves.
//
// Get() returns a ref-counted handle (TF Serving's ServableHandle idea): a
// request keeps its model alive while it runs, so Delete never waits for
// requests and a request never sees a half-deleted model.
//
// Thread safety: safe for concurrent access. The map is guarded by one
// reader/writer lock, held only to copy or swap a shared_ptr.
#ifndef CLICKD_CORE_MODEL_REGISTRY_H_
#define CLICKD_CORE_MODEL_REGISTRY_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/eval/metrics.h"
#include "core/eval/windowed_metrics.h"
#include "core/model/model.h"

namespace clickd {

// A served model: the model, the progressive metrics of every example it
// has learned while serving (over its lifetime and over a recent window) and
// counters for monitoring. Thread safety: safe for concurrent access; the
// metrics are guarded by their own lock, held only to add or summarise.
class ServedModel {
 public:
  // `clock` dates the examples of the recent window (tests inject a fake).
  explicit ServedModel(
      std::unique_ptr<Model> model,
      MonotonicClock clock = [] { return std::chrono::steady_clock::now(); })
      : model_(std::move(model)),
        clock_(std::move(clock)),
        metrics_(model_->config().loss),
        recent_(model_->config().loss) {}

  Model& model() { return *model_; }
  const Model& model() const { return *model_; }

  // Adds pre-update margins of learned examples to the lifetime metrics and
  // to the recent window.
  void RecordProgressive(const std::vector<ScoredExample>& scored) {
    const auto now = clock_();
    update_examples_.fetch_add(scored.size(), std::memory_order_relaxed);
    MutexLock lock(&metrics_mu_);
    for (const ScoredExample& s : scored) {
      metrics_.Add(s.margin, s.label, s.importance);
      recent_.Add(now, s.margin, s.label, s.importance);
    }
  }

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

  // Counts candidates scored for Predict.
  void RecordPredictions(uint64_t candidates) {
    predictions_.fetch_add(candidates, std::memory_order_relaxed);
  }

  // Candidates scored and examples learned since this model was created.
  uint64_t predictions() const { return predictions_.load(std::memory_order_relaxed); }
  uint64_t update_examples() const { return update_examples_.load(std::memory_order_relaxed); }

 private:
  const std::unique_ptr<Model> model_;
  const MonotonicClock clock_;
  std::atomic<uint64_t> predictions_{0};
  std::atomic<uint64_t> update_examples_{0};
  mutable Mutex metrics_mu_;
  StreamingMetrics metrics_ ABSL_GUARDED_BY(metrics_mu_);
  WindowedMetrics recent_ ABSL_GUARDED_BY(metrics_mu_);
};

class ModelRegistry {
 public:
  // Builds and adds a model. AlreadyExists if the name is taken;
  // InvalidArgument for a bad config.
  absl::StatusOr<std::shared_ptr<ServedModel>> Create(const ModelConfig& config);

  // Returns the model, or nullptr if there is none by that name.
  std::shared_ptr<ServedModel> Get(std::string_view name) const;

  // Removes a model; requests holding a handle finish on it. NotFound if absent.
  absl::Status Delete(std::string_view name);

  // Every model, ordered by name.
  std::vector<std::shared_ptr<ServedModel>> List() const;

  size_t size() const;

 private:
  mutable Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<ServedModel>> models_ ABSL_GUARDED_BY(mu_);
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_REGISTRY_H_
