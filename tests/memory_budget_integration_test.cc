// The memory budget through the real binaries (docs/memory.md): a model
// created by `clickctl models create --memory_max_bytes` learns far more
// distinct features than its budget holds, stays within it (GetModel and
// /metrics), keeps serving, and a SIGKILL restart (update-log replay)
// rebuilds the same state, evictions included. And the compact encoding
// (`--state_encoding=compact`): created, refused where it cannot serve,
// snapshotted, and restarted after SIGKILL to the same state. And Bloom
// filter admission (`--admission=bloom`, docs/admission.md): its counts are
// in the snapshot, so a SIGKILL restart (snapshot, then log replay) is the
// same model. And TTL eviction (`--memory_ttl_rounds`): an endless stream of
// new ads stays bounded, /metrics counts the expiries, and a SIGKILL
// restart (snapshot with the states' stamps, then log replay) is the same
// model.
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

constexpr uint64_t kBudget = 64 << 10;

// 100 impressions, each with an ad id never used before and a site among 5.
v1::UpdateRequest Batch(int batch, const std::string& model = "small") {
  v1::UpdateRequest r;
  r.set_model(model);
  for (int i = 0; i < 100; ++i) {
    auto* c = r.add_impressions()->add_candidates();
    auto* ad = c->mutable_example()->add_namespaces();
    ad->set_name("ad");
    ad->add_features()->set_id(static_cast<uint64_t>(batch) * 100 + i);
    auto* site = c->mutable_example()->add_namespaces();
    site->set_name("site");
    site->add_features()->set_id(i % 5);
    c->set_label(i % 5 == 0 ? 1.0f : 0.0f);
  }
  return r;
}

TEST(MemoryBudget, StaysWithinItsBudgetAndRestartsToTheSameState) {
  RestartableServer server("memory_budget_test");
  ASSERT_TRUE(server.Start());
  const CommandResult created = server.Clickctl(
      absl::StrCat("models create --json --model=small --memory_max_bytes=", kBudget));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  // 20,000 distinct ads: more than six times what 64 KiB holds (3,264).
  for (int b = 0; b < 200; ++b) ASSERT_TRUE(server.client().Update(Batch(b)).ok()) << b;
  auto info = server.client().GetModel("small");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().memory().max_bytes(), kBudget);
  EXPECT_LE(info->bytes(), kBudget);
  EXPECT_GT(info->coordinates_evicted(), 16'000u);
  EXPECT_EQ(info->updates(), 20'000u);
  const uint64_t evicted = info->coordinates_evicted();
  // Still serving: the sites carry the signal and are held.
  v1::PredictRequest predict;
  predict.set_model("small");
  auto* site = predict.add_candidates()->add_namespaces();
  site->set_name("site");
  site->add_features()->set_id(0);
  auto scored = server.client().Predict(predict);
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_GT(scored->predictions(0).prediction(), 0.5);

  EXPECT_EQ(server.Metric("clickd_model_memory_budget_bytes{model=\"small\"}"),
            static_cast<double>(kBudget));
  EXPECT_EQ(server.Metric("clickd_model_memory_budget_bytes{model=\"default\"}"), 0);
  EXPECT_EQ(server.Metric("clickd_model_coordinates_evicted_total{model=\"small\"}"),
            static_cast<double>(evicted));
  EXPECT_LE(server.Metric("clickd_model_bytes{model=\"small\"}").value_or(1e30),
            static_cast<double>(kBudget));

  const std::string digest = *server.client().StateDigest("small");
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("small"), digest);
  info = server.client().GetModel("small");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().memory().max_bytes(), kBudget);
  EXPECT_EQ(info->coordinates_evicted(), evicted);  // the replay evicted the same again
}

TEST(MemoryBudget, ACompactModelSnapshotsAndRestartsToTheSameState) {
  RestartableServer server("compact_encoding_test");
  ASSERT_TRUE(server.Start());
  v1::PredictRequest predict;
  predict.set_model("compact");
  auto* site = predict.add_candidates()->add_namespaces();
  site->set_name("site");
  site->add_features()->set_id(0);
  const CommandResult refused = server.Clickctl(
      "models create --json --state_encoding=compact --model=ada --optimizer=adagrad");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("memory.encoding"), std::string::npos) << refused.err;
  const CommandResult created =
      server.Clickctl("models create --json --state_encoding=compact --model=compact");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 100; ++b) {
    ASSERT_TRUE(server.client().Update(Batch(b, "compact")).ok()) << b;
  }
  auto snapshot = server.client().SnapshotModel("compact");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // These reach only the update log: the restart replays them.
  for (int b = 100; b < 150; ++b) {
    ASSERT_TRUE(server.client().Update(Batch(b, "compact")).ok()) << b;
  }
  auto info = server.client().GetModel("compact");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().memory().encoding(), v1::STATE_ENCODING_COMPACT);
  EXPECT_EQ(info->updates(), 15'000u);
  EXPECT_EQ(info->coordinates(), 15'006u);  // ads, sites and the bias
  auto scored = server.client().Predict(predict);
  ASSERT_TRUE(scored.ok()) << scored.status();
  const double prediction = scored->predictions(0).prediction();
  EXPECT_GT(prediction, 0.5);
  const std::string digest = *server.client().StateDigest("compact");
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("compact"), digest);
  info = server.client().GetModel("compact");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().memory().encoding(), v1::STATE_ENCODING_COMPACT);
  scored = server.client().Predict(predict);
  ASSERT_TRUE(scored.ok()) << scored.status();
  EXPECT_EQ(scored->predictions(0).prediction(), prediction);
}

// 100 impressions whose ad ids repeat across batches (each about 4 times in
// 100 batches), so that a Bloom filter with min_count 3 admits some.
v1::UpdateRequest RepeatingBatch(int batch, const std::string& model) {
  v1::UpdateRequest r = Batch(batch, model);
  for (int i = 0; i < r.impressions_size(); ++i) {
    auto* ad =
        r.mutable_impressions(i)->mutable_candidates(0)->mutable_example()->mutable_namespaces(0);
    ad->mutable_features(0)->set_id(static_cast<uint64_t>(batch * 37 + i * 101) % 2500);
  }
  return r;
}

TEST(BloomAdmission, SnapshotsAndRestartsAfterSigkillToTheSameState) {
  RestartableServer server("bloom_admission_test");
  ASSERT_TRUE(server.Start());
  const std::string create = "models create --json --model=bloom --admission=bloom";
  const CommandResult refused = server.Clickctl(create + " --admission_min_count=0");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("--admission_min_count is 0; must be in 1..255"), std::string::npos)
      << refused.err;
  const CommandResult created =
      server.Clickctl(create +
                      " --admission_min_count=3 --admission_counters=65536 "
                      "--admission_generation_sightings=4000");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 60; ++b) {
    ASSERT_TRUE(server.client().Update(RepeatingBatch(b, "bloom")).ok()) << b;
  }
  auto snapshot = server.client().SnapshotModel("bloom");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // These reach only the update log: the restart replays them onto the
  // snapshot's filter.
  for (int b = 60; b < 100; ++b) {
    ASSERT_TRUE(server.client().Update(RepeatingBatch(b, "bloom")).ok()) << b;
  }
  auto info = server.client().GetModel("bloom");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->updates(), 10'000u);
  const uint64_t coordinates = info->coordinates();
  // Rare ads stay out: fewer coordinates than the 2,500 ads, 5 sites and
  // the bias.
  EXPECT_GT(coordinates, 6u);
  EXPECT_LT(coordinates, 2'506u);
  EXPECT_EQ(server.Metric("clickd_model_admission_filter_bytes{model=\"bloom\"}"), 2 * 65536);
  const std::string digest = *server.client().StateDigest("bloom");
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("bloom"), digest);
  info = server.client().GetModel("bloom");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->coordinates(), coordinates);
  EXPECT_EQ(info->config().admission().min_count(), 3u);
  EXPECT_EQ(info->config().admission().counters(), 65536u);
  EXPECT_EQ(info->config().admission().generation_sightings(), 4000u);
}

TEST(TtlEviction, BoundsAStreamOfNewAdsAndRestartsAfterSigkillToTheSameState) {
  RestartableServer server("ttl_eviction_test");
  ASSERT_TRUE(server.Start());
  const CommandResult refused =
      server.Clickctl("models create --json --model=ttl --memory_ttl_rounds=10");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("memory.ttl_rounds is 10; must be 0 (no TTL) or in 64.."),
            std::string::npos)
      << refused.err;
  const CommandResult created =
      server.Clickctl("models create --json --model=ttl --memory_ttl_rounds=2000");
  ASSERT_EQ(created.exit_code, 0) << created.err;
  for (int b = 0; b < 60; ++b) ASSERT_TRUE(server.client().Update(Batch(b, "ttl")).ok()) << b;
  auto snapshot = server.client().SnapshotModel("ttl");
  ASSERT_TRUE(snapshot.ok()) << snapshot.status();
  // These reach only the update log: the restart replays them, sweeps
  // included, onto the snapshot's stamps.
  for (int b = 60; b < 100; ++b) ASSERT_TRUE(server.client().Update(Batch(b, "ttl")).ok()) << b;
  auto info = server.client().GetModel("ttl");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->config().memory().ttl_rounds(), 2000u);
  EXPECT_EQ(info->updates(), 10'000u);
  // One new ad a round, each kept 2,000 to 2,500 rounds, the sites and
  // the bias: not the 10,006 seen.
  const uint64_t coordinates = info->coordinates();
  EXPECT_GE(coordinates, 2'006u);
  EXPECT_LE(coordinates, 2'506u);
  EXPECT_EQ(info->coordinates() + info->coordinates_expired(), 10'006u);
  EXPECT_EQ(server.Metric("clickd_model_coordinates_expired_total{model=\"ttl\"}"),
            static_cast<double>(info->coordinates_expired()));
  const std::string digest = *server.client().StateDigest("ttl");
  server.Kill();
  ASSERT_TRUE(server.Start());
  EXPECT_EQ(*server.client().StateDigest("ttl"), digest);
  info = server.client().GetModel("ttl");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->coordinates(), coordinates);
  EXPECT_EQ(info->config().memory().ttl_rounds(), 2000u);
}

}  // namespace
}  // namespace clickd
