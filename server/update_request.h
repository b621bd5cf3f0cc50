// An UpdateRequest (a unary Update or one stream message) checked in one
// place and turned into the batch core learns. The checks, in order; the
// first error is returned and nothing is learned:
//   1. limits: the request has examples; its idempotency_key is short and
//      printable ASCII; its example count and its cost (features after
//      interactions, server/request_cost.h) are within Limits;
//   2. shapes: every example and context converts (wire/example_proto.h:
//      sizes, names, feature values);
//   3. labels and importances against the model's loss
//      (ValidateTrainingBatch, core/model/serving.h);
//   4. dense values against the model's dense block (CheckDenseValues).
// Errors name the field path, e.g. "impressions[1].candidates[0].label is
// 2; ...". Core still refuses a bad batch on its own; this function is
// where the service's checks of an Update are read.
//
// Pure functions.
#ifndef CLICKD_SERVER_UPDATE_REQUEST_H_
#define CLICKD_SERVER_UPDATE_REQUEST_H_

#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/features/example.h"
#include "core/model/model.h"
#include "core/model/serving.h"
#include "server/limits.h"
#include "server/request_cost.h"

namespace clickd {

// A validated UpdateRequest: `batch` in request order (plain examples
// first, then each impression's candidates with its context). The
// TrainingExamples point into `examples` and `contexts`, so the struct is
// move-only: a moved vector keeps its elements where they are, a copied
// one would leave `batch` pointing into the original.
struct ValidatedUpdate {
  ValidatedUpdate() = default;
  ValidatedUpdate(const ValidatedUpdate&) = delete;
  ValidatedUpdate& operator=(const ValidatedUpdate&) = delete;
  ValidatedUpdate(ValidatedUpdate&&) = default;
  ValidatedUpdate& operator=(ValidatedUpdate&&) = default;

  std::vector<TrainingExample> batch;
  std::vector<Example> examples;
  std::vector<Example> contexts;  // one per impression
};

// Checks an idempotency key (Update's, Feedback's): at most
// Limits::max_idempotency_key_bytes of printable ASCII; empty is none.
absl::Status CheckIdempotencyKey(const std::string& key, const Limits& limits);

// Validates `request` for learning on `model` (see above). `counted`, if
// set, is the request's cost as CountUpdateCost counted it for this model
// (where the call was placed), so that it is not counted again.
absl::StatusOr<ValidatedUpdate> ValidateUpdateRequest(const Model& model,
                                                      const v1::UpdateRequest& request,
                                                      const Limits& limits,
                                                      const RequestCost* counted = nullptr);

}  // namespace clickd

#endif  // CLICKD_SERVER_UPDATE_REQUEST_H_
