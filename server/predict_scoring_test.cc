#include "server/predict_scoring.h"

#include <gtest/gtest.h>

#include <limits>
#include <memory>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"

namespace clickd {
namespace {

// Requests with every wire form, zero and bad values (NaN, too large,
// empty names), dense values and a variant at times: what PlanPredict must
// refuse or hash alike whichever way it counts the cost.
class RandomRequests {
 public:
  explicit RandomRequests(uint32_t seed) : rng_(seed) {}

  v1::Example Example(bool context) {
    v1::Example e;
    const int namespaces = Uniform(0, 3);
    for (int n = 0; n < namespaces; ++n) {
      v1::Namespace* ns = e.add_namespaces();
      ns->set_name(std::string(1, "uapx"[Uniform(0, 3)]));
      for (int f = Uniform(0, 5); f > 0; --f) {
        v1::Feature* feature = ns->add_features();
        if (Uniform(0, 1) == 0) {
          feature->set_id(Uniform(0, 20));
        } else {
          feature->set_name(Uniform(0, 60) == 0 ? "" : absl::StrCat("f", Uniform(0, 20)));
        }
        if (Uniform(0, 1) == 0) feature->set_value(Value());
      }
      switch (Uniform(0, 4)) {
        case 0:
          for (int k = Uniform(1, 4); k > 0; --k) ns->add_keys(Uniform(0, 50));
          if (Uniform(0, 1) == 0) {
            for (int k = ns->keys_size() + (Uniform(0, 20) == 0 ? 1 : 0); k > 0; --k) {
              ns->add_key_values(Value());
            }
          }
          break;
        case 1:
          for (int k = Uniform(1, 3); k > 0; --k) ns->add_names(absl::StrCat("n", Uniform(0, 9)));
          break;
        default:
          break;
      }
    }
    if (Uniform(0, 6) == 0) {
      v1::DenseValues* d = e.add_dense();
      d->set_namespace_(context ? "emb" : "pos");
      d->add_values(1.5f);
    }
    return e;
  }

  v1::PredictRequest Request() {
    v1::PredictRequest request;
    request.set_model("m");
    if (Uniform(0, 3) > 0) *request.mutable_context() = Example(true);
    for (int i = Uniform(1, 8); i > 0; --i) *request.add_candidates() = Example(false);
    if (Uniform(0, 15) == 0)
      request.set_explain_top_k(Uniform(0, 3) == 0 ? 1000 : 2);  // over the limit of 100 at times
    if (Uniform(0, 20) == 0) request.set_variant("no_such_variant");
    return request;
  }

  int Uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  float Value() {
    static constexpr float kValues[] = {
        0.0f, -0.0f, 0.5f, -2.0f, 1.0f, 3e5f, 1e30f, std::numeric_limits<float>::quiet_NaN()};
    return kValues[Uniform(0, 7)];
  }

  std::mt19937 rng_;
};

// PlanPredict with no count given (the embedded replica's call) counts a
// model's cost without crosses from its hashing walk; with the count given
// (the server's, made where the call was placed) it does not count. Both
// must refuse with the same status, in the same order of checks, and hash
// alike: cost errors first (even one after a bad field), then the extras,
// the variant, then the fields.
TEST(PlanPredict, CountingWhileHashingAnswersAsCountingFirst) {
  for (bool bias : {true, false}) {
    ModelConfig config;
    config.name = "m";
    config.hashing.bias = bias;
    config.hashing.bits = 10;  // folding merges some keys
    ServedModel served(*CreateModel(config));
    RandomRequests random(bias ? 5 : 6);
    int refused_for_cost = 0, refused_for_fields = 0, accepted = 0;
    for (int trial = 0; trial < 4000; ++trial) {
      const v1::PredictRequest request = random.Request();
      Limits limits;
      limits.max_features_after_interactions = random.Uniform(3, 40);
      limits.max_features_per_request = random.Uniform(5, 120);
      HashedCandidates fused, counted_first;
      ScoringModel fused_scorer, counted_scorer;
      const absl::Status a =
          PlanPredict(served, request, limits, /*counted=*/nullptr, &fused, &fused_scorer);
      const RequestCost cost = CountPredictCost(config.hashing, request, limits);
      const absl::Status b = cost.status.ok() ? PlanPredict(served, request, limits, &cost,
                                                            &counted_first, &counted_scorer)
                                              : cost.status;
      ASSERT_EQ(a, b) << request.ShortDebugString();
      if (!a.ok()) {
        const bool for_cost = a.message().find("features after interactions") != std::string::npos;
        (for_cost ? refused_for_cost : refused_for_fields)++;
        continue;
      }
      ++accepted;
      EXPECT_EQ(fused.context.features, counted_first.context.features);
      EXPECT_EQ(fused.features, counted_first.features);
      EXPECT_EQ(fused.ends, counted_first.ends);
    }
    // The draw reaches every outcome often.
    EXPECT_GT(refused_for_cost, 200);
    EXPECT_GT(refused_for_fields, 200);
    EXPECT_GT(accepted, 200);
  }
}

}  // namespace
}  // namespace clickd
