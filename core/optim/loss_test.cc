#include "core/optim/loss.h"

#include <cmath>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(Loss, LogisticValuesAndGradient) {
  EXPECT_NEAR(Loss(LossType::kLogistic, 0.0, 1.0), std::log(2.0), 1e-15);
  // Labels 0 and -1 are the same class.
  EXPECT_DOUBLE_EQ(Loss(LossType::kLogistic, 0.7, 0.0), Loss(LossType::kLogistic, 0.7, -1.0));
  EXPECT_NEAR(Loss(LossType::kLogistic, 2.0, 1.0), std::log1p(std::exp(-2.0)), 1e-15);
  EXPECT_NEAR(Loss(LossType::kLogistic, 800.0, 0.0), 800.0, 1e-9);  // no overflow
  EXPECT_NEAR(LossGradient(LossType::kLogistic, 0.3, 1.0), Sigmoid(0.3) - 1.0, 1e-15);
  EXPECT_NEAR(LossGradient(LossType::kLogistic, 0.3, -1.0), Sigmoid(0.3), 1e-15);
  // Gradient matches a central difference.
  for (double m : {-3.0, -0.2, 0.0, 1.5}) {
    const double h = 1e-6;
    const double numeric =
        (Loss(LossType::kLogistic, m + h, 1.0) - Loss(LossType::kLogistic, m - h, 1.0)) / (2 * h);
    EXPECT_NEAR(LossGradient(LossType::kLogistic, m, 1.0), numeric, 1e-8);
  }
}

TEST(Loss, SquaredAndHinge) {
  EXPECT_DOUBLE_EQ(Loss(LossType::kSquared, 3.0, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(LossGradient(LossType::kSquared, 3.0, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(Loss(LossType::kHinge, 0.25, 1.0), 0.75);
  EXPECT_DOUBLE_EQ(Loss(LossType::kHinge, 0.25, -1.0), 1.25);
  EXPECT_DOUBLE_EQ(Loss(LossType::kHinge, 2.0, 1.0), 0.0);
  EXPECT_DOUBLE_EQ(LossGradient(LossType::kHinge, 0.25, 1.0), -1.0);
  EXPECT_DOUBLE_EQ(LossGradient(LossType::kHinge, 0.25, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(LossGradient(LossType::kHinge, 2.0, 1.0), 0.0);
}

TEST(Loss, LinkAndSigmoidExtremes) {
  EXPECT_DOUBLE_EQ(Link(LossType::kLogistic, 0.0), 0.5);
  EXPECT_DOUBLE_EQ(Link(LossType::kHinge, -2.0), -2.0);
  EXPECT_GT(Sigmoid(-800.0), -1e-300);
  EXPECT_EQ(Sigmoid(800.0), 1.0);
}

TEST(Loss, LabelDomains) {
  EXPECT_TRUE(CheckLabel(LossType::kLogistic, 0.0, "label").ok());
  EXPECT_TRUE(CheckLabel(LossType::kLogistic, -1.0, "label").ok());
  const absl::Status s = CheckLabel(LossType::kLogistic, 0.5, "examples[3].label");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("examples[3].label is 0.5"), std::string::npos);
  EXPECT_FALSE(CheckLabel(LossType::kHinge, 2.0, "label").ok());
  EXPECT_TRUE(CheckLabel(LossType::kSquared, 2.5, "label").ok());
  EXPECT_FALSE(CheckLabel(LossType::kSquared, std::nan(""), "label").ok());
  EXPECT_EQ(*ParseLossType("hinge"), LossType::kHinge);
  EXPECT_FALSE(ParseLossType("huber").ok());
}

}  // namespace
}  // namespace clickd
