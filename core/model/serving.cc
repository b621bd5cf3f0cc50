#include "core/model/serving.h"

namespace clickd {

std::vector<CandidateScore> ScoreCandidates(const Model& model, const Example& context,
                                            absl::Span<const Example> candidates) {
  const FeatureHasher& hasher = model.hasher();
  const LossType loss = model.config().loss;
  thread_local HashedContext hashed_context;
  thread_local std::vector<HashedFeature> part;
  hasher.HashContext(context, &hashed_context);
  const double context_margin = model.Margin(hashed_context.features);
  std::vector<CandidateScore> scores;
  scores.reserve(candidates.size());
  for (const Example& candidate : candidates) {
    hasher.HashCandidate(hashed_context, candidate, &part);
    const double margin = context_margin + model.Margin(part);
    scores.push_back({Link(loss, margin), margin});
  }
  return scores;
}

std::vector<ScoredExample> LearnBatch(Model& model, absl::Span<const TrainingExample> batch) {
  const FeatureHasher& hasher = model.hasher();
  thread_local HashedContext hashed_context;
  thread_local std::vector<HashedFeature> features;
  const Example* hashed_for = nullptr;  // context whose hash is in hashed_context
  std::vector<ScoredExample> scored;
  scored.reserve(batch.size());
  for (const TrainingExample& e : batch) {
    features.clear();
    if (e.context == nullptr) {
      hasher.Hash(*e.example, &features);
    } else {
      // Candidates of one impression share their context's hash.
      if (e.context != hashed_for) {
        hasher.HashContext(*e.context, &hashed_context);
        hashed_for = e.context;
      }
      hasher.HashCandidate(hashed_context, *e.example, &features);
      features.insert(features.end(), hashed_context.features.begin(),
                      hashed_context.features.end());
      MergeDuplicates(&features);
    }
    const double margin = model.Learn(features, e.label, e.importance);
    scored.push_back({static_cast<float>(margin), e.label, e.importance});
  }
  return scored;
}

}  // namespace clickd
