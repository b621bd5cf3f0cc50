// Counter, Gauge and Histogram: values, bucket math, and exact totals when
// many threads count at once while another scrapes (run under TSan too).
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/counter.h"
#include "server/metrics/family.h"
#include "server/metrics/gauge.h"
#include "server/metrics/histogram.h"

namespace clickd::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Counter, IncrementsAndNeverGoesDown) {
  Counter c;
  EXPECT_EQ(c.Value(), 0);
  c.Increment();
  c.Increment(2.5);
  c.Increment(-1);    // ignored
  c.Increment(kNaN);  // ignored
  EXPECT_DOUBLE_EQ(c.Value(), 3.5);
  const ClientMetric m = c.Collect({{"a", "b"}});
  EXPECT_EQ(m.labels, (Labels{{"a", "b"}}));
  EXPECT_DOUBLE_EQ(m.value, 3.5);
}

TEST(Gauge, SetIncrementDecrement) {
  Gauge g;
  g.Set(10);
  g.Increment();
  g.Increment(4);
  g.Decrement(20);
  EXPECT_DOUBLE_EQ(g.Value(), -5);
  g.Set(0.25);
  EXPECT_DOUBLE_EQ(g.Collect({}).value, 0.25);
}

TEST(Histogram, AnObservationOnABoundGoesInThatBucket) {
  Histogram h({1, 2, 5});
  EXPECT_EQ(h.BucketIndex(-100), 0u);
  EXPECT_EQ(h.BucketIndex(1), 0u);  // le="1" counts v <= 1
  EXPECT_EQ(h.BucketIndex(std::nextafter(1.0, 2.0)), 1u);
  EXPECT_EQ(h.BucketIndex(2), 1u);
  EXPECT_EQ(h.BucketIndex(4.99), 2u);
  EXPECT_EQ(h.BucketIndex(5), 2u);
  EXPECT_EQ(h.BucketIndex(5.01), 3u);  // +Inf
  EXPECT_EQ(h.BucketIndex(kInf), 3u);
  EXPECT_EQ(h.BucketIndex(kNaN), 3u);
}

TEST(Histogram, BoundsAreSortedDeduplicatedAndFinite) {
  Histogram h({5, 1, kInf, 2, 1, kNaN, -kInf});
  EXPECT_EQ(h.bounds(), (Histogram::BucketBoundaries{1, 2, 5}));
}

TEST(Histogram, CollectIsCumulativeWithInfEqualToCount) {
  Histogram h({0.1, 1, 10});
  for (double v : {0.05, 0.1, 0.5, 0.7, 3.0, 11.0, 100.0}) h.Observe(v);
  const ClientMetric m = h.Collect({{"method", "Predict"}});
  ASSERT_EQ(m.buckets.size(), 4u);
  EXPECT_EQ(m.buckets[0].upper_bound, 0.1);
  EXPECT_EQ(m.buckets[0].cumulative_count, 2u);  // 0.05, 0.1
  EXPECT_EQ(m.buckets[1].upper_bound, 1);
  EXPECT_EQ(m.buckets[1].cumulative_count, 4u);  // + 0.5, 0.7
  EXPECT_EQ(m.buckets[2].upper_bound, 10);
  EXPECT_EQ(m.buckets[2].cumulative_count, 5u);  // + 3
  EXPECT_EQ(m.buckets[3].upper_bound, kInf);
  EXPECT_EQ(m.buckets[3].cumulative_count, 7u);  // + 11, 100
  EXPECT_EQ(m.sample_count, 7u);
  EXPECT_DOUBLE_EQ(m.sample_sum, 0.05 + 0.1 + 0.5 + 0.7 + 3.0 + 11.0 + 100.0);
}

TEST(Histogram, WithoutBoundsHasOnlyTheInfBucket) {
  Histogram h({});
  h.Observe(3);
  const ClientMetric m = h.Collect({});
  ASSERT_EQ(m.buckets.size(), 1u);
  EXPECT_EQ(m.buckets[0].upper_bound, kInf);
  EXPECT_EQ(m.buckets[0].cumulative_count, 1u);
}

TEST(Histogram, NaNCountsInInfAndPoisonsTheSum) {
  Histogram h({1});
  h.Observe(kNaN);
  const ClientMetric m = h.Collect({});
  EXPECT_EQ(m.buckets[0].cumulative_count, 0u);
  EXPECT_EQ(m.buckets[1].cumulative_count, 1u);
  EXPECT_TRUE(std::isnan(m.sample_sum));
}

// Many threads count into the same series (more threads than shards, so
// some share one) while another thread scrapes; the totals are exact, and
// every scrape sees cumulative buckets with +Inf equal to the count.
TEST(Concurrency, ManyThreadsCountExactly) {
  constexpr int kThreads = 12;
  constexpr int kPerThread = 20000;
  Family<Counter> counters("c_total", "help");
  Family<Histogram> histograms("h", "help");
  Gauge gauge;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    int scrapes = 0;
    while (!done.load() && scrapes < 100000) {
      const MetricFamily f = histograms.Collect();
      for (const ClientMetric& m : f.metrics) {
        uint64_t previous = 0;
        for (const HistogramBucket& b : m.buckets) {
          ASSERT_GE(b.cumulative_count, previous);
          previous = b.cumulative_count;
        }
        ASSERT_EQ(m.buckets.back().cumulative_count, m.sample_count);
      }
      (void)counters.Collect();
      ++scrapes;
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Add once per thread and keep the reference, as the server does.
      Counter& c = counters.Add({{"code", "OK"}});
      Histogram& h = histograms.Add({{"code", "OK"}}, Histogram::BucketBoundaries{1, 2, 3});
      for (int i = 0; i < kPerThread; ++i) {
        c.Increment();
        h.Observe(static_cast<double>((t + i) % 4));  // 0, 1, 2, 3 in turn
        gauge.Increment();
        gauge.Decrement();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  done = true;
  scraper.join();

  const MetricFamily c = counters.Collect();
  ASSERT_EQ(c.metrics.size(), 1u);
  EXPECT_EQ(c.metrics[0].value, kThreads * kPerThread);
  const MetricFamily h = histograms.Collect();
  ASSERT_EQ(h.metrics.size(), 1u);
  const ClientMetric& m = h.metrics[0];
  constexpr uint64_t kTotal = kThreads * kPerThread;
  EXPECT_EQ(m.sample_count, kTotal);
  EXPECT_EQ(m.buckets[0].cumulative_count, kTotal / 2);  // 0 and 1
  EXPECT_EQ(m.buckets[1].cumulative_count, kTotal * 3 / 4);
  EXPECT_EQ(m.buckets[2].cumulative_count, kTotal);
  EXPECT_EQ(m.buckets[3].cumulative_count, kTotal);
  EXPECT_DOUBLE_EQ(m.sample_sum, 1.5 * kTotal);  // small integers: exact in a double
  EXPECT_DOUBLE_EQ(gauge.Value(), 0);
}

TEST(Family, AddReturnsTheSameSeriesForTheSameLabels) {
  Family<Counter> family("x_total", "help");
  Counter& a = family.Add({{"k", "v"}});
  Counter& b = family.Add({{"k", "v"}});
  Counter& c = family.Add({{"k", "w"}});
  EXPECT_EQ(&a, &b);
  EXPECT_NE(&a, &c);
  // References stay valid while more series are added.
  for (int i = 0; i < 1000; ++i) family.Add({{"k", std::to_string(i)}});
  a.Increment();
  EXPECT_EQ(family.Add({{"k", "v"}}).Value(), 1);
}

TEST(Family, RemovedSeriesLeaveScrapesAndSharedHandlesStayUsable) {
  Family<Counter> family("x_total", "help");
  std::shared_ptr<Counter> kept = family.Share({{"model", "a"}});
  family.Add({{"model", "b"}}).Increment();
  EXPECT_EQ(family.Collect().metrics.size(), 2u);
  family.RemoveIf([](const Labels& labels) { return labels.at("model") == "a"; });
  const MetricFamily collected = family.Collect();
  ASSERT_EQ(collected.metrics.size(), 1u);
  EXPECT_EQ(collected.metrics[0].labels.at("model"), "b");
  kept->Increment();                                   // goes nowhere, safely
  EXPECT_EQ(family.Add({{"model", "a"}}).Value(), 0);  // a new series
}

TEST(Family, ConcurrentAddsAgreeOnOneSeries) {
  Family<Counter> family("x_total", "help");
  std::vector<Counter*> seen(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      seen[t] = &family.Add({{"k", "v"}});
      seen[t]->Increment();
    });
  }
  for (std::thread& t : threads) t.join();
  for (Counter* c : seen) EXPECT_EQ(c, seen[0]);
  EXPECT_EQ(seen[0]->Value(), 8);
}

TEST(FamilyDeathTest, RejectsInvalidLabelNames) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Family<Counter> counters("x_total", "help");
  EXPECT_DEATH(counters.Add({{"bad-name", "v"}}), "invalid label name");
  EXPECT_DEATH(counters.Add({{"__reserved", "v"}}), "invalid label name");
  Family<Histogram> histograms("h", "help");
  EXPECT_DEATH(histograms.Add({{"le", "1"}}, Histogram::BucketBoundaries{1}), "invalid label name");
}

}  // namespace
}  // namespace clickd::metrics
