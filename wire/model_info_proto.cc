#include "wire/model_info_proto.h"

#include "wire/model_config_proto.h"

namespace clickd {

v1::ModelInfo ToModelInfo(const ModelConfig& config, const ModelStats& stats,
                          const MetricsSummary& progressive) {
  v1::ModelInfo info;
  *info.mutable_config() = ModelConfigToProto(config);
  info.set_updates(stats.updates);
  info.set_coordinates(stats.coordinates);
  info.set_bytes(stats.bytes);
  *info.mutable_metrics() = MetricsToProto(progressive);
  return info;
}

v1::ModelInfo ToModelInfo(const ServedModel& served) {
  return ToModelInfo(served.model().config(), served.CachedStats(), served.ProgressiveSummary());
}

}  // namespace clickd
