// The memory budget inside a model (ModelConfig::memory): every optimizer
// keeps learning a stream far larger than its budget holds within it, a
// budget that never binds changes nothing, evicted features score as
// absent, and variants share the budget.
#include <algorithm>
#include <cmath>
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

constexpr uint64_t kBudget = 256 << 10;
constexpr uint64_t kFrequentKeys = 20;

const char* const kOptimizers[] = {"ftrl", "adagrad", "adagrad_da", "pc_ogd",       "global_ogd",
                                   "sgd",  "pa",      "cw",         "metagrad_diag"};

struct Labeled {
  std::vector<HashedFeature> features;
  double label;
};

// Each example: one of kFrequentKeys keys, which decides the label, and
// `rare` keys never seen before.
std::vector<Labeled> Stream(int n, int rare, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Labeled> out(n);
  uint64_t next_rare = 1'000'000;
  for (Labeled& l : out) {
    const uint64_t frequent = rng() % kFrequentKeys;
    l.features.push_back({frequent, 1.0f});
    for (int i = 0; i < rare; ++i) l.features.push_back({next_rare++, 1.0f});
    l.label = frequent < kFrequentKeys / 2 ? 1 : 0;
  }
  return out;
}

ModelConfig Config(const std::string& optimizer, uint64_t max_bytes) {
  ModelConfig config;
  EXPECT_TRUE(SetOptimizerName(optimizer, &config).ok());
  if (optimizer == "pa" || optimizer == "cw") config.loss = LossType::kHinge;
  config.memory.max_bytes = max_bytes;
  return config;
}

double Label(const Model& model, double label) {
  return model.config().loss == LossType::kHinge ? SignedLabel(label) : label;
}

// Learns the stream; returns the mean progressive loss, checking the budget
// every 500 examples.
double LearnWithinBudget(Model& model, const std::vector<Labeled>& stream, uint64_t budget) {
  double loss = 0;
  for (size_t i = 0; i < stream.size(); ++i) {
    const double label = Label(model, stream[i].label);
    const double margin = model.Learn(stream[i].features, label, 1.0);
    loss += Loss(model.config().loss, margin, label);
    if (i % 500 == 0) {
      EXPECT_LE(model.Stats().bytes, budget) << "after " << i << " examples";
    }
  }
  return loss / static_cast<double>(stream.size());
}

TEST(MemoryBudgetModel, EveryOptimizerLearnsAStreamTenTimesItsBudget) {
  for (const char* optimizer : kOptimizers) {
    auto model = *CreateModel(Config(optimizer, kBudget));
    // Distinct keys: ten times what the budget would hold at state bytes
    // alone, more than ten times what the tables hold.
    const uint64_t holds = kBudget / model->Stats().state_bytes_per_coordinate;
    const int examples = static_cast<int>(10 * holds / 8);
    const auto stream = Stream(examples, 8, 3);
    const double loss = LearnWithinBudget(*model, stream, kBudget);
    const ModelStats stats = model->Stats();
    EXPECT_TRUE(std::isfinite(loss)) << optimizer;
    EXPECT_LE(stats.bytes, kBudget) << optimizer;
    EXPECT_GT(stats.coordinates_evicted, 9 * holds) << optimizer;
    EXPECT_EQ(stats.coordinates + stats.coordinates_evicted, 8 * stream.size() + kFrequentKeys)
        << optimizer;
    EXPECT_TRUE(StateIsFinite(model->ExportState())) << optimizer;
    // The frequent keys carry the label: never the least useful, so held.
    std::vector<HashedFeature> frequent;
    for (uint64_t k = 0; k < kFrequentKeys; ++k) frequent.push_back({k, 1.0f});
    std::vector<double> weights(frequent.size());
    model->Weights(frequent, absl::MakeSpan(weights));
    for (size_t k = 0; k < weights.size(); ++k) EXPECT_NE(weights[k], 0.0) << optimizer << " " << k;
  }
}

// An evicted feature is absent: weight 0, so it adds nothing to a margin.
TEST(MemoryBudgetModel, AnEvictedFeatureScoresAsAbsent) {
  // SGD gives every feature it has learned a nonzero weight, so a weight of
  // 0 means "not held".
  auto model = *CreateModel(Config("sgd", kBudget));
  const auto stream = Stream(20'000, 8, 4);
  LearnWithinBudget(*model, stream, kBudget);
  std::vector<HashedFeature> rare;
  for (const Labeled& l : stream) rare.insert(rare.end(), l.features.begin() + 1, l.features.end());
  std::vector<double> weights(rare.size());
  model->Weights(rare, absl::MakeSpan(weights));
  const auto held = static_cast<uint64_t>(
      std::count_if(weights.begin(), weights.end(), [](double w) { return w != 0; }));
  const ModelStats stats = model->Stats();
  EXPECT_EQ(held, stats.coordinates - kFrequentKeys);
  EXPECT_EQ(rare.size() - held, stats.coordinates_evicted);
  // A margin sums the held weights only.
  const std::vector<HashedFeature>& first = stream.front().features;
  double sum = 0;
  std::vector<double> first_weights(first.size());
  model->Weights(first, absl::MakeSpan(first_weights));
  for (size_t i = 0; i < first.size(); ++i) sum += first_weights[i] * first[i].value;
  EXPECT_EQ(model->Margin(first), sum);
}

// A budget that never binds, and budget 0, leave every model exactly as it
// is without one.
TEST(MemoryBudgetModel, ABudgetThatNeverBindsChangesNothing) {
  const auto stream = Stream(3000, 8, 5);
  for (const char* optimizer : kOptimizers) {
    auto plain = *CreateModel(Config(optimizer, 0));
    ModelConfig unset;
    ASSERT_TRUE(SetOptimizerName(optimizer, &unset).ok());
    unset.loss = plain->config().loss;
    auto without_field = *CreateModel(unset);
    auto roomy = *CreateModel(Config(optimizer, uint64_t{1} << 30));
    for (const Labeled& l : stream) {
      const double label = Label(*plain, l.label);
      plain->Learn(l.features, label, 1.0);
      without_field->Learn(l.features, label, 1.0);
      roomy->Learn(l.features, label, 1.0);
    }
    EXPECT_EQ(roomy->Stats().coordinates_evicted, 0u) << optimizer;
    EXPECT_EQ(StateDigest(*plain), StateDigest(*without_field)) << optimizer;
    EXPECT_EQ(StateDigest(*roomy), StateDigest(*plain)) << optimizer;
  }
}

// The same examples give the same state, evictions included.
TEST(MemoryBudgetModel, EvictionsRepeat) {
  const auto stream = Stream(20'000, 8, 6);
  auto a = *CreateModel(Config("ftrl", kBudget));
  auto b = *CreateModel(Config("ftrl", kBudget));
  LearnWithinBudget(*a, stream, kBudget);
  LearnWithinBudget(*b, stream, kBudget);
  ASSERT_GT(a->Stats().coordinates_evicted, 0u);
  EXPECT_EQ(StateDigest(*a), StateDigest(*b));
}

TEST(MemoryBudgetModel, VariantsShareTheBudget) {
  ModelConfig config = Config("ftrl", 2 * kBudget);
  ModelVariant ada;
  ada.name = "ada";
  ASSERT_TRUE(SetOptimizerName("adagrad", &config).ok());
  ada.optimizer = config.optimizer;
  ASSERT_TRUE(SetOptimizerName("ftrl", &config).ok());
  config.variants.push_back(ada);
  auto model = *CreateModel(config);
  const auto stream = Stream(20'000, 8, 7);
  LearnWithinBudget(*model, stream, 2 * kBudget);
  const auto* variants = dynamic_cast<const VariantModel*>(model.get());
  ASSERT_NE(variants, nullptr);
  for (const char* name : {"primary", "ada"}) {
    const ModelStats stats = variants->Variant(name)->Stats();
    EXPECT_LE(stats.bytes, kBudget) << name;
    EXPECT_GT(stats.coordinates_evicted, 0u) << name;
    EXPECT_EQ(variants->Variant(name)->config().memory.max_bytes, kBudget) << name;
  }
  EXPECT_EQ(model->Stats().coordinates_evicted,
            variants->Variant("primary")->Stats().coordinates_evicted +
                variants->Variant("ada")->Stats().coordinates_evicted);
}

TEST(MemoryBudgetModel, ValidationNamesTheFieldAndTheLimit) {
  ModelConfig config;
  config.memory.max_bytes = 1000;
  EXPECT_EQ(ValidateModelConfig(config).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "memory.max_bytes is 1000; must be 0 (unbounded) or in 65536..1099511627776");
  config.memory.max_bytes = (uint64_t{1} << 40) + 1;
  EXPECT_EQ(ValidateModelConfig(config).code(), absl::StatusCode::kInvalidArgument);
  config.memory.max_bytes = uint64_t{1} << 40;
  EXPECT_TRUE(ValidateModelConfig(config).ok());
  config.memory.max_bytes = 64 << 10;
  EXPECT_TRUE(ValidateModelConfig(config).ok());
  config.num_shards = 64;
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "memory.max_bytes is 65536: 1024 bytes for each of the 64 shards of each of the "
            "model's 1 stores (the primary and each variant); must give each at least 4096");
  ASSERT_TRUE(SetOptimizerName("ada_fd", &config).ok());
  config.num_shards = 16;
  config.hashing.bits = 8;
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "memory.max_bytes budgets the sparse optimizers' coordinates; a dense learner has "
            "none");
}

}  // namespace
}  // namespace clickd
