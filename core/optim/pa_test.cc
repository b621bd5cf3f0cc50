// PA-I's behaviour in a model; the stream reference is in optimizers_test.cc.
#include "core/optim/pa.h"

#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

std::unique_ptr<Model> PaModel(double c, int shards = 16) {
  ModelConfig config;
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kPa;
  config.optimizer.pa.c = c;
  config.num_shards = shards;
  config.hashing.bias = false;
  return *CreateModel(config);
}

// Uncapped, the step lands exactly on the margin: y (w . x) = 1 afterwards.
// Capped, it moves the margin by C ||x||^2 (times the importance weight).
TEST(Pa, StepReachesTheMarginOrIsCappedAtC) {
  const std::vector<HashedFeature> x = {{1, 1.0f}, {2, 0.5f}};  // ||x||^2 = 1.25
  auto big = PaModel(100);
  EXPECT_EQ(big->Learn(x, -1, 1), 0.0);
  EXPECT_NEAR(big->Margin(x), -1.0, 1e-6);
  big->Learn(x, 0, 1);  // 0 is the negative label; the loss is 0 now: no step
  EXPECT_NEAR(big->Margin(x), -1.0, 1e-6);
  auto small = PaModel(0.1);
  small->Learn(x, 1, 1);
  EXPECT_NEAR(small->Margin(x), 0.1 * 1.25, 1e-6);
  small->Learn(x, 1, 2);
  EXPECT_NEAR(small->Margin(x), 0.1 * 1.25 + 2 * 0.1 * 1.25, 1e-6);
}

TEST(Pa, ZeroImportanceAndEmptyExamplesLeaveTheWeights) {
  auto model = PaModel(1);
  const std::vector<HashedFeature> x = {{1, 1.0f}};
  model->Learn(x, 1, 0);
  EXPECT_EQ(model->Margin(x), 0.0);
  EXPECT_EQ(model->Learn({}, 1, 1), 0.0);
  const std::vector<HashedFeature> zero = {{1, 0.0f}};
  model->Learn(zero, 1, 1);
  EXPECT_EQ(model->Margin(x), 0.0);
  EXPECT_EQ(model->Updates(), 3u);
}

TEST(Pa, ShardCountDoesNotChangeTheModel) {
  auto a = PaModel(0.5, 1), b = PaModel(0.5, 64);
  for (int i = 0; i < 2000; ++i) {
    const std::vector<HashedFeature> x = {{uint64_t(i % 37), 0.3f}, {uint64_t(100 + i % 11), 1.0f}};
    const double label = (i % 37 < 15) == (i % 11 < 4) ? 1 : -1;
    a->Learn(x, label, 1);
    b->Learn(x, label, 1);
  }
  EXPECT_EQ(a->SerializeState(), b->SerializeState());
  EXPECT_EQ(a->Stats().state_bytes_per_coordinate, 12u);
}

}  // namespace
}  // namespace clickd
