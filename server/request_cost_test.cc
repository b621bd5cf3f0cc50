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
  EXPECT_TRUE(CheckPredictCost(UserTimesAd(), request, limits).ok());
  AddNamespace(request.add_candidates(), "ad", 10);  // 10 + 10 + 100 + 1 = 121
  const absl::Status s = CheckPredictCost(UserTimesAd(), request, limits);
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
  EXPECT_TRUE(CheckPredictCost(UserTimesAd(), request, limits).ok());
  limits.max_features_per_request -= 1;
  const absl::Status s = CheckPredictCost(UserTimesAd(), request, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("308 features after interactions in total; the limit is 307"),
            std::string::npos)
      << s;
}

// PredictFeatureTotal counts what the per-request limit counts (the total
// at which CheckPredictCost starts to refuse), and stops once past its cap.
TEST(RequestCost, PredictFeatureTotalIsThePerRequestCount) {
  v1::PredictRequest request;
  AddNamespace(request.mutable_context(), "user", 10);
  for (int i = 0; i < 3; ++i) AddNamespace(request.add_candidates(), "ad", 9);
  const uint64_t total = PredictFeatureTotal(UserTimesAd(), request, 1'000'000);
  EXPECT_EQ(total, 11u + 3 * 99);
  Limits limits;
  limits.max_features_per_request = total;
  EXPECT_TRUE(CheckPredictCost(UserTimesAd(), request, limits).ok());
  limits.max_features_per_request = total - 1;
  EXPECT_FALSE(CheckPredictCost(UserTimesAd(), request, limits).ok());
  // Counting stops at the first total past the cap: the rest not counted.
  EXPECT_EQ(PredictFeatureTotal(UserTimesAd(), request, 100), 11u + 99);
  EXPECT_EQ(PredictFeatureTotal(UserTimesAd(), request, 110), 11u + 2 * 99);
  EXPECT_EQ(PredictFeatureTotal(UserTimesAd(), request, 209), 11u + 3 * 99);
  // No candidates: the context alone (Predict refuses it later).
  EXPECT_EQ(PredictFeatureTotal(UserTimesAd(), v1::PredictRequest(), 1'000'000), 1u);
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
  EXPECT_TRUE(CheckUpdateCost(UserTimesAd(), request, limits).ok());
  limits.max_features_per_request = 22;
  EXPECT_EQ(CheckUpdateCost(UserTimesAd(), request, limits).code(),
            absl::StatusCode::kResourceExhausted);
  limits.max_features_per_request = 23;
  limits.max_features_after_interactions = 16;
  const absl::Status s = CheckUpdateCost(UserTimesAd(), request, limits);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("examples[0].example yields 17 features"), std::string::npos) << s;
}

// UpdateFeatureTotal counts what the per-request limit counts, examples
// and impressions alike, and stops once past its cap.
TEST(RequestCost, UpdateFeatureTotalIsThePerRequestCount) {
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
  const uint64_t total = UpdateFeatureTotal(UserTimesAd(), request, 1'000'000);
  EXPECT_EQ(total, 2u * 16 + 3 * 9);
  Limits limits;
  limits.max_features_per_request = total;
  EXPECT_TRUE(CheckUpdateCost(UserTimesAd(), request, limits).ok());
  limits.max_features_per_request = total - 1;
  EXPECT_FALSE(CheckUpdateCost(UserTimesAd(), request, limits).ok());
  // Counting stops at the first total past the cap.
  EXPECT_EQ(UpdateFeatureTotal(UserTimesAd(), request, 15), 16u);
  EXPECT_EQ(UpdateFeatureTotal(UserTimesAd(), request, 32), 32u + 9);
  EXPECT_EQ(UpdateFeatureTotal(UserTimesAd(), request, 41), 32u + 2 * 9);
  EXPECT_EQ(UpdateFeatureTotal(UserTimesAd(), v1::UpdateRequest(), 10), 0u);
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
  EXPECT_TRUE(CheckPredictCost(UserTimesAd(), request, limits).ok());
  limits.max_features_after_interactions = 23;
  EXPECT_EQ(CheckPredictCost(UserTimesAd(), request, limits).message(),
            "candidates[0] (with the context) yields 24 features after interactions; the limit "
            "is 23 (max_features_after_interactions)");

  v1::UpdateRequest update;
  v1::Namespace* big = update.add_examples()->mutable_example()->add_namespaces();
  big->set_name("ad");
  big->add_keys(1);
  for (int i = 0; i < 1'000'000; ++i) big->add_key_values(1);
  const absl::Status s = CheckUpdateCost(UserTimesAd(), update, Limits{});
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(),
            "examples[0].example yields 1000001 features after interactions; the limit is 65536 "
            "(max_features_after_interactions)");
}

}  // namespace
}  // namespace clickd
