#include "server/predict_scoring.h"

#include "absl/strings/str_cat.h"
#include "server/predict_extras.h"
#include "server/request_cost.h"
#include "wire/predict_request.h"

namespace clickd {
namespace {

// A thread keeps its hashing buffers between requests up to this many
// hashed features (1 MiB).
constexpr size_t kKeptHashedFeatures = size_t{1} << 16;

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
  const RequestCost cost =
      counted != nullptr ? *counted : CountPredictCost(model.config().hashing, request, limits);
  if (!cost.status.ok()) return cost.status;
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
  if (absl::Status s = HashPredictRequest(request, model, limits, hashed); !s.ok()) return s;
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
