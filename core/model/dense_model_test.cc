// DenseModel: a dense learner chosen as the model's optimizer learns the
// hashed features folded into 2^bits slots; checked against the learner fed
// by hand, through a snapshot, and by name.
#include "core/model/dense_model.h"

#include <random>

#include "core/model/serving.h"
#include "core/optim/dense/ada_full.h"
#include "core/optim/loss.h"
#include "core/persist/snapshot.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

ModelConfig FullConfig() {
  ModelConfig c;
  c.name = "full";
  EXPECT_TRUE(SetOptimizerName("ada_full", &c).ok());
  c.hashing.bits = 4;
  c.dense_optimizer.eta = 0.3;
  return c;
}

std::vector<Example> Examples(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<Example> out(n);
  for (Example& e : out) {
    e.namespaces.push_back({"ad", {Feature::WithId(rng() % 6), Feature::Named("x", 0.5f)}});
  }
  return out;
}

TEST(DenseModel, IsItsLearnerOverTheFoldedFeatures) {
  const ModelConfig config = FullConfig();
  auto model = *CreateModel(config);
  EXPECT_EQ(OptimizerName(model->config()), "ada_full");
  EXPECT_EQ(model->Stats().coordinates, 16u);
  AdaFullParams params;
  params.eta = 0.3;
  auto reference = *NewAdaFull(params, 16);

  const std::vector<Example> examples = Examples(200, 1);
  std::vector<TrainingExample> batch;
  for (size_t i = 0; i < examples.size(); ++i) {
    batch.push_back({nullptr, &examples[i], (i % 3 == 0) ? 1.0f : 0.0f, 1.0f});
  }
  const std::vector<ScoredExample> scored = LearnBatch(*model, batch);
  for (size_t i = 0; i < batch.size(); ++i) {
    std::vector<HashedFeature> features;
    model->hasher().Hash(examples[i], &features);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(16);
    for (const HashedFeature& f : features) x[f.key] += f.value;  // keys fold into 16 slots
    const double margin = reference->weights().dot(x);
    ASSERT_NEAR(scored[i].margin, margin, 1e-5 * (1 + std::abs(margin))) << i;
    reference->Update(LossGradient(LossType::kLogistic, margin, batch[i].label) * x);
  }
  EXPECT_EQ(model->dense_block()->SerializeState(), reference->SerializeState());
  EXPECT_EQ(model->Updates(), 200u);

  // Through a snapshot and back.
  auto decoded = DecodeSnapshot(EncodeSnapshot({model->config(), 3, model->ExportState()}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->config.optimizer.type, OptimizerType::kDense);
  EXPECT_EQ(decoded->config.dense_optimizer.type, DenseOptimizerType::kAdaFull);
  auto restored = *CreateModel(decoded->config);
  ASSERT_TRUE(restored->ImportState(decoded->state).ok());
  EXPECT_EQ(restored->SerializeState(), model->SerializeState());
}

TEST(DenseModel, NamesAndLimits) {
  ModelConfig c;
  EXPECT_TRUE(SetOptimizerName("ftrl", &c).ok());
  EXPECT_EQ(c.optimizer.type, OptimizerType::kFtrl);
  EXPECT_TRUE(SetOptimizerName("fd_son", &c).ok());
  EXPECT_EQ(c.optimizer.type, OptimizerType::kDense);
  EXPECT_EQ(OptimizerName(c), "fd_son");
  const absl::Status unknown = SetOptimizerName("adam", &c);
  EXPECT_EQ(unknown.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find("or a dense learner for the whole model: ada_diag"),
            std::string::npos)
      << unknown;
  c.hashing.bits = 0;
  EXPECT_EQ(ValidateModelConfig(c).message(),
            "hashing.bits is 0; optimizer fd_son learns one dense vector over 2^bits folded "
            "features and needs bits in 1..16");
  EXPECT_TRUE(SetOptimizerName("ada_full", &c).ok());
  c.hashing.bits = 12;
  EXPECT_EQ(ValidateModelConfig(c).message(),
            "dense_optimizer ada_full takes 1..2048 dimensions; the dense block has 4096");
  // Every dense learner runs as a model.
  for (const char* name : {"ada_diag", "ada_diag_da", "ada_full", "ada_full_da", "ada_fd",
                           "ada_fd_da", "ons", "fd_son", "metagrad"}) {
    ModelConfig config;
    ASSERT_TRUE(SetOptimizerName(name, &config).ok());
    config.hashing.bits = 3;
    config.dense_optimizer.tau = 2;
    auto model = CreateModel(config);
    ASSERT_TRUE(model.ok()) << name << ": " << model.status();
    const std::vector<Example> examples = Examples(20, 2);
    std::vector<TrainingExample> batch;
    for (const Example& e : examples) batch.push_back({nullptr, &e, 1.0f, 1.0f});
    LearnBatch(**model, batch);
    EXPECT_EQ((*model)->Updates(), 20u) << name;
  }
}

}  // namespace
}  // namespace clickd
