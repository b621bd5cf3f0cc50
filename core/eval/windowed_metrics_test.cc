#include "core/eval/windowed_metrics.h"

#include <chrono>
#include <cmath>
#include <random>
#include <vector>

#include "core/eval/metrics.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;
using TimePoint = WindowedMetrics::TimePoint;

// A fake clock reading: `t` after the steady clock's epoch.
TimePoint At(std::chrono::steady_clock::duration t) { return TimePoint(t); }

// Scored examples whose labels follow the margins, the same on every platform.
std::vector<ScoredExample> Draw(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ScoredExample> out;
  for (int i = 0; i < n; ++i) {
    const double margin = static_cast<double>(rng() % 6001) / 1000.0 - 3.0;
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    out.push_back({static_cast<float>(margin), u < Sigmoid(margin) ? 1.0f : 0.0f,
                   static_cast<float>(1 + rng() % 3)});
  }
  return out;
}

void ExpectSameSums(const MetricsSummary& a, const MetricsSummary& b) {
  EXPECT_EQ(a.examples, b.examples);
  EXPECT_NEAR(a.weight, b.weight, 1e-9);
  EXPECT_NEAR(a.logloss, b.logloss, 1e-9);
  EXPECT_NEAR(a.calibration, b.calibration, 1e-9);
  EXPECT_NEAR(a.mistakes, b.mistakes, 1e-9);
  EXPECT_NEAR(a.auc, b.auc, 1e-9);
  EXPECT_NEAR(a.auc_error_bound, b.auc_error_bound, 1e-9);
}

TEST(StreamingMetricsMerge, EqualsAddingEverythingToOne) {
  const std::vector<ScoredExample> v = Draw(3000, 1);
  StreamingMetrics all(LossType::kLogistic, 1024), first(LossType::kLogistic, 1024),
      second(LossType::kLogistic, 1024);
  for (size_t i = 0; i < v.size(); ++i) {
    all.Add(v[i].margin, v[i].label, v[i].importance);
    (i < 1000 ? first : second).Add(v[i].margin, v[i].label, v[i].importance);
  }
  ASSERT_TRUE(first.Merge(second));
  ExpectSameSums(first.Summary(), all.Summary());
}

TEST(StreamingMetricsMerge, RefusesDifferentBinsOrLoss) {
  StreamingMetrics a(LossType::kLogistic, 1024);
  a.Add(1.0, 1);
  StreamingMetrics b(LossType::kLogistic, 4096);
  b.Add(-1.0, 0);
  EXPECT_FALSE(a.Merge(b));
  EXPECT_FALSE(a.Merge(StreamingMetrics(LossType::kSquared, 1024)));
  EXPECT_EQ(a.Summary().examples, 1u);
}

TEST(StreamingMetrics, FewerBinsAucStaysWithinItsBound) {
  const std::vector<ScoredExample> v = Draw(5000, 2);
  StreamingMetrics binned(LossType::kLogistic, WindowedMetrics::kAucBins);
  for (const ScoredExample& e : v) binned.Add(e.margin, e.label, e.importance);
  const MetricsSummary exact = Summarize(LossType::kLogistic, v);
  const MetricsSummary s = binned.Summary();
  EXPECT_NEAR(s.logloss, exact.logloss, 1e-9);
  EXPECT_GT(s.auc_error_bound, 0.0);
  EXPECT_LT(s.auc_error_bound, 0.01);
  EXPECT_LE(std::abs(s.auc - exact.auc), s.auc_error_bound + 1e-12);
}

TEST(WindowedMetrics, EmptyWindowHasNoExamples) {
  WindowedMetrics w(LossType::kLogistic);
  const MetricsSummary s = w.Summary(At(minutes(5)));
  EXPECT_EQ(s.examples, 0u);
  EXPECT_TRUE(std::isnan(s.logloss));
  EXPECT_TRUE(std::isnan(s.auc));
}

TEST(WindowedMetrics, WithinTheWindowEqualsStreamingMetricsOfTheSameExamples) {
  const std::vector<ScoredExample> v = Draw(2000, 3);
  WindowedMetrics w(LossType::kLogistic);
  StreamingMetrics reference(LossType::kLogistic, WindowedMetrics::kAucBins);
  // Spread over 10 consecutive minutes: 100:00 .. 109:59.
  for (size_t i = 0; i < v.size(); ++i) {
    const auto t = minutes(100) + seconds(i * 600 / v.size());
    w.Add(At(t), v[i].margin, v[i].label, v[i].importance);
    reference.Add(v[i].margin, v[i].label, v[i].importance);
  }
  ExpectSameSums(w.Summary(At(minutes(109) + seconds(59))), reference.Summary());
}

TEST(WindowedMetrics, ForgetsWholeMinutesAsTheyLeaveTheWindow) {
  WindowedMetrics w(LossType::kLogistic);
  // One example per minute 0..9, each with its own weight: minute m weighs m + 1.
  for (int m = 0; m < 10; ++m) w.Add(At(minutes(m) + seconds(30)), 0.0, m % 2, m + 1);
  EXPECT_EQ(w.Summary(At(minutes(9) + seconds(59))).examples, 10u);
  EXPECT_DOUBLE_EQ(w.Summary(At(minutes(9) + seconds(59))).weight, 55.0);
  // At 10:00 minute 0 has left: the window is minutes 1..10.
  EXPECT_EQ(w.Summary(At(minutes(10))).examples, 9u);
  EXPECT_DOUBLE_EQ(w.Summary(At(minutes(10))).weight, 54.0);
  // At 15:00 the window is minutes 6..15: those of minutes 6..9 remain.
  EXPECT_EQ(w.Summary(At(minutes(15))).examples, 4u);
  EXPECT_DOUBLE_EQ(w.Summary(At(minutes(15))).weight, 7.0 + 8 + 9 + 10);
  // At 19:00 all are gone, though nothing was added since.
  EXPECT_EQ(w.Summary(At(minutes(19))).examples, 0u);
}

TEST(WindowedMetrics, ReusedSlotStartsAfresh) {
  WindowedMetrics w(LossType::kLogistic);
  w.Add(At(minutes(3)), 2.0, 1);    // slot 3
  w.Add(At(minutes(13)), -2.0, 0);  // slot 3 again, ten minutes later
  const MetricsSummary s = w.Summary(At(minutes(13)));
  EXPECT_EQ(s.examples, 1u);
  EXPECT_NEAR(s.logloss, std::log1p(std::exp(-2.0)), 1e-6);
}

TEST(WindowedMetrics, TracksAModelThatImproves) {
  // A model whose margins get sharper each minute: the window's logloss
  // falls below the lifetime logloss once the bad minutes have left it.
  WindowedMetrics w(LossType::kLogistic);
  StreamingMetrics lifetime(LossType::kLogistic);
  for (int m = 0; m < 30; ++m) {
    const double sharpness = 0.1 * m;
    for (int i = 0; i < 50; ++i) {
      const double label = i % 2;
      const double margin = label > 0 ? sharpness : -sharpness;
      w.Add(At(minutes(m)), margin, label);
      lifetime.Add(margin, label);
    }
  }
  const MetricsSummary recent = w.Summary(At(minutes(29)));
  EXPECT_EQ(recent.examples, 500u);
  EXPECT_LT(recent.logloss, lifetime.Summary().logloss);
}

TEST(WindowedMetrics, CustomGeometry) {
  // Three buckets of 10 s: a 30 s window.
  WindowedMetrics w(LossType::kLogistic, 3, seconds(10));
  EXPECT_EQ(w.window(), seconds(30));
  w.Add(At(seconds(5)), 1.0, 1);
  w.Add(At(seconds(25)), 1.0, 1);
  EXPECT_EQ(w.Summary(At(seconds(29))).examples, 2u);
  EXPECT_EQ(w.Summary(At(seconds(30))).examples, 1u);
  EXPECT_EQ(w.Summary(At(seconds(50))).examples, 0u);
}

TEST(WindowedMetrics, TimesBeforeTheEpochFloorToTheirPeriod) {
  WindowedMetrics w(LossType::kLogistic, 2, seconds(10));
  w.Add(At(seconds(-1)), 1.0, 1);  // period -1
  w.Add(At(seconds(1)), 1.0, 0);   // period 0
  EXPECT_EQ(w.Summary(At(seconds(9))).examples, 2u);
  EXPECT_EQ(w.Summary(At(seconds(10))).examples, 1u);
}

}  // namespace
}  // namespace clickd
