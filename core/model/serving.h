// The two request paths of a served model, on core types: scoring candidates
// that share a context, and learning a batch of labeled examples. The gRPC
// service converts its messages to these and calls them; nothing here knows
// about gRPC.
//
// Thread safety: as Model: any number of concurrent calls.
#ifndef CLICKD_CORE_MODEL_SERVING_H_
#define CLICKD_CORE_MODEL_SERVING_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "core/eval/metrics.h"
#include "core/features/example.h"
#include "core/model/model.h"

namespace clickd {

struct CandidateScore {
  double prediction;  // Link(loss, margin)
  double margin;
};

// Scores each candidate together with the shared context. The context is
// hashed and its partial margin computed once, so the cost grows with
// |context| + sum |candidate| (plus the crosses the model asks for), not
// with |context| x #candidates. Dense values (checked by CheckDenseValues)
// add the dense block's margin. Scores each list with its own Model::Margin
// call: the form for tools and tests, and the reference the server's
// hashed form below is tested against (wire/predict_request_test.cc).
std::vector<CandidateScore> ScoreCandidates(const Model& model, const Example& context,
                                            absl::Span<const Example> candidates);

// A Predict's context and candidates hashed for one model, without the
// Examples (wire/predict_request.h fills one straight from a request).
struct HashedCandidates {
  HashedContext context;
  // Every candidate's own features and its crosses with the context, folded
  // and merged as FeatureHasher::HashCandidate makes them, one candidate
  // after another: candidate i's are features[ends[i - 1], ends[i]) (from 0
  // for i = 0).
  std::vector<HashedFeature> features;
  std::vector<size_t> ends;
  // Only for a request with dense values: dense[0] holds the context's,
  // dense[1 + i] candidate i's (no namespaces). Empty otherwise.
  std::vector<Example> dense;

  void Clear();
};

// Scores hashed candidates with the same bits as ScoreCandidates above
// gives for the examples they were hashed from, reading the context and
// every candidate at one round of the model (Model::Margins).
std::vector<CandidateScore> ScoreCandidates(const Model& model, const HashedCandidates& hashed);

// One example to learn: its own features plus, optionally, a shared context
// (an impression's), with a label and an importance weight.
struct TrainingExample {
  const Example* context;  // may be null
  const Example* example;
  float label;
  float importance;
};

// Checks every label against the loss (squared loss: |label| <=
// kMaxSquaredLabel) and every importance (in [0, kMaxImportance]; see
// core/optim/numeric_bounds.h) before anything is learned, so a rejected
// batch applies nothing. Errors name the failing entry with `field_of(i)`.
template <typename FieldOf>
absl::Status ValidateTrainingBatch(LossType loss, absl::Span<const TrainingExample> batch,
                                   FieldOf&& field_of);

// Checks an example's dense values (and its context's) against the model's
// dense block (core/model/dense_block.h); a model without one takes none.
// Errors name <field>.dense[i] and the limit. Call before scoring or
// learning, so that a rejected request applies nothing.
absl::Status CheckDenseValues(const Model& model, const Example* context,
                              std::string_view context_field, const Example& example,
                              std::string_view field);

// Learns the examples in order and returns each one's pre-update score (for
// progressive validation). The caller has validated the batch, dense values
// included. HashBatch + LearnHashedBatch.
std::vector<ScoredExample> LearnBatch(Model& model, absl::Span<const TrainingExample> batch);

// A batch's examples hashed as LearnBatch learns them: each example's
// features (its context's merged in) and dense vector. Hashing takes no
// lock, so a caller that serializes its learners (ServedModel, ModelJournal)
// hashes first and holds its lock only for the steps.
struct HashedBatch {
  std::vector<HashedFeature> features;  // every example's, one after another
  std::vector<size_t> ends;             // example i: features[ends[i-1], ends[i])
  std::vector<Eigen::VectorXd> dense;   // example i's if has_dense[i]
  std::vector<uint8_t> has_dense;
};
void HashBatch(const Model& model, absl::Span<const TrainingExample> batch, HashedBatch* out);

// Frees a reused HashedBatch's memory if a large request left it holding
// more than a typical one needs (thread-local batches live as long as their
// threads).
void ReleaseIfLarge(HashedBatch* batch);

// Learns `batch`, hashed by HashBatch into `hashed`, in order.
std::vector<ScoredExample> LearnHashedBatch(Model& model, absl::Span<const TrainingExample> batch,
                                            const HashedBatch& hashed);

}  // namespace clickd

#include "core/model/serving_inl.h"

#endif  // CLICKD_CORE_MODEL_SERVING_H_
