// DenseOptimizerConfig: which DenseOptimizer a model's dense block uses and
// its hyperparameters (the union of the seed-002/003 learners' parameters,
// each read by the learners that take it), and the factory that builds it.
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_CONFIG_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_CONFIG_H_

#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Model configs store the numeric value: append new types at the end.
enum class DenseOptimizerType {
  kAdaDiag,    // ada_diag: seed 002 eq. (2), composite mirror descent
  kAdaDiagDa,  // ada_diag_da: eq. (1), dual averaging
  kAdaFull,    // ada_full
  kAdaFullDa,  // ada_full_da
  kAdaFd,      // ada_fd: Algorithm 2
  kAdaFdDa,    // ada_fd_da: Algorithm 1
  kOns,        // ons
  kFdSon,      // fd_son
  kMetaGrad,   // metagrad (seed 003, full matrix)
};

absl::StatusOr<DenseOptimizerType> ParseDenseOptimizerType(std::string_view name);
std::string_view DenseOptimizerTypeName(DenseOptimizerType type);

struct DenseOptimizerConfig {
  DenseOptimizerType type = DenseOptimizerType::kAdaFd;
  double eta = 0.1;             // every ada_*, ons, fd_son: step size
  double delta = 1.0;           // every ada_*, ons, fd_son: H_0 = delta I
  int tau = 10;                 // ada_fd, ada_fd_da, fd_son: sketch rows
  double weight_power = 0.5;    // ons, fd_son: weight t^-p of g g^T
  double diameter = 2.0;        // metagrad: D
  double gradient_bound = 1.0;  // metagrad: G
};

// Dimensions beyond which a learner's state would not fit a server: d x d
// matrices (ada_full, ons, metagrad: one per slave) and O(tau d) sketches.
inline constexpr int kMaxFullMatrixDim = 2048;
inline constexpr int kMaxMetaGradDim = 512;
inline constexpr int kMaxDenseDim = 65536;

// Checks the parameters the selected learner reads, `dim` against its
// limit, and every field's range (ValidateDenseOptimizerRanges). Errors name
// the field (prefixed by `field`, e.g. "dense_optimizer") and the limit.
absl::Status ValidateDenseOptimizerConfig(const DenseOptimizerConfig& config, int dim,
                                          std::string_view field);

// Checks every numeric field, whichever learner reads it: eta in [kMinRate,
// kMaxRate], delta, diameter and gradient_bound in [kMinScale, kMaxScale],
// weight_power in [0, 1], tau in [1, kMaxDenseDim]
// (core/optim/numeric_bounds.h). A model without a dense block is checked
// too: its config is stored and shown whole.
absl::Status ValidateDenseOptimizerRanges(const DenseOptimizerConfig& config,
                                          std::string_view field);

// Builds the learner over R^dim, starting at w = 0.
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewDenseOptimizer(
    const DenseOptimizerConfig& config, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_OPTIMIZER_CONFIG_H_
