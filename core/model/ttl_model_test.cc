// TTL eviction inside a model (ModelConfig::memory.ttl_rounds,
// core/store/recency.h): a coordinate is kept while it is learned within
// the TTL and evicted some time after it stops being learned; a stream of
// ever new features stays bounded; every optimizer and the compact
// encoding take part; restores and point-in-time copies carry the marks,
// and damaged marks change nothing.
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

TEST(TtlModel, EveryOptimizerStaysBoundedUnderEverNewFeatures) {
  for (const char* optimizer : {"ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd",
                                "pa", "cw", "metagrad_diag"}) {
    SCOPED_TRACE(optimizer);
    auto model = Create(Config(1000, optimizer));
    const bool hinge = model->config().loss == LossType::kHinge;
    uint64_t most = 0;
    for (int round = 0; round < 20'000; ++round) {
      const double label = round % 2;
      model->Learn(Example(round, 5), hinge ? SignedLabel(label) : label, 1.0);
      if (round % 1000 == 999) most = std::max(most, model->Stats().coordinates);
    }
    // 5 new keys a round, each kept 1000..~1500 rounds: about 5,000-7,500
    // at a time (a few more for shared marks), never the 100,000 seen.
    const ModelStats stats = model->Stats();
    EXPECT_LT(most, 10'000u);
    EXPECT_GT(stats.coordinates, 5'000u);
    EXPECT_GT(stats.coordinates_expired, 80'000u);
    EXPECT_GT(stats.recency_bytes, 0u);
    EXPECT_LT(stats.recency_bytes, 2 * most);
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
  EXPECT_EQ(copied.recency, moment.recency);
}

TEST(TtlModel, MissingDamagedOrUnexpectedMarksChangeNothing) {
  auto model = Create(Config(kTtl));
  for (int round = 0; round < 900; ++round) model->Learn(Example(round, 2), round % 2, 1.0);
  const Model::State good = model->ExportState();
  auto target = Create(Config(kTtl));
  target->Learn(Example(0, 1), 1.0, 1.0);
  const std::string before = StateDigest(*target);

  Model::State missing = good;
  missing.recency.clear();
  absl::Status s = target->ImportState(missing);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("no recency marks"), std::string::npos) << s;

  Model::State truncated = good;
  truncated.recency.resize(truncated.recency.size() - 1);
  s = target->ImportState(truncated);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;

  Model::State bad_log2 = good;
  bad_log2.recency[4] = 99;  // shard 0's bucket count
  s = target->ImportState(bad_log2);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_EQ(StateDigest(*target), before);

  auto no_ttl = Create(Config(0));
  s = no_ttl->ImportState(good);
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("no TTL"), std::string::npos) << s;
}

TEST(TtlModel, WithoutATtlNothingChanges) {
  auto model = Create(Config(0));
  for (int round = 0; round < 3000; ++round) model->Learn(Example(round, 3), round % 2, 1.0);
  const ModelStats stats = model->Stats();
  EXPECT_EQ(stats.coordinates, 4u + 3u * 3000u);
  EXPECT_EQ(stats.coordinates_expired, 0u);
  EXPECT_EQ(stats.recency_bytes, 0u);
  EXPECT_TRUE(model->ExportState().recency.empty());
}

TEST(TtlModel, VariantsEachKeepTheirMarks) {
  ModelConfig config = Config(kTtl);
  config.variants.push_back({"ada", {}});
  config.variants.back().optimizer.type = OptimizerType::kAdagrad;
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
  EXPECT_FALSE(state.recency.empty());
  EXPECT_FALSE(state.variants[0].recency.empty());
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
}

}  // namespace
}  // namespace clickd
