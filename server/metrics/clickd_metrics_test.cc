#include "server/metrics/clickd_metrics.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/metrics/http_exporter.h"

namespace clickd::metrics {
namespace {

ModelConfig Named(const std::string& name, LossType loss = LossType::kLogistic) {
  ModelConfig c;
  c.name = name;
  c.loss = loss;
  return c;
}

// family name -> (labels -> value) for gauges and counters.
std::map<std::string, std::map<Labels, double>> Values(const Registry& registry) {
  std::map<std::string, std::map<Labels, double>> out;
  for (const MetricFamily& f : registry.Collect()) {
    auto& series = out[f.name];
    for (const ClientMetric& m : f.metric) series[LabelsOf(m)] = ValueOf(f, m);
  }
  return out;
}

TEST(ModelMetrics, OneSeriesPerModelThatFollowTheRegistry) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  auto values = Values(registry);
  for (const char* name :
       {"clickd_predictions_total", "clickd_update_examples_total", "clickd_model_logloss",
        "clickd_model_auc", "clickd_model_auc_error_bound", "clickd_model_calibration",
        "clickd_model_progressive_examples", "clickd_model_coordinates", "clickd_model_bytes",
        "clickd_model_updates", "clickd_model_admission_sightings_total",
        "clickd_model_admission_admitted_total"}) {
    ASSERT_TRUE(values.count(name)) << name;
    EXPECT_TRUE(values[name].empty()) << name;
  }

  const Labels A = {{"model", "a"}}, B = {{"model", "b"}};
  auto a = models.Create(Named("a"));
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(models.Create(Named("b")).ok());
  (*a)->RecordPredictions(5);
  (*a)->RecordPredictions(2);
  (*a)->RecordProgressive({{2.0f, 1.0f, 1.0f}, {-1.0f, 0.0f, 1.0f}, {0.5f, 0.0f, 2.0f}});
  values = Values(registry);
  EXPECT_EQ(values["clickd_predictions_total"][A], 7);
  EXPECT_EQ(values["clickd_predictions_total"][B], 0);
  EXPECT_EQ(values["clickd_update_examples_total"][A], 3);
  EXPECT_EQ(values["clickd_model_updates"].size(), 2u);
  EXPECT_EQ(values["clickd_model_coordinates"].size(), 2u);
  EXPECT_EQ(values["clickd_model_bytes"].size(), 2u);

  const MetricsSummary lifetime = (*a)->ProgressiveSummary();
  const Labels since_start = {{"model", "a"}, {"window", "since_start"}};
  const Labels recent = {{"model", "a"}, {"window", "10m"}};
  EXPECT_DOUBLE_EQ(values["clickd_model_logloss"][since_start], lifetime.logloss);
  EXPECT_DOUBLE_EQ(values["clickd_model_logloss"][recent], lifetime.logloss);
  EXPECT_DOUBLE_EQ(values["clickd_model_calibration"][since_start], lifetime.calibration);
  EXPECT_DOUBLE_EQ(values["clickd_model_auc"][since_start], lifetime.auc);
  EXPECT_EQ(values["clickd_model_progressive_examples"][since_start], 3);
  EXPECT_EQ(values["clickd_model_progressive_examples"][recent], 3);
  // Model b has learned nothing: its examples are 0 and its other
  // progressive metrics are undefined, hence absent.
  EXPECT_EQ(
      values["clickd_model_progressive_examples"][(Labels{{"model", "b"}, {"window", "10m"}})], 0);
  EXPECT_EQ(values["clickd_model_logloss"].count(Labels{{"model", "b"}, {"window", "since_start"}}),
            0u);

  ASSERT_TRUE(models.Delete("a").ok());
  values = Values(registry);
  EXPECT_EQ(values["clickd_predictions_total"].count(A), 0u);
  EXPECT_EQ(values["clickd_model_logloss"].count(since_start), 0u);
  EXPECT_EQ(values["clickd_model_updates"].size(), 1u);
}

TEST(ModelMetrics, NonLogisticModelsHaveNoLoglossOrCalibration) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  auto m = models.Create(Named("sq", LossType::kSquared));
  ASSERT_TRUE(m.ok());
  (*m)->RecordProgressive({{0.9f, 1.0f, 1.0f}, {0.1f, 0.0f, 1.0f}});
  auto values = Values(registry);
  EXPECT_TRUE(values["clickd_model_logloss"].empty());
  EXPECT_TRUE(values["clickd_model_calibration"].empty());
  EXPECT_EQ(values["clickd_model_auc"][(Labels{{"model", "sq"}, {"window", "since_start"}})], 1);
}

TEST(ProcessMetrics, BuildInfoAndStartTime) {
  Registry registry;
  RegisterProcessMetrics(&registry, 1700000000.5);
  auto values = Values(registry);
  EXPECT_EQ(values["clickd_build_info"]
                  [(Labels{{"version", ClickdVersion()}, {"compiler", CompilerVersion()}})],
            1);
  EXPECT_EQ(values["clickd_process_start_time_seconds"][Labels{}], 1700000000.5);
  EXPECT_NE(ClickdVersion(), "unknown");
  EXPECT_TRUE(CompilerVersion().rfind("gcc-", 0) == 0 || CompilerVersion().rfind("clang-", 0) == 0)
      << CompilerVersion();
  EXPECT_NE(
      SerializeText(registry.Collect()).find("clickd_process_start_time_seconds 1700000000.5\n"),
      std::string::npos);
}

}  // namespace
}  // namespace clickd::metrics
