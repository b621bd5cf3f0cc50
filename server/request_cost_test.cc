#include "server/request_cost.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

void AddNamespace(v1::Example* example, const std::string& name, int features) {
  v1::Namespace* ns = example->add_namespaces();
  ns->set_name(name);
  for (int i = 0; i < features; ++i) ns->add_features()->set_name(absl::StrCat("f", i));
}

HashingConfig UserTimesAd() {
  HashingConfig hashing;
  hashing.interactions = {{"user", "ad"}};
  return hashing;
}

// A context of `user` features and candidates of `ad` features each yield
// user + ad + user * ad + 1 (bias) features.
TEST(RequestCost, PredictChecksEachCandidateWithTheContext) {
  v1::PredictRequest request;
  AddNamespace(request.mutable_context(), "user", 10);
  AddNamespace(request.add_candidates(), "ad", 9);  // 10 + 9 + 90 + 1 = 110
  Limits limits;
  limits.max_features_after_interactions = 110;
  EXPECT_TRUE(CountPredictCost(UserTimesAd(), request, limits).status.ok());
  AddNamespace(request.add_candidates(), "ad", 10);  // 10 + 10 + 100 + 1 = 121
  const absl::Status s = CountPredictCost(UserTimesAd(), request, limits).status;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "candidates[1] (with the context) yields 121 features after interactions; the limit "
            "is 110 (max_features_after_interactions)");
}

TEST(RequestCost, PredictCountsTheContextOnceInTheRequestTotal) {
  v1::PredictRequest request;
  AddNamespace(request.mutable_context(), "user", 10);
  for (int i = 0; i < 3; ++i) AddNamespace(request.add_candidates(), "ad", 9);
  // Context: 10 + 1; each candidate adds 9 + 90.
  Limits limits;
  limits.max_features_per_request = 11 + 3 * 99;
  EXPECT_TRUE(CountPredictCost(UserTimesAd(), request, limits).status.ok());
  limits.max_features_per_request -= 1;
  const absl::Status s = CountPredictCost(UserTimesAd(), request, limits).status;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("308 features after interactions in total; the limit is 307"),
            std::string::npos)
      << s;
}

// CountPredictCost's total is what the per-request limit counts (the total
// at which it starts to refuse); counting stops at the first total past it.
TEST(RequestCost, PredictTotalIsThePerRequestCount) {
  v1::PredictRequest request;
  AddNamespace(request.mutable_context(), "user", 10);
  for (int i = 0; i < 3; ++i) AddNamespace(request.add_candidates(), "ad", 9);
  Limits limits;
  const RequestCost cost = CountPredictCost(UserTimesAd(), request, limits);
  ASSERT_TRUE(cost.status.ok()) << cost.status;
  EXPECT_EQ(cost.features, 11u + 3 * 99);
  limits.max_features_per_request = cost.features;
  EXPECT_TRUE(CountPredictCost(UserTimesAd(), request, limits).status.ok());
  limits.max_features_per_request = cost.features - 1;
  EXPECT_FALSE(CountPredictCost(UserTimesAd(), request, limits).status.ok());
  // Counting stops at the first total past the limit: the rest not counted.
  limits.max_features_per_request = 100;
  EXPECT_EQ(CountPredictCost(UserTimesAd(), request, limits).features, 11u + 99);
  limits.max_features_per_request = 110;
  EXPECT_EQ(CountPredictCost(UserTimesAd(), request, limits).features, 11u + 2 * 99);
  // No candidates: the context alone (Predict refuses it later).
  EXPECT_EQ(CountPredictCost(UserTimesAd(), v1::PredictRequest(), Limits{}).features, 1u);
}

TEST(RequestCost, UpdateCountsEveryExampleAndDenseValues) {
  v1::UpdateRequest request;
  v1::Example* plain = request.add_examples()->mutable_example();
  AddNamespace(plain, "user", 3);
  AddNamespace(plain, "ad", 3);          // 3 + 3 + 9 + 1 = 16
  plain->add_dense()->add_values(0.5f);  // + 1
  v1::Impression* imp = request.add_impressions();
  AddNamespace(imp->mutable_context(), "user", 2);
  AddNamespace(imp->add_candidates()->mutable_example(), "ad", 2);  // 2 + 2 + 4 + 1 = 9
  // A zero-valued feature is dropped by hashing and not counted.
  imp->mutable_candidates(0)
      ->mutable_example()
      ->mutable_namespaces(0)
      ->mutable_features(0)
      ->set_value(0.0f);  // now 2 + 1 + 2 + 1 = 6
  Limits limits;
  limits.max_features_after_interactions = 17;
  limits.max_features_per_request = 23;
  EXPECT_TRUE(CountUpdateCost(UserTimesAd(), request, limits).status.ok());
  limits.max_features_per_request = 22;
  EXPECT_EQ(CountUpdateCost(UserTimesAd(), request, limits).status.code(),
            absl::StatusCode::kResourceExhausted);
  limits.max_features_per_request = 23;
  limits.max_features_after_interactions = 16;
  const absl::Status s = CountUpdateCost(UserTimesAd(), request, limits).status;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("examples[0].example yields 17 features"), std::string::npos) << s;
}

// CountUpdateCost's total is what the per-request limit counts, examples
// and impressions alike; counting stops at the first total past it.
TEST(RequestCost, UpdateTotalIsThePerRequestCount) {
  v1::UpdateRequest request;
  for (int i = 0; i < 2; ++i) {
    v1::Example* plain = request.add_examples()->mutable_example();
    AddNamespace(plain, "user", 3);
    AddNamespace(plain, "ad", 3);  // 3 + 3 + 9 + 1 = 16 each
  }
  v1::Impression* imp = request.add_impressions();
  AddNamespace(imp->mutable_context(), "user", 2);
  for (int i = 0; i < 3; ++i) {
    AddNamespace(imp->add_candidates()->mutable_example(), "ad", 2);  // 2 + 2 + 4 + 1 = 9 each
  }
  Limits limits;
  const RequestCost cost = CountUpdateCost(UserTimesAd(), request, limits);
  ASSERT_TRUE(cost.status.ok()) << cost.status;
  EXPECT_EQ(cost.features, 2u * 16 + 3 * 9);
  limits.max_features_per_request = cost.features;
  EXPECT_TRUE(CountUpdateCost(UserTimesAd(), request, limits).status.ok());
  limits.max_features_per_request = cost.features - 1;
  EXPECT_FALSE(CountUpdateCost(UserTimesAd(), request, limits).status.ok());
  // Counting stops at the first total past the limit.
  limits.max_features_per_request = 15;
  EXPECT_EQ(CountUpdateCost(UserTimesAd(), request, limits).features, 16u);
  limits.max_features_per_request = 32;
  EXPECT_EQ(CountUpdateCost(UserTimesAd(), request, limits).features, 32u + 9);
  EXPECT_EQ(CountUpdateCost(UserTimesAd(), v1::UpdateRequest(), Limits{}).features, 0u);
}

// Packed features count as Feature messages do (a value of 0 drops one), so
// a request of a million packed values is refused here, before any of them
// is read, with the field and the limit named.
TEST(RequestCost, PackedFeaturesCountInEveryForm) {
  v1::PredictRequest request;
  v1::Namespace* user = request.mutable_context()->add_namespaces();
  user->set_name("user");
  for (int i = 0; i < 4; ++i) user->add_names(absl::StrCat("u", i));
  user->add_ids(1);
  user->add_id_values(0);  // dropped
  user->add_keys(2);
  v1::Namespace* ad = request.add_candidates()->add_namespaces();
  ad->set_name("ad");
  ad->add_ids(7);
  ad->add_keys(8);
  ad->add_keys(9);
  // 5 + 3 + 15 + 1 = 24.
  Limits limits;
  limits.max_features_after_interactions = 24;
  EXPECT_TRUE(CountPredictCost(UserTimesAd(), request, limits).status.ok());
  limits.max_features_after_interactions = 23;
  EXPECT_EQ(CountPredictCost(UserTimesAd(), request, limits).status.message(),
            "candidates[0] (with the context) yields 24 features after interactions; the limit "
            "is 23 (max_features_after_interactions)");

  v1::UpdateRequest update;
  v1::Namespace* big = update.add_examples()->mutable_example()->add_namespaces();
  big->set_name("ad");
  big->add_keys(1);
  for (int i = 0; i < 1'000'000; ++i) big->add_key_values(1);
  const absl::Status s = CountUpdateCost(UserTimesAd(), update, Limits{}).status;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "examples[0].example yields 1000001 features after interactions; the limit is 65536 "
            "(max_features_after_interactions)");
}

// Without crosses the count is a plain sum (counted without building the
// namespaces' sizes by name): every form, a dropped zero, dense values and
// the bias, with the same limits and messages as with crosses.
TEST(RequestCost, WithoutCrossesTheCountIsTheSumOfEveryForm) {
  const HashingConfig plain;  // the bias, no interactions
  v1::PredictRequest request;
  AddNamespace(request.mutable_context(), "user", 3);
  request.mutable_context()->add_dense()->add_values(0.5f);  // + 1
  v1::Namespace* ad = request.add_candidates()->add_namespaces();
  ad->set_name("ad");
  ad->add_names("a");
  ad->add_ids(7);
  ad->add_id_values(0);  // dropped
  ad->add_keys(8);
  ad->add_keys(9);
  AddNamespace(request.mutable_candidates(0), "site", 2);        // 1 + 2 + 2 = 5 own
  AddNamespace(request.add_candidates(), "ad", 4);               // 4 own
  request.mutable_candidates(1)->add_dense()->add_values(1.0f);  // + 1
  Limits limits;
  const RequestCost cost = CountPredictCost(plain, request, limits);
  ASSERT_TRUE(cost.status.ok()) << cost.status;
  EXPECT_EQ(cost.features, (3u + 1 + 1) + 5 + (4 + 1));  // the context once, then each candidate
  limits.max_features_after_interactions = 10;           // candidates[1] with the context: 5 + 5
  EXPECT_TRUE(CountPredictCost(plain, request, limits).status.ok());
  limits.max_features_after_interactions = 9;
  EXPECT_EQ(CountPredictCost(plain, request, limits).status.message(),
            "candidates[0] (with the context) yields 10 features after interactions; the limit "
            "is 9 (max_features_after_interactions)");

  v1::UpdateRequest update;
  *update.add_examples()->mutable_example() = request.candidates(0);
  v1::Impression* imp = update.add_impressions();
  *imp->mutable_context() = request.context();
  *imp->add_candidates()->mutable_example() = request.candidates(1);
  const RequestCost update_cost = CountUpdateCost(plain, update, Limits{});
  ASSERT_TRUE(update_cost.status.ok()) << update_cost.status;
  EXPECT_EQ(update_cost.features, (5u + 1) + (5 + 5));  // an example alone has the bias too

  // Saturating, not wrapping, whatever the order of the parts.
  v1::Namespace* huge = request.mutable_candidates(1)->add_namespaces();
  huge->set_name("x");
  huge->add_keys(1);
  for (int i = 0; i < 70'000; ++i) huge->add_key_values(1);
  EXPECT_EQ(CountPredictCost(plain, request, Limits{}).status.message(),
            "candidates[1] (with the context) yields 70010 features after interactions; the "
            "limit is 65536 (max_features_after_interactions)");
}

}  // namespace
}  // namespace clickd
