#include "server/metrics/registry.h"

#include <atomic>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/naming.h"

namespace clickd::metrics {
namespace {

TEST(Naming, MetricAndLabelNames) {
  EXPECT_TRUE(IsValidMetricName("clickd_requests_total"));
  EXPECT_TRUE(IsValidMetricName("a:b_c9"));
  EXPECT_TRUE(IsValidMetricName("_x"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9lives"));
  EXPECT_FALSE(IsValidMetricName("has-dash"));
  EXPECT_FALSE(IsValidMetricName("has space"));
  EXPECT_TRUE(IsValidLabelName("method"));
  EXPECT_TRUE(IsValidLabelName("_x9"));
  EXPECT_FALSE(IsValidLabelName("a:b"));  // colons are for metric names only
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("1st"));
  EXPECT_FALSE(IsValidLabelName(""));
}

TEST(Registry, CollectsFamiliesInTheOrderBuilt) {
  Registry registry;
  registry.BuildGauge("b_gauge_value", "A gauge.").Add({}).Set(2);
  registry.BuildCounter("a_total", "A counter.").Add({{"k", "v"}}).Increment();
  registry.BuildHistogram("c_seconds", "A histogram.").Add({}, Histogram::BucketBoundaries{1});
  const std::vector<MetricFamily> families = registry.Collect();
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name, "b_gauge_value");
  EXPECT_EQ(families[0].type, MetricType::kGauge);
  EXPECT_EQ(families[0].metrics[0].value, 2);
  EXPECT_EQ(families[1].name, "a_total");
  EXPECT_EQ(families[1].help, "A counter.");
  EXPECT_EQ(families[1].type, MetricType::kCounter);
  EXPECT_EQ(families[1].metrics[0].labels, (Labels{{"k", "v"}}));
  EXPECT_EQ(families[2].type, MetricType::kHistogram);
  EXPECT_EQ(families[2].metrics[0].buckets.size(), 2u);
}

TEST(Registry, BuildingAgainReturnsTheSameFamily) {
  Registry registry;
  Family<Counter>& a = registry.BuildCounter("x_total", "help");
  Family<Counter>& b = registry.BuildCounter("x_total", "help");
  EXPECT_EQ(&a, &b);
  EXPECT_EQ(registry.Collect().size(), 1u);
}

TEST(Registry, SeriesOrderedByLabels) {
  Registry registry;
  Family<Counter>& f = registry.BuildCounter("x_total", "help");
  f.Add({{"k", "b"}});
  f.Add({{"k", "a"}});
  const MetricFamily family = registry.Collect()[0];
  ASSERT_EQ(family.metrics.size(), 2u);
  EXPECT_EQ(family.metrics[0].labels.at("k"), "a");
  EXPECT_EQ(family.metrics[1].labels.at("k"), "b");
}

TEST(Registry, CallbackFamiliesFollowWhatTheyDescribe) {
  Registry registry;
  std::vector<Sample> current;
  registry.BuildCallback("models_bytes", "help", MetricType::kGauge, [&] { return current; });
  EXPECT_TRUE(registry.Collect()[0].metrics.empty());
  current = {{{{"model", "b"}}, 2}, {{{"model", "a"}}, 1}, {{{"bad-label", "x"}}, 3}};
  MetricFamily f = registry.Collect()[0];
  EXPECT_EQ(f.type, MetricType::kGauge);
  ASSERT_EQ(f.metrics.size(), 2u);  // the invalid label name is left out
  EXPECT_EQ(f.metrics[0].labels.at("model"), "a");
  EXPECT_EQ(f.metrics[0].value, 1);
  EXPECT_EQ(f.metrics[1].labels.at("model"), "b");
  current.pop_back();
  current.erase(current.begin());  // model "b" is gone
  f = registry.Collect()[0];
  ASSERT_EQ(f.metrics.size(), 1u);
  EXPECT_EQ(f.metrics[0].labels.at("model"), "a");
}

TEST(Registry, CollectWhileBuilding) {
  Registry registry;
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    for (int i = 0; i < 100000 && !done.load(); ++i) (void)registry.Collect();
  });
  for (int i = 0; i < 200; ++i) {
    registry.BuildCounter("c" + std::to_string(i) + "_total", "help").Add({}).Increment();
  }
  done = true;
  scraper.join();
  EXPECT_EQ(registry.Collect().size(), 200u);
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
  EXPECT_DEATH(registry.BuildCallback("h", "help", MetricType::kHistogram,
                                      [] { return std::vector<Sample>{}; }),
               "counter or gauge");
}

}  // namespace
}  // namespace clickd::metrics
