// Template definitions for serving.h.
#ifndef CLICKD_CORE_MODEL_SERVING_INL_H_
#define CLICKD_CORE_MODEL_SERVING_INL_H_

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace clickd {

template <typename FieldOf>
absl::Status ValidateTrainingBatch(LossType loss, absl::Span<const TrainingExample> batch,
                                   FieldOf&& field_of) {
  for (size_t i = 0; i < batch.size(); ++i) {
    const std::string field = field_of(i);
    if (absl::Status s = CheckLabel(loss, batch[i].label, field + ".label"); !s.ok()) return s;
    const float w = batch[i].importance;
    if (!std::isfinite(w) || w < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".importance is ", w, "; must be finite and >= 0"));
    }
  }
  return absl::OkStatus();
}

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_SERVING_INL_H_
