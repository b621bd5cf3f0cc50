#include "server/convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"
#include "core/optim/optimizer_config.h"
#include "wire/model_config_proto.h"

namespace clickd {
namespace {

absl::Status TooMany(const std::string& field, size_t count, size_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat(field, " has ", count, " entries; the limit is ", limit));
}

absl::Status ConvertFeature(const v1::Feature& proto, const std::string& field,
                            const Limits& limits, Feature* out) {
  switch (proto.key_case()) {
    case v1::Feature::kName:
      if (proto.name().empty() || proto.name().size() > limits.max_name_bytes) {
        return absl::InvalidArgumentError(absl::StrCat(field, ".name has ", proto.name().size(),
                                                       " bytes; must be 1..",
                                                       limits.max_name_bytes));
      }
      out->name = proto.name();
      out->has_id = false;
      break;
    case v1::Feature::kId:
      out->id = proto.id();
      out->has_id = true;
      break;
    case v1::Feature::KEY_NOT_SET:
      return absl::InvalidArgumentError(absl::StrCat(field, " has neither name nor id"));
  }
  out->value = proto.has_value() ? proto.value() : 1.0f;
  return CheckFeatureValue(out->value, field + ".value");
}

// Copies an optional hyperparameter over its default.
void Override(bool has, double value, double* field) {
  if (has) *field = value;
}

}  // namespace

absl::StatusOr<Example> ToExample(const v1::Example& proto, const std::string& field,
                                  const Limits& limits) {
  if (static_cast<size_t>(proto.namespaces_size()) > limits.max_namespaces_per_example) {
    return TooMany(field + ".namespaces", proto.namespaces_size(),
                   limits.max_namespaces_per_example);
  }
  size_t features = 0;
  for (const v1::Namespace& ns : proto.namespaces()) features += ns.features_size();
  if (features > limits.max_features_per_example) {
    return absl::ResourceExhaustedError(absl::StrCat(
        field, " has ", features, " features; the limit is ", limits.max_features_per_example));
  }
  Example out;
  out.namespaces.resize(proto.namespaces_size());
  for (int n = 0; n < proto.namespaces_size(); ++n) {
    const v1::Namespace& ns = proto.namespaces(n);
    const std::string ns_field = absl::StrCat(field, ".namespaces[", n, "]");
    if (ns.name().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(ns_field, ".name has ", ns.name().size(),
                                                     " bytes; the limit is ",
                                                     limits.max_name_bytes));
    }
    Namespace& target = out.namespaces[n];
    target.name = ns.name();
    target.features.resize(ns.features_size());
    for (int f = 0; f < ns.features_size(); ++f) {
      absl::Status s = ConvertFeature(ns.features(f), absl::StrCat(ns_field, ".features[", f, "]"),
                                      limits, &target.features[f]);
      if (!s.ok()) return s;
    }
  }
  // Dense values: bounded here (their total, names' length); checked
  // against the model's dense namespaces by CheckDenseValues.
  size_t dense_values = 0;
  for (const v1::DenseValues& d : proto.dense()) dense_values += d.values_size();
  if (dense_values > static_cast<size_t>(kMaxDenseDim)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(field, " has ", dense_values, " dense values; the limit is ", kMaxDenseDim));
  }
  out.dense.resize(proto.dense_size());
  for (int d = 0; d < proto.dense_size(); ++d) {
    const v1::DenseValues& dense = proto.dense(d);
    if (dense.namespace_().size() > limits.max_name_bytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".dense[", d, "].namespace has ", dense.namespace_().size(),
                       " bytes; the limit is ", limits.max_name_bytes));
    }
    out.dense[d].name = dense.namespace_();
    out.dense[d].values.assign(dense.values().begin(), dense.values().end());
  }
  return out;
}

namespace {

// The dense block's part of a config (dense_namespaces, dense_optimizer,
// dense); validated with the rest by ValidateModelConfig.
absl::Status ToDenseConfig(const v1::ModelConfig& p, ModelConfig* c) {
  for (const v1::DenseNamespace& ns : p.dense_namespaces()) {
    c->dense_namespaces.push_back(
        {ns.name(), static_cast<int>(std::min<uint32_t>(ns.dim(), 1u << 30))});
  }
  DenseOptimizerConfig& d = c->dense_optimizer;
  if (c->optimizer.type == OptimizerType::kDense) {
    // The optimizer named the dense learner already.
    if (!p.dense_optimizer().empty() && p.dense_optimizer() != p.optimizer()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config.dense_optimizer is \"", p.dense_optimizer(), "\" but optimizer \"", p.optimizer(),
          "\" is the dense learner of the whole model; leave it empty"));
    }
  } else {
    auto type =
        ParseDenseOptimizerType(p.dense_optimizer().empty() ? "ada_fd" : p.dense_optimizer());
    if (!type.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("config.", type.status().message()));
    }
    d.type = *type;
  }
  const v1::DenseOptimizerParams& dp = p.dense();
  Override(dp.has_eta(), dp.eta(), &d.eta);
  Override(dp.has_delta(), dp.delta(), &d.delta);
  if (dp.has_tau()) d.tau = static_cast<int>(std::min<uint32_t>(dp.tau(), 1u << 30));
  Override(dp.has_weight_power(), dp.weight_power(), &d.weight_power);
  Override(dp.has_diameter(), dp.diameter(), &d.diameter);
  Override(dp.has_gradient_bound(), dp.gradient_bound(), &d.gradient_bound);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ModelConfig> ToModelConfig(const v1::ModelConfig& p) {
  ModelConfig c;
  c.name = p.name();
  if (absl::Status s = SetOptimizerName(p.optimizer().empty() ? "ftrl" : p.optimizer(), &c);
      !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config.", s.message()));
  }
  auto loss = ParseLossType(p.loss().empty() ? "logistic" : p.loss());
  if (!loss.ok())
    return absl::InvalidArgumentError(absl::StrCat("config.", loss.status().message()));
  c.loss = *loss;
  OptimizerConfig& o = c.optimizer;
  Override(p.ftrl().has_alpha(), p.ftrl().alpha(), &o.ftrl.alpha);
  Override(p.ftrl().has_beta(), p.ftrl().beta(), &o.ftrl.beta);
  Override(p.ftrl().has_lambda1(), p.ftrl().lambda1(), &o.ftrl.lambda1);
  Override(p.ftrl().has_lambda2(), p.ftrl().lambda2(), &o.ftrl.lambda2);
  o.ftrl.lambda1_times_t = p.ftrl().lambda1_times_t();
  Override(p.adagrad().has_eta(), p.adagrad().eta(), &o.adagrad.eta);
  Override(p.adagrad().has_delta(), p.adagrad().delta(), &o.adagrad.delta);
  Override(p.adagrad().has_lambda(), p.adagrad().lambda(), &o.adagrad.lambda);
  Override(p.pc_ogd().has_radius(), p.pc_ogd().radius(), &o.pc_ogd.radius);
  Override(p.pc_ogd().has_scale(), p.pc_ogd().scale(), &o.pc_ogd.scale);
  Override(p.global_ogd().has_radius(), p.global_ogd().radius(), &o.global_ogd.radius);
  Override(p.global_ogd().has_scale(), p.global_ogd().scale(), &o.global_ogd.scale);
  Override(p.sgd().has_eta(), p.sgd().eta(), &o.sgd.eta);
  Override(p.pa().has_c(), p.pa().c(), &o.pa.c);
  Override(p.cw().has_eta(), p.cw().eta(), &o.cw.eta);
  Override(p.cw().has_a(), p.cw().a(), &o.cw.a);
  Override(p.metagrad_diag().has_diameter(), p.metagrad_diag().diameter(),
           &o.metagrad_diag.diameter);
  Override(p.metagrad_diag().has_gradient_bound(), p.metagrad_diag().gradient_bound(),
           &o.metagrad_diag.gradient_bound);
  c.hashing.seed = p.hashing().seed();
  // Out-of-range values are reported as sent, not as a clamped int.
  if (p.hashing().bits() > 62) {
    return absl::InvalidArgumentError(absl::StrCat("config.hashing.bits is ", p.hashing().bits(),
                                                   "; must be 0 (no folding) or 1..62"));
  }
  c.hashing.bits = static_cast<int>(p.hashing().bits());
  c.hashing.bias = p.hashing().has_bias() ? p.hashing().bias() : true;
  for (const v1::Interaction& i : p.hashing().interactions()) {
    c.hashing.interactions.emplace_back(i.namespaces().begin(), i.namespaces().end());
  }
  c.num_shards = p.num_shards() == 0
                     ? ModelConfig{}.num_shards
                     : static_cast<int>(std::min<uint32_t>(p.num_shards(), 1u << 20));
  if (absl::Status s = ToDenseConfig(p, &c); !s.ok()) return s;
  if (absl::Status s = ValidateModelConfig(c); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config.", s.message()));
  }
  return c;
}

v1::ModelConfig ToProto(const ModelConfig& c) { return ModelConfigToProto(c); }

v1::ProgressiveMetrics ToProto(const MetricsSummary& m) { return MetricsToProto(m); }

v1::ModelInfo ToModelInfo(const Model& model, const MetricsSummary& progressive) {
  return ToModelInfo(model.config(), model.Stats(), progressive);
}

v1::ModelInfo ToModelInfo(const ServedModel& served) {
  return ToModelInfo(served.model().config(), served.CachedStats(), served.ProgressiveSummary());
}

v1::ModelInfo ToModelInfo(const ModelConfig& config, const ModelStats& stats,
                          const MetricsSummary& progressive) {
  v1::ModelInfo info;
  *info.mutable_config() = ToProto(config);
  info.set_updates(stats.updates);
  info.set_coordinates(stats.coordinates);
  info.set_bytes(stats.bytes);
  *info.mutable_metrics() = ToProto(progressive);
  return info;
}

}  // namespace clickd
