// Pins what every optimizer learns, bit for bit: each config below learns
// the same fixed stream and its state digest must equal the one recorded
// when the test was written (at ff0a8cd, before the learning path was made
// faster). A speed change that moves any result by one ulp fails here; a
// change that means to move results must update the constants and say why.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/features/example.h"
#include "core/model/model.h"
#include "core/model/state_digest.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct GoldenCase {
  const char* name;
  ModelConfig config;
  const char* digest;
};

// A deterministic stream (a fixed linear congruential generator, so no
// library's distribution can change it): 12 features of three namespaces,
// a few with values other than 1, Zipf-like ids so coordinates repeat.
std::vector<LabeledExample> Stream(int n, bool signed_labels) {
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 33;
  };
  std::vector<LabeledExample> out;
  for (int i = 0; i < n; ++i) {
    LabeledExample le;
    const char* namespaces[] = {"user", "ad", "site"};
    double score = 0;
    for (int k = 0; k < 12; ++k) {
      const uint64_t r = next();
      const uint64_t id = (r % 997) * (r % 7) + k;  // small ids are frequent
      const float value = k % 4 == 0 ? static_cast<float>(r % 5) * 0.5f : 1.0f;
      le.example.namespaces.push_back({namespaces[k % 3], {Feature::WithId(id, value)}});
      score += (id % 5 == 0 ? 0.8 : -0.1) * value;
    }
    const bool click = static_cast<double>(next() % 1000) < 1000.0 / (1.0 + std::exp(-score));
    le.label = click ? 1.0f : (signed_labels ? -1.0f : 0.0f);
    out.push_back(std::move(le));
  }
  return out;
}

ModelConfig WithOptimizer(OptimizerType type, LossType loss = LossType::kLogistic) {
  ModelConfig config;
  config.optimizer.type = type;
  config.loss = loss;
  return config;
}

std::vector<GoldenCase> Cases() {
  std::vector<GoldenCase> cases;
  cases.push_back({"ftrl", WithOptimizer(OptimizerType::kFtrl), "3ee46a499280d153"});
  {
    ModelConfig c = WithOptimizer(OptimizerType::kFtrl);
    c.optimizer.ftrl.lambda1 = 1.0;
    c.optimizer.ftrl.lambda2 = 0.5;
    cases.push_back({"ftrl_l1_l2", c, "bb3d9668481e8291"});
  }
  {
    ModelConfig c = WithOptimizer(OptimizerType::kFtrl);
    c.optimizer.ftrl.lambda1 = 0.001;
    c.optimizer.ftrl.lambda1_times_t = true;
    cases.push_back({"ftrl_l1_times_t", c, "527123734df8d9e2"});
  }
  {
    ModelConfig c = WithOptimizer(OptimizerType::kFtrl);
    c.optimizer.ftrl.decay = 0.99;
    cases.push_back({"ftrl_decay", c, "ed38acb86d234c36"});
  }
  {
    // Re-recorded when the float table became FlatTable's own open
    // addressing: the same 64 KiB now holds 4/5 of its 16-byte slots (3,264
    // coordinates over 16 shards) instead of absl's 7/8 of the largest
    // power of two that fits (1,792), so other coordinates are evicted.
    ModelConfig c = WithOptimizer(OptimizerType::kFtrl);
    c.memory.max_bytes = 64 << 10;
    cases.push_back({"ftrl_budget", c, "5985c6f724c89602"});
  }
  {
    // Recorded when the compact encoding was added (after 73bb0dc).
    ModelConfig c = WithOptimizer(OptimizerType::kFtrl);
    c.memory.encoding = StateEncoding::kCompact;
    cases.push_back({"ftrl_compact", c, "d30673d845ba9452"});
  }
  cases.push_back({"ftrl_squared", WithOptimizer(OptimizerType::kFtrl, LossType::kSquared),
                   "a6676f8f84637176"});
  cases.push_back({"adagrad", WithOptimizer(OptimizerType::kAdagrad), "76cc03cfcd69dcc8"});
  cases.push_back({"adagrad_da", WithOptimizer(OptimizerType::kAdagradDa), "fea6384975241ac7"});
  cases.push_back({"pc_ogd", WithOptimizer(OptimizerType::kPcOgd), "46863748dc7a863a"});
  cases.push_back({"global_ogd", WithOptimizer(OptimizerType::kGlobalOgd), "658de3a6efbcb629"});
  cases.push_back({"sgd", WithOptimizer(OptimizerType::kSgd), "75552981f085fd0e"});
  cases.push_back({"pa", WithOptimizer(OptimizerType::kPa, LossType::kHinge), "0a63caf7390114d9"});
  cases.push_back({"cw", WithOptimizer(OptimizerType::kCw, LossType::kHinge), "e5fcc4399e65d5a0"});
  cases.push_back(
      {"metagrad_diag", WithOptimizer(OptimizerType::kMetaGradDiag), "e62f2ce766d7b18a"});
  return cases;
}

TEST(GoldenDigest, EveryOptimizerLearnsTheRecordedState) {
  for (const GoldenCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto model = CreateModel(c.config);
    ASSERT_TRUE(model.ok()) << model.status();
    const bool signed_labels = c.config.loss == LossType::kHinge;
    std::vector<HashedFeature> features;
    for (const LabeledExample& le : Stream(4000, signed_labels)) {
      features.clear();
      (*model)->hasher().Hash(le.example, &features);
      (*model)->Learn(features, le.label, le.importance);
    }
    EXPECT_EQ(StateDigest(**model), c.digest);
    if (c.config.memory.max_bytes > 0) EXPECT_GT((*model)->Stats().coordinates_evicted, 0u);
  }
}

}  // namespace
}  // namespace clickd
