#include "core/eval/metrics.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

// Margins pass through float, so hand-computed values hold to about 1e-7.
constexpr double kFloatTol = 1e-6;

std::vector<ScoredExample> Examples(const std::vector<ScoredExample>& v) { return v; }

// A uniform double in [0, 1) that is the same on every platform.
double Uniform01(std::mt19937_64& rng) { return (rng() >> 11) * 0x1.0p-53; }

// Draws a logistic dataset whose labels follow the margins, so the AUC is
// well above 1/2. Margins are rounded to 1/8 when `tied`, to force ties.
std::vector<ScoredExample> RandomLogistic(int n, uint64_t seed, bool tied = false) {
  std::mt19937_64 rng(seed);
  std::vector<ScoredExample> out;
  for (int i = 0; i < n; ++i) {
    double margin = 6.0 * Uniform01(rng) - 3.0;
    if (tied) margin = std::round(margin * 8) / 8;
    const float label = Uniform01(rng) < Sigmoid(margin) ? 1.0f : 0.0f;
    const float weight = static_cast<float>(0.25 + 1.75 * Uniform01(rng));
    out.push_back({static_cast<float>(margin), label, weight});
  }
  return out;
}

// The O(n^2) definition: weighted share of positive-negative pairs ranked
// correctly, ties counted half.
double BruteForceAuc(const std::vector<ScoredExample>& v) {
  double wins = 0, pairs = 0;
  for (const ScoredExample& p : v) {
    if (!(p.label > 0)) continue;
    for (const ScoredExample& n : v) {
      if (n.label > 0) continue;
      const double w = double{p.importance} * n.importance;
      pairs += w;
      wins += p.margin > n.margin ? w : (p.margin == n.margin ? 0.5 * w : 0.0);
    }
  }
  return wins / pairs;
}

TEST(MetricsTest, LogisticHandComputed) {
  // Probabilities 1/2, 3/4 and 1/4; the negative has weight 2.
  const double ln3 = std::log(3.0);
  const MetricsSummary s = Summarize(
      LossType::kLogistic, Examples({{0.0f, 1, 1}, {float(ln3), 1, 1}, {float(-ln3), 0, 2}}));
  EXPECT_EQ(s.examples, 3u);
  EXPECT_DOUBLE_EQ(s.weight, 4.0);
  const double logloss = (std::log(2.0) + 3 * std::log(4.0 / 3)) / 4;
  EXPECT_NEAR(s.logloss, logloss, kFloatTol);
  EXPECT_NEAR(s.loss, logloss, kFloatTol);
  EXPECT_NEAR(s.hinge, 0.25, kFloatTol);  // only the zero margin has y m < 1
  EXPECT_DOUBLE_EQ(s.mistakes, 0.25);     // a zero margin is a mistake
  EXPECT_NEAR(s.calibration, (0.5 + 0.75 + 2 * 0.25) / 2, kFloatTol);
  EXPECT_NEAR(s.squared, (0.25 + 0.0625 + 2 * 0.0625) / 4, kFloatTol);
  EXPECT_DOUBLE_EQ(s.auc, 1.0);
}

TEST(MetricsTest, LoglossClipsSaturatedProbabilities) {
  const MetricsSummary s = Summarize(LossType::kLogistic, Examples({{100.0f, 0, 1}}));
  EXPECT_NEAR(s.logloss, -std::log(1e-15), 1e-3);
  EXPECT_NEAR(s.loss, 100.0, 1e-9);  // the model's own loss is not clipped
  EXPECT_DOUBLE_EQ(s.mistakes, 1.0);
}

TEST(MetricsTest, SquaredWithZeroOneLabelsThresholdsAtHalf) {
  // 0.5 is predicted negative, so the second example is the one mistake.
  const MetricsSummary s =
      Summarize(LossType::kSquared, Examples({{0.6f, 1, 1}, {0.5f, 1, 1}, {0.2f, 0, 1}}));
  EXPECT_NEAR(s.mistakes, 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.squared, (0.16 + 0.25 + 0.04) / 3, kFloatTol);
  EXPECT_NEAR(s.loss, (0.16 + 0.25 + 0.04) / 6, kFloatTol);
  EXPECT_NEAR(s.hinge, (0.4 + 0.5 + 1.2) / 3, kFloatTol);
  EXPECT_DOUBLE_EQ(s.auc, 1.0);
  EXPECT_TRUE(std::isnan(s.logloss));
  EXPECT_TRUE(std::isnan(s.calibration));
}

TEST(MetricsTest, SquaredWithOtherLabelsThresholdsAtZero) {
  // Margin 0 is predicted negative and its label -1 is negative: correct.
  const MetricsSummary s =
      Summarize(LossType::kSquared, Examples({{0.0f, -1, 1}, {2.0f, 3, 1}, {-1.0f, 0.5f, 1}}));
  EXPECT_NEAR(s.mistakes, 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.squared, (1.0 + 1.0 + 2.25) / 3, 1e-12);
  EXPECT_NEAR(s.loss, (1.0 + 1.0 + 2.25) / 6, 1e-12);
}

TEST(MetricsTest, HingeHandComputed) {
  // Label 0 reads as -1; the squared error is against the raw label.
  const MetricsSummary s =
      Summarize(LossType::kHinge, Examples({{0.5f, 1, 1}, {-2.0f, 0, 1}, {0.0f, 0, 1}}));
  EXPECT_NEAR(s.hinge, 1.5 / 3, 1e-12);
  EXPECT_NEAR(s.loss, 1.5 / 3, 1e-12);
  EXPECT_NEAR(s.mistakes, 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.squared, (0.25 + 4.0 + 0.0) / 3, 1e-12);
  EXPECT_DOUBLE_EQ(s.auc, 1.0);
  EXPECT_TRUE(std::isnan(s.logloss));
  EXPECT_TRUE(std::isnan(s.calibration));
}

TEST(MetricsTest, EmptyIsAllNaN) {
  const MetricsSummary s = Summarize(LossType::kLogistic, {});
  EXPECT_EQ(s.examples, 0u);
  EXPECT_EQ(s.weight, 0.0);
  for (double v : {s.loss, s.logloss, s.auc, s.hinge, s.mistakes, s.calibration, s.squared}) {
    EXPECT_TRUE(std::isnan(v));
  }
}

TEST(MetricsTest, NoPositivesGivesNaNCalibrationAndAuc) {
  const MetricsSummary s = Summarize(LossType::kLogistic, Examples({{-1.0f, 0, 1}, {2.0f, -1, 1}}));
  EXPECT_TRUE(std::isnan(s.calibration));
  EXPECT_TRUE(std::isnan(s.auc));
  EXPECT_DOUBLE_EQ(s.mistakes, 0.5);
  EXPECT_FALSE(std::isnan(s.logloss));
}

TEST(MetricsTest, IntegerWeightEqualsRepeatingTheExample) {
  std::vector<ScoredExample> weighted = RandomLogistic(50, 7, /*tied=*/true);
  std::vector<ScoredExample> repeated;
  for (ScoredExample& e : weighted) {
    e.importance = 3;
    for (int k = 0; k < 3; ++k) repeated.push_back({e.margin, e.label, 1});
  }
  const MetricsSummary a = Summarize(LossType::kLogistic, weighted);
  const MetricsSummary b = Summarize(LossType::kLogistic, repeated);
  EXPECT_DOUBLE_EQ(a.weight, b.weight);
  EXPECT_NEAR(a.loss, b.loss, 1e-12);
  EXPECT_NEAR(a.logloss, b.logloss, 1e-12);
  EXPECT_NEAR(a.auc, b.auc, 1e-12);
  EXPECT_NEAR(a.mistakes, b.mistakes, 1e-12);
  EXPECT_NEAR(a.calibration, b.calibration, 1e-12);
  EXPECT_NEAR(a.squared, b.squared, 1e-12);
}

TEST(MetricsTest, ProgressiveMetricsSummarisesWhatWasAdded) {
  ProgressiveMetrics metrics(LossType::kHinge);
  metrics.Add(0.5, 1);
  metrics.Add(-2.0, -1, 2.0);
  ASSERT_EQ(metrics.scored().size(), 2u);
  EXPECT_EQ(metrics.scored()[1].importance, 2.0f);
  EXPECT_EQ(metrics.loss(), LossType::kHinge);
  const MetricsSummary s = metrics.Summary();
  EXPECT_EQ(s.examples, 2u);
  EXPECT_DOUBLE_EQ(s.weight, 3.0);
  EXPECT_NEAR(s.hinge, 0.5 / 3, 1e-12);
}

TEST(AucTest, TiedPairsCountHalf) {
  // Wins: the weight-2 positive ties the weight-1 negative at 0.5 (1) and
  // beats the one at 0 (2); the positive at 0.1 beats it too (1). 4 / (3 * 5).
  const MetricsSummary s =
      Summarize(LossType::kLogistic,
                Examples({{0.5f, 1, 2}, {0.1f, 1, 1}, {0.5f, 0, 1}, {0.9f, 0, 3}, {0.0f, 0, 1}}));
  EXPECT_NEAR(s.auc, 4.0 / 15, 1e-15);
}

TEST(AucTest, AllTiedIsHalfAndReversedIsZero) {
  EXPECT_DOUBLE_EQ(
      Summarize(LossType::kLogistic, Examples({{1.0f, 1, 1}, {1.0f, 0, 5}, {1.0f, 1, 2}})).auc,
      0.5);
  EXPECT_DOUBLE_EQ(Summarize(LossType::kLogistic, Examples({{-1.0f, 1, 1}, {1.0f, 0, 1}})).auc,
                   0.0);
}

TEST(AucTest, OneClassOrNaNMarginIsNaN) {
  EXPECT_TRUE(std::isnan(Summarize(LossType::kLogistic, Examples({{1.0f, 1, 1}})).auc));
  // A class whose whole weight is zero is absent too.
  EXPECT_TRUE(
      std::isnan(Summarize(LossType::kLogistic, Examples({{1.0f, 1, 1}, {0.0f, 0, 0}})).auc));
  const MetricsSummary s =
      Summarize(LossType::kLogistic, Examples({{1.0f, 1, 1}, {NAN, 0, 1}, {0.0f, 0, 1}}));
  EXPECT_TRUE(std::isnan(s.auc));
  EXPECT_TRUE(std::isnan(s.mistakes));
  EXPECT_TRUE(std::isnan(s.loss));
  EXPECT_TRUE(std::isnan(s.hinge));
  const MetricsSummary hinge = Summarize(LossType::kHinge, Examples({{1.0f, 1, 1}, {NAN, -1, 1}}));
  EXPECT_TRUE(std::isnan(hinge.loss));
  EXPECT_TRUE(std::isnan(hinge.hinge));
  EXPECT_TRUE(std::isnan(hinge.squared));
}

TEST(AucTest, MatchesBruteForceOnRandomTiedData) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const std::vector<ScoredExample> v = RandomLogistic(400, seed, /*tied=*/true);
    EXPECT_NEAR(Summarize(LossType::kLogistic, v).auc, BruteForceAuc(v), 1e-12) << seed;
  }
}

// Past 1,024 records the AUC's sort is a radix sort on the margins' bits:
// the same AUC as the definition with negative, positive, tied, signed-zero
// and extreme margins (and the largest and smallest floats), and NaN still
// gives NaN.
TEST(AucTest, MatchesBruteForceWhenTheRadixSortRuns) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::vector<ScoredExample> v = RandomLogistic(3000, seed, /*tied=*/seed != 2);
    for (size_t i = 0; i < v.size(); i += 50) v[i].margin = (i / 50) % 2 == 0 ? -0.0f : 0.0f;
    v[7].margin = std::numeric_limits<float>::max();
    v[8].margin = std::numeric_limits<float>::lowest();
    v[9].margin = std::numeric_limits<float>::denorm_min();
    v[10].margin = -std::numeric_limits<float>::denorm_min();
    EXPECT_NEAR(Summarize(LossType::kLogistic, v).auc, BruteForceAuc(v), 1e-12) << seed;
    v[100].margin = NAN;
    EXPECT_TRUE(std::isnan(Summarize(LossType::kLogistic, v).auc)) << seed;
  }
}

void ExpectSameInterval(const Interval& a, const Interval& b) {
  EXPECT_EQ(a.lo, b.lo);
  EXPECT_EQ(a.hi, b.hi);
}

TEST(BootstrapTest, SameSeedGivesIdenticalIntervals) {
  const std::vector<ScoredExample> v = RandomLogistic(500, 3);
  const BootstrapIntervals a = Bootstrap(LossType::kLogistic, v, 200, 42);
  const BootstrapIntervals b = Bootstrap(LossType::kLogistic, v, 200, 42);
  ExpectSameInterval(a.logloss, b.logloss);
  ExpectSameInterval(a.auc, b.auc);
  ExpectSameInterval(a.loss, b.loss);
  ExpectSameInterval(a.mistakes, b.mistakes);
  ExpectSameInterval(a.calibration, b.calibration);
  const BootstrapIntervals c = Bootstrap(LossType::kLogistic, v, 200, 43);
  EXPECT_NE(a.auc.lo, c.auc.lo);
}

TEST(BootstrapTest, OneResampleIsSummarizeOfTheDocumentedDraw) {
  const std::vector<ScoredExample> v = RandomLogistic(300, 5, /*tied=*/true);
  std::mt19937_64 rng(99);
  std::vector<ScoredExample> resample;
  for (size_t i = 0; i < v.size(); ++i) resample.push_back(v[rng() % v.size()]);
  const MetricsSummary want = Summarize(LossType::kLogistic, resample);
  const BootstrapIntervals got = Bootstrap(LossType::kLogistic, v, 1, 99);
  for (const auto& [interval, value] :
       {std::pair{got.logloss, want.logloss}, std::pair{got.auc, want.auc},
        std::pair{got.loss, want.loss}, std::pair{got.mistakes, want.mistakes},
        std::pair{got.calibration, want.calibration}}) {
    EXPECT_NEAR(interval.lo, value, 1e-12);
    EXPECT_EQ(interval.lo, interval.hi);
  }
}

TEST(BootstrapTest, IntervalsContainThePointEstimate) {
  const std::vector<ScoredExample> v = RandomLogistic(2000, 11);
  const MetricsSummary s = Summarize(LossType::kLogistic, v);
  const BootstrapIntervals b = Bootstrap(LossType::kLogistic, v, 500, 1);
  for (const auto& [interval, value] :
       {std::pair{b.logloss, s.logloss}, std::pair{b.auc, s.auc}, std::pair{b.loss, s.loss},
        std::pair{b.mistakes, s.mistakes}, std::pair{b.calibration, s.calibration}}) {
    EXPECT_LT(interval.lo, value);
    EXPECT_GT(interval.hi, value);
  }
}

TEST(BootstrapTest, IntervalsNarrowAsDataGrows) {
  // Width scales as 1/sqrt(n): 16x the data should give about 1/4 the width.
  const BootstrapIntervals small = Bootstrap(LossType::kLogistic, RandomLogistic(500, 2), 300, 1);
  const BootstrapIntervals large = Bootstrap(LossType::kLogistic, RandomLogistic(8000, 2), 300, 1);
  auto width = [](const Interval& i) { return i.hi - i.lo; };
  EXPECT_LT(width(large.auc), 0.5 * width(small.auc));
  EXPECT_LT(width(large.logloss), 0.5 * width(small.logloss));
  EXPECT_LT(width(large.mistakes), 0.5 * width(small.mistakes));
  EXPECT_LT(width(large.calibration), 0.5 * width(small.calibration));
}

TEST(BootstrapTest, NaNResamplesAreDroppedAndAllNaNGivesNaN) {
  // One positive in 20: about a third of the resamples miss it, and their
  // AUC and calibration are NaN; the rest still give an interval.
  std::vector<ScoredExample> v;
  for (int i = 0; i < 20; ++i) v.push_back({static_cast<float>(i), i == 10 ? 1.0f : 0.0f, 1});
  const BootstrapIntervals b = Bootstrap(LossType::kLogistic, v, 200, 4);
  EXPECT_FALSE(std::isnan(b.auc.lo));
  EXPECT_FALSE(std::isnan(b.calibration.hi));

  for (ScoredExample& e : v) e.label = 0;
  const BootstrapIntervals none = Bootstrap(LossType::kLogistic, v, 50, 4);
  EXPECT_TRUE(std::isnan(none.auc.lo) && std::isnan(none.auc.hi));
  EXPECT_TRUE(std::isnan(none.calibration.lo));
  EXPECT_FALSE(std::isnan(none.loss.lo));

  const BootstrapIntervals hinge = Bootstrap(LossType::kHinge, v, 50, 4);
  EXPECT_TRUE(std::isnan(hinge.logloss.lo));
  EXPECT_FALSE(std::isnan(hinge.mistakes.lo));
}

TEST(BootstrapTest, ResamplesWithoutANaNMarginStayFinite) {
  // About (29/30)^30 = 36% of the resamples do not draw the NaN margin.
  std::vector<ScoredExample> v = RandomLogistic(30, 8);
  v[0].margin = NAN;
  const BootstrapIntervals b = Bootstrap(LossType::kLogistic, v, 100, 2);
  EXPECT_FALSE(std::isnan(b.auc.lo));
  EXPECT_FALSE(std::isnan(b.loss.hi));
}

TEST(BootstrapTest, DegenerateRequestsGiveNaN) {
  const std::vector<ScoredExample> v = RandomLogistic(50, 1);
  EXPECT_TRUE(std::isnan(Bootstrap(LossType::kLogistic, {}, 10, 1).loss.lo));
  EXPECT_TRUE(std::isnan(Bootstrap(LossType::kLogistic, v, 0, 1).loss.lo));
  EXPECT_TRUE(std::isnan(Bootstrap(LossType::kLogistic, v, 10, 1, 1.5).loss.lo));
  // A single example resamples to itself: the interval is that point.
  const BootstrapIntervals one = Bootstrap(LossType::kLogistic, {{0.0f, 1, 1}}, 10, 1);
  EXPECT_NEAR(one.loss.lo, std::log(2.0), 1e-12);
  EXPECT_EQ(one.loss.lo, one.loss.hi);
}

}  // namespace
}  // namespace clickd

namespace clickd {
namespace {

TEST(StreamingMetrics, SumsMatchExactAndAucWithinItsBound) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> noise(0.0, 1.0);
  ProgressiveMetrics exact(LossType::kLogistic);
  StreamingMetrics streaming(LossType::kLogistic);
  for (int i = 0; i < 20000; ++i) {
    const double label = rng() % 10 == 0 ? 1.0 : 0.0;
    const double margin = -2.5 + 1.5 * label + noise(rng);
    const double w = (i % 7 == 0) ? 2.0 : 1.0;
    exact.Add(margin, label, w);
    streaming.Add(margin, label, w);
  }
  const MetricsSummary e = exact.Summary(), s = streaming.Summary();
  EXPECT_EQ(s.examples, e.examples);
  EXPECT_NEAR(s.logloss, e.logloss, 1e-6);
  EXPECT_NEAR(s.calibration, e.calibration, 1e-6);
  EXPECT_NEAR(s.mistakes, e.mistakes, 1e-12);
  EXPECT_GT(s.auc_error_bound, 0.0);
  EXPECT_LT(s.auc_error_bound, 0.01);
  EXPECT_LE(std::abs(s.auc - e.auc), s.auc_error_bound);
  EXPECT_EQ(e.auc_error_bound, 0.0);
}

TEST(StreamingMetrics, ClampsExtremeMarginsAndHandlesOneClass) {
  StreamingMetrics m(LossType::kLogistic);
  m.Add(-1000, 0);
  EXPECT_TRUE(std::isnan(m.Summary().auc));
  m.Add(1000, 1);
  EXPECT_DOUBLE_EQ(m.Summary().auc, 1.0);
  EXPECT_DOUBLE_EQ(m.Summary().auc_error_bound, 0.0);
  m.Add(1000, 0);  // shares the top bin with the positive: a tie
  EXPECT_DOUBLE_EQ(m.Summary().auc, 0.75);
  EXPECT_DOUBLE_EQ(m.Summary().auc_error_bound, 0.25);
}

}  // namespace
}  // namespace clickd
