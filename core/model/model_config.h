// ModelConfig: everything that defines a model's behaviour. Two models with
// equal configs that learn the same examples in the same order hold
// byte-identical state.
#ifndef CLICKD_CORE_MODEL_MODEL_CONFIG_H_
#define CLICKD_CORE_MODEL_MODEL_CONFIG_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "core/features/hasher.h"
#include "core/optim/loss.h"
#include "core/optim/optimizer_config.h"

namespace clickd {

struct ModelConfig {
  std::string name = "default";
  LossType loss = LossType::kLogistic;
  OptimizerConfig optimizer;
  HashingConfig hashing;
  int num_shards = 16;
};

inline constexpr int kMaxShards = 4096;
inline constexpr size_t kMaxModelNameLength = 128;

// Checks a model name: 1..kMaxModelNameLength characters of [A-Za-z0-9_.-].
absl::Status ValidateModelName(std::string_view name, std::string_view field);

// Checks every part; errors name the field and the limit.
absl::Status ValidateModelConfig(const ModelConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_MODEL_CONFIG_H_
