// HashedSet: labelled examples already parsed and hashed, packed into three
// flat arrays, so that a benchmark can time learning alone. 16 bytes per
// hashed feature plus 16 per example. Plain value; not synchronized.
#ifndef CLICKD_BENCH_THROUGHPUT_HASHED_SET_H_
#define CLICKD_BENCH_THROUGHPUT_HASHED_SET_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "core/features/hasher.h"

namespace clickd::bench {

class HashedSet {
 public:
  // Appends one example whose features are already in `features`.
  void Add(absl::Span<const HashedFeature> features, float label, float importance) {
    features_.insert(features_.end(), features.begin(), features.end());
    ends_.push_back(features_.size());
    labels_.push_back(label);
    importances_.push_back(importance);
  }

  size_t size() const { return ends_.size(); }
  uint64_t num_features() const { return features_.size(); }

  absl::Span<const HashedFeature> features(size_t i) const {
    const uint64_t begin = i == 0 ? 0 : ends_[i - 1];
    return absl::MakeConstSpan(features_.data() + begin, ends_[i] - begin);
  }
  float label(size_t i) const { return labels_[i]; }
  float importance(size_t i) const { return importances_[i]; }

 private:
  std::vector<HashedFeature> features_;
  std::vector<uint64_t> ends_;  // one past each example's last feature
  std::vector<float> labels_;
  std::vector<float> importances_;
};

}  // namespace clickd::bench

#endif  // CLICKD_BENCH_THROUGHPUT_HASHED_SET_H_
