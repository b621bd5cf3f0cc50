// The synthetic, deterministic requests of `clickctl loadgen`.
//
// Every example has one namespace: "user" for a Predict context (features
// named "u<j>=<v>"), "ad" for a candidate or a learned example ("a<j>=<v>").
// Feature j is a categorical field whose value v is drawn from a Zipf-like
// vocabulary (P(v) proportional to 1 / v^1.1 over 10,000 values), as in
// click logs: a few values are very common, most are rare. So a model that
// has learned from one loadgen run holds real coordinates for the popular
// features of the next, and Predict looks up trained weights, not just
// misses. Names (or, with feature_ids, ids) are unique within an example.
//
// Request i depends only on (seed, i), through a SplitMix64 generator and a
// fixed inverse-CDF table: the same seed gives byte-identical requests on
// every platform and in every order.
//
// Thread safety: immutable after construction; safe for concurrent use.
#ifndef CLICKD_CLIENT_CLICKCTL_LOADGEN_REQUESTS_H_
#define CLICKD_CLIENT_CLICKCTL_LOADGEN_REQUESTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"

namespace clickd {

// How the requests carry their features (clickd.v1.Namespace, docs/api.md
// "Wire forms"): one Feature message each, packed names or ids, or packed
// keys hashed here with the model's seed (client/clickd_client.h
// KeyHasher). The features are the same in every form.
enum class WireForm { kFeatures, kPacked, kKeys };

// "features", "packed" or "keys"; InvalidArgument otherwise.
absl::StatusOr<WireForm> ParseWireForm(const std::string& text);
const char* WireFormName(WireForm form);

struct RequestShape {
  int context_features = 0;  // Predict context / Update impression context; 0: none
  int candidates = 1;        // Predict candidates, or examples per Update request
  int candidate_features = 40;
  // Send each feature as a pre-hashed 64-bit id (field j and value v packed
  // as j * 2^32 + v) instead of its name "a<j>=<v>".
  bool feature_ids = false;
  WireForm wire = WireForm::kFeatures;
  uint64_t hashing_seed = 0;  // the model's, for WireForm::kKeys
  // Predict: ask the server to log every candidate as an impression
  // (docs/feedback.md), to measure what that costs.
  bool log_impressions = false;
};

class SyntheticRequests {
 public:
  static constexpr int kVocabulary = 10'000;
  static constexpr double kZipfExponent = 1.1;
  // Labels are 1 with this probability (a click-through rate).
  static constexpr double kPositiveRate = 0.1;

  SyntheticRequests(RequestShape shape, uint64_t seed);

  // A Predict with shape.context_features context features and
  // shape.candidates candidates.
  v1::PredictRequest Predict(const std::string& model, uint64_t i) const;

  // An Update of shape.candidates labeled examples (0/1 labels): one
  // impression sharing a context when shape.context_features > 0, otherwise
  // flat examples.
  v1::UpdateRequest Update(const std::string& model, uint64_t i) const;

  // The Zipf value (1..kVocabulary) that uniform u in [0, 1) maps to.
  int ZipfValue(double u) const;

 private:
  class Rng;
  void FillExample(Rng& rng, const char* ns, char prefix, int features, v1::Example* out) const;

  RequestShape shape_;
  uint64_t seed_;
  std::vector<double> cdf_;  // cdf_[v - 1] = P(value <= v)
};

// Requests [0, count) made by `make`, e.g. a pool that a load loop cycles
// through so that building requests stays out of the timed path.
template <typename Request, typename Make>
std::vector<Request> MakePool(uint64_t count, Make&& make) {
  std::vector<Request> pool;
  pool.reserve(count);
  for (uint64_t i = 0; i < count; ++i) pool.push_back(make(i));
  return pool;
}

// A pool size that keeps about 2^20 features in memory: between 1 and 1024
// requests of `features_per_request`.
uint64_t PoolSize(uint64_t features_per_request);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_LOADGEN_REQUESTS_H_
