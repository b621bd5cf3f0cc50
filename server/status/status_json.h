// The status page's data (GET /status.json): the server's load, and every
// model's config, size, rates, progressive metrics and a short history of
// them, as JSON made with nlohmann::json.
//
// Built from plain structs (ModelStatus) so that tests can feed names and
// numbers no registry would accept. Model names come from callers: the JSON
// escapes them like any string, and additionally writes '<', '>' and '&' as
// \u003c, \u003e and \u0026, so the text stays inert even if a page inlines
// it in a <script> element. Invalid UTF-8 becomes U+FFFD. Numbers that are
// not finite (a metric without data is NaN) are written as null: JSON has
// no NaN or Infinity.
//
// Thread safety: pure functions.
#ifndef CLICKD_SERVER_STATUS_STATUS_JSON_H_
#define CLICKD_SERVER_STATUS_STATUS_JSON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/eval/metrics.h"
#include "core/model/model.h"
#include "core/model/model_config.h"
#include "server/server_load.h"

namespace clickd::status {

// One sample of a model's figures, taken every sample interval.
struct StatusPoint {
  double unix_seconds = 0;
  uint64_t update_examples = 0;
  uint64_t predictions = 0;
  // Progressive metrics since the model was created ...
  double logloss = MetricsSummary::kNaN;
  double auc = MetricsSummary::kNaN;
  double calibration = MetricsSummary::kNaN;
  // ... and over the recent window (ServedModel::RecentProgressiveSummary).
  double recent_logloss = MetricsSummary::kNaN;
  double recent_auc = MetricsSummary::kNaN;
  double recent_calibration = MetricsSummary::kNaN;
};

// A model's Kafka source as the page shows it (kafka/kafka_source.h).
struct KafkaStatus {
  std::string topic;
  int partitions = 0;       // assigned to this process
  int64_t lag_records = 0;  // summed over them
};

// Everything the page shows of one model.
struct ModelStatus {
  ModelConfig config;  // its name is the model's
  ModelStats stats;
  uint64_t update_examples = 0;
  uint64_t predictions = 0;
  // Per second, over the last sample interval (NaN before two samples).
  double update_rate = MetricsSummary::kNaN;
  double prediction_rate = MetricsSummary::kNaN;
  MetricsSummary lifetime;
  MetricsSummary recent;
  // Oldest first.
  std::vector<StatusPoint> points;
  std::optional<KafkaStatus> kafka;  // null in the JSON without a running source
};

struct StatusReport {
  double unix_seconds = 0;  // when it was made
  double sample_interval_seconds = 0;
  int max_points = 0;              // the server's history bound per model
  std::optional<ServerLoad> load;  // null in the JSON when the page has no source
  std::vector<ModelStatus> models;
};

// Returns the report as one line of JSON.
std::string StatusJson(const StatusReport& report);

}  // namespace clickd::status

#endif  // CLICKD_SERVER_STATUS_STATUS_JSON_H_
