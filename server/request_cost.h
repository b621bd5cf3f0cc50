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
#include "core/features/feature_count.h"
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

// A request's features after interactions, counted once against the
// limits, so that where the call runs and whether it may run are decided
// from one walk over its features. `features` is the per-request total
// (the Predict context once, each candidate's own and crossed features;
// every example of an Update), exact when `status` is ok. Counting stops at
// the first example or total over its limit, and `status` names it.
struct RequestCost {
  uint64_t features = 0;
  absl::Status status;
};

RequestCost CountPredictCost(const HashingConfig& hashing, const v1::PredictRequest& request,
                             const Limits& limits);

// CountPredictCost's checks, fed one candidate at a time: CountPredictCost
// feeds it the counts it makes, and PlanPredict (server/predict_scoring.h)
// the counts its hashing walk makes for a model without crosses, whose
// features cost their number. Costs are features after interactions,
// dense values included; the context's counts once.
class PredictCostCheck {
 public:
  PredictCostCheck(uint64_t context_cost, const Limits& limits)
      : limits_(limits), context_cost_(context_cost), cost_{context_cost, absl::OkStatus()} {}

  // Adds candidate `index`, whose cost with the context is `with_context`.
  // Returns false, and keeps the error in cost().status, when the candidate
  // or the request's total is over its limit; nothing is added after that.
  bool Add(int index, uint64_t with_context) {
    if (!cost_.status.ok()) return false;
    if (with_context <= limits_.max_features_after_interactions) {
      // What the candidate adds: its own and crossed features.
      const uint64_t total = SaturatingAdd(cost_.features, with_context - context_cost_);
      if (total <= limits_.max_features_per_request) {
        cost_.features = total;
        return true;
      }
    }
    return Refuse(index, with_context);
  }

  uint64_t context_cost() const { return context_cost_; }
  const RequestCost& cost() const { return cost_; }

 private:
  // Add's refusal: the error of the limit that candidate `index` passes.
  bool Refuse(int index, uint64_t with_context);

  const Limits& limits_;
  const uint64_t context_cost_;
  RequestCost cost_;
};

RequestCost CountUpdateCost(const HashingConfig& hashing, const v1::UpdateRequest& request,
                            const Limits& limits);

}  // namespace clickd

#endif  // CLICKD_SERVER_REQUEST_COST_H_
