// Template definitions for serving.h.
#ifndef CLICKD_CORE_MODEL_SERVING_INL_H_
#define CLICKD_CORE_MODEL_SERVING_INL_H_

#include <string>

#include "core/optim/numeric_bounds.h"

namespace clickd {

template <typename FieldOf>
absl::Status ValidateTrainingBatch(LossType loss, absl::Span<const TrainingExample> batch,
                                   FieldOf&& field_of) {
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::string field = field_of(i);
    if (absl::Status s = CheckBoundedLabel(loss, batch[i].label, field + ".label"); !s.ok()) {
      return s;
    }
    if (absl::Status s = CheckImportance(batch[i].importance, field + ".importance"); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_SERVING_INL_H_
