// A field-aware factorization model through the real binaries
// (docs/factorization.md): `clickctl models create --factorization=ffm`
// makes it (and refuses a bad dim naming the field), Update learns its
// factors from impressions with a shared context, Predict scores a context
// with candidates as the merged example, and a snapshot plus a SIGKILL
// restart (snapshot with the factors section, then update-log replay) is
// the same model: equal state_digest and equal predictions.
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/restartable_server.h"
#include "tests/test_util.h"

namespace clickd {
namespace {

using ::clickd::testing::CommandResult;
using ::clickd::testing::RestartableServer;

void AddId(v1::Example* example, const std::string& ns, uint64_t id) {
  auto* n = example->add_namespaces();
  n->set_name(ns);
  n->add_features()->set_id(id);
}

// 50 impressions of batch `batch`: a user and a site in the context, 4 ad
// candidates each; the click is a latent user x ad interaction (same
// parity), which no linear weight of a user or an ad alone holds.
v1::UpdateRequest Batch(int batch) {
  v1::UpdateRequest r;
  r.set_model("ffm");
  for (int i = 0; i < 50; ++i) {
    auto* impression = r.add_impressions();
    const uint64_t user = static_cast<uint64_t>((batch * 50 + i) % 40);
    AddId(impression->mutable_context(), "user", user);
    AddId(impression->mutable_context(), "site", static_cast<uint64_t>(i % 3));
    for (int k = 0; k < 4; ++k) {
      const uint64_t ad = static_cast<uint64_t>((batch * 7 + i * 4 + k) % 30);
      auto* c = impression->add_candidates();
      AddId(c->mutable_example(), "ad", ad);
      c->set_label((user + ad) % 2 == 0 ? 1.0f : 0.0f);
    }
  }
  return r;
}

v1::PredictRequest WithContext(uint64_t user) {
  v1::PredictRequest p;
  p.set_model("ffm");
  AddId(p.mutable_context(), "user", user);
  AddId(p.mutable_context(), "site", 1);
  for (uint64_t ad : {2, 3, 4, 5}) AddId(p.add_candidates(), "ad", ad);
  return p;
}

// The same pairs as WithContext(user), each candidate holding the context.
v1::PredictRequest Merged(uint64_t user) {
  v1::PredictRequest p;
  p.set_model("ffm");
  for (uint64_t ad : {2, 3, 4, 5}) {
    v1::Example* c = p.add_candidates();
    AddId(c, "user", user);
    AddId(c, "site", 1);
    AddId(c, "ad", ad);
  }
  return p;
}

TEST(Factorization, AnFfmModelLearnsServesSnapshotsAndRestartsToTheSameState) {
  RestartableServer server("factorization_test");
  ASSERT_TRUE(server.Start());
  const CommandResult refused = server.Clickctl(
      "models create --json --model=bad --factorization=ffm --factor_fields=user,ad "
      "--factor_dim=0");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("factorization.dim is 0"), std::string::npos) << refused.err;
  const CommandResult created = server.Clickctl(
      "models create --json --model=ffm --factorization=ffm --factor_fields=user,ad,site");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 60; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;

  // The interaction is learned: for user 0 the even ads score above the
  // odd ones, for user 1 the other way round.
  auto even_user = server.client().Predict(WithContext(0));
  auto odd_user = server.client().Predict(WithContext(1));
  ASSERT_TRUE(even_user.ok()) << even_user.status();
  ASSERT_TRUE(odd_user.ok()) << odd_user.status();
  ASSERT_EQ(even_user->predictions_size(), 4);
  for (int k : {0, 2}) {
    EXPECT_GT(even_user->predictions(k).prediction(), even_user->predictions(k + 1).prediction());
    EXPECT_LT(odd_user->predictions(k).prediction(), odd_user->predictions(k + 1).prediction());
  }
  // A shared context scores as the merged example.
  auto merged = server.client().Predict(Merged(0));
  ASSERT_TRUE(merged.ok()) << merged.status();
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(even_user->predictions(k).margin(), merged->predictions(k).margin(), 1e-6) << k;
  }

  auto snapshot = server.client().SnapshotModel("ffm");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // These reach only the update log: the restart replays them.
  for (int b = 60; b < 80; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;
  const std::string digest = *server.client().StateDigest("ffm");
  auto before = server.client().Predict(WithContext(7));
  ASSERT_TRUE(before.ok()) << before.status();
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("ffm"), digest);
  auto after = server.client().Predict(WithContext(7));
  ASSERT_TRUE(after.ok()) << after.status();
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(after->predictions(k).margin(), before->predictions(k).margin()) << k;
  }
  auto info = server.client().GetModel("ffm");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 80u * 50u * 4u);
}

// An explanation of a factorization model lists its top pairs of field
// features beside the linear contributions, and the two add up to the
// margin; a request whose pairs to rank exceed kMaxExplainedPairs is
// refused before any is built.
TEST(Factorization, AnExplanationListsThePairsAndAddsUpToTheMargin) {
  RestartableServer server("factorization_explain_test");
  ASSERT_TRUE(server.Start());
  const CommandResult created = server.Clickctl(
      "models create --json --model=ffm --factorization=ffm --factor_fields=user,ad,site");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 20; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;

  v1::PredictRequest request = WithContext(0);
  request.set_explain_top_k(100);
  auto all = server.client().Predict(request);
  ASSERT_TRUE(all.ok()) << all.status();
  for (const v1::Prediction& p : all->predictions()) {
    // user x site, user x ad, site x ad.
    ASSERT_EQ(p.pair_explanation_size(), 3);
    double sum = 0;
    for (const v1::Contribution& c : p.explanation()) sum += c.contribution();
    double previous = INFINITY;
    for (const v1::PairContribution& pair : p.pair_explanation()) {
      sum += pair.contribution();
      EXPECT_LE(std::abs(pair.contribution()), previous);
      previous = std::abs(pair.contribution());
      EXPECT_LT(pair.key_a(), pair.key_b());
      EXPECT_NE(pair.contribution(), 0.0);
      // Every feature here is named: user:#0, site:#1, ad:#k.
      EXPECT_NE(pair.feature_a().find(":#"), std::string::npos) << pair.ShortDebugString();
      EXPECT_NE(pair.feature_b().find(":#"), std::string::npos) << pair.ShortDebugString();
    }
    EXPECT_NEAR(sum, p.margin(), 1e-9 * (1 + std::abs(p.margin())));
  }
  request.set_explain_top_k(1);
  auto top = server.client().Predict(request);
  ASSERT_TRUE(top.ok()) << top.status();
  for (int i = 0; i < top->predictions_size(); ++i) {
    ASSERT_EQ(top->predictions(i).pair_explanation_size(), 1);
    EXPECT_EQ(top->predictions(i).pair_explanation(0).ShortDebugString(),
              all->predictions(i).pair_explanation(0).ShortDebugString());
  }

  // 1,500 field features in one candidate: 1,124,250 pairs.
  v1::PredictRequest wide = WithContext(0);
  wide.set_explain_top_k(1);
  v1::Namespace* ads = wide.mutable_candidates(0)->add_namespaces();
  ads->set_name("ad");
  for (uint64_t id = 100; id < 1600; ++id) ads->add_features()->set_id(id);
  auto refused = server.client().Predict(wide);
  ASSERT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  EXPECT_NE(refused.status().message().find("pairs of field features"), std::string::npos)
      << refused.status().message();
  // Without explanations the same request is served.
  wide.set_explain_top_k(0);
  EXPECT_TRUE(server.client().Predict(wide).ok());
}

// An FFM variant beside a linear champion (the way to adopt one safely):
// created with clickctl, it learns from every Update, a Predict naming it
// is scored by its factors (the latent interaction the linear primary
// cannot hold), and a snapshot plus a SIGKILL restart restore it.
TEST(Factorization, AnFfmVariantLearnsBesideALinearModelAndRestarts) {
  RestartableServer server("factorization_variant_test");
  ASSERT_TRUE(server.Start());
  const CommandResult created = server.Clickctl(
      "models create --json --model=ffm --factor_fields=user,ad,site "
      "--variants=latent:factorization=ffm");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 40; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;
  v1::PredictRequest even = WithContext(0);
  v1::PredictRequest odd = WithContext(1);
  for (v1::PredictRequest* r : {&even, &odd}) r->set_variant("latent");
  auto even_user = server.client().Predict(even);
  auto odd_user = server.client().Predict(odd);
  ASSERT_TRUE(even_user.ok()) << even_user.status();
  ASSERT_TRUE(odd_user.ok()) << odd_user.status();
  EXPECT_EQ(even_user->variant(), "latent");
  for (int k : {0, 2}) {
    EXPECT_GT(even_user->predictions(k).prediction(), even_user->predictions(k + 1).prediction());
    EXPECT_LT(odd_user->predictions(k).prediction(), odd_user->predictions(k + 1).prediction());
  }
  even.set_explain_top_k(10);
  auto explained = server.client().Predict(even);
  ASSERT_TRUE(explained.ok()) << explained.status();
  EXPECT_EQ(explained->predictions(0).pair_explanation_size(), 3);
  // The primary is linear: no pairs.
  even.set_variant("primary");
  auto linear = server.client().Predict(even);
  ASSERT_TRUE(linear.ok()) << linear.status();
  EXPECT_EQ(linear->predictions(0).pair_explanation_size(), 0);

  ASSERT_TRUE(server.client().SnapshotModel("ffm").ok());
  for (int b = 40; b < 50; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;
  const std::string digest = *server.client().StateDigest("ffm");
  even.set_variant("latent");
  even.set_explain_top_k(0);
  auto before = server.client().Predict(even);
  ASSERT_TRUE(before.ok()) << before.status();
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("ffm"), digest);
  auto after = server.client().Predict(even);
  ASSERT_TRUE(after.ok()) << after.status();
  for (int k = 0; k < 4; ++k) {
    EXPECT_EQ(after->predictions(k).margin(), before->predictions(k).margin()) << k;
  }
}

// A model with factors makes a row of up to 8 KiB for each new feature of
// its fields: an Update whose field features could add more than
// --max_factor_bytes_per_update of rows is refused before anything is
// learned, naming the flag; one within it is learned.
TEST(Factorization, AnUpdateThatCouldAddTooManyFactorRowsIsRefusedWhole) {
  RestartableServer server("factorization_rows_test");
  // user, site and ad at dim 4: a row is 8 + 8 x 12 = 104 bytes; 65,536
  // bytes hold 630 rows.
  ASSERT_TRUE(server.Start({"--max_factor_bytes_per_update=65536"}));
  const CommandResult created = server.Clickctl(
      "models create --json --model=ffm --factorization=ffm --factor_fields=user,site,ad");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  const auto users = [](int n) {
    v1::UpdateRequest r;
    r.set_model("ffm");
    v1::LabeledExample* le = r.add_examples();
    le->set_label(1);
    v1::Namespace* user = le->mutable_example()->add_namespaces();
    user->set_name("user");
    for (int i = 0; i < n; ++i) user->add_ids(static_cast<uint64_t>(i) + 1);
    return r;
  };
  const absl::Status refused = server.client().Update(users(631)).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_EQ(refused.message(),
            "the update has 631 features of factorization.fields, each adding up to 104 bytes of "
            "factor rows "
            "if new; the limit is --max_factor_bytes_per_update 65536 (630 such features per "
            "update)");
  auto info = server.client().GetModel("ffm");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 0u);
  EXPECT_EQ(info->coordinates(), 0u);
  ASSERT_TRUE(server.client().Update(users(630)).ok());
  info = server.client().GetModel("ffm");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 1u);
}

}  // namespace
}  // namespace clickd
