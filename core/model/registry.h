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

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "core/base/mutex.h"
#include "core/eval/metrics.h"
#include "core/model/model.h"

namespace clickd {

// A served model: the model and the progressive metrics of every example it
// has learned while serving.
class ServedModel {
 public:
  explicit ServedModel(std::unique_ptr<Model> model)
      : model_(std::move(model)), metrics_(model_->config().loss) {}

  Model& model() { return *model_; }
  const Model& model() const { return *model_; }

  // Adds pre-update margins of learned examples to the lifetime metrics.
  void RecordProgressive(const std::vector<ScoredExample>& scored) {
    MutexLock lock(&metrics_mu_);
    for (const ScoredExample& s : scored) metrics_.Add(s.margin, s.label, s.importance);
  }

  MetricsSummary ProgressiveSummary() const {
    ReaderMutexLock lock(&metrics_mu_);
    return metrics_.Summary();
  }

 private:
  const std::unique_ptr<Model> model_;
  mutable Mutex metrics_mu_;
  StreamingMetrics metrics_ ABSL_GUARDED_BY(metrics_mu_);
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
