// ModelConfig: everything that defines a model's behaviour. Two models with
// equal configs that learn the same examples in the same order hold
// byte-identical state.
#ifndef CLICKD_CORE_MODEL_MODEL_CONFIG_H_
#define CLICKD_CORE_MODEL_MODEL_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "core/features/hasher.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/loss.h"
#include "core/optim/optimizer_config.h"
#include "core/store/feature_admission.h"

namespace clickd {

// A dense namespace of fixed dimension (core/model/dense_block.h).
struct DenseNamespace {
  std::string name;
  int dim = 0;
};

struct ModelConfig {
  std::string name = "default";
  LossType loss = LossType::kLogistic;
  OptimizerConfig optimizer;
  HashingConfig hashing;
  int num_shards = 16;
  // The dense block: declared namespaces, and the learner over their
  // concatenation (unused without namespaces).
  std::vector<DenseNamespace> dense_namespaces;
  DenseOptimizerConfig dense_optimizer;
  // Which new features get a coordinate (core/store/feature_admission.h).
  // Policy kAll or kPoisson: the Bloom filter's counts are not yet part of
  // snapshots, so a model cannot use it.
  AdmissionOptions admission;
};

inline constexpr int kMaxShards = 4096;
inline constexpr size_t kMaxModelNameLength = 128;
// Dense namespaces per model (their dimensions are bounded by kMaxDenseDim
// in total); keeps configs small, like kMaxInteractions.
inline constexpr size_t kMaxDenseNamespaces = 64;

// Checks a model name: 1..kMaxModelNameLength characters of [A-Za-z0-9_.-].
absl::Status ValidateModelName(std::string_view name, std::string_view field);

// Sets the config's optimizer from its API name: a per-coordinate
// optimizer's (ftrl, ..., metagrad_diag) or a dense learner's (ada_fd, ...),
// which makes the whole model dense (OptimizerType::kDense with
// dense_optimizer.type set: core/model/dense_model.h). InvalidArgument
// listing both kinds otherwise.
absl::Status SetOptimizerName(std::string_view name, ModelConfig* config);

// The name SetOptimizerName takes for the config's optimizer.
std::string OptimizerName(const ModelConfig& config);

// Checks the declared dense namespaces: at most kMaxDenseNamespaces, valid,
// distinct names, dimensions in 1..kMaxDenseDim and their total within it.
// Errors name the field.
absl::Status ValidateDenseNamespaces(const std::vector<DenseNamespace>& namespaces);

// Checks every part; errors name the field and the limit.
absl::Status ValidateModelConfig(const ModelConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_MODEL_CONFIG_H_
