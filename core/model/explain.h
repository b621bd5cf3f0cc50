// Explanations of a prediction: which features moved the margin most. The
// caller reads each feature's weight at one round with Model::Weights, so the
// contributions add up to the margin that was served.
//
// Pure functions; thread-compatible.
#ifndef CLICKD_CORE_MODEL_EXPLAIN_H_
#define CLICKD_CORE_MODEL_EXPLAIN_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "core/features/hasher.h"

namespace clickd {

// One feature's part of the margin: contribution = weight * value.
struct Contribution {
  uint64_t key = 0;
  double value = 0;
  double weight = 0;
  double contribution = 0;
  friend bool operator==(const Contribution&, const Contribution&) = default;
};

// One pair of field features' part of a factorization model's pairwise
// margin (docs/factorization.md): the pair's term, times the instance
// normalisation's scale. Every pair's contributions add up to the pairwise
// margin. key_a < key_b.
struct PairContribution {
  uint64_t key_a = 0;
  uint64_t key_b = 0;
  double contribution = 0;
  friend bool operator==(const PairContribution&, const PairContribution&) = default;
};

// Keeps the k pairs of `pairs` with the largest |contribution|, largest
// first, ties by ascending (key_a, key_b), NaN last.
void KeepTopPairs(size_t k, std::vector<PairContribution>* pairs);

// Returns the k features with the largest |weight_i * value_i|, largest
// first, ties by ascending key; all of them when k exceeds their number. A
// NaN contribution ranks below every number. Features with zero contribution
// are kept (a feature the model does not hold is part of the answer).
// InvalidArgument unless weights.size() == features.size().
absl::StatusOr<std::vector<Contribution>> TopContributions(absl::Span<const HashedFeature> features,
                                                           absl::Span<const double> weights,
                                                           size_t k);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_EXPLAIN_H_
