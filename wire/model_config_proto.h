// Model configs (and progressive metrics) between core and their clickd.v1
// wire form, both ways, for the server (CreateModel, GetModel, ListModels,
// the --config file) and for clickctl (CreateModel from its model flags,
// metrics of a replay) alike: one conversion, so that the two cannot drift.
// Pure functions; clickd_wire links core and the protos only, not the
// server.
#ifndef CLICKD_WIRE_MODEL_CONFIG_PROTO_H_
#define CLICKD_WIRE_MODEL_CONFIG_PROTO_H_

#include "absl/status/statusor.h"
#include "clickd/v1/clickd.pb.h"
#include "core/eval/metrics.h"
#include "core/model/model_config.h"

namespace clickd {

// Converts a config, filling defaults for unset fields, and validates it
// (ValidateModelConfig). Errors name the field: "config.cw.eta is 1; ...".
absl::StatusOr<ModelConfig> ToModelConfig(const v1::ModelConfig& proto);

// The effective config, every field spelled out: the selected optimizer's hyperparameters (the
// others do not apply and stay unset), the loss, hashing and shards.
v1::ModelConfig ModelConfigToProto(const ModelConfig& config);

// Progressive metrics as ModelInfo.metrics and UpdateStream's summary carry them.
v1::ProgressiveMetrics MetricsToProto(const MetricsSummary& summary);

}  // namespace clickd

#endif  // CLICKD_WIRE_MODEL_CONFIG_PROTO_H_
