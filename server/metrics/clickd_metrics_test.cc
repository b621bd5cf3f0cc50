#include "server/metrics/clickd_metrics.h"

#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/feedback/feedback_loop.h"
#include "core/feedback/join_buffer.h"
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
        "clickd_model_admission_admitted_total", "clickd_model_memory_budget_bytes",
        "clickd_model_coordinates_evicted_total", "clickd_model_coordinates_expired_total",
        "clickd_model_admission_filter_bytes"}) {
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

// A budgeted model shows its budget and what it evicted; the others 0.
TEST(ModelMetrics, MemoryBudgetAndEvictions) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  ModelConfig budgeted = Named("small");
  budgeted.memory.max_bytes = 64 << 10;
  auto small = models.Create(budgeted);
  ASSERT_TRUE(small.ok()) << small.status();
  ASSERT_TRUE(models.Create(Named("plain")).ok());
  for (uint64_t k = 0; k < 20'000; ++k) {
    const HashedFeature f[] = {{k * 0x9E3779B97F4A7C15ull, 1.0f}};
    (*small)->model().Learn(f, k % 2, 1.0);
  }
  auto values = Values(registry);
  const Labels S = {{"model", "small"}}, P = {{"model", "plain"}};
  EXPECT_EQ(values["clickd_model_memory_budget_bytes"][S], 64 << 10);
  EXPECT_EQ(values["clickd_model_memory_budget_bytes"][P], 0);
  EXPECT_LE(values["clickd_model_bytes"][S], 64 << 10);
  const ModelStats stats = (*small)->model().Stats();
  ASSERT_GT(stats.coordinates_evicted, 0u);
  EXPECT_EQ(values["clickd_model_coordinates_evicted_total"][S],
            static_cast<double>(stats.coordinates_evicted));
  EXPECT_EQ(
      values["clickd_model_coordinates"][S] + values["clickd_model_coordinates_evicted_total"][S],
      20'000);
  EXPECT_EQ(values["clickd_model_coordinates_evicted_total"][P], 0);
}

// A model with a TTL counts what it expired; a Bloom filter shows its
// counters' bytes.
TEST(ModelMetrics, TtlExpiriesAndAdmissionFilterBytes) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  ModelConfig with_ttl = Named("ttl");
  with_ttl.memory.ttl_rounds = 1000;
  auto ttl = models.Create(with_ttl);
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  ModelConfig bloom = Named("bloom");
  bloom.admission.policy = AdmissionOptions::Policy::kBloom;
  bloom.admission.counters = 1 << 12;
  ASSERT_TRUE(models.Create(bloom).ok());
  for (uint64_t k = 0; k < 5'000; ++k) {
    const HashedFeature f[] = {{k * 0x9E3779B97F4A7C15ull, 1.0f}};
    (*ttl)->model().Learn(f, k % 2, 1.0);
  }
  auto values = Values(registry);
  const Labels T = {{"model", "ttl"}}, B = {{"model", "bloom"}};
  const ModelStats stats = (*ttl)->model().Stats();
  ASSERT_GT(stats.coordinates_expired, 3'000u);
  EXPECT_EQ(values["clickd_model_coordinates_expired_total"][T],
            static_cast<double>(stats.coordinates_expired));
  EXPECT_EQ(
      values["clickd_model_coordinates"][T] + values["clickd_model_coordinates_expired_total"][T],
      5'000);
  EXPECT_EQ(values["clickd_model_admission_filter_bytes"][T], 0);
  EXPECT_EQ(values["clickd_model_coordinates_expired_total"][B], 0);
  EXPECT_EQ(values["clickd_model_admission_filter_bytes"][B], 2 << 12);
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

// The impression-to-click loop's families, and the series each has.
constexpr const char* kLoopFamilies[] = {
    "clickd_model_join_buffer_impressions",   "clickd_model_join_buffer_bytes",
    "clickd_model_join_buffer_max_bytes",     "clickd_model_impressions_logged_total",
    "clickd_model_impressions_refused_total", "clickd_model_impressions_expired_total",
    "clickd_model_feedback_items_total",      "clickd_model_feedback_steps_total"};

const MetricFamily* Find(const std::vector<MetricFamily>& families, const std::string& name) {
  for (const MetricFamily& f : families) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

// `n` impressions of one feature each.
struct Impressions {
  explicit Impressions(size_t n) : features(n, {{42, 1.0f}}) {
    for (const auto& f : features) views.push_back({f, {}, 0.5f});
  }
  std::vector<std::vector<HashedFeature>> features;
  std::vector<ImpressionExample> views;
};

TEST(FeedbackMetrics, ModelsWithALoopExportTheLoopAndOthersNothing) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  ModelConfig with_loop = Named("loop");
  with_loop.feedback.ttl_seconds = 3600;
  with_loop.feedback.max_buffer_bytes = 1024;
  auto loop = models.Create(with_loop);
  ASSERT_TRUE(loop.ok()) << loop.status();
  ASSERT_TRUE(models.Create(Named("plain")).ok());
  auto values = Values(registry);
  const Labels L = {{"model", "loop"}};
  for (const char* name : kLoopFamilies) {
    ASSERT_TRUE(values.count(name)) << name;
  }
  EXPECT_EQ(values["clickd_model_impressions_logged_total"][L], 0);
  EXPECT_EQ(values["clickd_model_join_buffer_max_bytes"][L], 1024);

  // Three impressions; one joined (100 s after it was logged), then the
  // same id again, an id never issued and one of another model.
  const Impressions three(3);
  const int64_t before = WallNowMicros();
  auto first = (*loop)->LogImpressions(three.views);
  ASSERT_TRUE(first.ok()) << first.status();
  const FeedbackItem items[] = {{*first, 1.0f, 1.0f, before + 100'000'000},
                                {*first, 1.0f, 1.0f, 0},
                                {*first + 1000, 1.0f, 1.0f, 0},
                                {uint64_t{FeedbackLoop::ModelTag("plain")} << 48, 1.0f, 1.0f, 0}};
  auto outcomes = (*loop)->ApplyFeedback(items);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  ASSERT_EQ(*outcomes,
            (std::vector<JoinOutcome>{JoinOutcome::kJoined, JoinOutcome::kAlreadyLabelled,
                                      JoinOutcome::kUnknown, JoinOutcome::kOtherModel}));
  // More than the budget holds: refused, all of them.
  const Impressions many(1024 / JoinBuffer::ImpressionBytes(1, 0) + 1);
  EXPECT_EQ((*loop)->LogImpressions(many.views).status().code(),
            absl::StatusCode::kResourceExhausted);
  // A record applied elsewhere (as a replica adds it): two late labels,
  // four expiries, four steps and delays on bucket bounds and beyond.
  FeedbackApplied replicated;
  replicated.outcomes = {JoinOutcome::kExpired, JoinOutcome::kExpired};
  replicated.expired = 4;
  replicated.steps = 4;
  replicated.delays_seconds = {0.5, 1, 7200, 1e6};
  (*loop)->RecordFeedback(replicated);

  values = Values(registry);
  EXPECT_EQ(values["clickd_model_impressions_logged_total"][L], 3);
  EXPECT_EQ(values["clickd_model_impressions_refused_total"][L], many.views.size());
  EXPECT_EQ(values["clickd_model_impressions_expired_total"][L], 4);
  EXPECT_EQ(values["clickd_model_feedback_steps_total"][L], 1 + 4);  // wait_negative: the join
  const std::map<std::string, double> outcome_counts = {
      {"joined", 1}, {"unknown", 1}, {"late", 2}, {"already_labelled", 1}, {"other_model", 1}};
  EXPECT_EQ(values["clickd_model_feedback_items_total"].size(), outcome_counts.size());
  for (const auto& [outcome, count] : outcome_counts) {
    EXPECT_EQ(values["clickd_model_feedback_items_total"]
                    [(Labels{{"model", "loop"}, {"outcome", outcome}})],
              count)
        << outcome;
  }
  EXPECT_EQ(values["clickd_model_join_buffer_impressions"]
                  [(Labels{{"model", "loop"}, {"state", "pending"}})],
            2);
  EXPECT_EQ(values["clickd_model_join_buffer_impressions"]
                  [(Labels{{"model", "loop"}, {"state", "labelled"}})],
            1);
  // A labelled impression keeps its entry without its features.
  EXPECT_EQ(values["clickd_model_join_buffer_bytes"][L],
            2 * JoinBuffer::ImpressionBytes(1, 0) + JoinBuffer::ImpressionBytes(0, 0));
  EXPECT_EQ(values["clickd_model_join_buffer_max_bytes"][L], 1024);
  // Only the model with a loop has series.
  for (const char* name : kLoopFamilies) {
    for (const auto& [labels, value] : values[name]) EXPECT_EQ(labels.at("model"), "loop") << name;
  }

  // The label delay histogram: 100 s (give or take the call), then the
  // replicated 0.5, 1 (on a bound: le is inclusive), 7200 and 1e6 (+Inf).
  const std::vector<MetricFamily> families = registry.Collect();
  const MetricFamily* delays = Find(families, "clickd_model_label_delay_seconds");
  ASSERT_NE(delays, nullptr);
  EXPECT_EQ(delays->type, prometheus::MetricType::Histogram);
  ASSERT_EQ(delays->metric.size(), 1u);
  EXPECT_EQ(LabelsOf(delays->metric[0]), L);
  const ClientMetric::Histogram& h = delays->metric[0].histogram;
  const std::vector<uint64_t> cumulative = {2, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5};
  ASSERT_EQ(h.bucket.size(), std::size(kFeedbackDelayBuckets) + 1);
  for (size_t i = 0; i < h.bucket.size(); ++i) {
    if (i < std::size(kFeedbackDelayBuckets)) {
      EXPECT_EQ(h.bucket[i].upper_bound, kFeedbackDelayBuckets[i]);
    } else {
      EXPECT_TRUE(std::isinf(h.bucket[i].upper_bound));
    }
    EXPECT_EQ(h.bucket[i].cumulative_count, cumulative[i]) << "le " << h.bucket[i].upper_bound;
  }
  EXPECT_EQ(h.sample_count, 5u);
  const double replicated_sum = 0.5 + 1 + 7200 + 1e6;
  EXPECT_GT(h.sample_sum, replicated_sum + 60);
  EXPECT_LE(h.sample_sum, replicated_sum + 100);
  const std::string text = SerializeText(families);
  for (const char* line :
       {"clickd_model_label_delay_seconds_bucket{model=\"loop\",le=\"1\"} 2\n",
        "clickd_model_label_delay_seconds_bucket{model=\"loop\",le=\"300\"} 3\n",
        "clickd_model_label_delay_seconds_bucket{model=\"loop\",le=\"604800\"} 4\n",
        "clickd_model_label_delay_seconds_bucket{model=\"loop\",le=\"+Inf\"} 5\n",
        "clickd_model_label_delay_seconds_count{model=\"loop\"} 5\n",
        "# TYPE clickd_model_label_delay_seconds histogram\n"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line;
  }
  EXPECT_EQ(text.find("model=\"plain\",le="), std::string::npos);

  // Deleting the model takes its series with it.
  ASSERT_TRUE(models.Delete("loop").ok());
  values = Values(registry);
  for (const char* name : kLoopFamilies) EXPECT_TRUE(values[name].empty()) << name;
  EXPECT_TRUE(Find(registry.Collect(), "clickd_model_label_delay_seconds")->metric.empty());
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

namespace clickd::metrics {
namespace {

// The calibration before and after the online correction, and the fit,
// for the models that have one only.
TEST(ModelMetrics, CalibrationBeforeAndAfterTheCorrection) {
  ModelRegistry models;
  Registry registry;
  RegisterModelMetrics(&registry, &models);
  ModelConfig calibrated = Named("cal");
  calibrated.calibration.enabled = true;
  auto served = models.Create(calibrated);
  ASSERT_TRUE(served.ok()) << served.status();
  ASSERT_TRUE(models.Create(Named("plain")).ok());
  auto values = Values(registry);
  const Labels L = {{"model", "cal"}};
  EXPECT_TRUE(values["clickd_model_calibration_ratio"].empty());  // no click yet
  EXPECT_TRUE(values["clickd_model_calibration_fit"].empty());    // no fit yet
  EXPECT_EQ(values["clickd_model_calibration_examples"].size(), 1u);
  EXPECT_EQ(values["clickd_model_calibration_examples"][L], 0);

  // Over-predicting (p = 0.5 where 1 in 10 clicks), until the first fit:
  // 10,000 examples (OnlineCalibrationOptions::refit_every).
  std::vector<ScoredExample> scored;
  for (int i = 0; i < 10000; ++i) {
    scored.push_back({0.0f, i % 10 == 0 ? 1.0f : 0.0f, 1.0f});
  }
  (*served)->RecordProgressive(scored);
  values = Values(registry);
  const Labels before = {{"model", "cal"}, {"correction", "before"}};
  const Labels after = {{"model", "cal"}, {"correction", "after"}};
  EXPECT_DOUBLE_EQ(values["clickd_model_calibration_ratio"][before], 5.0);
  // Served before the first fit: the identity.
  EXPECT_DOUBLE_EQ(values["clickd_model_calibration_ratio"][after], 5.0);
  EXPECT_EQ(values["clickd_model_calibration_examples"][L], 10000);
  const CalibrationSummary fit = (*served)->calibration();
  ASSERT_TRUE(fit.fitted);
  EXPECT_EQ(
      values["clickd_model_calibration_fit"][(Labels{{"model", "cal"}, {"parameter", "gamma"}})],
      fit.gamma);
  EXPECT_EQ(
      values["clickd_model_calibration_fit"][(Labels{{"model", "cal"}, {"parameter", "kappa"}})],
      fit.kappa);

  // After the fit the same stream is served near-calibrated.
  (*served)->RecordProgressive(scored);
  values = Values(registry);
  EXPECT_DOUBLE_EQ(values["clickd_model_calibration_ratio"][before], 5.0);
  EXPECT_LT(values["clickd_model_calibration_ratio"][after], 3.5);
  for (const char* family : {"clickd_model_calibration_ratio", "clickd_model_calibration_fit",
                             "clickd_model_calibration_examples"}) {
    for (const auto& [labels, value] : values[family]) {
      EXPECT_EQ(labels.at("model"), "cal") << family;
    }
  }
}

}  // namespace
}  // namespace clickd::metrics
