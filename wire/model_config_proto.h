// Core values to their clickd.v1 wire form, for the server (GetModel,
// ListModels, CreateModel's answer) and for clickctl (CreateModel from its
// model flags, metrics of a replay) alike: one conversion, so that the two
// cannot drift. Pure functions; clickd_wire links core and the protos only,
// not the server.
#ifndef CLICKD_WIRE_MODEL_CONFIG_PROTO_H_
#define CLICKD_WIRE_MODEL_CONFIG_PROTO_H_

#include "clickd/v1/clickd.pb.h"
#include "core/eval/metrics.h"
#include "core/model/model_config.h"

namespace clickd {

// Every field spelled out: the selected optimizer's hyperparameters (the
// others do not apply and stay unset), the loss, hashing and shards.
v1::ModelConfig ModelConfigToProto(const ModelConfig& config);

// Progressive metrics as ModelInfo.metrics and UpdateStream's summary carry them.
v1::ProgressiveMetrics MetricsToProto(const MetricsSummary& summary);

}  // namespace clickd

#endif  // CLICKD_WIRE_MODEL_CONFIG_PROTO_H_
