// Dense blocks in models: the dense part of the margin and of the step
// against a plain reference (the learner fed by hand), validation of dense
// values, and the dense state through snapshots, the config encoding and
// the update log.
#include "core/model/dense_block.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "core/model/model.h"
#include "core/model/serving.h"
#include "core/optim/dense/ada_diag.h"
#include "core/optim/loss.h"
#include "core/persist/batch_codec.h"
#include "core/persist/snapshot.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

ModelConfig DenseConfig(DenseOptimizerType type = DenseOptimizerType::kAdaDiag) {
  ModelConfig c;
  c.name = "dense";
  c.dense_namespaces = {{"user_emb", 3}, {"ad_emb", 2}};
  c.dense_optimizer.type = type;
  c.dense_optimizer.eta = 0.5;
  c.dense_optimizer.tau = 2;
  return c;
}

Example WithDense(std::vector<DenseValues> dense, std::vector<Namespace> sparse = {}) {
  Example e;
  e.namespaces = std::move(sparse);
  e.dense = std::move(dense);
  return e;
}

std::vector<Example> RandomExamples(int n, uint32_t seed, bool sparse) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<Example> out;
  for (int i = 0; i < n; ++i) {
    std::vector<Namespace> ns;
    if (sparse) ns.push_back({"ad", {Feature::WithId(rng() % 20)}});
    out.push_back(WithDense(
        {{"user_emb", {normal(rng), normal(rng), normal(rng)}}, {"ad_emb", {normal(rng), 1.0f}}},
        std::move(ns)));
  }
  return out;
}

std::vector<TrainingExample> Batch(const std::vector<Example>& examples) {
  std::vector<TrainingExample> batch;
  for (size_t i = 0; i < examples.size(); ++i) {
    const float y = examples[i].dense[0].values[0] + examples[i].dense[1].values[0] > 0 ? 1 : 0;
    batch.push_back({nullptr, &examples[i], y, 1.0f});
  }
  return batch;
}

// A dense-only model (no sparse features, no bias) is exactly its learner
// fed the logistic gradient dloss * x by hand.
TEST(DenseBlock, DenseOnlyModelIsItsLearnerFedByHand) {
  ModelConfig config = DenseConfig();
  config.hashing.bias = false;
  auto model = *CreateModel(config);
  AdaDiagParams params;
  params.eta = config.dense_optimizer.eta;
  params.delta = config.dense_optimizer.delta;
  auto reference = *NewAdaDiag(params, 5);

  const std::vector<Example> examples = RandomExamples(300, 1, /*sparse=*/false);
  const std::vector<TrainingExample> batch = Batch(examples);
  const std::vector<ScoredExample> scored = LearnBatch(*model, batch);
  for (size_t i = 0; i < batch.size(); ++i) {
    Eigen::VectorXd x(5);
    const auto& d = examples[i].dense;
    x << d[0].values[0], d[0].values[1], d[0].values[2], d[1].values[0], d[1].values[1];
    const double margin = reference->weights().dot(x);
    ASSERT_NEAR(scored[i].margin, margin, 1e-5 * (1 + std::abs(margin))) << i;
    reference->Update(LossGradient(LossType::kLogistic, margin, batch[i].label) * x);
  }
  EXPECT_EQ(model->dense_block()->SerializeState(), reference->SerializeState());
  // And it learned: the last 100 predictions beat the first 100.
  double first = 0, last = 0;
  for (int i = 0; i < 100; ++i) {
    first += Loss(LossType::kLogistic, scored[i].margin, batch[i].label);
    last += Loss(LossType::kLogistic, scored[200 + i].margin, batch[200 + i].label);
  }
  EXPECT_LT(last, 0.8 * first);
}

// With sparse features too, the margin is the sum of both parts and one
// gradient feeds both.
TEST(DenseBlock, MarginIsSparsePlusDense) {
  auto model = *CreateModel(DenseConfig());
  const std::vector<Example> examples = RandomExamples(200, 2, /*sparse=*/true);
  LearnBatch(*model, Batch(examples));
  const Example& e = examples[7];
  std::vector<HashedFeature> features;
  model->hasher().Hash(e, &features);
  Eigen::VectorXd x;
  ASSERT_TRUE(model->dense_block()->Assemble(nullptr, e, &x));
  const double expected = model->Margin(features) + model->dense_block()->Margin(x);
  const std::vector<CandidateScore> scores = ScoreCandidates(*model, Example{}, {e});
  EXPECT_NEAR(scores[0].margin, expected, 1e-12);
  EXPECT_NE(model->dense_block()->Margin(x), 0.0);
  EXPECT_NE(model->Margin(features), 0.0);
}

TEST(DenseBlock, ValuesAreCheckedNamingTheFieldAndTheLimit) {
  auto model = *CreateModel(DenseConfig());
  auto check = [&](const Example& e, const Example* context = nullptr) {
    return CheckDenseValues(*model, context, "context", e, "examples[0].example");
  };
  EXPECT_TRUE(check(WithDense({{"user_emb", {1, 2, 3}}})).ok());
  EXPECT_TRUE(check(WithDense({})).ok());
  EXPECT_EQ(check(WithDense({{"user_emb", {1, 2}}})).message(),
            "examples[0].example.dense[0].values has 2 entries; dense namespace \"user_emb\" has "
            "dimension 3");
  EXPECT_EQ(check(WithDense({{"nope", {1}}})).message(),
            "examples[0].example.dense[0].namespace \"nope\" is not a dense namespace of this "
            "model");
  EXPECT_EQ(check(WithDense({{"ad_emb", {1, NAN}}})).message(),
            "examples[0].example.dense[0].values[1] is nan; must be finite");
  const Example context = WithDense({{"user_emb", {1, 2, 3}}});
  EXPECT_EQ(check(WithDense({{"user_emb", {1, 2, 3}}}), &context).message(),
            "examples[0].example.dense[0].namespace \"user_emb\" is given twice");
  EXPECT_TRUE(check(WithDense({{"ad_emb", {1, 2}}}), &context).ok());

  auto sparse_only = *CreateModel(ModelConfig{});
  EXPECT_EQ(
      CheckDenseValues(*sparse_only, nullptr, "context", WithDense({{"x", {1}}}), "candidates[2]")
          .message(),
      "candidates[2].dense has 1 entries; model \"default\" declares no dense namespaces");
}

TEST(DenseBlock, ConfigsAreValidated) {
  ModelConfig config = DenseConfig(DenseOptimizerType::kAdaFull);
  config.dense_namespaces = {{"big", 3000}};
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "dense_optimizer ada_full takes 1..2048 dimensions; the dense block has 3000");
  config = DenseConfig();
  config.dense_namespaces = {{"a", 2}, {"a", 3}};
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "dense_namespaces[1].name \"a\" is declared twice");
  config = DenseConfig();
  config.dense_namespaces[0].dim = 0;
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "dense_namespaces[0].dim is 0; must be in 1..65536");
  config = DenseConfig(DenseOptimizerType::kAdaDiag);
  config.dense_namespaces.clear();
  for (size_t i = 0; i <= kMaxDenseNamespaces; ++i) {
    config.dense_namespaces.push_back({absl::StrCat("n", i), 1});
  }
  EXPECT_EQ(ValidateModelConfig(config).message(),
            "dense_namespaces has 65 entries; the limit is 64");
  config = DenseConfig(DenseOptimizerType::kAdaFd);
  config.dense_optimizer.tau = 9;  // more than the 5 dimensions
  EXPECT_FALSE(ValidateModelConfig(config).ok());
  config = DenseConfig();
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPa;
  EXPECT_EQ(ValidateModelConfig(config).code(), absl::StatusCode::kInvalidArgument);
  for (const char* name : {"ada_diag", "ada_diag_da", "ada_full", "ada_full_da", "ada_fd",
                           "ada_fd_da", "ons", "fd_son", "metagrad"}) {
    config = DenseConfig(*ParseDenseOptimizerType(name));
    EXPECT_EQ(DenseOptimizerTypeName(config.dense_optimizer.type), name);
    auto model = CreateModel(config);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    LearnBatch(**model, Batch(RandomExamples(20, 3, true)));
  }
}

// The dense state survives a snapshot and the config survives its encoding.
TEST(DenseBlock, SnapshotsCarryTheDenseStateAndConfig) {
  ModelConfig config = DenseConfig(DenseOptimizerType::kAdaFd);
  config.dense_optimizer.eta = 0.25;
  auto model = *CreateModel(config);
  LearnBatch(*model, Batch(RandomExamples(100, 4, true)));
  const std::string bytes = EncodeSnapshot({model->config(), 9, model->ExportState()});
  auto decoded = DecodeSnapshot(bytes);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->config.dense_namespaces.size(), 2u);
  EXPECT_EQ(decoded->config.dense_namespaces[1].name, "ad_emb");
  EXPECT_EQ(decoded->config.dense_optimizer.type, DenseOptimizerType::kAdaFd);
  EXPECT_EQ(decoded->config.dense_optimizer.eta, 0.25);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  // Continuing both gives the same model.
  const std::vector<Example> more = RandomExamples(50, 5, true);
  LearnBatch(*model, Batch(more));
  LearnBatch(*restored, Batch(more));
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
  // A state without the dense block does not load into a model with one.
  auto plain = *CreateModel(ModelConfig{});
  EXPECT_EQ(restored->ImportState(plain->ExportState()).code(), absl::StatusCode::kDataLoss);
}

// The update log's batches keep dense values, so a replay rebuilds them.
TEST(DenseBlock, BatchCodecKeepsDenseValues) {
  const std::vector<Example> examples = RandomExamples(5, 6, true);
  const std::vector<TrainingExample> batch = Batch(examples);
  std::string record;
  EncodeBatch(batch, &record);
  auto decoded = DecodeBatch(record);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  ASSERT_EQ(decoded->batch.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    ASSERT_EQ(decoded->batch[i].example->dense.size(), 2u);
    EXPECT_EQ(decoded->batch[i].example->dense[0].name, "user_emb");
    EXPECT_EQ(decoded->batch[i].example->dense[0].values, examples[i].dense[0].values);
  }
  auto a = *CreateModel(DenseConfig());
  auto b = *CreateModel(DenseConfig());
  LearnBatch(*a, batch);
  LearnBatch(*b, decoded->batch);
  EXPECT_EQ(a->SerializeState(), b->SerializeState());
}

}  // namespace
}  // namespace clickd
