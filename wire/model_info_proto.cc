#include "wire/model_info_proto.h"

#include "core/model/variant_model.h"
#include "wire/model_config_proto.h"

namespace clickd {

v1::ModelInfo ToModelInfo(const ModelConfig& config, const ModelStats& stats,
                          const MetricsSummary& progressive) {
  v1::ModelInfo info;
  *info.mutable_config() = ModelConfigToProto(config);
  info.set_updates(stats.updates);
  info.set_coordinates(stats.coordinates);
  info.set_bytes(stats.bytes);
  info.set_coordinates_evicted(stats.coordinates_evicted);
  info.set_coordinates_expired(stats.coordinates_expired);
  *info.mutable_metrics() = MetricsToProto(progressive);
  return info;
}

void AddVariantInfos(const Model& model, v1::ModelInfo* info) {
  const auto* variants = dynamic_cast<const VariantModel*>(&model);
  if (variants == nullptr) return;
  for (const VariantReport& r : variants->Reports()) {
    v1::VariantInfo* v = info->add_variants();
    v->set_name(r.name);
    v->set_optimizer(r.optimizer);
    v->set_champion(r.champion);
    v->set_examples(r.examples);
    v->set_loss(r.loss);
    v->set_recent_loss(r.recent_loss);
    v->set_coordinates(r.coordinates);
    v->set_bytes(r.bytes);
  }
}

v1::ModelInfo ToModelInfo(const ServedModel& served) {
  v1::ModelInfo info =
      ToModelInfo(served.model().config(), served.CachedStats(), served.ProgressiveSummary());
  AddVariantInfos(served.model(), &info);
  return info;
}

}  // namespace clickd
