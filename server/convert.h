// Conversions between clickd.v1 messages and core types, with the request
// validation that belongs to the wire format (shapes, sizes, finite values).
// Every error names the field path, e.g. "candidates[3].namespaces[0]
// .features[2].value is nan; must be finite". Pure functions.
#ifndef CLICKD_SERVER_CONVERT_H_
#define CLICKD_SERVER_CONVERT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/eval/metrics.h"
#include "core/features/example.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/serving/served_model.h"
#include "server/limits.h"

namespace clickd {

// Converts one example; `field` is its path for error messages.
absl::StatusOr<Example> ToExample(const v1::Example& proto, const std::string& field,
                                  const Limits& limits);

// Converts a config, filling defaults for unset fields, and validates it.
absl::StatusOr<ModelConfig> ToModelConfig(const v1::ModelConfig& proto);

// The effective config, every default spelled out.
v1::ModelConfig ToProto(const ModelConfig& config);
v1::ProgressiveMetrics ToProto(const MetricsSummary& metrics);
v1::ModelInfo ToModelInfo(const Model& model, const MetricsSummary& progressive);
v1::ModelInfo ToModelInfo(const ModelConfig& config, const ModelStats& stats,
                          const MetricsSummary& progressive);
// A served model's info from its cached statistics: never waits for a
// learner (ServedModel::CachedStats).
v1::ModelInfo ToModelInfo(const ServedModel& served);

}  // namespace clickd

#endif  // CLICKD_SERVER_CONVERT_H_
