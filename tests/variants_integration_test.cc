// Model variants through the real clickd binary: CreateModel with variants,
// every variant learning from Update, the champion chosen and served by
// Predict (or a named variant), their figures in GetModel and /metrics,
// bad configs and requests refused naming the field, and the variants'
// state (selection included) across SIGKILL restarts, by update-log replay
// and from a snapshot.
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/clickd_client.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"

namespace clickd {
namespace {

using ::clickd::testing::ServerOptions;
using ::clickd::testing::ServerProcess;

std::unique_ptr<ServerProcess> Start(const std::string& data_dir, int metrics_port = 0) {
  ServerOptions options;
  options.flags = {"--data_dir=" + data_dir, "--snapshot_interval=0",
                   absl::StrCat("--metrics_port=", metrics_port)};
  auto server = ServerProcess::Start(std::move(options));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::unique_ptr<ClickdClient> Connect(const ServerProcess& server) {
  auto client = ClickdClient::Create(server.address());
  EXPECT_TRUE(client.ok()) << client.status();
  return client.ok() ? *std::move(client) : nullptr;
}

// The primary learns far too slowly, so a variant takes over.
v1::ModelConfig VariantConfig() {
  v1::ModelConfig c;
  c.set_name("ab");
  c.mutable_ftrl()->set_alpha(0.0005);
  auto* fast = c.add_variants();
  fast->set_name("fast");
  fast->mutable_ftrl()->set_alpha(0.1);
  auto* ada = c.add_variants();
  ada->set_name("ada");
  ada->set_optimizer("adagrad");
  ada->mutable_adagrad()->set_eta(0.05);
  ada->mutable_admission()->set_probability(0.5);
  return c;
}

// 100 impressions of a stream where ad `a` is clicked with probability
// that depends on a hidden weight per ad.
v1::UpdateRequest Batch(int batch) {
  std::mt19937_64 rng(batch);
  std::uniform_real_distribution<double> unit(0, 1);
  v1::UpdateRequest r;
  r.set_model("ab");
  for (int i = 0; i < 100; ++i) {
    auto* imp = r.add_impressions();
    auto* c = imp->add_candidates();
    auto* ns = c->mutable_example()->add_namespaces();
    ns->set_name("ad");
    const int ad = static_cast<int>(rng() % 50);
    ns->add_features()->set_id(ad);
    const double p = 1 / (1 + std::exp(-(-2.0 + 0.08 * ad)));
    c->set_label(unit(rng) < p ? 1.0f : 0.0f);
  }
  return r;
}

v1::PredictRequest PredictAd(int ad, const std::string& variant = "") {
  v1::PredictRequest r;
  r.set_model("ab");
  r.set_variant(variant);
  auto* ns = r.add_candidates()->add_namespaces();
  ns->set_name("ad");
  ns->add_features()->set_id(ad);
  return r;
}

TEST(Variants, LearnSelectServeAndSurviveRestarts) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/variants_test_", getpid());
  std::filesystem::remove_all(dir);
  std::string digest, champion;
  {
    auto port = testing::FindFreePort();
    ASSERT_TRUE(port.ok()) << port.status();
    auto server = Start(dir, *port);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    auto created = client->CreateModel(VariantConfig());
    ASSERT_TRUE(created.ok()) << created.status();
    ASSERT_EQ(created->config().variants_size(), 2);
    EXPECT_EQ(created->config().variants(1).optimizer(), "adagrad");
    EXPECT_EQ(created->config().variants(1).adagrad().eta(), 0.05);
    EXPECT_EQ(created->config().variants(1).admission().probability(), 0.5);
    EXPECT_FALSE(created->config().variants(0).has_admission());
    ASSERT_EQ(created->variants_size(), 3);
    EXPECT_EQ(created->variants(0).name(), "primary");
    EXPECT_TRUE(created->variants(0).champion());

    // Before a half-life of examples the primary serves.
    for (int b = 0; b < 50; ++b) ASSERT_TRUE(client->Update(Batch(b)).ok());
    auto early = client->Predict(PredictAd(3));
    ASSERT_TRUE(early.ok()) << early.status();
    EXPECT_EQ(early->variant(), "primary");
    for (int b = 50; b < 400; ++b) ASSERT_TRUE(client->Update(Batch(b)).ok());

    auto info = client->GetModel("ab");
    ASSERT_TRUE(info.ok());
    EXPECT_EQ(info->updates(), 40000u);
    ASSERT_EQ(info->variants_size(), 3);
    for (const auto& v : info->variants()) {
      EXPECT_EQ(v.examples(), 40000u) << v.name();
      EXPECT_TRUE(std::isfinite(v.loss()) && std::isfinite(v.recent_loss())) << v.name();
      if (v.champion()) champion = v.name();
    }
    EXPECT_NE(champion, "primary");
    auto served = client->Predict(PredictAd(3));
    ASSERT_TRUE(served.ok());
    EXPECT_EQ(served->variant(), champion);
    auto named = client->Predict(PredictAd(3, champion));
    auto primary = client->Predict(PredictAd(3, "primary"));
    ASSERT_TRUE(named.ok() && primary.ok());
    EXPECT_EQ(named->predictions(0).margin(), served->predictions(0).margin());
    EXPECT_NE(primary->predictions(0).margin(), served->predictions(0).margin());
    EXPECT_EQ(primary->variant(), "primary");

    // Bad requests: the field named, nothing applied.
    const std::string before = *client->StateDigest("ab");
    auto unknown = client->Predict(PredictAd(3, "slow"));
    EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(unknown.status().message(),
              "variant \"slow\" is not one of model \"ab\"'s: primary, fast, ada");
    v1::PredictRequest plain = PredictAd(3, "fast");
    plain.set_model("default");
    EXPECT_EQ(client->Predict(plain).status().message(),
              "variant \"fast\": model \"default\" has no variants");
    EXPECT_EQ(*client->StateDigest("ab"), before);

    // Every variant's figures in /metrics.
    httplib::Client http("127.0.0.1", *port);
    http.set_read_timeout(10);
    auto response = http.Get("/metrics");
    ASSERT_TRUE(response) << httplib::to_string(response.error());
    const std::string* metrics = &response->body;
    EXPECT_TRUE(absl::StrContains(
        *metrics,
        absl::StrCat("clickd_model_variant_champion{model=\"ab\",variant=\"", champion, "\"} 1")))
        << *metrics;
    EXPECT_TRUE(absl::StrContains(
        *metrics, "clickd_model_variant_loss{model=\"ab\",variant=\"ada\",window=\"recent\"}"));
    EXPECT_TRUE(absl::StrContains(
        *metrics, "clickd_model_variant_examples{model=\"ab\",variant=\"primary\"} 40000"));

    digest = before;
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  {
    // Restored by replaying the log: every variant and the selection.
    auto server = Start(dir);
    ASSERT_NE(server, nullptr);
    auto client = Connect(*server);
    EXPECT_EQ(*client->StateDigest("ab"), digest);
    EXPECT_EQ(client->Predict(PredictAd(3))->variant(), champion);
    ASSERT_TRUE(client->SnapshotModel("ab").ok());
    ASSERT_TRUE(client->Update(Batch(400)).ok());
    digest = *client->StateDigest("ab");
    server->Signal(SIGKILL);
    ASSERT_TRUE(server->WaitForExit(std::chrono::seconds(20)).has_value());
  }
  auto server = Start(dir);
  ASSERT_NE(server, nullptr);
  auto client = Connect(*server);
  EXPECT_EQ(*client->StateDigest("ab"), digest);  // snapshot + one record
  EXPECT_EQ(client->Predict(PredictAd(3))->variant(), champion);
  EXPECT_EQ(client->GetModel("ab")->variants(0).examples(), 40100u);
}

TEST(Variants, BadVariantConfigsAreRefusedNamingTheField) {
  auto server = ServerProcess::Start(ServerOptions{});
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = Connect(**server);
  v1::ModelConfig config = VariantConfig();
  config.mutable_variants(1)->set_name("fast");
  EXPECT_EQ(client->CreateModel(config).status().message(),
            "config.variants[1].name \"fast\" repeats variants[0]");
  config = VariantConfig();
  config.mutable_variants(0)->set_optimizer("ada_fd");
  EXPECT_TRUE(absl::StartsWith(client->CreateModel(config).status().message(),
                               "config.variants[0].optimizer \"ada_fd\" is unknown"))
      << client->CreateModel(config).status();
  config = VariantConfig();
  config.mutable_variants(0)->mutable_ftrl()->set_alpha(NAN);
  EXPECT_EQ(client->CreateModel(config).status().message(),
            "config.variants[0].ftrl.alpha is nan; must be finite and > 0");
  config = VariantConfig();
  for (int i = 0; i < 20; ++i) config.add_variants()->set_name(absl::StrCat("v", i));
  EXPECT_EQ(client->CreateModel(config).status().message(),
            "config.variants: 22 variants; at most 8");
  EXPECT_EQ(client->CreateModel(config).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client->GetModel("ab").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace clickd
