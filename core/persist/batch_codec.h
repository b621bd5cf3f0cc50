// The update log's record payload: one learned batch of TrainingExamples,
// with each impression's shared context stored once (docs/durability.md).
// Decoding is bounds-checked and fuzzed. Pure functions.
#ifndef CLICKD_CORE_PERSIST_BATCH_CODEC_H_
#define CLICKD_CORE_PERSIST_BATCH_CODEC_H_

#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/model/serving.h"

namespace clickd {

void EncodeBatch(absl::Span<const TrainingExample> batch, std::string* out);

// A decoded batch: `batch` points into `examples`, whose addresses are stable.
struct DecodedBatch {
  std::deque<Example> examples;
  std::vector<TrainingExample> batch;
};

// DataLoss for bytes that do not parse.
absl::StatusOr<DecodedBatch> DecodeBatch(std::string_view bytes);

}  // namespace clickd

#endif  // CLICKD_CORE_PERSIST_BATCH_CODEC_H_
