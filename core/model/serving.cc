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
  // The model or one of its variants has factors (the champion may).
  const bool factored = !FactorizationFields(model.config()).empty();
  for (const Example& candidate : candidates) {
    hasher.HashCandidate(hashed_context, candidate, &part);
    double margin;
    if (factored) {
      // The pairwise terms are not additive: the context and the candidate
      // are scored together (Model::SharedContextMargins).
      const absl::Span<const HashedFeature> lists[2] = {hashed_context.features, part};
      double sparse[2];
      model.SharedContextMargins(lists, sparse);
      margin = sparse[0] + (block ? block->MarginOf(context) : 0.0) + sparse[1] +
               (block ? block->MarginOf(candidate) : 0.0);
    } else {
      margin = context_margin + model.Margin(part) + (block ? block->MarginOf(candidate) : 0.0);
    }
    scores.push_back({Link(loss, margin), margin});
  }
  return scores;
}

void HashedCandidates::Clear() {
  context.features.clear();
  features.clear();
  ends.clear();
  dense.clear();
}

std::vector<CandidateScore> ScoreCandidates(const Model& model, const HashedCandidates& hashed) {
  const size_t n = hashed.ends.size();
  thread_local std::vector<absl::Span<const HashedFeature>> lists;
  thread_local std::vector<double> margins;
  lists.clear();
  lists.push_back(hashed.context.features);
  size_t begin = 0;
  for (size_t end : hashed.ends) {
    lists.emplace_back(hashed.features.data() + begin, end - begin);
    begin = end;
  }
  margins.resize(n + 1);
  // Margins for a linear model (additive); with factors, each candidate's
  // margin also holds its pairwise terms with the context.
  model.SharedContextMargins(lists, absl::MakeSpan(margins));
  // The same expressions as the Example form, so that the sums round alike.
  const DenseBlock* block = model.dense_block();
  auto dense_margin = [&](size_t k) {
    return hashed.dense.empty() ? 0.0 : block->MarginOf(hashed.dense[k]);
  };
  const double context_margin = margins[0] + (block ? dense_margin(0) : 0.0);
  const LossType loss = model.config().loss;
  std::vector<CandidateScore> scores;
  scores.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const double margin = context_margin + margins[1 + i] + (block ? dense_margin(1 + i) : 0.0);
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

void HashBatch(const Model& model, absl::Span<const TrainingExample> batch, HashedBatch* out) {
  const FeatureHasher& hasher = model.hasher();
  thread_local HashedContext hashed_context;
  thread_local std::vector<HashedFeature> features;
  const Example* hashed_for = nullptr;  // context whose hash is in hashed_context
  const DenseBlock* block = model.dense_block();
  out->features.clear();
  out->ends.clear();
  out->has_dense.clear();
  if (block != nullptr) out->dense.resize(batch.size());
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
    out->features.insert(out->features.end(), features.begin(), features.end());
    out->ends.push_back(out->features.size());
    const size_t i = out->has_dense.size();
    out->has_dense.push_back(block != nullptr &&
                             block->Assemble(e.context, *e.example, &out->dense[i]));
  }
}

std::vector<ScoredExample> LearnHashedBatch(Model& model, absl::Span<const TrainingExample> batch,
                                            const HashedBatch& hashed) {
  std::vector<ScoredExample> scored;
  scored.reserve(batch.size());
  const absl::Span<const HashedFeature> all(hashed.features);
  size_t begin = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    const TrainingExample& e = batch[i];
    const absl::Span<const HashedFeature> features = all.subspan(begin, hashed.ends[i] - begin);
    begin = hashed.ends[i];
    const double margin = model.LearnWithDense(
        features, hashed.has_dense[i] ? &hashed.dense[i] : nullptr, e.label, e.importance);
    scored.push_back({ToFiniteFloat(margin), e.label, e.importance});
  }
  return scored;
}

void ReleaseIfLarge(HashedBatch* batch) {
  constexpr size_t kKeptFeatures = size_t{1} << 18;  // 4 MiB of features
  size_t dense_values = 0;
  for (const Eigen::VectorXd& x : batch->dense) dense_values += static_cast<size_t>(x.size());
  if (batch->features.capacity() > kKeptFeatures || batch->ends.capacity() > kKeptFeatures ||
      dense_values > kKeptFeatures) {
    *batch = HashedBatch();
  }
}

std::vector<ScoredExample> LearnBatch(Model& model, absl::Span<const TrainingExample> batch) {
  thread_local HashedBatch hashed;
  HashBatch(model, batch, &hashed);
  std::vector<ScoredExample> scored = LearnHashedBatch(model, batch, hashed);
  ReleaseIfLarge(&hashed);
  return scored;
}

}  // namespace clickd
