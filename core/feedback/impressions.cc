#include "core/feedback/impressions.h"

#include "Eigen/Core"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

size_t DenseDim(const Model& model, const HashedCandidates& hashed) {
  const DenseBlock* block = model.dense_block();
  return block != nullptr && !hashed.dense.empty() ? static_cast<size_t>(block->dim()) : 0;
}

}  // namespace

uint64_t ImpressionBytesBound(const Model& model, const HashedCandidates& hashed) {
  const size_t dense = DenseDim(model, hashed);
  uint64_t bytes = 0;
  size_t begin = 0;
  for (size_t end : hashed.ends) {
    bytes += JoinBuffer::ImpressionBytes(end - begin + hashed.context.features.size(), dense);
    begin = end;
  }
  return bytes;
}

void BuildImpressions(const Model& model, const HashedCandidates& hashed,
                      absl::Span<const CandidateScore> scores, PredictImpressions* out) {
  const size_t n = hashed.ends.size();
  out->features.resize(n);
  out->dense.resize(n);
  out->views.resize(n);
  const DenseBlock* block = model.dense_block();
  Eigen::VectorXd assembled;
  size_t begin = 0;
  for (size_t i = 0; i < n; ++i) {
    // As LearnBatch: the candidate's part, then the context's, merged.
    std::vector<HashedFeature>& features = out->features[i];
    features.assign(hashed.features.begin() + begin, hashed.features.begin() + hashed.ends[i]);
    features.insert(features.end(), hashed.context.features.begin(), hashed.context.features.end());
    MergeDuplicates(&features);
    begin = hashed.ends[i];
    std::vector<float>& dense = out->dense[i];
    dense.clear();
    if (block != nullptr && !hashed.dense.empty() &&
        block->Assemble(&hashed.dense[0], hashed.dense[1 + i], &assembled)) {
      // Assemble places the request's floats: stored back as floats, exactly.
      dense.assign(assembled.data(), assembled.data() + assembled.size());
    }
    out->views[i] = {features, dense, ToFiniteFloat(scores[i].margin)};
  }
}

}  // namespace clickd
