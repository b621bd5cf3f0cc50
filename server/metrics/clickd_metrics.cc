#include "server/metrics/clickd_metrics.h"

#include <cmath>
#include <functional>
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
