#include "server/predict_scoring.h"

#include <optional>

#include "absl/strings/str_cat.h"
#include "core/features/feature_count.h"
#include "server/predict_extras.h"
#include "server/request_cost.h"
#include "wire/predict_request.h"

namespace clickd {
namespace {

// A thread keeps its hashing buffers between requests up to this many
// hashed features (1 MiB).
constexpr size_t kKeptHashedFeatures = size_t{1} << 16;

// Counts a Predict's cost from HashPredictRequest's walk, for a model
// without crosses: there a candidate's cost with the context is the
// features its hashing collected (each costs one), its dense values and
// the context's cost, which is what CountPredictCost counts from the
// message. The first candidate over a limit stops the walk.
class CountingProgress final : public HashingProgress {
 public:
  CountingProgress(const HashingConfig& hashing, const Limits& limits)
      : bias_(hashing.bias ? 1 : 0), limits_(limits) {}

  absl::Status Context(uint64_t features, uint64_t dense_values) override {
    check_.emplace(SaturatingAdd(SaturatingAdd(bias_, features), dense_values), limits_);
    return absl::OkStatus();
  }
  absl::Status Candidate(int index, uint64_t features, uint64_t dense_values) override {
    const uint64_t with_context =
        SaturatingAdd(check_->context_cost(), SaturatingAdd(features, dense_values));
    return check_->Add(index, with_context) ? absl::OkStatus() : check_->cost().status;
  }

  // The cost error the walk stopped at, or OK.
  absl::Status status() const { return check_ ? check_->cost().status : absl::OkStatus(); }

 private:
  const uint64_t bias_;
  const Limits& limits_;
  std::optional<PredictCostCheck> check_;
};

}  // namespace

absl::Status PlanPredict(const ServedModel& served, const v1::PredictRequest& request,
                         const Limits& limits, const RequestCost* counted, HashedCandidates* hashed,
                         ScoringModel* scorer) {
  const size_t n = request.candidates_size();
  if (n == 0) return absl::InvalidArgumentError("candidates is empty; Predict needs at least one");
  if (n > limits.max_candidates) {
    return absl::ResourceExhaustedError(
        absl::StrCat("candidates has ", n, " entries; the limit is ", limits.max_candidates));
  }
  const Model& model = served.model();
  const HashingConfig& hashing = model.config().hashing;
  // The request is checked in this order: its cost, its extras, impression
  // logging, the variant, then its fields. Where nobody counted its cost
  // yet (the embedded replica) and the model has no crosses, its cost is
  // counted from the hashing walk instead of a walk of its own: a cost
  // error stops that walk where the count would have stopped; a bad field
  // stops it early, and then the count is made whole, as a cost error
  // after it still comes first.
  const bool count_while_hashing = counted == nullptr && hashing.interactions.empty();
  absl::Status hashed_status;
  if (count_while_hashing) {
    CountingProgress progress(hashing, limits);
    hashed_status = HashPredictRequest(request, model, limits, hashed, &progress);
    if (!progress.status().ok()) return progress.status();
    if (!hashed_status.ok()) {
      const RequestCost cost = CountPredictCost(hashing, request, limits);
      if (!cost.status.ok()) return cost.status;
    }
  } else {
    const RequestCost cost =
        counted != nullptr ? *counted : CountPredictCost(hashing, request, limits);
    if (!cost.status.ok()) return cost.status;
  }
  if (absl::Status s = CheckPredictExtras(request, limits); !s.ok()) return s;
  if (request.log_impressions() && served.feedback() == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("log_impressions: ", NoFeedbackLoopError(request.model()).message()));
  }
  // A model with variants scores with its champion, or the variant named.
  absl::StatusOr<ScoringModel> chosen = ModelForVariant(model, request.variant());
  if (!chosen.ok()) return chosen.status();
  *scorer = *chosen;
  // Checked and hashed straight from the request's fields: no Example, no
  // field path unless there is an error (wire/predict_request.h).
  if (!count_while_hashing) hashed_status = HashPredictRequest(request, model, limits, hashed);
  if (!hashed_status.ok()) return hashed_status;
  return CheckExplanationSize(request, *hashed, limits);
}

void AnswerPredict(ServedModel& served, const ScoringModel& scorer,
                   const v1::PredictRequest& request, const HashedCandidates& hashed,
                   absl::Span<const CandidateScore> scores, uint64_t model_version,
                   uint64_t first_impression, v1::PredictResponse* response) {
  response->set_model_version(model_version);
  response->set_request_id(request.request_id());
  if (!scorer.variant.empty()) response->set_variant(std::string(scorer.variant));
  response->mutable_predictions()->Reserve(static_cast<int>(scores.size()));
  for (size_t i = 0; i < scores.size(); ++i) {
    v1::Prediction* p = response->add_predictions();
    p->set_prediction(scores[i].prediction);
    p->set_margin(scores[i].margin);
    if (request.log_impressions()) p->set_impression_id(first_impression + i);
  }
  AddPredictExtras(served, *scorer.model, request, hashed, scores, response);
  served.RecordPredictions(scores.size());
}

void ReleaseLargeHashBuffers(HashedCandidates* hashed) {
  if (hashed->features.capacity() + hashed->context.features.capacity() > kKeptHashedFeatures) {
    *hashed = HashedCandidates();
  }
}

}  // namespace clickd
