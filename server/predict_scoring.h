// Predict without a service: checks a PredictRequest against the limits,
// hashes it for a model (and the variant it names), scores it and fills the
// PredictResponse. ClickdService (service.cc) answers Predict with it over
// gRPC and the embedded replica (embedded/embedded_replica.h) in the
// caller's process, so both give the same answer, bit for bit, for the same
// model state.
//
// Thread safety: the functions are; `hashed` is the caller's.
#ifndef CLICKD_SERVER_PREDICT_SCORING_H_
#define CLICKD_SERVER_PREDICT_SCORING_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "clickd/v1/clickd.pb.h"
#include "core/model/serving.h"
#include "core/model/variant_model.h"
#include "core/serving/served_model.h"
#include "server/limits.h"
#include "server/request_cost.h"

namespace clickd {

// Checks `request` for `served` (candidate count, cost, extras, whether it
// may log impressions, the variant) and hashes it into *hashed. On error,
// the status names the field and the limit; nothing is scored. `counted`,
// if set, is the request's cost as CountPredictCost counted it for this
// model (where the call was placed), so that it is not counted again.
absl::Status PlanPredict(const ServedModel& served, const v1::PredictRequest& request,
                         const Limits& limits, const RequestCost* counted, HashedCandidates* hashed,
                         ScoringModel* scorer);

// Fills *response for a planned request whose candidates scored `scores`
// at `model_version` (and, if it logged impressions, got ids from
// `first_impression` on), and counts the predictions.
void AnswerPredict(ServedModel& served, const ScoringModel& scorer,
                   const v1::PredictRequest& request, const HashedCandidates& hashed,
                   absl::Span<const CandidateScore> scores, uint64_t model_version,
                   uint64_t first_impression, v1::PredictResponse* response);

// Keeps a thread's reused hashing buffers small after a large request.
void ReleaseLargeHashBuffers(HashedCandidates* hashed);

}  // namespace clickd

#endif  // CLICKD_SERVER_PREDICT_SCORING_H_
