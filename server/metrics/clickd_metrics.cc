#include "server/metrics/clickd_metrics.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/model/variant_model.h"

#ifndef CLICKD_VERSION
#define CLICKD_VERSION "unknown"
#endif

namespace clickd::metrics {
namespace {

using ModelValue = std::function<double(const ServedModel&)>;
using SummaryValue = std::function<double(const MetricsSummary&)>;

// A family with one series per model: value(model).
SampleCallback PerModel(const ModelRegistry* models, ModelValue value) {
  return [models, value = std::move(value)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      samples.push_back({{{"model", served->name()}}, value(*served)});
    }
    return samples;
  };
}

// A family with one series per model and window: value(summary), left out
// where it is NaN (no examples in the window, one class only, or a metric
// the model's loss does not define).
SampleCallback PerModelAndWindow(const ModelRegistry* models, SummaryValue value) {
  return [models, value = std::move(value)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      const std::string& name = served->name();
      const std::pair<const char*, MetricsSummary> windows[] = {
          {kWindowSinceStart, served->ProgressiveSummary()},
          {kWindowRecent, served->RecentProgressiveSummary()}};
      for (const auto& [window, summary] : windows) {
        const double v = value(summary);
        if (!std::isnan(v)) samples.push_back({{{"model", name}, {"window", window}}, v});
      }
    }
    return samples;
  };
}

using VariantValue = std::function<double(const VariantReport&)>;

// A family with one series per variant of every model with variants:
// value(report), left out where it is NaN.
SampleCallback PerVariant(const ModelRegistry* models, VariantValue value) {
  return [models, value = std::move(value)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      const auto* variants = dynamic_cast<const VariantModel*>(&served->model());
      if (variants == nullptr) continue;
      for (const VariantReport& r : variants->Reports()) {
        const double v = value(r);
        if (!std::isnan(v))
          samples.push_back({{{"model", served->name()}, {"variant", r.name}}, v});
      }
    }
    return samples;
  };
}

// clickd_model_variant_loss: each variant's lifetime loss (window
// "since_start") and its recent loss (window "recent": exponentially
// weighted by examples, not the 10-minute clock window of the model's own
// progressive metrics), left out before any example.
SampleCallback PerVariantLoss(const ModelRegistry* models) {
  return [models] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      const auto* variants = dynamic_cast<const VariantModel*>(&served->model());
      if (variants == nullptr) continue;
      for (const VariantReport& r : variants->Reports()) {
        for (const auto& [window, v] :
             {std::pair{kWindowSinceStart, r.loss}, std::pair{"recent", r.recent_loss}}) {
          if (std::isnan(v)) continue;
          samples.push_back(
              {{{"model", served->name()}, {"variant", r.name}, {"window", window}}, v});
        }
      }
    }
    return samples;
  };
}

// The series one model adds to a family (without the model label).
using ModelSeries = std::function<std::vector<Sample>(const ServedModel&)>;

// A family with series only for the models `has` picks: series(model),
// each labelled with the model's name.
SampleCallback PerModelWhere(const ModelRegistry* models, bool (*has)(const ServedModel&),
                             ModelSeries series) {
  return [models, has, series = std::move(series)] {
    std::vector<Sample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      if (!has(*served)) continue;
      for (Sample& sample : series(*served)) {
        sample.labels["model"] = served->name();
        samples.push_back(std::move(sample));
      }
    }
    return samples;
  };
}

// A family with series only for the models with an impression-to-click loop.
SampleCallback PerLoop(const ModelRegistry* models, ModelSeries series) {
  return PerModelWhere(
      models, [](const ServedModel& m) { return m.feedback() != nullptr; }, std::move(series));
}

// A loop family with one series per model: value(model).
SampleCallback PerLoopValue(const ModelRegistry* models,
                            std::function<uint64_t(const ServedModel&)> value) {
  return PerLoop(models, [value = std::move(value)](const ServedModel& m) {
    return std::vector<Sample>{{{}, static_cast<double>(value(m))}};
  });
}

JoinBufferStats BufferStats(const ServedModel& m) { return m.feedback()->buffer().Stats(); }

// clickd_model_feedback_items_total: feedback items by outcome.
std::vector<Sample> FeedbackOutcomes(const ServedModel& m) {
  const FeedbackCounters c = m.feedback_counters();
  std::vector<Sample> samples;
  for (const auto& [outcome, count] :
       {std::pair{"joined", c.joined}, std::pair{"unknown", c.unknown}, std::pair{"late", c.late},
        std::pair{"already_labelled", c.already_labelled},
        std::pair{"other_model", c.other_model}}) {
    samples.push_back({{{"outcome", outcome}}, static_cast<double>(count)});
  }
  return samples;
}

// clickd_model_label_delay_seconds: the label delays of joined feedback.
HistogramCallback LabelDelays(const ModelRegistry* models) {
  return [models] {
    std::vector<HistogramSample> samples;
    for (const std::shared_ptr<ServedModel>& served : models->List()) {
      if (served->feedback() == nullptr) continue;
      FeedbackCounters c = served->feedback_counters();
      samples.push_back(
          {{{"model", served->name()}}, std::move(c.delay_counts), c.delay_sum_seconds});
    }
    return samples;
  };
}

// The impression-to-click loop's families (docs/metrics.md#impression-to-click-loop).
void RegisterFeedbackMetrics(Registry* registry, const ModelRegistry* models) {
  registry->BuildCallback(
      "clickd_model_join_buffer_impressions",
      "A model with the impression-to-click loop: impressions in its join buffer, waiting "
      "for a label (state pending) or labelled and kept, without features, until their TTL "
      "(state labelled).",
      MetricType::kGauge, PerLoop(models, [](const ServedModel& m) {
        const JoinBufferStats stats = BufferStats(m);
        return std::vector<Sample>{{{{"state", "pending"}}, static_cast<double>(stats.pending)},
                                   {{{"state", "labelled"}}, static_cast<double>(stats.labelled)}};
      }));
  registry->BuildCallback(
      "clickd_model_join_buffer_bytes",
      "Memory the join buffer's impressions take, in bytes, as counted against its budget.",
      MetricType::kGauge,
      PerLoopValue(models, [](const ServedModel& m) { return BufferStats(m).bytes; }));
  registry->BuildCallback(
      "clickd_model_join_buffer_max_bytes",
      "The join buffer's budget (feedback.max_buffer_bytes), in bytes: Predict with "
      "log_impressions is refused when the impressions would not fit.",
      MetricType::kGauge,
      PerLoopValue(models, [](const ServedModel& m) { return BufferStats(m).max_bytes; }));
  registry->BuildCallback(
      "clickd_model_impressions_logged_total",
      "Impressions Predict logged into the join buffer, since the process started.",
      MetricType::kCounter,
      PerLoopValue(models, [](const ServedModel& m) { return m.feedback_counters().impressions; }));
  registry->BuildCallback(
      "clickd_model_impressions_refused_total",
      "Impressions Predict refused to log because the join buffer was full, since the process "
      "started.",
      MetricType::kCounter, PerLoopValue(models, [](const ServedModel& m) {
        return m.feedback_counters().refused_full;
      }));
  registry->BuildCallback(
      "clickd_model_impressions_expired_total",
      "Impressions that reached their TTL without a label, since the process started.",
      MetricType::kCounter,
      PerLoopValue(models, [](const ServedModel& m) { return m.feedback_counters().expired; }));
  registry->BuildCallback(
      "clickd_model_feedback_items_total",
      "Feedback items by outcome, since the process started: joined (learned), unknown (an id "
      "the model never issued), late (the impression's TTL had passed), already_labelled (a "
      "duplicate), other_model (an id of another model).",
      MetricType::kCounter, PerLoop(models, FeedbackOutcomes));
  registry->BuildCallback(
      "clickd_model_feedback_steps_total",
      "Learning steps the impression-to-click loop took, by the model's feedback policy, "
      "since the process started.",
      MetricType::kCounter,
      PerLoopValue(models, [](const ServedModel& m) { return m.feedback_counters().steps; }));
  registry->BuildCallbackHistogram(
      "clickd_model_label_delay_seconds",
      "Label delay of each joined feedback item: its event time minus its impression's time, "
      "in seconds (negative delays count as 0), since the process started.",
      std::vector<double>(std::begin(kFeedbackDelayBuckets), std::end(kFeedbackDelayBuckets)),
      LabelDelays(models));
}

// A family with series only for the models with config.calibration
// enabled: series(model, its summary), each labelled with the model's name.
SampleCallback PerCalibrated(const ModelRegistry* models,
                             std::function<std::vector<Sample>(const CalibrationSummary&)> series) {
  return PerModelWhere(
      models, [](const ServedModel& m) { return m.calibrated(); },
      [series = std::move(series)](const ServedModel& m) { return series(m.calibration()); });
}

// The online calibration's families (docs/metrics.md#calibration).
void RegisterCalibrationMetrics(Registry* registry, const ModelRegistry* models) {
  registry->BuildCallback(
      "clickd_model_calibration_ratio",
      "A model with calibration enabled: sum of the probabilities Predict would have served "
      "over sum of labels, for the progressive predictions since the process started, before "
      "and after the online correction (1 is calibrated). Absent until a click is seen.",
      MetricType::kGauge, PerCalibrated(models, [](const CalibrationSummary& c) {
        if (c.raw_ratio <= 0) return std::vector<Sample>();
        return std::vector<Sample>{{{{"correction", "before"}}, c.raw_ratio},
                                   {{{"correction", "after"}}, c.calibrated_ratio}};
      }));
  registry->BuildCallback(
      "clickd_model_calibration_fit",
      "The online correction tau(p) = gamma * p^kappa in use (McMahan et al. 2013, section "
      "7). Absent until the first fit.",
      MetricType::kGauge, PerCalibrated(models, [](const CalibrationSummary& c) {
        if (!c.fitted) return std::vector<Sample>();
        return std::vector<Sample>{{{{"parameter", "gamma"}}, c.gamma},
                                   {{{"parameter", "kappa"}}, c.kappa}};
      }));
  registry->BuildCallback(
      "clickd_model_calibration_examples",
      "Progressive predictions the online calibration has been fed (restored from a "
      "snapshot, then since the process started).",
      MetricType::kGauge, PerCalibrated(models, [](const CalibrationSummary& c) {
        return std::vector<Sample>{{{}, static_cast<double>(c.examples)}};
      }));
}

}  // namespace

void RegisterModelMetrics(Registry* registry, const ModelRegistry* models) {
  registry->BuildCallback(
      "clickd_predictions_total",
      "Candidates scored by Predict, per model, since the model was created.", MetricType::kCounter,
      PerModel(models, [](const ServedModel& m) { return static_cast<double>(m.predictions()); }));
  registry->BuildCallback(
      "clickd_update_examples_total",
      "Examples learned from Update and UpdateStream, per model, since the model was created.",
      MetricType::kCounter, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.update_examples());
      }));
  registry->BuildCallback(
      "clickd_model_logloss",
      "Progressive validation logloss (mean, importance-weighted; each example scored before "
      "the model learned it), logistic models only.",
      MetricType::kGauge,
      PerModelAndWindow(models, [](const MetricsSummary& s) { return s.logloss; }));
  registry->BuildCallback(
      "clickd_model_auc", "Progressive validation AUC (binned; see clickd_model_auc_error_bound).",
      MetricType::kGauge, PerModelAndWindow(models, [](const MetricsSummary& s) { return s.auc; }));
  registry->BuildCallback(
      "clickd_model_auc_error_bound",
      "Largest possible error of clickd_model_auc due to its margin binning.", MetricType::kGauge,
      PerModelAndWindow(models, [](const MetricsSummary& s) { return s.auc_error_bound; }));
  registry->BuildCallback(
      "clickd_model_calibration",
      "Progressive calibration: sum of predicted probabilities over sum of labels (1 is "
      "calibrated), logistic models only.",
      MetricType::kGauge,
      PerModelAndWindow(models, [](const MetricsSummary& s) { return s.calibration; }));
  registry->BuildCallback(
      "clickd_model_progressive_examples",
      "Examples the progressive metrics of the window are computed from.", MetricType::kGauge,
      PerModelAndWindow(models,
                        [](const MetricsSummary& s) { return static_cast<double>(s.examples); }));
  registry->BuildCallback("clickd_model_coordinates",
                          "Coordinates (hashed feature keys) the model holds.", MetricType::kGauge,
                          PerModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.model().Stats().coordinates);
                          }));
  registry->BuildCallback("clickd_model_bytes", "Memory of the model's coordinate store, in bytes.",
                          MetricType::kGauge, PerModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.model().Stats().bytes);
                          }));
  registry->BuildCallback(
      "clickd_model_memory_budget_bytes",
      "The model's memory budget (config memory.max_bytes, docs/memory.md): the most "
      "clickd_model_bytes may reach; 0: unbounded.",
      MetricType::kGauge, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.model().config().memory.max_bytes);
      }));
  registry->BuildCallback(
      "clickd_model_coordinates_evicted_total",
      "Coordinates the memory budget evicted (the least useful: smallest |weight|) since the "
      "server started; a restart's log replay evicts and counts again. 0 without a budget.",
      MetricType::kCounter, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.model().Stats().coordinates_evicted);
      }));
  registry->BuildCallback(
      "clickd_model_coordinates_expired_total",
      "Coordinates the TTL evicted (not learned for config memory.ttl_rounds examples) since "
      "the server started; a restart's log replay evicts and counts again. 0 without a TTL.",
      MetricType::kCounter, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.model().Stats().coordinates_expired);
      }));
  registry->BuildCallback(
      "clickd_model_admission_filter_bytes",
      "The Bloom admission filter's counters (docs/admission.md): memory beside the coordinate "
      "tables, not in clickd_model_bytes nor charged to the budget. 0 without the filter.",
      MetricType::kGauge, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.model().Stats().admission_bytes);
      }));
  registry->BuildCallback(
      "clickd_model_admission_sightings_total",
      "Sightings of features the model did not hold yet, with feature admission on "
      "(docs/admission.md); 0 without it.",
      MetricType::kCounter, PerModel(models, [](const ServedModel& m) {
        return static_cast<double>(m.model().Stats().admission_sightings);
      }));
  registry->BuildCallback("clickd_model_admission_admitted_total",
                          "Of those sightings, the ones that gave the feature a coordinate.",
                          MetricType::kCounter, PerModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.model().Stats().admission_admitted);
                          }));
  registry->BuildCallback(
      "clickd_model_variant_loss",
      "A model with variants (docs/variants.md): each variant's mean progressive loss (the "
      "model's loss; logloss for logistic), since the model was created and over recent "
      "examples (exponentially weighted, half-life 10,000 examples: what the champion is "
      "chosen by).",
      MetricType::kGauge, PerVariantLoss(models));
  registry->BuildCallback(
      "clickd_model_variant_champion",
      "1 for the variant Predict serves by default (the champion), 0 for the others.",
      MetricType::kGauge,
      PerVariant(models, [](const VariantReport& r) { return r.champion ? 1.0 : 0.0; }));
  registry->BuildCallback(
      "clickd_model_variant_examples", "Examples each variant has learned.", MetricType::kGauge,
      PerVariant(models, [](const VariantReport& r) { return static_cast<double>(r.examples); }));
  registry->BuildCallback("clickd_model_variant_coordinates",
                          "Coordinates each variant holds (each variant has its own).",
                          MetricType::kGauge, PerVariant(models, [](const VariantReport& r) {
                            return static_cast<double>(r.coordinates);
                          }));
  registry->BuildCallback("clickd_model_updates", "Examples the model has learned: its version.",
                          MetricType::kGauge, PerModel(models, [](const ServedModel& m) {
                            return static_cast<double>(m.model().Updates());
                          }));
  RegisterFeedbackMetrics(registry, models);
  RegisterCalibrationMetrics(registry, models);
}

void RegisterProcessMetrics(Registry* registry, double start_time_seconds) {
  registry
      ->BuildGauge("clickd_build_info",
                   "Always 1; the labels say which clickd version and compiler built this binary.")
      .Add({{"version", ClickdVersion()}, {"compiler", CompilerVersion()}})
      .Set(1);
  registry
      ->BuildGauge("clickd_process_start_time_seconds",
                   "When the process started, in seconds since the Unix epoch.")
      .Add({})
      .Set(start_time_seconds);
}

std::string CompilerVersion() {
#if defined(__clang__)
  return absl::StrCat("clang-", __clang_major__, ".", __clang_minor__, ".", __clang_patchlevel__);
#elif defined(__GNUC__)
  return absl::StrCat("gcc-", __GNUC__, ".", __GNUC_MINOR__, ".", __GNUC_PATCHLEVEL__);
#else
  return "unknown";
#endif
}

std::string ClickdVersion() { return CLICKD_VERSION; }

}  // namespace clickd::metrics
