// How clickctl prints what a server returns: one-line JSON objects for
// --json (built with JsonWriter, so NaN metrics become null) and short text
// tables otherwise. Pure functions.
#ifndef CLICKD_CLIENT_CLICKCTL_RESPONSE_JSON_H_
#define CLICKD_CLIENT_CLICKCTL_RESPONSE_JSON_H_

#include <string>
#include <vector>

#include "clickd/v1/clickd.pb.h"
#include "client/clickctl/json_writer.h"

namespace clickd {

// Adds the metrics' fields (examples, weight, loss, logloss, auc,
// auc_error_bound, hinge, mistakes, calibration, squared) to *w, with the
// names `replay --offline --json` uses.
void AddMetricsJson(const v1::ProgressiveMetrics& metrics, JsonWriter* w);

// {"name", "config": <the config in protobuf JSON>, "updates", "coordinates",
//  "bytes", then the metrics' fields}.
std::string ModelInfoJson(const v1::ModelInfo& info);

// A number as JsonWriter writes one (%.10g; null if not finite).
std::string JsonNumber(double value);

// "[item,item,...]" from already-built JSON values.
std::string JsonArray(const std::vector<std::string>& items);

// A header line and one line per model: name, optimizer, loss, updates,
// coordinates, bytes and the headline metrics.
std::string ModelTable(const std::vector<v1::ModelInfo>& models);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_RESPONSE_JSON_H_
