// What a Predict may ask for beside each candidate's score: the
// uncertainty score, an explanation (the top contributing features) and,
// for a model configured for it, the calibrated probability
// (docs/feedback.md). Computed after scoring, from the same hashed
// features, so that a request that asks for none of them pays nothing.
#ifndef CLICKD_SERVER_PREDICT_EXTRAS_H_
#define CLICKD_SERVER_PREDICT_EXTRAS_H_

#include <vector>

#include "absl/status/status.h"
#include "clickd/v1/clickd.pb.h"
#include "core/model/serving.h"
#include "core/serving/served_model.h"
#include "server/limits.h"

namespace clickd {

// InvalidArgument when explain_top_k is over the limit.
absl::Status CheckPredictExtras(const v1::PredictRequest& request, const Limits& limits);

// ResourceExhausted, naming explain_top_k and the limit, when the
// explanations the request asks for could make a response over
// --max_message_bytes; `hashed` is the request's, hashed. Checked before
// any is built: a contribution repeats a context feature's name for every
// candidate, so a small request can ask for a response many times larger.
// Also ResourceExhausted when, on a factorization model, the pairs of
// field features to rank for the explanations exceed kMaxExplainedPairs.
inline constexpr uint64_t kMaxExplainedPairs = uint64_t{1} << 20;
absl::Status CheckExplanationSize(const v1::PredictRequest& request, const HashedCandidates& hashed,
                                  const Limits& limits);

// Fills the extras the request asks for into response->predictions (one
// per candidate, already added). `scorer` is the model (or variant) that
// scored them.
void AddPredictExtras(const ServedModel& served, const Model& scorer,
                      const v1::PredictRequest& request, const HashedCandidates& hashed,
                      absl::Span<const CandidateScore> scores, v1::PredictResponse* response);

}  // namespace clickd

#endif  // CLICKD_SERVER_PREDICT_EXTRAS_H_
