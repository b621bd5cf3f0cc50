// A PredictRequest checked and hashed for a model straight from the parsed
// message: the features of its context and candidates go from the
// request's strings and ids into the model's hashed features
// (core/features/hasher.h), with no Example and no copied name in between.
//
// The checks are those of wire/example_proto.h's ToExample for the context and
// each candidate, then CheckDenseValues (core/model/serving.h) for each
// candidate with the context, in the same order, with the same codes and
// the same messages (e.g. "candidates[3].namespaces[0].features[2].value
// is nan; must be finite"); a field path is built only for an error. The
// request's cost (server/request_cost.h) is the caller's to check: before,
// or during the walk from what HashingProgress reports.
//
// Pure function; thread-compatible (the output belongs to the caller).
#ifndef CLICKD_WIRE_PREDICT_REQUEST_H_
#define CLICKD_WIRE_PREDICT_REQUEST_H_

#include "absl/status/status.h"
#include "clickd/v1/clickd.pb.h"
#include "core/model/model.h"
#include "core/model/serving.h"
#include "wire/example_proto.h"

namespace clickd {

// What HashPredictRequest tells its caller as it walks the request, so that
// a caller can count the request's cost from the same walk
// (server/predict_scoring.cc): for the context, then for each candidate
// once it passed its checks, the features its namespaces yielded (the
// non-zero ones, before crosses, the bias and merging) and its dense
// values. An error stops the walk and is what HashPredictRequest returns.
class HashingProgress {
 public:
  virtual absl::Status Context(uint64_t features, uint64_t dense_values) = 0;
  virtual absl::Status Candidate(int index, uint64_t features, uint64_t dense_values) = 0;

 protected:
  ~HashingProgress() = default;
};

// Checks the request's context and candidates and hashes them for `model`
// into *out (cleared first): what ScoreCandidates(model, hashed) scores as
// ScoreCandidates(model, context, candidates) scores the converted
// Examples. Dense values, which are rare, are copied into out->dense.
// `progress`, if set, hears of each example as above.
absl::Status HashPredictRequest(const v1::PredictRequest& request, const Model& model,
                                const ExampleLimits& limits, HashedCandidates* out,
                                HashingProgress* progress = nullptr);

}  // namespace clickd

#endif  // CLICKD_WIRE_PREDICT_REQUEST_H_
