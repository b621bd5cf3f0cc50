#include "core/model/model.h"

#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "gtest/gtest.h"

namespace clickd {
namespace {

std::vector<LabeledExample> ClickStream(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<LabeledExample> out;
  for (int i = 0; i < n; ++i) {
    LabeledExample le;
    const uint64_t user = rng() % 50, ad = rng() % 20;
    le.example.namespaces.push_back({"user", {Feature::WithId(user)}});
    le.example.namespaces.push_back({"ad", {Feature::WithId(ad)}});
    // Clicks depend only on a few ads, so most weights should be zero under L1.
    le.label = (ad < 3 && rng() % 3 == 0) ? 1.0f : 0.0f;
    out.push_back(le);
  }
  return out;
}

double LearnAll(Model& model, const std::vector<LabeledExample>& data) {
  std::vector<HashedFeature> fs;
  double loss = 0;
  for (const auto& le : data) {
    fs.clear();
    model.hasher().Hash(le.example, &fs);
    loss += Loss(model.config().loss, model.Learn(fs, le.label, le.importance), le.label);
  }
  return loss / data.size();
}

TEST(Model, FtrlL1GivesExactZeros) {
  ModelConfig dense, sparse;
  sparse.optimizer.ftrl.lambda1 = 15.0;
  auto a = CreateModel(dense), b = CreateModel(sparse);
  ASSERT_TRUE(a.ok() && b.ok());
  const auto data = ClickStream(10000, 1);
  LearnAll(**a, data);
  LearnAll(**b, data);
  HashingConfig no_bias;
  no_bias.bias = false;
  auto margin_of = [&](const Model& model, const char* ns, uint64_t id) {
    Example e;
    e.namespaces.push_back({ns, {Feature::WithId(id)}});
    std::vector<HashedFeature> fs;
    FeatureHasher(no_bias).Hash(e, &fs);
    return model.Margin(fs);
  };
  int zeros_dense = 0, zeros_sparse = 0;
  for (uint64_t id = 0; id < 50; ++id) {
    zeros_dense += margin_of(**a, "user", id) == 0.0;
    zeros_sparse += margin_of(**b, "user", id) == 0.0;
  }
  EXPECT_EQ(zeros_dense, 0);
  // User ids carry no signal: their z is a random walk of about 3 nats
  // after 200 visits, well inside lambda1 = 15, so L1 zeroes them exactly.
  EXPECT_GE(zeros_sparse, 48);
  // The ads that do get clicked keep non-zero weights.
  EXPECT_GT(margin_of(**b, "ad", 0), 0.0);
}

TEST(Model, SameDataSameBytes) {
  for (const char* name : {"ftrl", "adagrad", "adagrad_da", "pc_ogd", "global_ogd", "sgd"}) {
    ModelConfig config;
    config.optimizer.type = *ParseOptimizerType(name);
    auto a = CreateModel(config), b = CreateModel(config);
    const auto data = ClickStream(5000, 7);
    LearnAll(**a, data);
    LearnAll(**b, data);
    EXPECT_EQ((*a)->SerializeState(), (*b)->SerializeState()) << name;
    EXPECT_GT((*a)->SerializeState().size(), 70u * 8) << name;
  }
}

TEST(Model, ShardCountDoesNotChangeTheModel) {
  ModelConfig one, many;
  one.num_shards = 1;
  many.num_shards = 64;
  auto a = CreateModel(one), b = CreateModel(many);
  const auto data = ClickStream(3000, 3);
  LearnAll(**a, data);
  LearnAll(**b, data);
  EXPECT_EQ((*a)->SerializeState(), (*b)->SerializeState());
}

TEST(Model, LearnsAndStats) {
  auto model = CreateModel(ModelConfig{});
  const auto data = ClickStream(20000, 2);
  const double first = LearnAll(**model, {data.begin(), data.begin() + 2000});
  const double later = LearnAll(**model, {data.begin() + 2000, data.end()});
  EXPECT_LT(later, first);
  const ModelStats stats = (*model)->Stats();
  EXPECT_EQ(stats.updates, 20000u);
  EXPECT_EQ(stats.coordinates, 50u + 20u + 1u);  // users, ads, bias
  EXPECT_EQ(stats.state_bytes_per_coordinate, 16u);
  EXPECT_GT(stats.bytes, 71u * 16);
}

TEST(Model, PredictAppliesLink) {
  ModelConfig config;
  auto model = CreateModel(config);
  Example e;
  EXPECT_DOUBLE_EQ((*model)->Predict(e), 0.5);  // logistic of margin 0
  config.loss = LossType::kSquared;
  EXPECT_DOUBLE_EQ((*CreateModel(config))->Predict(e), 0.0);
}

TEST(Model, RejectsInvalidConfigNamingTheField) {
  ModelConfig config;
  config.num_shards = 0;
  EXPECT_NE(CreateModel(config).status().message().find("num_shards"), std::string::npos);
  config = ModelConfig{};
  config.optimizer.ftrl.alpha = -1;
  EXPECT_NE(CreateModel(config).status().message().find("ftrl.alpha"), std::string::npos);
  config = ModelConfig{};
  config.optimizer.type = OptimizerType::kSgd;
  config.optimizer.sgd.eta = std::nan("");
  EXPECT_EQ(CreateModel(config).status().code(), absl::StatusCode::kInvalidArgument);
}

// Predictions run while another thread learns: every margin is finite and
// the store stays coherent. Run under TSan in the test command.
TEST(Model, ConcurrentPredictAndLearn) {
  auto model = CreateModel(ModelConfig{});
  const auto data = ClickStream(20000, 4);
  std::atomic<bool> done{false};
  std::thread learner([&] {
    LearnAll(**model, data);
    done = true;
  });
  std::vector<std::thread> readers;
  std::atomic<int> bad{0};
  for (int r = 0; r < 2; ++r) {
    readers.emplace_back([&] {
      for (int i = 0; !done.load() && i < 1000000; ++i) {
        const double p = (*model)->Predict(data[i % data.size()].example);
        if (!(p > 0 && p < 1)) bad.fetch_add(1);
      }
    });
  }
  learner.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ((*model)->Stats().updates, 20000u);
}

}  // namespace
}  // namespace clickd
