// The cost of a request, known before any work starts: the features its
// examples yield after the model's interactions (core/features/
// feature_count.h), counted from the request's protos (before they are
// converted or hashed), plus their dense values. Checked against
//   Limits::max_features_after_interactions  per example (for Predict, a
//                                            candidate with the context)
//   Limits::max_features_per_request         per request: Predict's context
//                                            once plus each candidate's own
//                                            and crossed features, or every
//                                            example of an Update message
// with RESOURCE_EXHAUSTED naming the field, the count and the limit.
//
// The update log records only what these checks accepted, so replaying a
// record at restart is bounded by the limits that accepted it; replay does
// not check them again (a lowered limit must not refuse what was already
// acknowledged).
//
// Pure functions.
#ifndef CLICKD_SERVER_REQUEST_COST_H_
#define CLICKD_SERVER_REQUEST_COST_H_

#include <cstdint>

#include "absl/status/status.h"
#include "clickd/v1/clickd.pb.h"
#include "core/features/hasher.h"
#include "core/model/model_config.h"
#include "server/limits.h"

namespace clickd {

// INVALID_ARGUMENT naming the field and --max_model_fixed_bytes when
// `config` would commit more than limits.max_model_fixed_bytes at creation:
// 2 bytes per admission counter (two generations) of the model's filter
// and each variant's, and per store (the primary and each variant) a
// compact table's directories and first subtables.
absl::Status CheckModelFixedBytes(const ModelConfig& config, const Limits& limits);

absl::Status CheckPredictCost(const HashingConfig& hashing, const v1::PredictRequest& request,
                              const Limits& limits);

// The features a Predict yields after interactions in all, as the
// per-request limit counts them (the context once, each candidate's own and
// crossed features), without errors: for deciding where a request runs.
// Counting stops once the total passes `cap`, so a larger result means only
// "more than cap".
uint64_t PredictFeatureTotal(const HashingConfig& hashing, const v1::PredictRequest& request,
                             uint64_t cap);

absl::Status CheckUpdateCost(const HashingConfig& hashing, const v1::UpdateRequest& request,
                             const Limits& limits);

// The features an Update message yields after interactions in all, as the
// per-request limit counts them, without errors: for deciding where it is
// learned. Counting stops once the total passes `cap`.
uint64_t UpdateFeatureTotal(const HashingConfig& hashing, const v1::UpdateRequest& request,
                            uint64_t cap);

}  // namespace clickd

#endif  // CLICKD_SERVER_REQUEST_COST_H_
