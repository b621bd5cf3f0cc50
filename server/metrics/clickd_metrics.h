// The metrics clickd exports besides its RPCs (rpc_metrics.h): per-model
// families computed at scrape time from the ModelRegistry, so that models
// created or deleted at runtime appear and disappear with them, and the
// process' build info and start time. docs/metrics.md lists them all.
#ifndef CLICKD_SERVER_METRICS_CLICKD_METRICS_H_
#define CLICKD_SERVER_METRICS_CLICKD_METRICS_H_

#include <string>

#include "core/serving/registry.h"
#include "server/metrics/registry.h"

namespace clickd::metrics {

// The `window` label values of the progressive metrics.
inline constexpr char kWindowSinceStart[] = "since_start";
inline constexpr char kWindowRecent[] = "10m";

// Registers clickd_predictions_total, clickd_update_examples_total,
// clickd_model_{logloss,auc,auc_error_bound,calibration,
// progressive_examples}{model,window}, clickd_model_{coordinates,bytes,
// updates}{model}, the variants' clickd_model_variant_* and, with series
// only for models with an impression-to-click loop,
// clickd_model_join_buffer_*, clickd_model_impressions_*_total,
// clickd_model_feedback_*_total and the histogram
// clickd_model_label_delay_seconds. `models` must outlive every Collect of
// `registry`.
void RegisterModelMetrics(Registry* registry, const ModelRegistry* models);

// Registers clickd_build_info{version,compiler} = 1 and
// clickd_process_start_time_seconds = `start_time_seconds` (Unix time).
void RegisterProcessMetrics(Registry* registry, double start_time_seconds);

// "clang-14.0.6", "gcc-12.2.0": the compiler that built this binary.
std::string CompilerVersion();

// The project version CMake was given ("0.1.0").
std::string ClickdVersion();

}  // namespace clickd::metrics

#endif  // CLICKD_SERVER_METRICS_CLICKD_METRICS_H_
