#include "core/model/explain.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// True if a ranks before b: larger |contribution|, NaN last, then smaller key.
bool RanksBefore(const Contribution& a, const Contribution& b) {
  const double x = std::abs(a.contribution), y = std::abs(b.contribution);
  const bool x_nan = std::isnan(x), y_nan = std::isnan(y);
  if (x_nan != y_nan) return y_nan;
  if (!x_nan && x != y) return x > y;
  return a.key < b.key;
}

bool PairRanksBefore(const PairContribution& a, const PairContribution& b) {
  const double x = std::abs(a.contribution), y = std::abs(b.contribution);
  const bool x_nan = std::isnan(x), y_nan = std::isnan(y);
  if (x_nan != y_nan) return y_nan;
  if (!x_nan && x != y) return x > y;
  return a.key_a != b.key_a ? a.key_a < b.key_a : a.key_b < b.key_b;
}

}  // namespace

void KeepTopPairs(size_t k, std::vector<PairContribution>* pairs) {
  const size_t n = std::min(k, pairs->size());
  std::partial_sort(pairs->begin(), pairs->begin() + static_cast<std::ptrdiff_t>(n), pairs->end(),
                    PairRanksBefore);
  pairs->resize(n);
}

absl::StatusOr<std::vector<Contribution>> TopContributions(absl::Span<const HashedFeature> features,
                                                           absl::Span<const double> weights,
                                                           size_t k) {
  if (weights.size() != features.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights: ", weights.size(), " weights for ", features.size(), " features"));
  }
  std::vector<Contribution> all;
  all.reserve(features.size());
  for (size_t i = 0; i < features.size(); ++i) {
    const double value = features[i].value;
    all.push_back({features[i].key, value, weights[i], weights[i] * value});
  }
  const size_t n = std::min(k, all.size());
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n), all.end(),
                    RanksBefore);
  all.resize(n);
  return all;
}

}  // namespace clickd
