// A model's clickd.v1.ModelInfo (GetModel, ListModels, CreateModel's
// answer): its effective config, size and progressive metrics.
// Pure functions.
#ifndef CLICKD_WIRE_MODEL_INFO_PROTO_H_
#define CLICKD_WIRE_MODEL_INFO_PROTO_H_

#include "clickd/v1/clickd.pb.h"
#include "core/eval/metrics.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "core/serving/served_model.h"

namespace clickd {

v1::ModelInfo ToModelInfo(const ModelConfig& config, const ModelStats& stats,
                          const MetricsSummary& progressive);

// A served model's info from its cached statistics: never waits for a
// learner (ServedModel::CachedStats), except that a model with variants
// reads each variant's size (a reader lock per shard: at most one step).
v1::ModelInfo ToModelInfo(const ServedModel& served);

// Adds the variants' figures of a model with variants (nothing otherwise).
void AddVariantInfos(const Model& model, v1::ModelInfo* info);

}  // namespace clickd

#endif  // CLICKD_WIRE_MODEL_INFO_PROTO_H_
