// The memory budget's share per store and its validation (model_config.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/model/model_config.h"

namespace clickd {

uint64_t MemberMemoryBytes(const ModelConfig& config) {
  return config.memory.max_bytes / (config.variants.size() + 1);
}

absl::Status ValidateMemoryConfig(const ModelConfig& config) {
  const uint64_t max_bytes = config.memory.max_bytes;
  if (max_bytes == 0) return absl::OkStatus();
  if (max_bytes < kMinMemoryBytes || max_bytes > kMaxMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat("memory.max_bytes is ", max_bytes,
                                                   "; must be 0 (unbounded) or in ",
                                                   kMinMemoryBytes, "..", kMaxMemoryBytes));
  }
  if (config.optimizer.type == OptimizerType::kDense) {
    return absl::InvalidArgumentError(
        "memory.max_bytes budgets the sparse optimizers' coordinates; a dense learner has none");
  }
  const uint64_t per_shard =
      MemberMemoryBytes(config) / static_cast<uint64_t>(std::max(1, config.num_shards));
  if (per_shard < kMinShardMemoryBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "memory.max_bytes is ", max_bytes, ": ", per_shard, " bytes for each of the ",
        config.num_shards, " shards of each of the model's ", config.variants.size() + 1,
        " stores (the primary and each variant); must give each at least ", kMinShardMemoryBytes));
  }
  return absl::OkStatus();
}

}  // namespace clickd
