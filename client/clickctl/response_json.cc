#include "client/clickctl/response_json.h"

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/clickctl/request_text.h"

namespace clickd {

void AddMetricsJson(const v1::ProgressiveMetrics& m, JsonWriter* w) {
  w->Integer("examples", m.examples())
      .Number("weight", m.weight())
      .Number("loss", m.loss())
      .Number("logloss", m.logloss())
      .Number("auc", m.auc())
      .Number("auc_error_bound", m.auc_error_bound())
      .Number("hinge", m.hinge())
      .Number("mistakes", m.mistakes())
      .Number("calibration", m.calibration())
      .Number("squared", m.squared());
}

std::string ModelInfoJson(const v1::ModelInfo& info) {
  JsonWriter w;
  w.String("name", info.config().name())
      .Object("config", ToJsonLine(info.config()))
      .Integer("updates", info.updates())
      .Integer("coordinates", info.coordinates())
      .Integer("bytes", info.bytes());
  AddMetricsJson(info.metrics(), &w);
  return w.Finish();
}

std::string JsonNumber(double value) { return JsonWriter::Dump(JsonWriter::NumberValue(value)); }

std::string JsonArray(const std::vector<std::string>& items) {
  return "[" + absl::StrJoin(items, ",") + "]";
}

std::string ModelTable(const std::vector<v1::ModelInfo>& models) {
  std::string out =
      absl::StrFormat("%-20s %-10s %-8s %10s %12s %12s %10s %9s %9s\n", "name", "optimizer", "loss",
                      "updates", "coordinates", "bytes", "examples", "logloss", "auc");
  for (const v1::ModelInfo& m : models) {
    absl::StrAppendFormat(&out, "%-20s %-10s %-8s %10d %12d %12d %10d %9.5f %9.5f\n",
                          m.config().name(), m.config().optimizer(), m.config().loss(), m.updates(),
                          m.coordinates(), m.bytes(), m.metrics().examples(), m.metrics().logloss(),
                          m.metrics().auc());
  }
  return out;
}

}  // namespace clickd
