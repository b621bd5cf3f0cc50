// CW's pieces (the normal quantile, the closed-form alpha) and its
// behaviour in a model; the stream reference is in optimizers_test.cc.
#include "core/optim/cw.h"

#include <cmath>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

double NormalCdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

TEST(Cw, NormalQuantileInvertsTheCdf) {
  for (double p : {1e-9, 0.01, 0.3, 0.5, 0.5000001, 0.6, 0.9, 0.99, 1 - 1e-9}) {
    EXPECT_NEAR(NormalCdf(NormalQuantile(p)), p, 4e-16 + 1e-14 * p) << p;
  }
  EXPECT_NEAR(NormalQuantile(0.5), 0.0, 1e-15);
  // The default eta is seed 001's phi = 1.
  EXPECT_NEAR(Cw(CwParams{}).phi(), 1.0, 1e-12);
}

// With one active coordinate the diagonal Sigma is the full one, so after
// the step the constraint M >= phi V holds with equality: M + alpha V =
// phi V / (1 + 2 alpha phi V). Covers both forms of the root in CwAlpha.
TEST(Cw, AlphaMeetsTheConstraintWithEquality) {
  for (double phi : {0.1, 1.0, 2.5}) {
    for (double m : {-50.0, -3.0, -0.2, 0.0, 0.05}) {
      for (double v : {1e-3, 0.3, 1.0, 40.0}) {
        if (m >= phi * v) continue;
        const double alpha = CwAlpha(m, v, phi);
        ASSERT_GT(alpha, 0) << phi << " " << m << " " << v;
        const double lhs = m + alpha * v, rhs = phi * v / (1 + 2 * alpha * phi * v);
        EXPECT_NEAR(lhs, rhs, 1e-12 * (std::abs(m) + phi * v)) << phi << " " << m << " " << v;
      }
    }
  }
}

TEST(Cw, NoStepWhenTheConstraintHoldsOrTheExampleIsEmpty) {
  EXPECT_EQ(CwAlpha(/*m=*/1.0, /*v=*/1.0, /*phi=*/1.0), 0.0);
  EXPECT_EQ(CwAlpha(2.0, 1.0, 1.0), 0.0);
  EXPECT_EQ(CwAlpha(0.0, 0.0, 1.0), 0.0);
}

std::unique_ptr<Model> CwModel(int shards = 16) {
  ModelConfig config;
  config.loss = LossType::kHinge;
  config.optimizer.type = OptimizerType::kCw;
  config.num_shards = shards;
  config.hashing.bias = false;
  return *CreateModel(config);
}

// One example: mu = alpha y a x, sigma = 1 / (1/a + 2 alpha phi x^2), and
// the new mean margin y mu x equals phi sigma x^2 (equality, as above).
TEST(Cw, FirstStepInAModel) {
  auto model = CwModel();
  const std::vector<HashedFeature> x = {{7, 0.5f}};
  EXPECT_EQ(model->Learn(x, -1, 1), 0.0);
  const double alpha = CwAlpha(0, 0.25, 1.0);
  EXPECT_NEAR(model->Margin(x), -alpha * 0.25, 1e-7);
  const double sigma = 1 / (1 + 2 * alpha * 0.25);
  EXPECT_NEAR(-model->Margin(x), sigma * 0.25, 1e-7);
}

TEST(Cw, ZeroImportanceAndEmptyExamplesLeaveTheWeights) {
  auto model = CwModel();
  const std::vector<HashedFeature> x = {{1, 1.0f}, {2, 0.5f}};
  model->Learn(x, 1, 1);
  const double before = model->Margin(x);
  model->Learn(x, -1, 0);
  EXPECT_EQ(model->Margin(x), before);
  EXPECT_EQ(model->Learn({}, 1, 1), 0.0);
  EXPECT_EQ(model->Margin(x), before);
  EXPECT_EQ(model->Updates(), 3u);
}

TEST(Cw, ShardCountDoesNotChangeTheModel) {
  auto a = CwModel(1), b = CwModel(64);
  for (int i = 0; i < 2000; ++i) {
    const std::vector<HashedFeature> x = {{uint64_t(i % 37), 0.3f}, {uint64_t(100 + i % 11), 1.0f}};
    const double label = (i % 37 < 15) == (i % 11 < 4) ? 1 : -1;
    a->Learn(x, label, 1);
    b->Learn(x, label, 1);
  }
  EXPECT_EQ(a->SerializeState(), b->SerializeState());
  EXPECT_EQ(a->Stats().state_bytes_per_coordinate, 16u);
}

}  // namespace
}  // namespace clickd
