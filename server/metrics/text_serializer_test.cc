#include "server/metrics/text_serializer.h"

#include <limits>

#include "gtest/gtest.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(FormatValue, IntegersPlainOtherwiseShortestRoundTrip) {
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(-0.0), "0");
  EXPECT_EQ(FormatValue(42), "42");
  EXPECT_EQ(FormatValue(-7), "-7");
  EXPECT_EQ(FormatValue(1234567), "1234567");
  EXPECT_EQ(FormatValue(9007199254740991.0), "9007199254740991");
  EXPECT_EQ(FormatValue(9007199254740992.0), "9.007199254740992e+15");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(2.5e-05), "2.5e-05");
  EXPECT_EQ(FormatValue(0.0001), "0.0001");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1.0 / 3), "0.3333333333333333");
  EXPECT_EQ(FormatValue(kInf), "+Inf");
  EXPECT_EQ(FormatValue(-kInf), "-Inf");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(Escape, HelpEscapesBackslashAndNewlineOnly) {
  EXPECT_EQ(EscapeHelp("plain"), "plain");
  EXPECT_EQ(EscapeHelp("a\\b\nc\"d"), "a\\\\b\\nc\"d");
}

TEST(Escape, LabelValueEscapesBackslashQuoteAndNewline) {
  EXPECT_EQ(EscapeLabelValue("plain"), "plain");
  EXPECT_EQ(EscapeLabelValue("a\\b\nc\"d"), "a\\\\b\\nc\\\"d");
  EXPECT_EQ(EscapeLabelValue("\xc3\xa9t\xc3\xa9"), "\xc3\xa9t\xc3\xa9");  // UTF-8 passes through
}

// The whole exposition of a registry, byte for byte.
TEST(SerializeText, Golden) {
  Registry registry;
  Family<Counter>& requests =
      registry.BuildCounter("app_requests_total", "Requests handled.\nBy \"code\", see C:\\docs.");
  requests.Add({{"method", "Predict"}, {"code", "OK"}}).Increment(3);
  requests.Add({{"method", "Predict"}, {"code", "NOT_FOUND"}}).Increment();
  registry.BuildGauge("app_info", "Build.").Add({{"v", "a\"b\\c\nd"}}).Set(1);
  registry.BuildGauge("app_temperature_celsius", "No series yet.");
  Histogram& h = registry.BuildHistogram("app_duration_seconds", "Durations.")
                     .Add({{"method", "Predict"}}, Histogram::BucketBoundaries{0.001, 0.25, 1});
  for (double v : {0.0005, 0.001, 0.1, 0.5, 2.0}) h.Observe(v);
  registry.BuildGauge("app_ratio", "Ratio.").Add({}).Set(0.125);

  const std::string expected =
      "# HELP app_requests_total Requests handled.\\nBy \"code\", see C:\\\\docs.\n"
      "# TYPE app_requests_total counter\n"
      "app_requests_total{code=\"NOT_FOUND\",method=\"Predict\"} 1\n"
      "app_requests_total{code=\"OK\",method=\"Predict\"} 3\n"
      "# HELP app_info Build.\n"
      "# TYPE app_info gauge\n"
      "app_info{v=\"a\\\"b\\\\c\\nd\"} 1\n"
      "# HELP app_temperature_celsius No series yet.\n"
      "# TYPE app_temperature_celsius gauge\n"
      "# HELP app_duration_seconds Durations.\n"
      "# TYPE app_duration_seconds histogram\n"
      "app_duration_seconds_bucket{method=\"Predict\",le=\"0.001\"} 2\n"
      "app_duration_seconds_bucket{method=\"Predict\",le=\"0.25\"} 3\n"
      "app_duration_seconds_bucket{method=\"Predict\",le=\"1\"} 4\n"
      "app_duration_seconds_bucket{method=\"Predict\",le=\"+Inf\"} 5\n"
      "app_duration_seconds_sum{method=\"Predict\"} 2.6015\n"
      "app_duration_seconds_count{method=\"Predict\"} 5\n"
      "# HELP app_ratio Ratio.\n"
      "# TYPE app_ratio gauge\n"
      "app_ratio 0.125\n";
  EXPECT_EQ(SerializeText(registry.Collect()), expected);
}

TEST(SerializeText, HistogramWithoutLabelsGetsOnlyLe) {
  MetricFamily f{"x_seconds", "h", MetricType::kHistogram, {}};
  ClientMetric m;
  m.buckets = {{0.5, 1}, {kInf, 2}};
  m.sample_count = 2;
  m.sample_sum = 1.25;
  f.metrics.push_back(m);
  EXPECT_EQ(SerializeText({f}),
            "# HELP x_seconds h\n"
            "# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.5\"} 1\n"
            "x_seconds_bucket{le=\"+Inf\"} 2\n"
            "x_seconds_sum 1.25\n"
            "x_seconds_count 2\n");
}

TEST(SerializeText, CallbackCounterIsTypedCounter) {
  Registry registry;
  registry.BuildCallback("x_total", "h", MetricType::kCounter, [] {
    return std::vector<Sample>{{{{"model", "m"}}, 7}};
  });
  EXPECT_EQ(SerializeText(registry.Collect()),
            "# HELP x_total h\n"
            "# TYPE x_total counter\n"
            "x_total{model=\"m\"} 7\n");
}

}  // namespace
}  // namespace clickd::metrics
