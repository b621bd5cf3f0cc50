// The compact encoding (memory.encoding compact: CompactFtrl in a
// CompactTable) behind CreateModel: it learns what float FTRL learns within
// a stated tolerance, deterministically, and its state survives export,
// import, copy-on-write copies and a budget like every other model's.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/model/model.h"
#include "core/model/state_digest.h"
#include "core/optim/loss.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Labeled {
  std::vector<HashedFeature> features;
  double label;
};

// A click log from a hidden sparse model: 20 features per example, Zipf-like
// ids (frequent ones repeat, rare ones are new), labels drawn from it.
std::vector<Labeled> ClickStream(int n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  auto next = [&x] {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 11;
  };
  std::vector<Labeled> out(n);
  for (Labeled& l : out) {
    double score = -2.0;
    for (int k = 0; k < 20; ++k) {
      const uint64_t r = next();
      const uint64_t id = (r % 5000) * (r % 13 == 0 ? 997 : 1) + static_cast<uint64_t>(k) * 1000003;
      l.features.push_back({id * 0x2545F4914F6CDD1Dull, 1.0f});
      score += (id % 7 == 0 ? 0.9 : (id % 5 == 0 ? -0.6 : 0.0));
    }
    l.label = static_cast<double>(next() % 10000) < 10000.0 / (1.0 + std::exp(-score)) ? 1 : 0;
  }
  return out;
}

ModelConfig Config(StateEncoding encoding) {
  ModelConfig config;
  config.memory.encoding = encoding;
  return config;
}

// Mean progressive logloss.
double Learn(Model& model, const std::vector<Labeled>& stream) {
  double loss = 0;
  for (const Labeled& l : stream) {
    const double margin = model.Learn(l.features, l.label, 1.0);
    loss += Loss(LossType::kLogistic, margin, l.label);
  }
  return loss / stream.size();
}

TEST(CompactModel, LearnsWhatFloatFtrlLearnsWithinATenthOfAPercent) {
  const std::vector<Labeled> stream = ClickStream(60000, 1);
  auto compact = *CreateModel(Config(StateEncoding::kCompact));
  auto exact = *CreateModel(Config(StateEncoding::kFloat));
  const double compact_loss = Learn(*compact, stream);
  const double exact_loss = Learn(*exact, stream);
  EXPECT_NEAR(compact_loss, exact_loss, exact_loss * 1e-3) << compact_loss << " " << exact_loss;
  EXPECT_EQ(compact->Stats().coordinates, exact->Stats().coordinates);
  // Weights agree to the codes' precision.
  std::vector<HashedFeature> probe = stream.back().features;
  std::vector<double> a(probe.size()), b(probe.size());
  compact->Weights(probe, absl::MakeSpan(a));
  exact->Weights(probe, absl::MakeSpan(b));
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 0.02 + std::abs(b[i]) * 0.05);
}

TEST(CompactModel, TheSameStepsGiveTheSameState) {
  const std::vector<Labeled> stream = ClickStream(5000, 2);
  auto first = *CreateModel(Config(StateEncoding::kCompact));
  auto second = *CreateModel(Config(StateEncoding::kCompact));
  Learn(*first, stream);
  Learn(*second, stream);
  EXPECT_EQ(StateDigest(*first), StateDigest(*second));
  EXPECT_EQ(first->ExportState().state_size, 4u);
}

TEST(CompactModel, StatsCountEightByteSlotsAndTheTablesBytes) {
  auto model = *CreateModel(Config(StateEncoding::kCompact));
  Learn(*model, ClickStream(20000, 3));
  const ModelStats stats = model->Stats();
  EXPECT_EQ(stats.state_bytes_per_coordinate, 8u);
  EXPECT_GT(stats.coordinates, 10000u);
  // 65,536 subtables' directory and headers dominate a small model.
  EXPECT_GT(stats.bytes, stats.coordinates * 8);
}

TEST(CompactModel, ExportedStateImportsIntoACompactModelOnly) {
  const std::vector<Labeled> stream = ClickStream(5000, 4);
  auto model = *CreateModel(Config(StateEncoding::kCompact));
  Learn(*model, stream);
  const Model::State state = model->ExportState();
  auto restored = *CreateModel(Config(StateEncoding::kCompact));
  ASSERT_TRUE(restored->ImportState(state).ok());
  EXPECT_EQ(StateDigest(*restored), StateDigest(*model));
  EXPECT_EQ(restored->Margin(stream[10].features), model->Margin(stream[10].features));
  // Both go on learning alike.
  Learn(*model, ClickStream(500, 5));
  Learn(*restored, ClickStream(500, 5));
  EXPECT_EQ(StateDigest(*restored), StateDigest(*model));
  auto float_model = *CreateModel(Config(StateEncoding::kFloat));
  const absl::Status refused = float_model->ImportState(state);
  EXPECT_EQ(refused.code(), absl::StatusCode::kDataLoss) << refused;
}

// A copy begun while another thread learns is the state at the moment.
TEST(CompactModel, ACopyOnWriteCopyIsTheStateWhenItBegan) {
  const std::vector<Labeled> stream = ClickStream(8000, 6);
  auto model = *CreateModel(Config(StateEncoding::kCompact));
  auto twin = *CreateModel(Config(StateEncoding::kCompact));
  const std::vector<Labeled> before(stream.begin(), stream.begin() + 4000);
  const std::vector<Labeled> after(stream.begin() + 4000, stream.end());
  Learn(*model, before);
  Learn(*twin, before);
  std::unique_ptr<Model::StateCopy> copy = model->BeginStateCopy();
  std::thread learner([&] { Learn(*model, after); });
  const Model::State copied = copy->Finish();
  learner.join();
  copy.reset();
  const Model::State expected = twin->ExportState();
  EXPECT_EQ(copied.coordinates, expected.coordinates);
  EXPECT_EQ(copied.round.t, expected.round.t);
}

TEST(CompactModel, ABudgetBoundsTheTablesUnderEndlessNewFeatures) {
  ModelConfig config = Config(StateEncoding::kCompact);
  config.memory.max_bytes = 8 << 20;
  auto model = *CreateModel(config);
  uint64_t next = 1;
  std::vector<HashedFeature> features(20);
  for (int i = 0; i < 30000; ++i) {  // 600,000 coordinates' worth
    features[0] = {static_cast<uint64_t>(i % 10), 1.0f};
    for (size_t k = 1; k < features.size(); ++k)
      features[k] = {next++ * 0x9E3779B97F4A7C15ull, 1.0f};
    model->Learn(features, i % 10 < 5 ? 1 : 0, 1.0);
    if (i % 1000 == 0) {
      ASSERT_LE(model->Stats().bytes, config.memory.max_bytes);
    }
  }
  const ModelStats stats = model->Stats();
  EXPECT_LE(stats.bytes, config.memory.max_bytes);
  EXPECT_GT(stats.coordinates_evicted, 250000u);
  // The frequent features, which decide the label, were kept.
  std::vector<HashedFeature> frequent;
  for (uint64_t k = 0; k < 10; ++k) frequent.push_back({k, 1.0f});
  std::vector<double> weights(frequent.size());
  model->Weights(frequent, absl::MakeSpan(weights));
  for (size_t k = 0; k < weights.size(); ++k) EXPECT_NE(weights[k], 0.0) << k;
}

TEST(CompactModel, ConfigsTheEncodingCannotServeAreRefused) {
  ModelConfig adagrad = Config(StateEncoding::kCompact);
  ASSERT_TRUE(SetOptimizerName("adagrad", &adagrad).ok());
  auto refused = CreateModel(adagrad);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("memory.encoding"), std::string::npos);
  ModelConfig variant = Config(StateEncoding::kCompact);
  ModelVariant ada;
  ada.name = "ada";
  ada.optimizer.type = OptimizerType::kAdagrad;
  variant.variants.push_back(ada);
  EXPECT_EQ(CreateModel(variant).status().code(), absl::StatusCode::kInvalidArgument);
  ModelConfig small = Config(StateEncoding::kCompact);
  small.memory.max_bytes = 1 << 20;  // below the tables' fixed part
  refused = CreateModel(small);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("memory.encoding compact"), std::string::npos)
      << refused.status();
  ModelConfig unknown = Config(static_cast<StateEncoding>(9));
  EXPECT_EQ(CreateModel(unknown).status().code(), absl::StatusCode::kInvalidArgument);
  // Compact FTRL variants of a compact FTRL model are fine.
  ModelConfig ftrl_variant = Config(StateEncoding::kCompact);
  ModelVariant fast;
  fast.name = "fast";
  fast.optimizer.ftrl.alpha = 0.5;
  ftrl_variant.variants.push_back(fast);
  EXPECT_TRUE(CreateModel(ftrl_variant).ok());
}

}  // namespace
}  // namespace clickd
