// The impressions of a scored Predict: each candidate's features as a
// learning step takes them (its own and its crosses, then the context's,
// merged: exactly what LearnBatch hashes for the same context and
// candidate in an Update), its dense values and the margin it was served.
#ifndef CLICKD_CORE_FEEDBACK_IMPRESSIONS_H_
#define CLICKD_CORE_FEEDBACK_IMPRESSIONS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/feedback/join_buffer.h"
#include "core/model/serving.h"

namespace clickd {

// Owns what `views` point into.
struct PredictImpressions {
  std::vector<std::vector<HashedFeature>> features;
  std::vector<std::vector<float>> dense;
  std::vector<ImpressionExample> views;
};

// The join buffer bytes `hashed`'s impressions would take at most (before
// merging repeated keys): checked against the budget before any is built,
// so that a request's cost is bounded before the work.
uint64_t ImpressionBytesBound(const Model& model, const HashedCandidates& hashed);

// Builds one impression per candidate, with scores[i].margin as served.
void BuildImpressions(const Model& model, const HashedCandidates& hashed,
                      absl::Span<const CandidateScore> scores, PredictImpressions* out);

}  // namespace clickd

#endif  // CLICKD_CORE_FEEDBACK_IMPRESSIONS_H_
