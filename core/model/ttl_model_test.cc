// TTL eviction inside a model (ModelConfig::memory.ttl_rounds,
// core/model/ttl_schedule.h, core/optim/stamped.h): a coordinate is kept
// while it is learned within the TTL and evicted within 1.25x it after it
// stops being learned, even beside keys learned every round; a stream of
// ever new features stays bounded; float and compact FTRL and variants
// take part; restores and point-in-time copies carry the stamps.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/model/model.h"
#include "core/model/state_digest.h"
#include "core/model/variant_model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr uint64_t kTtl = 800;  // epochs of 100 rounds
constexpr int kShards = 4;

ModelConfig Config(uint64_t ttl, const std::string& optimizer = "ftrl") {
  ModelConfig config;
  EXPECT_TRUE(SetOptimizerName(optimizer, &config).ok());
  if (optimizer == "pa" || optimizer == "cw") config.loss = LossType::kHinge;
  config.num_shards = kShards;
  config.memory.ttl_rounds = ttl;
  return config;
}

std::unique_ptr<Model> Create(const ModelConfig& config) {
  auto model = CreateModel(config);
  EXPECT_TRUE(model.ok()) << model.status();
  return *std::move(model);
}

// The keys an exported state holds.
std::vector<uint64_t> Keys(const Model& model) {
  const Model::State state = model.ExportState();
  const size_t record = sizeof(uint64_t) + state.state_size;
  std::vector<uint64_t> keys;
  for (size_t at = 0; at < state.coordinates.size(); at += record) {
    uint64_t key;
    std::memcpy(&key, state.coordinates.data() + at, sizeof(key));
    keys.push_back(key);
  }
  return keys;
}

bool Holds(const Model& model, uint64_t key) {
  for (uint64_t k : Keys(model)) {
    if (k == key) return true;
  }
  return false;
}

// Example i of a stream with 4 hot keys (one per example, in turn) and
// `fresh` keys never seen before.
std::vector<HashedFeature> Example(int i, int fresh) {
  std::vector<HashedFeature> f{{static_cast<uint64_t>(i % 4) + 1, 1.0f}};
  for (int j = 0; j < fresh; ++j) {
    f.push_back({1'000'000 + static_cast<uint64_t>(i) * fresh + j, 1.0f});
  }
  return f;
}

TEST(TtlModel, KeepsALearnedKeyForTheTtlAndEvictsItAfter) {
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "float");
    ModelConfig config = Config(kTtl);
    if (compact) config.memory.encoding = StateEncoding::kCompact;
    auto model = Create(config);
    // The stale key's canonical form (a compact table returns that one).
    const std::vector<HashedFeature> once{{777, 1.0f}};
    model->Learn(once, 1.0, 1.0);
    const std::vector<uint64_t> first = Keys(*model);
    ASSERT_EQ(first.size(), 1u);
    const uint64_t stale = first[0];
    // Learned once at round 0; never evicted while untouched for at most
    // kTtl rounds; gone (its bucket shared with no hot key) within 1.25
    // kTtl.
    int evicted_at = -1;
    for (int round = 1; round < 2 * static_cast<int>(kTtl); ++round) {
      model->Learn(Example(round, 0), round % 3 == 0 ? 1.0 : 0.0, 1.0);
      if (!Holds(*model, stale) && evicted_at < 0) evicted_at = round + 1;
      if (evicted_at >= 0) break;
    }
    EXPECT_GT(evicted_at, static_cast<int>(kTtl));
    EXPECT_LE(evicted_at, static_cast<int>(kTtl + kTtl / 4));
    EXPECT_EQ(model->Stats().coordinates_expired, 1u);
    // The hot keys, learned every 4 rounds, stay.
    EXPECT_EQ(model->Stats().coordinates, 4u);
  }
}

TEST(TtlModel, AKeyLearnedAgainIsKept) {
  auto model = Create(Config(kTtl));
  for (int round = 0; round < 5000; ++round) {
    std::vector<HashedFeature> f = Example(round, 0);
    if (round % 700 == 0) f.push_back({555, 1.0f});
    model->Learn(f, 1.0, 1.0);
  }
  EXPECT_TRUE(Holds(*model, 555));
  EXPECT_EQ(model->Stats().coordinates_expired, 0u);
}

// Each round learns the 20 hot keys and 5 keys never seen before: the
// hot keys stay, and every new key leaves between 1000 and 1250 rounds
// after its step (10 epochs of 125), however many hot keys there are.
TEST(TtlModel, StaysBoundedUnderEverNewFeaturesBesideHotOnes) {
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "float");
    ModelConfig config = Config(1000);
    if (compact) config.memory.encoding = StateEncoding::kCompact;
    auto model = Create(config);
    uint64_t fewest = UINT64_MAX, most = 0;
    std::vector<HashedFeature> f;
    for (int round = 0; round < 20'000; ++round) {
      f.clear();
      for (uint64_t hot = 1; hot <= 20; ++hot) f.push_back({hot * 0x9E3779B97F4A7C15ull, 1.0f});
      for (int j = 0; j < 5; ++j)
        f.push_back({1'000'000 + static_cast<uint64_t>(round) * 5 + j, 1.0f});
      model->Learn(f, round % 2, 1.0);
      if (round >= 2000) {
        const uint64_t n = model->Stats().coordinates;
        fewest = std::min(fewest, n);
        most = std::max(most, n);
      }
    }
    EXPECT_GE(fewest, 20u + 5u * 1000u);
    EXPECT_LE(most, 20u + 5u * 1250u);
    EXPECT_EQ(model->Stats().coordinates + model->Stats().coordinates_expired, 20u + 5u * 20'000u);
  }
}

TEST(TtlModel, ARestoredModelEvictsAsOneThatNeverStopped) {
  ModelConfig config = Config(kTtl);
  auto straight = Create(config);
  auto first_half = Create(config);
  for (int round = 0; round < 3000; ++round) {
    straight->Learn(Example(round, 3), round % 2, 1.0);
    if (round < 1234) first_half->Learn(Example(round, 3), round % 2, 1.0);
  }
  auto restored = Create(config);
  ASSERT_TRUE(restored->ImportState(first_half->ExportState()).ok());
  EXPECT_EQ(StateDigest(*restored), StateDigest(*first_half));
  for (int round = 1234; round < 3000; ++round) restored->Learn(Example(round, 3), round % 2, 1.0);
  EXPECT_EQ(StateDigest(*restored), StateDigest(*straight));
  EXPECT_EQ(Keys(*restored), Keys(*straight));
}

TEST(TtlModel, ACopyHoldsItsMomentAcrossSweeps) {
  ModelConfig config = Config(kTtl);
  auto model = Create(config);
  for (int round = 0; round < 1500; ++round) model->Learn(Example(round, 3), round % 2, 1.0);
  const Model::State moment = model->ExportState();
  auto copy = model->BeginStateCopy();
  // Sweeps evict coordinates the copy has not read yet.
  const uint64_t expired_before = model->Stats().coordinates_expired;
  for (int round = 1500; round < 2500; ++round) model->Learn(Example(round, 3), round % 2, 1.0);
  ASSERT_GT(model->Stats().coordinates_expired, expired_before);
  const Model::State copied = copy->Finish();
  EXPECT_EQ(copied.coordinates, moment.coordinates);
}

// A TTL model's states carry stamps: a state of a model without one does
// not fit (nor the other way round), and changes nothing.
TEST(TtlModel, StatesWithAndWithoutStampsDoNotMix) {
  auto with_ttl = Create(Config(kTtl));
  auto without = Create(Config(0));
  for (int round = 0; round < 900; ++round) {
    with_ttl->Learn(Example(round, 2), round % 2, 1.0);
    without->Learn(Example(round, 2), round % 2, 1.0);
  }
  EXPECT_EQ(with_ttl->Stats().state_bytes_per_coordinate, 8u + 12u);
  EXPECT_EQ(without->Stats().state_bytes_per_coordinate, 8u + 8u);
  const std::string before = StateDigest(*with_ttl);
  absl::Status s = with_ttl->ImportState(without->ExportState());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(StateDigest(*with_ttl), before);
  s = without->ImportState(with_ttl->ExportState());
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
}

// Until its first eviction a model with a TTL learns exactly as one
// without: the same weights, bit for bit.
TEST(TtlModel, LearnsAsAModelWithoutOneUntilItEvicts) {
  for (const bool compact : {false, true}) {
    ModelConfig config = Config(kTtl);
    if (compact) config.memory.encoding = StateEncoding::kCompact;
    auto with_ttl = Create(config);
    config.memory.ttl_rounds = 0;
    auto without = Create(config);
    for (int round = 0; round < 700; ++round) {
      with_ttl->Learn(Example(round, 3), round % 2, 1.0);
      without->Learn(Example(round, 3), round % 2, 1.0);
    }
    ASSERT_EQ(with_ttl->Stats().coordinates_expired, 0u);
    const std::vector<uint64_t> keys = Keys(*without);
    ASSERT_EQ(Keys(*with_ttl), keys);
    std::vector<HashedFeature> features;
    for (uint64_t k : keys) features.push_back({k, 1.0f});
    std::vector<double> a(keys.size()), b(keys.size());
    with_ttl->Weights(features, absl::MakeSpan(a));
    without->Weights(features, absl::MakeSpan(b));
    EXPECT_EQ(a, b) << (compact ? "compact" : "float");
  }
}

TEST(TtlModel, WithoutATtlNothingChanges) {
  auto model = Create(Config(0));
  for (int round = 0; round < 3000; ++round) model->Learn(Example(round, 3), round % 2, 1.0);
  const ModelStats stats = model->Stats();
  EXPECT_EQ(stats.coordinates, 4u + 3u * 3000u);
  EXPECT_EQ(stats.coordinates_expired, 0u);
  EXPECT_EQ(stats.state_bytes_per_coordinate, 16u);
}

TEST(TtlModel, VariantsEachKeepTheirStamps) {
  ModelConfig config = Config(kTtl);
  config.variants.push_back({"fast", {}, {}});
  config.variants.back().optimizer.ftrl.alpha = 0.5;
  auto model = Create(config);
  auto straight = Create(config);
  for (int round = 0; round < 2000; ++round) {
    model->Learn(Example(round, 3), round % 2, 1.0);
    straight->Learn(Example(round, 3), round % 2, 1.0);
  }
  const ModelStats stats = model->Stats();
  EXPECT_GT(stats.coordinates_expired, 2000u);
  const Model::State state = model->ExportState();
  ASSERT_EQ(state.variants.size(), 1u);
  auto restored = Create(config);
  ASSERT_TRUE(restored->ImportState(state).ok());
  for (int round = 2000; round < 3000; ++round) {
    restored->Learn(Example(round, 3), round % 2, 1.0);
    straight->Learn(Example(round, 3), round % 2, 1.0);
  }
  EXPECT_EQ(StateDigest(*restored), StateDigest(*straight));
}

TEST(TtlModel, ConfigRange) {
  for (uint64_t bad : {uint64_t{1}, uint64_t{63}, (uint64_t{1} << 48) + 1}) {
    auto model = CreateModel(Config(bad));
    ASSERT_FALSE(model.ok());
    EXPECT_EQ(model.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(model.status().message().find("memory.ttl_rounds is "), std::string::npos)
        << model.status();
  }
  EXPECT_TRUE(CreateModel(Config(64)).ok());
  EXPECT_TRUE(CreateModel(Config(uint64_t{1} << 48)).ok());
  for (const char* other : {"adagrad", "sgd", "pa"}) {
    auto model = CreateModel(Config(kTtl, other));
    ASSERT_FALSE(model.ok()) << other;
    EXPECT_NE(model.status().message().find("memory.ttl_rounds stamps FTRL"), std::string::npos)
        << model.status();
  }
  ModelConfig variant = Config(kTtl);
  variant.variants.push_back({"ada", {}, {}});
  variant.variants.back().optimizer.type = OptimizerType::kAdagrad;
  EXPECT_FALSE(CreateModel(variant).ok());
}

}  // namespace
}  // namespace clickd
