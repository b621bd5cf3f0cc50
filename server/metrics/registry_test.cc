#include "server/metrics/registry.h"

#include <atomic>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/http_exporter.h"

namespace clickd::metrics {
namespace {

TEST(Registry, LibraryFamiliesThenCallbackFamilies) {
  Registry registry;
  registry.BuildCallback("d_bytes", "A callback.", MetricType::kGauge, [] {
    return std::vector<Sample>{{{}, 4}};
  });
  registry.BuildGauge("b_gauge_value", "A gauge.").Add({}).Set(2);
  registry.BuildCounter("a_total", "A counter.").Add({{"k", "v"}}).Increment();
  registry.BuildHistogram("c_seconds", "A histogram.").Add({}, Histogram::BucketBoundaries{1});
  const std::vector<MetricFamily> families = registry.Collect();
  ASSERT_EQ(families.size(), 4u);
  std::map<std::string, const MetricFamily*> by_name;
  for (const MetricFamily& f : families) by_name[f.name] = &f;
  const MetricFamily& gauge = *by_name.at("b_gauge_value");
  EXPECT_EQ(gauge.type, prometheus::MetricType::Gauge);
  EXPECT_EQ(ValueOf(gauge, gauge.metric[0]), 2);
  const MetricFamily& counter = *by_name.at("a_total");
  EXPECT_EQ(counter.help, "A counter.");
  EXPECT_EQ(counter.type, prometheus::MetricType::Counter);
  EXPECT_EQ(LabelsOf(counter.metric[0]), (Labels{{"k", "v"}}));
  const MetricFamily& histogram = *by_name.at("c_seconds");
  EXPECT_EQ(histogram.type, prometheus::MetricType::Histogram);
  EXPECT_EQ(histogram.metric[0].histogram.bucket.size(), 2u);
  // The callback families come last.
  EXPECT_EQ(families[3].name, "d_bytes");
  EXPECT_EQ(ValueOf(families[3], families[3].metric[0]), 4);
}

TEST(Registry, BuildingAgainReturnsTheSameFamily) {
  Registry registry;
  Family<Counter>& a = registry.BuildCounter("x_total", "help");
  Family<Counter>& b = registry.BuildCounter("x_total", "help");
  EXPECT_EQ(&a, &b);
  a.Add({});
  EXPECT_EQ(registry.Collect().size(), 1u);
}

TEST(Registry, CallbackFamiliesFollowWhatTheyDescribe) {
  Registry registry;
  std::vector<Sample> current;
  registry.BuildCallback("models_bytes", "help", MetricType::kGauge, [&] { return current; });
  EXPECT_TRUE(registry.Collect()[0].metric.empty());
  current = {{{{"model", "b"}}, 2}, {{{"model", "a"}}, 1}, {{{"bad-label", "x"}}, 3}};
  MetricFamily f = registry.Collect()[0];
  EXPECT_EQ(f.type, prometheus::MetricType::Gauge);
  ASSERT_EQ(f.metric.size(), 2u);  // the invalid label name is left out
  EXPECT_EQ(LabelsOf(f.metric[0]).at("model"), "a");
  EXPECT_EQ(ValueOf(f, f.metric[0]), 1);
  EXPECT_EQ(LabelsOf(f.metric[1]).at("model"), "b");
  current.pop_back();
  current.erase(current.begin());  // model "b" is gone
  f = registry.Collect()[0];
  ASSERT_EQ(f.metric.size(), 1u);
  EXPECT_EQ(LabelsOf(f.metric[0]).at("model"), "a");
}

TEST(Registry, CallbackCounters) {
  Registry registry;
  registry.BuildCallback("x_total", "help", MetricType::kCounter, [] {
    return std::vector<Sample>{{{}, 7}};
  });
  const MetricFamily f = registry.Collect()[0];
  EXPECT_EQ(f.type, prometheus::MetricType::Counter);
  EXPECT_EQ(f.metric[0].counter.value, 7);
}

TEST(Registry, CallbackHistogramsExportCumulativeBuckets) {
  Registry registry;
  std::vector<HistogramSample> current;
  registry.BuildCallbackHistogram("delay_seconds", "help", {1, 10}, [&] { return current; });
  MetricFamily f = registry.Collect()[0];
  EXPECT_EQ(f.type, prometheus::MetricType::Histogram);
  EXPECT_TRUE(f.metric.empty());
  current = {{{{"model", "b"}}, {1, 0, 2}, 30.5},
             {{{"model", "a"}}, {0, 3, 1}, 100},
             {{{"model", "c"}}, {1, 2}, 1},  // a count short: left out
             {{{"bad-label", "x"}}, {1, 1, 1}, 1}};
  f = registry.Collect()[0];
  ASSERT_EQ(f.metric.size(), 2u);
  const ClientMetric& a = f.metric[0];
  EXPECT_EQ(LabelsOf(a), (Labels{{"model", "a"}}));
  ASSERT_EQ(a.histogram.bucket.size(), 3u);
  EXPECT_EQ(a.histogram.bucket[0].upper_bound, 1);
  EXPECT_EQ(a.histogram.bucket[0].cumulative_count, 0u);
  EXPECT_EQ(a.histogram.bucket[1].upper_bound, 10);
  EXPECT_EQ(a.histogram.bucket[1].cumulative_count, 3u);
  EXPECT_TRUE(std::isinf(a.histogram.bucket[2].upper_bound));
  EXPECT_EQ(a.histogram.bucket[2].cumulative_count, 4u);
  EXPECT_EQ(a.histogram.sample_count, 4u);
  EXPECT_EQ(a.histogram.sample_sum, 100);
  // As Prometheus reads it: cumulative, +Inf once and equal to _count.
  const std::string text = SerializeText({f});
  for (const char* line :
       {"delay_seconds_bucket{model=\"b\",le=\"1\"} 1\n",
        "delay_seconds_bucket{model=\"b\",le=\"10\"} 1\n",
        "delay_seconds_bucket{model=\"b\",le=\"+Inf\"} 3\n", "delay_seconds_count{model=\"b\"} 3\n",
        "delay_seconds_sum{model=\"b\"} 30.5\n", "# TYPE delay_seconds histogram\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  size_t inf_buckets = 0;
  for (size_t at = text.find("le=\"+Inf\""); at != std::string::npos;
       at = text.find("le=\"+Inf\"", at + 1)) {
    ++inf_buckets;
  }
  EXPECT_EQ(inf_buckets, 2u) << "one +Inf bucket per series:\n" << text;
}

TEST(Registry, CollectWhileBuilding) {
  Registry registry;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    for (int i = 0; i < 100000 && !done.load(); ++i) (void)registry.Collect();
  });
  for (int i = 0; i < 200; ++i) {
    registry.BuildCounter("c" + std::to_string(i) + "_total", "help").Add({}).Increment();
    registry.BuildCallback("g" + std::to_string(i), "help", MetricType::kGauge, [] {
      return std::vector<Sample>{{{}, 1}};
    });
  }
  done = true;
  scraper.join();
  EXPECT_EQ(registry.Collect().size(), 400u);
}

TEST(RegistryDeathTest, NamingMistakesAreBugs) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Registry registry;
  registry.BuildCounter("x_total", "help");
  EXPECT_DEATH(registry.BuildCounter("bad name", "help"), "invalid metric name");
  EXPECT_DEATH(registry.BuildGauge("x_total", "help"), "already registered");
  EXPECT_DEATH(registry.BuildCounter("x_total", "other help"), "already registered");
  EXPECT_DEATH(registry.BuildCallback("x_total", "help", MetricType::kGauge,
                                      [] { return std::vector<Sample>{}; }),
               "already registered");
  const auto none = [] { return std::vector<HistogramSample>{}; };
  EXPECT_DEATH(registry.BuildCallbackHistogram("x_total", "help", {1}, none), "already registered");
  EXPECT_DEATH(registry.BuildCallbackHistogram("h_seconds", "help", {10, 1}, none),
               "finite ascending bucket bounds");
  EXPECT_DEATH(registry.BuildCallbackHistogram("h_seconds", "help", {1, 1}, none),
               "finite ascending bucket bounds");
  EXPECT_DEATH(registry.BuildCallbackHistogram("h_seconds", "help",
                                               {1, std::numeric_limits<double>::infinity()}, none),
               "finite ascending bucket bounds");
}

}  // namespace
}  // namespace clickd::metrics
