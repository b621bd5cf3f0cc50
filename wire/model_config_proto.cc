#include "wire/model_config_proto.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/loss.h"
#include "core/optim/optimizer_config.h"

namespace clickd {
namespace {

// Copies an optional hyperparameter over its default.
void Override(bool has, double value, double* field) {
  if (has) *field = value;
}

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

// The hyperparameters of every optimizer, from a message with ModelConfig's
// parameter fields (v1::ModelConfig or v1::ModelVariant): unset ones keep
// their defaults.
template <typename Proto>
void ReadOptimizerParams(const Proto& p, OptimizerConfig* out) {
  OptimizerConfig& o = *out;
  Override(p.ftrl().has_alpha(), p.ftrl().alpha(), &o.ftrl.alpha);
  Override(p.ftrl().has_beta(), p.ftrl().beta(), &o.ftrl.beta);
  Override(p.ftrl().has_lambda1(), p.ftrl().lambda1(), &o.ftrl.lambda1);
  Override(p.ftrl().has_lambda2(), p.ftrl().lambda2(), &o.ftrl.lambda2);
  o.ftrl.lambda1_times_t = p.ftrl().lambda1_times_t();
  Override(p.ftrl().has_decay(), p.ftrl().decay(), &o.ftrl.decay);
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
}

// Sets the selected optimizer's hyperparameters in a message with
// ModelConfig's parameter fields.
template <typename Proto>
void WriteOptimizerParams(const OptimizerConfig& o, Proto* out) {
  Proto& p = *out;
  switch (o.type) {
    case OptimizerType::kFtrl: {
      v1::FtrlParams* f = p.mutable_ftrl();
      f->set_alpha(o.ftrl.alpha);
      f->set_beta(o.ftrl.beta);
      f->set_lambda1(o.ftrl.lambda1);
      f->set_lambda2(o.ftrl.lambda2);
      f->set_lambda1_times_t(o.ftrl.lambda1_times_t);
      f->set_decay(o.ftrl.decay);
      break;
    }
    case OptimizerType::kAdagrad:
    case OptimizerType::kAdagradDa: {
      v1::AdagradParams* a = p.mutable_adagrad();
      a->set_eta(o.adagrad.eta);
      a->set_delta(o.adagrad.delta);
      a->set_lambda(o.adagrad.lambda);
      break;
    }
    case OptimizerType::kPcOgd:
      p.mutable_pc_ogd()->set_radius(o.pc_ogd.radius);
      p.mutable_pc_ogd()->set_scale(o.pc_ogd.scale);
      break;
    case OptimizerType::kGlobalOgd:
      p.mutable_global_ogd()->set_radius(o.global_ogd.radius);
      p.mutable_global_ogd()->set_scale(o.global_ogd.scale);
      break;
    case OptimizerType::kSgd:
      p.mutable_sgd()->set_eta(o.sgd.eta);
      break;
    case OptimizerType::kPa:
      p.mutable_pa()->set_c(o.pa.c);
      break;
    case OptimizerType::kCw:
      p.mutable_cw()->set_eta(o.cw.eta);
      p.mutable_cw()->set_a(o.cw.a);
      break;
    case OptimizerType::kMetaGradDiag:
      p.mutable_metagrad_diag()->set_diameter(o.metagrad_diag.diameter);
      p.mutable_metagrad_diag()->set_gradient_bound(o.metagrad_diag.gradient_bound);
      break;
    case OptimizerType::kDense:  // the dense learner's parameters, below
      break;
  }
}

// 0 (unset) and 1 both admit every feature; anything else is
// probabilistic inclusion; min_count set is Bloom filter inclusion (not
// with a probability). Out-of-range values fail validation.
absl::Status ReadAdmission(const v1::Admission& p, absl::string_view field, AdmissionOptions* out) {
  const bool poisson = p.probability() != 0 && p.probability() != 1;
  if (poisson && p.min_count() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": probability and min_count are two policies; set one"));
  }
  // The filter's sizes without the filter would be silently ignored.
  if (p.min_count() == 0 && (p.counters() != 0 || p.generation_sightings() != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, ".", p.counters() != 0 ? "counters" : "generation_sightings",
        " is set without min_count: they size the Bloom filter of min_count admission; set "
        "min_count in [1, 255] too, or leave them unset"));
  }
  if (poisson) {
    out->policy = AdmissionOptions::Policy::kPoisson;
    out->probability = p.probability();
  }
  if (p.min_count() != 0) {
    out->policy = AdmissionOptions::Policy::kBloom;
    out->min_count = p.min_count();
    if (p.counters() != 0) out->counters = p.counters();
    if (p.generation_sightings() != 0) out->generation_sightings = p.generation_sightings();
  }
  return absl::OkStatus();
}

void WriteAdmission(const AdmissionOptions& a, v1::Admission* out) {
  if (a.policy == AdmissionOptions::Policy::kPoisson) out->set_probability(a.probability);
  if (a.policy == AdmissionOptions::Policy::kBloom) {
    out->set_min_count(a.min_count);
    out->set_counters(a.counters);
    out->set_generation_sightings(a.generation_sightings);
  }
}

// A factorization (ModelConfig.factorization or a variant's); `field`
// names it in errors. Validated with the rest.
absl::Status ToFactorization(const v1::Factorization& f, const std::string& field,
                             FactorizationConfig* out) {
  if (absl::Status s = ParseFactorizationKind(f.kind().empty() ? "none" : f.kind(), &out->kind);
      !s.ok()) {
    // The message names "factorization.kind": prefix what precedes it.
    return absl::InvalidArgumentError(absl::StrCat(
        field.substr(0, field.size() - std::string_view("factorization").size()), s.message()));
  }
  // Out-of-range values are reported as sent.
  if (f.has_dim() && f.dim() > static_cast<uint32_t>(kMaxFactorDim)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".dim is ", f.dim(), "; must be in 1..", kMaxFactorDim));
  }
  if (f.has_dim()) out->dim = static_cast<int>(f.dim());
  out->fields.assign(f.fields().begin(), f.fields().end());
  Override(f.has_init_scale(), f.init_scale(), &out->init_scale);
  out->init_seed = f.init_seed();
  Override(f.has_eta(), f.eta(), &out->eta);
  Override(f.has_l2(), f.l2(), &out->l2);
  if (f.has_normalize()) out->normalize = f.normalize();
  return absl::OkStatus();
}

void WriteFactorization(const FactorizationConfig& f, v1::Factorization* out) {
  out->set_kind(std::string(FactorizationKindName(f.kind)));
  out->set_dim(static_cast<uint32_t>(f.dim));
  for (const std::string& name : f.fields) out->add_fields(name);
  out->set_init_scale(f.init_scale);
  out->set_init_seed(f.init_seed);
  out->set_eta(f.eta);
  out->set_l2(f.l2);
  out->set_normalize(f.normalize);
}

// The variants (ModelConfig.variants); validated with the rest.
absl::Status ToVariants(const v1::ModelConfig& p, ModelConfig* c) {
  if (static_cast<size_t>(p.variants_size()) > kMaxVariants) {
    return absl::InvalidArgumentError(
        absl::StrCat("config.variants: ", p.variants_size(), " variants; at most ", kMaxVariants));
  }
  for (int i = 0; i < p.variants_size(); ++i) {
    const v1::ModelVariant& pv = p.variants(i);
    ModelVariant v;
    v.name = pv.name();
    auto type = ParseOptimizerType(pv.optimizer().empty() ? "ftrl" : pv.optimizer());
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config.variants[", i, "].", type.status().message()));
    }
    v.optimizer.type = *type;
    ReadOptimizerParams(pv, &v.optimizer);
    if (absl::Status s = ReadAdmission(
            pv.admission(), absl::StrCat("config.variants[", i, "].admission"), &v.admission);
        !s.ok()) {
      return s;
    }
    if (pv.has_factorization()) {
      if (absl::Status s = ToFactorization(pv.factorization(),
                                           absl::StrCat("config.variants[", i, "].factorization"),
                                           &v.factorization);
          !s.ok()) {
        return s;
      }
    }
    c->variants.push_back(std::move(v));
  }
  return absl::OkStatus();
}

// The impression-to-click loop (ModelConfig.feedback); validated with the rest.
absl::Status ToFeedbackConfig(const v1::FeedbackConfig& p, FeedbackConfig* c) {
  c->ttl_seconds = p.ttl_seconds();
  if (p.has_max_buffer_bytes()) c->max_buffer_bytes = p.max_buffer_bytes();
  if (!p.policy().empty()) {
    if (absl::Status s = ParseFeedbackPolicy(p.policy(), &c->policy); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("config.", s.message()));
    }
  }
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
  ReadOptimizerParams(p, &c.optimizer);
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
  if (absl::Status s = ToVariants(p, &c); !s.ok()) return s;
  if (absl::Status s = ReadAdmission(p.admission(), "config.admission", &c.admission); !s.ok()) {
    return s;
  }
  if (absl::Status s = ToFeedbackConfig(p.feedback(), &c.feedback); !s.ok()) return s;
  c.calibration.enabled = p.calibration().enabled();
  if (p.calibration().has_half_life()) c.calibration.half_life = p.calibration().half_life();
  c.memory.max_bytes = p.memory().max_bytes();
  // An unknown number stays unknown: validation names memory.encoding.
  c.memory.encoding = static_cast<StateEncoding>(p.memory().encoding());
  c.memory.ttl_rounds = p.memory().ttl_rounds();
  if (p.has_kafka()) {
    const v1::KafkaSource& k = p.kafka();
    c.kafka.brokers = k.brokers();
    c.kafka.topic = k.topic();
    c.kafka.group = k.group();
    c.kafka.security_protocol = k.security_protocol();
    c.kafka.ssl_ca_location = k.ssl_ca_location();
    c.kafka.dead_letter_topic = k.dead_letter_topic();
    c.kafka.feedback_topic = k.feedback_topic();
    c.kafka.sasl_mechanism = k.sasl_mechanism();
    c.kafka.sasl_credentials_file = k.sasl_credentials_file();
    if (!k.feedback_format().empty()) {
      absl::StatusOr<KafkaFormat> format = ParseKafkaFormat(k.feedback_format());
      if (!format.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("config.kafka.feedback_format is \"",
                                                       k.feedback_format(),
                                                       "\"; must be json or proto"));
      }
      c.kafka.feedback_format = *format;
    }
    if (!k.format().empty()) {
      absl::StatusOr<KafkaFormat> format = ParseKafkaFormat(k.format());
      if (!format.ok())
        return absl::InvalidArgumentError(absl::StrCat("config.", format.status().message()));
      c.kafka.format = *format;
    }
  }
  if (p.has_factorization()) {
    if (absl::Status s =
            ToFactorization(p.factorization(), "config.factorization", &c.factorization);
        !s.ok()) {
      return s;
    }
  }
  if (absl::Status s = ValidateModelConfig(c); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config.", s.message()));
  }
  return c;
}

v1::ModelConfig ModelConfigToProto(const ModelConfig& c) {
  v1::ModelConfig p;
  p.set_name(c.name);
  p.set_optimizer(OptimizerName(c));
  p.set_loss(std::string(LossTypeName(c.loss)));
  WriteOptimizerParams(c.optimizer, &p);
  v1::HashingConfig* h = p.mutable_hashing();
  h->set_seed(c.hashing.seed);
  h->set_bits(static_cast<uint32_t>(c.hashing.bits));
  h->set_bias(c.hashing.bias);
  for (const std::vector<std::string>& names : c.hashing.interactions) {
    v1::Interaction* i = h->add_interactions();
    for (const std::string& n : names) i->add_namespaces(n);
  }
  p.set_num_shards(static_cast<uint32_t>(c.num_shards));
  if (c.admission.policy != AdmissionOptions::Policy::kAll) {
    WriteAdmission(c.admission, p.mutable_admission());
  }
  if (c.memory.max_bytes != 0) p.mutable_memory()->set_max_bytes(c.memory.max_bytes);
  if (c.memory.ttl_rounds != 0) p.mutable_memory()->set_ttl_rounds(c.memory.ttl_rounds);
  if (c.memory.encoding != StateEncoding::kFloat) {
    p.mutable_memory()->set_encoding(static_cast<v1::StateEncoding>(c.memory.encoding));
  }
  if (c.kafka.enabled()) {
    v1::KafkaSource* k = p.mutable_kafka();
    k->set_brokers(c.kafka.brokers);
    k->set_topic(c.kafka.topic);
    k->set_group(c.kafka.group);
    k->set_format(std::string(KafkaFormatName(c.kafka.format)));
    k->set_security_protocol(c.kafka.security_protocol);
    k->set_ssl_ca_location(c.kafka.ssl_ca_location);
    k->set_dead_letter_topic(c.kafka.dead_letter_topic);
    if (!c.kafka.feedback_topic.empty()) {
      k->set_feedback_topic(c.kafka.feedback_topic);
      k->set_feedback_format(std::string(KafkaFormatName(c.kafka.feedback_format)));
    }
    k->set_sasl_mechanism(c.kafka.sasl_mechanism);
    k->set_sasl_credentials_file(c.kafka.sasl_credentials_file);
  }
  if (c.factorization.enabled()) WriteFactorization(c.factorization, p.mutable_factorization());
  if (c.calibration.enabled) {
    p.mutable_calibration()->set_enabled(true);
    p.mutable_calibration()->set_half_life(c.calibration.half_life);
  }
  if (c.feedback.enabled()) {
    v1::FeedbackConfig* f = p.mutable_feedback();
    f->set_ttl_seconds(c.feedback.ttl_seconds);
    f->set_max_buffer_bytes(c.feedback.max_buffer_bytes);
    f->set_policy(std::string(FeedbackPolicyName(c.feedback.policy)));
  }
  for (const ModelVariant& v : c.variants) {
    v1::ModelVariant* out = p.add_variants();
    out->set_name(v.name);
    out->set_optimizer(std::string(OptimizerTypeName(v.optimizer.type)));
    WriteOptimizerParams(v.optimizer, out);
    if (v.admission.policy != AdmissionOptions::Policy::kAll) {
      WriteAdmission(v.admission, out->mutable_admission());
    }
    if (v.factorization.enabled()) {
      WriteFactorization(v.factorization, out->mutable_factorization());
    }
  }
  if (!c.dense_namespaces.empty() || c.optimizer.type == OptimizerType::kDense) {
    for (const DenseNamespace& ns : c.dense_namespaces) {
      auto* out = p.add_dense_namespaces();
      out->set_name(ns.name);
      out->set_dim(ns.dim);
    }
    const DenseOptimizerConfig& d = c.dense_optimizer;
    p.set_dense_optimizer(std::string(DenseOptimizerTypeName(d.type)));
    v1::DenseOptimizerParams* dp = p.mutable_dense();
    dp->set_eta(d.eta);
    dp->set_delta(d.delta);
    dp->set_tau(d.tau);
    dp->set_weight_power(d.weight_power);
    dp->set_diameter(d.diameter);
    dp->set_gradient_bound(d.gradient_bound);
  }
  return p;
}

v1::ProgressiveMetrics MetricsToProto(const MetricsSummary& m) {
  v1::ProgressiveMetrics p;
  p.set_examples(m.examples);
  p.set_weight(m.weight);
  p.set_loss(m.loss);
  p.set_logloss(m.logloss);
  p.set_auc(m.auc);
  p.set_hinge(m.hinge);
  p.set_mistakes(m.mistakes);
  p.set_calibration(m.calibration);
  p.set_squared(m.squared);
  p.set_auc_error_bound(m.auc_error_bound);
  return p;
}

}  // namespace clickd
