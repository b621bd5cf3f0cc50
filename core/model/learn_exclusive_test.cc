// Model::LearnExclusive (offline training's batch path) learns exactly as
// Learn one by one: the same pre-update margins and the same state digest,
// for every optimizer and for budgets, admission, the compact encoding,
// variants and a TTL.
#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/state_digest.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Case {
  std::string name;
  ModelConfig config;
};

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (const char* optimizer : {"ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd",
                                "pa", "cw", "metagrad_diag"}) {
    ModelConfig c;
    EXPECT_TRUE(SetOptimizerName(optimizer, &c).ok());
    if (std::string(optimizer) == "pa" || std::string(optimizer) == "cw") {
      c.loss = LossType::kHinge;
    }
    out.push_back({optimizer, c});
  }
  ModelConfig budget;
  budget.memory.max_bytes = 256 << 10;
  out.push_back({"budget", budget});
  ModelConfig compact;
  compact.memory.encoding = StateEncoding::kCompact;
  out.push_back({"compact", compact});
  ModelConfig bloom;
  bloom.admission.policy = AdmissionOptions::Policy::kBloom;
  bloom.admission.counters = 1 << 12;
  out.push_back({"bloom", bloom});
  ModelConfig poisson;
  poisson.admission.policy = AdmissionOptions::Policy::kPoisson;
  poisson.admission.probability = 0.3;
  out.push_back({"poisson", poisson});
  ModelConfig variants;
  variants.variants.push_back({"ada", {}, {}});
  variants.variants.back().optimizer.type = OptimizerType::kAdagrad;
  out.push_back({"variants", variants});
  ModelConfig ttl;
  ttl.memory.ttl_rounds = 500;
  out.push_back({"ttl", ttl});
  ModelConfig l1_times_t;
  l1_times_t.optimizer.ftrl.lambda1 = 0.01;
  l1_times_t.optimizer.ftrl.lambda1_times_t = true;
  out.push_back({"l1_times_t", l1_times_t});
  return out;
}

TEST(LearnExclusive, LearnsExactlyAsLearnOneByOne) {
  // 3,000 examples: 10 frequent keys and 8 new ones each, in batches of 256
  // (the last one short).
  std::mt19937_64 rng(7);
  std::vector<std::vector<HashedFeature>> features(3000);
  std::vector<double> labels(features.size());
  uint64_t next = 1000;
  for (size_t i = 0; i < features.size(); ++i) {
    for (int j = 0; j < 10; ++j) features[i].push_back({rng() % 50 + 1, 1.0f});
    std::sort(features[i].begin(), features[i].end(),
              [](const HashedFeature& a, const HashedFeature& b) { return a.key < b.key; });
    features[i].erase(
        std::unique(features[i].begin(), features[i].end(),
                    [](const HashedFeature& a, const HashedFeature& b) { return a.key == b.key; }),
        features[i].end());
    for (int j = 0; j < 8; ++j) features[i].push_back({(next++) * 0x9E3779B97F4A7C15ull, 0.5f});
    labels[i] = features[i][0].key % 3 == 0 ? 1 : 0;
  }
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    auto one_by_one = *CreateModel(c.config);
    auto batched = *CreateModel(c.config);
    const bool hinge = c.config.loss == LossType::kHinge;
    std::vector<double> expected(features.size()), got(features.size());
    std::vector<Model::LearnItem> items(features.size());
    for (size_t i = 0; i < features.size(); ++i) {
      const double label = hinge ? SignedLabel(labels[i]) : labels[i];
      expected[i] = one_by_one->Learn(features[i], label, 1.0);
      items[i] = {features[i], label, 1.0};
    }
    for (size_t at = 0; at < items.size(); at += 256) {
      const size_t n = std::min<size_t>(256, items.size() - at);
      batched->LearnExclusive(absl::MakeConstSpan(items).subspan(at, n),
                              absl::MakeSpan(got).subspan(at, n));
    }
    EXPECT_EQ(got, expected);
    EXPECT_EQ(StateDigest(*batched), StateDigest(*one_by_one));
    EXPECT_EQ(batched->Stats().coordinates, one_by_one->Stats().coordinates);
    EXPECT_EQ(batched->Stats().coordinates_evicted, one_by_one->Stats().coordinates_evicted);
  }
}

}  // namespace
}  // namespace clickd
