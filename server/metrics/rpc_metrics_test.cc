#include "server/metrics/rpc_metrics.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace clickd::metrics {
namespace {

// The value of the counter series with these labels, or -1 if absent.
double RequestCount(const Registry& registry, const Labels& labels) {
  for (const MetricFamily& f : registry.Collect()) {
    if (f.name != "clickd_requests_total") continue;
    for (const ClientMetric& m : f.metric) {
      if (LabelsOf(m) == labels) return m.counter.value;
    }
  }
  return -1;
}

const ClientMetric* Duration(const std::vector<MetricFamily>& families, const Labels& labels) {
  for (const MetricFamily& f : families) {
    if (f.name != "clickd_request_duration_seconds") continue;
    for (const ClientMetric& m : f.metric) {
      if (LabelsOf(m) == labels) return &m;
    }
  }
  return nullptr;
}

TEST(RpcMetrics, BucketsSpan25MicrosecondsTo10Seconds) {
  const auto& b = RpcMetrics::DurationBuckets();
  EXPECT_EQ(b.front(), 25e-6);
  EXPECT_EQ(b.back(), 10);
  for (size_t i = 1; i < b.size(); ++i) EXPECT_LT(b[i - 1], b[i]);
}

TEST(RpcMetrics, OkSeriesExistBeforeAnyCall) {
  Registry registry;
  RpcMetrics rpc(&registry, {"Predict", "Update"});
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "OK"}}), 0);
  EXPECT_EQ(RequestCount(registry, {{"method", "Update"}, {"code", "OK"}}), 0);
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "NOT_FOUND"}}), -1);
}

TEST(RpcMetrics, RecordsByMethodAndCode) {
  Registry registry;
  RpcMetrics rpc(&registry, {"Predict", "Update"});
  rpc.Record("Predict", absl::StatusCode::kOk, 0.0002);
  rpc.Record("Predict", absl::StatusCode::kOk, 0.003);
  rpc.Record("Predict", absl::StatusCode::kInvalidArgument, 0.00001);
  rpc.Record("Update", absl::StatusCode::kResourceExhausted, 20);
  rpc.Record("Nope", absl::StatusCode::kOk, 1);                // not a method: ignored
  rpc.Record("Update", static_cast<absl::StatusCode>(99), 1);  // not a code: UNKNOWN
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "OK"}}), 2);
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "INVALID_ARGUMENT"}}), 1);
  EXPECT_EQ(RequestCount(registry, {{"method", "Update"}, {"code", "RESOURCE_EXHAUSTED"}}), 1);
  EXPECT_EQ(RequestCount(registry, {{"method", "Update"}, {"code", "UNKNOWN"}}), 1);
  EXPECT_EQ(RequestCount(registry, {{"method", "Nope"}, {"code", "OK"}}), -1);

  const std::vector<MetricFamily> families = registry.Collect();
  const ClientMetric* ok = Duration(families, {{"method", "Predict"}, {"code", "OK"}});
  ASSERT_NE(ok, nullptr);
  EXPECT_EQ(ok->histogram.sample_count, 2u);
  EXPECT_DOUBLE_EQ(ok->histogram.sample_sum, 0.0032);
  // 0.0002 is in le=0.00025, 0.003 in le=0.005.
  for (const ClientMetric::Bucket& b : ok->histogram.bucket) {
    const uint64_t expected = b.upper_bound < 0.00025 ? 0 : b.upper_bound < 0.005 ? 1 : 2;
    EXPECT_EQ(b.cumulative_count, expected) << b.upper_bound;
  }
  const ClientMetric* slow =
      Duration(families, {{"method", "Update"}, {"code", "RESOURCE_EXHAUSTED"}});
  ASSERT_NE(slow, nullptr);
  EXPECT_EQ(slow->histogram.bucket[slow->histogram.bucket.size() - 2].cumulative_count,
            0u);                                                  // le=10
  EXPECT_EQ(slow->histogram.bucket.back().cumulative_count, 1u);  // +Inf
}

// Threads race to create the series of a new code; all count into one.
TEST(RpcMetrics, ConcurrentFirstCallsOfACode) {
  Registry registry;
  RpcMetrics rpc(&registry, {"Predict"});
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        rpc.Record("Predict", i % 2 ? absl::StatusCode::kNotFound : absl::StatusCode::kOk, 1e-4);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "OK"}}), 20000);
  EXPECT_EQ(RequestCount(registry, {{"method", "Predict"}, {"code", "NOT_FOUND"}}), 20000);
  const std::vector<MetricFamily> families = registry.Collect();
  const ClientMetric* d = Duration(families, {{"method", "Predict"}, {"code", "NOT_FOUND"}});
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->histogram.sample_count, 20000u);
}

}  // namespace
}  // namespace clickd::metrics
