#include "server/status/status_json.h"

#include <cmath>
#include <string_view>

#include "nlohmann/json.hpp"

namespace clickd::status {
namespace {

using nlohmann::json;

// JSON has no NaN or Infinity: those become null.
json Number(double value) { return std::isfinite(value) ? json(value) : json(nullptr); }

// The hyperparameters the model's optimizer reads.
json Hyperparameters(const ModelConfig& config) {
  const OptimizerConfig& o = config.optimizer;
  switch (o.type) {
    case OptimizerType::kFtrl:
      return {{"alpha", Number(o.ftrl.alpha)},
              {"beta", Number(o.ftrl.beta)},
              {"lambda1", Number(o.ftrl.lambda1)},
              {"lambda2", Number(o.ftrl.lambda2)},
              {"lambda1_times_t", o.ftrl.lambda1_times_t},
              {"decay", Number(o.ftrl.decay)}};
    case OptimizerType::kAdagrad:
    case OptimizerType::kAdagradDa:
      return {{"eta", Number(o.adagrad.eta)},
              {"delta", Number(o.adagrad.delta)},
              {"lambda", Number(o.adagrad.lambda)}};
    case OptimizerType::kPcOgd:
      return {{"radius", Number(o.pc_ogd.radius)}, {"scale", Number(o.pc_ogd.scale)}};
    case OptimizerType::kGlobalOgd:
      return {{"radius", Number(o.global_ogd.radius)}, {"scale", Number(o.global_ogd.scale)}};
    case OptimizerType::kSgd:
      return {{"eta", Number(o.sgd.eta)}};
    case OptimizerType::kPa:
      return {{"c", Number(o.pa.c)}};
    case OptimizerType::kCw:
      return {{"eta", Number(o.cw.eta)}, {"a", Number(o.cw.a)}};
    case OptimizerType::kMetaGradDiag:
      return {{"diameter", Number(o.metagrad_diag.diameter)},
              {"gradient_bound", Number(o.metagrad_diag.gradient_bound)}};
    case OptimizerType::kDense: {
      // Every dense learner's fields; each learner reads some of them
      // (core/optim/dense/dense_optimizer_config.h).
      const DenseOptimizerConfig& d = config.dense_optimizer;
      return {{"eta", Number(d.eta)},
              {"delta", Number(d.delta)},
              {"tau", d.tau},
              {"weight_power", Number(d.weight_power)},
              {"diameter", Number(d.diameter)},
              {"gradient_bound", Number(d.gradient_bound)}};
    }
  }
  return json::object();
}

json Config(const ModelConfig& config) {
  return {{"optimizer", OptimizerName(config)},
          {"loss", std::string(LossTypeName(config.loss))},
          {"hyperparameters", Hyperparameters(config)},
          {"hash_bits", config.hashing.bits},
          {"bias", config.hashing.bias},
          {"interactions", config.hashing.interactions.size()},
          {"dense_namespaces", config.dense_namespaces.size()},
          {"shards", config.num_shards}};
}

json Summary(const MetricsSummary& s) {
  return {{"examples", s.examples},
          {"logloss", Number(s.logloss)},
          {"auc", Number(s.auc)},
          {"calibration", Number(s.calibration)}};
}

// The history as columns (one array per figure, oldest first): compact,
// and what the charts draw from.
json Points(const std::vector<StatusPoint>& points) {
  json t = json::array(), updates = json::array(), predictions = json::array();
  json logloss = json::array(), auc = json::array(), calibration = json::array();
  json recent_logloss = json::array(), recent_auc = json::array(),
       recent_calibration = json::array();
  for (const StatusPoint& p : points) {
    t.push_back(Number(p.unix_seconds));
    updates.push_back(p.update_examples);
    predictions.push_back(p.predictions);
    logloss.push_back(Number(p.logloss));
    auc.push_back(Number(p.auc));
    calibration.push_back(Number(p.calibration));
    recent_logloss.push_back(Number(p.recent_logloss));
    recent_auc.push_back(Number(p.recent_auc));
    recent_calibration.push_back(Number(p.recent_calibration));
  }
  return {{"t", std::move(t)},
          {"update_examples", std::move(updates)},
          {"predictions", std::move(predictions)},
          {"logloss", std::move(logloss)},
          {"auc", std::move(auc)},
          {"calibration", std::move(calibration)},
          {"recent_logloss", std::move(recent_logloss)},
          {"recent_auc", std::move(recent_auc)},
          {"recent_calibration", std::move(recent_calibration)}};
}

json Model(const ModelStatus& m) {
  return {{"name", m.config.name},
          {"config", Config(m.config)},
          {"coordinates", m.stats.coordinates},
          {"bytes", m.stats.bytes},
          {"updates", m.stats.updates},
          {"update_examples", m.update_examples},
          {"predictions", m.predictions},
          {"update_rate", Number(m.update_rate)},
          {"prediction_rate", Number(m.prediction_rate)},
          {"lifetime", Summary(m.lifetime)},
          {"recent", Summary(m.recent)},
          {"points", Points(m.points)},
          {"kafka", m.kafka.has_value() ? json{{"topic", m.kafka->topic},
                                               {"partitions", m.kafka->partitions},
                                               {"lag_records", m.kafka->lag_records}}
                                        : json(nullptr)}};
}

json Load(const std::optional<ServerLoad>& load) {
  if (!load.has_value()) return nullptr;
  return {
      {"queued_calls", load->queued_calls},         {"running_calls", load->running_calls},
      {"max_queued_calls", load->max_queued_calls}, {"worker_threads", load->worker_threads},
      {"open_streams", load->open_streams},         {"max_open_streams", load->max_open_streams}};
}

// Writes '<', '>' and '&' as \u escapes. They can occur only inside
// strings (JSON's syntax has none of them), where the escape means the
// same character.
std::string EscapeHtmlSignificant(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '<':
        out += "\\u003c";
        break;
      case '>':
        out += "\\u003e";
        break;
      case '&':
        out += "\\u0026";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string StatusJson(const StatusReport& report) {
  json models = json::array();
  for (const ModelStatus& m : report.models) models.push_back(Model(m));
  const json root = {{"unix_seconds", Number(report.unix_seconds)},
                     {"sample_interval_seconds", Number(report.sample_interval_seconds)},
                     {"max_points", report.max_points},
                     {"load", Load(report.load)},
                     {"models", std::move(models)}};
  // ensure_ascii: non-ASCII as \u escapes; replace: invalid UTF-8 as
  // U+FFFD instead of an exception.
  return EscapeHtmlSignificant(
      root.dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace));
}

}  // namespace clickd::status
