// MetaGradDiag behind CreateModel: LinearModel<MetaGradDiag> stores exactly
// the states that calling MetaGradDiag::Apply by hand produces, and learns.
// The optimizer itself is tested against the slides in metagrad_diag_test.cc
// and, through the model, on a random stream in optimizers_test.cc.
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "core/model/model.h"
#include "core/optim/loss.h"
#include "core/optim/metagrad_diag.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Example {
  std::vector<HashedFeature> features;
  double label;
  double importance;
};

ModelConfig MetaGradConfig(LossType loss) {
  ModelConfig config;
  config.loss = loss;
  config.optimizer.type = OptimizerType::kMetaGradDiag;
  config.optimizer.metagrad_diag = {.diameter = 4.0, .gradient_bound = 2.0};
  return config;
}

// Decodes Model::ExportState's (key, State) records.
std::map<uint64_t, MetaGradDiag::State> ExportedStates(const Model& model) {
  const Model::State exported = model.ExportState();
  EXPECT_EQ(exported.state_size, sizeof(MetaGradDiag::State));
  std::map<uint64_t, MetaGradDiag::State> out;
  constexpr size_t kRecord = sizeof(uint64_t) + sizeof(MetaGradDiag::State);
  for (size_t at = 0; at + kRecord <= exported.coordinates.size(); at += kRecord) {
    uint64_t key;
    MetaGradDiag::State state;
    std::memcpy(&key, exported.coordinates.data() + at, sizeof(key));
    std::memcpy(&state, exported.coordinates.data() + at + sizeof(key), sizeof(state));
    out[key] = state;
  }
  return out;
}

void ExpectSameState(const MetaGradDiag::State& got, const MetaGradDiag::State& want,
                     uint64_t key) {
  EXPECT_EQ(got.w, want.w) << "key " << key;
  EXPECT_EQ(got.sum_g2, want.sum_g2) << "key " << key;
  for (int i = 0; i < MetaGradDiag::kSlaves; ++i) {
    EXPECT_EQ(got.slave_w[i], want.slave_w[i]) << "key " << key << " slave " << i;
    EXPECT_EQ(got.loss[i], want.loss[i]) << "key " << key << " slave " << i;
  }
}

// The plain reference: the margin from the stored weights, the loss's
// gradient times x_i times the importance, and one Apply per coordinate.
TEST(MetaGradDiagModel, StateIsApplyByHand) {
  for (LossType loss : {LossType::kLogistic, LossType::kSquared, LossType::kHinge}) {
    const ModelConfig config = MetaGradConfig(loss);
    auto model = CreateModel(config);
    ASSERT_TRUE(model.ok()) << model.status();
    const MetaGradDiag opt(config.optimizer.metagrad_diag);
    std::map<uint64_t, MetaGradDiag::State> by_hand;
    const RoundContext unused_round;  // MetaGradDiag ignores the round
    const double negative = loss == LossType::kHinge ? -1.0 : 0.0;
    const std::vector<Example> examples = {
        {{{11, 1.0f}, {22, 0.5f}}, 1.0, 1.0},
        {{{22, 2.0f}, {33, -1.5f}}, negative, 2.0},
        {{{11, 1.0f}, {33, 0.25f}, {44, 3.0f}}, 1.0, 0.5},
        {{{11, 1.0f}, {22, 0.5f}}, negative, 1.0},
    };
    for (int pass = 0; pass < 3; ++pass) {
      for (const Example& e : examples) {
        double margin = 0;
        for (const HashedFeature& f : e.features) {
          margin += opt.Weight(by_hand[f.key], unused_round) * f.value;
        }
        const double dloss = LossGradient(loss, margin, e.label) * e.importance;
        for (const HashedFeature& f : e.features) {
          opt.Apply(by_hand[f.key], dloss * f.value, unused_round);
        }
        EXPECT_EQ((*model)->Learn(e.features, e.label, e.importance), margin);
      }
    }
    const std::map<uint64_t, MetaGradDiag::State> stored = ExportedStates(**model);
    ASSERT_EQ(stored.size(), by_hand.size());
    for (const auto& [key, state] : by_hand) {
      ASSERT_TRUE(stored.count(key)) << key;
      ExpectSameState(stored.at(key), state, key);
    }
    // The learner moved every coordinate.
    for (const auto& [key, state] : stored) EXPECT_NE(state.w, 0.0f) << key;
  }
}

TEST(MetaGradDiagModel, StateIs184BytesPerCoordinate) {
  auto model = CreateModel(MetaGradConfig(LossType::kLogistic));
  ASSERT_TRUE(model.ok()) << model.status();
  // 8-byte key + w, sum_g2 and 21 slaves' weight and loss, all float.
  EXPECT_EQ((*model)->Stats().state_bytes_per_coordinate, 8u + 4u * (2 + 2 * 21));
  EXPECT_EQ(sizeof(MetaGradDiag::State), 176u);
}

// A separable stream: 5 of 20 binary features, label the sign of a hidden
// +-1 weight vector's margin (an odd integer, so never 0). The progressive
// log loss falls from near ln 2.
TEST(MetaGradDiagModel, LearnsASeparableStream) {
  auto model = CreateModel(MetaGradConfig(LossType::kLogistic));
  ASSERT_TRUE(model.ok()) << model.status();
  std::mt19937_64 rng(3);
  std::vector<double> truth(20);
  for (double& w : truth) w = rng() % 2 ? 1.0 : -1.0;
  constexpr int kExamples = 4000, kFirst = 100, kLast = 500;
  double first = 0, last = 0;
  for (int i = 0; i < kExamples; ++i) {
    std::map<uint64_t, float> chosen;
    while (chosen.size() < 5) chosen[rng() % truth.size()] = 1.0f;
    std::vector<HashedFeature> features;
    double hidden = 0;
    for (auto [key, value] : chosen) {
      features.push_back({key, value});
      hidden += truth[key];
    }
    const double label = hidden > 0 ? 1.0 : 0.0;
    const double margin = (*model)->Learn(features, label, 1.0);
    const double logloss = Loss(LossType::kLogistic, margin, label);
    if (i < kFirst) first += logloss / kFirst;
    if (i >= kExamples - kLast) last += logloss / kLast;
  }
  // Measured: 0.47 over the first 100 examples, 0.093 over the last 500 (the
  // domain [-2, 2] keeps the margins, so the loss, from going to 0).
  EXPECT_GT(first, 0.35);
  EXPECT_LT(last, 0.12);
  EXPECT_LT(last, first / 3) << "first " << first << " last " << last;
  // The learned weights have the hidden signs.
  for (const auto& [key, state] : ExportedStates(**model)) {
    EXPECT_GT(state.w * truth[key], 0) << key;
  }
}

}  // namespace
}  // namespace clickd
