#include "core/model/serving.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

std::vector<CandidateScore> ScoreCandidates(const Model& model, const Example& context,
                                            absl::Span<const Example> candidates) {
  const FeatureHasher& hasher = model.hasher();
  const LossType loss = model.config().loss;
  thread_local HashedContext hashed_context;
  thread_local std::vector<HashedFeature> part;
  hasher.HashContext(context, &hashed_context);
  const DenseBlock* block = model.dense_block();
  const double context_margin =
      model.Margin(hashed_context.features) + (block ? block->MarginOf(context) : 0.0);
  std::vector<CandidateScore> scores;
  scores.reserve(candidates.size());
  for (const Example& candidate : candidates) {
    hasher.HashCandidate(hashed_context, candidate, &part);
    const double margin =
        context_margin + model.Margin(part) + (block ? block->MarginOf(candidate) : 0.0);
    scores.push_back({Link(loss, margin), margin});
  }
  return scores;
}

absl::Status CheckDenseValues(const Model& model, const Example* context,
                              std::string_view context_field, const Example& example,
                              std::string_view field) {
  if (const DenseBlock* block = model.dense_block(); block != nullptr) {
    return block->Check(context, context_field, example, field);
  }
  for (const auto& [e, name] : {std::pair{context, context_field}, std::pair{&example, field}}) {
    if (e != nullptr && !e->dense.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(std::string(name), ".dense has ", e->dense.size(), " entries; model \"",
                       model.config().name, "\" declares no dense namespaces"));
    }
  }
  return absl::OkStatus();
}

std::vector<ScoredExample> LearnBatch(Model& model, absl::Span<const TrainingExample> batch) {
  const FeatureHasher& hasher = model.hasher();
  thread_local HashedContext hashed_context;
  thread_local std::vector<HashedFeature> features;
  const Example* hashed_for = nullptr;  // context whose hash is in hashed_context
  DenseBlock* block = model.dense_block();
  thread_local Eigen::VectorXd dense;
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
    const bool has_dense = block != nullptr && block->Assemble(e.context, *e.example, &dense);
    const double margin =
        model.LearnWithDense(features, has_dense ? &dense : nullptr, e.label, e.importance);
    scored.push_back({ToFiniteFloat(margin), e.label, e.importance});
  }
  return scored;
}

}  // namespace clickd
