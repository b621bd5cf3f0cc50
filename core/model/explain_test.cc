#include "core/model/explain.h"

#include <cmath>
#include <limits>
#include <vector>

#include "core/model/model.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(TopContributions, LargestMagnitudeFirstTiesByKey) {
  const std::vector<HashedFeature> x = {{7, 1.0f}, {3, -2.0f}, {9, 0.5f}, {1, 4.0f}, {5, 1.0f}};
  const std::vector<double> w = {0.5, 1.0, -4.0, 0.0, -2.0};
  // Contributions: 7: 0.5, 3: -2, 9: -2, 1: 0, 5: -2.
  auto top = TopContributions(x, w, 3);
  ASSERT_TRUE(top.ok());
  const std::vector<Contribution> expected = {
      {3, -2.0, 1.0, -2.0}, {5, 1.0, -2.0, -2.0}, {9, 0.5, -4.0, -2.0}};
  EXPECT_EQ(*top, expected);
}

TEST(TopContributions, KBeyondTheListReturnsEveryFeature) {
  const std::vector<HashedFeature> x = {{2, 1.0f}, {1, 1.0f}, {4, 3.0f}};
  const std::vector<double> w = {0.0, 0.0, std::numeric_limits<double>::quiet_NaN()};
  auto top = TopContributions(x, w, 10);
  ASSERT_TRUE(top.ok());
  ASSERT_EQ(top->size(), 3u);
  // Zero contributions kept, ties by key; NaN ranks last.
  EXPECT_EQ((*top)[0].key, 1u);
  EXPECT_EQ((*top)[1].key, 2u);
  EXPECT_EQ((*top)[2].key, 4u);
  EXPECT_TRUE(std::isnan((*top)[2].contribution));
  EXPECT_TRUE(TopContributions(x, w, 0)->empty());
  EXPECT_TRUE(TopContributions({}, {}, 5)->empty());
}

TEST(TopContributions, RefusesMismatchedSizes) {
  const std::vector<HashedFeature> x = {{1, 1.0f}, {2, 1.0f}};
  const std::vector<double> w = {1.0};
  EXPECT_EQ(TopContributions(x, w, 1).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TopContributions, OfAModelAddUpToItsMargin) {
  ModelConfig config;
  auto model = *CreateModel(config);
  const std::vector<HashedFeature> x = {{1, 1.0f}, {2, -0.5f}, {3, 2.0f}, {4, 1.0f}};
  for (int i = 0; i < 50; ++i) {
    model->Learn(x, i % 4 == 0 ? 1.0 : 0.0, 1.0);
    model->Learn({{1, 1.0f}, {3, 1.0f}}, 1.0, 1.0);
  }
  std::vector<double> w(x.size());
  model->Weights(x, absl::MakeSpan(w));
  auto top = TopContributions(x, w, x.size());
  ASSERT_TRUE(top.ok());
  double sum = 0;
  for (const Contribution& c : *top) sum += c.contribution;
  EXPECT_NEAR(sum, model->Margin(x), 1e-12);
  for (size_t i = 1; i < top->size(); ++i) {
    EXPECT_GE(std::abs((*top)[i - 1].contribution), std::abs((*top)[i].contribution));
  }
}

}  // namespace
}  // namespace clickd
