#include "core/persist/model_config_codec.h"

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/base/coding.h"

namespace clickd {
namespace {

using coding::Decoder;

// Version 1 of the config encoding starts with the name's length (<= 128);
// later versions start with this marker and their version number.
constexpr uint32_t kConfigVersionMarker = 0xFFFFFFFFu;
constexpr uint32_t kConfigVersion = 18;
// Version 18 adds the factorization's instance normalisation, a flag, and
// the variants' factorizations; a config with neither is written in
// version 17 or before (whose readers did not normalise), so that builds
// that know only those still read it and score as this one does.
constexpr uint32_t kConfigVersionWithoutNormalization = 17;
// Version 17 adds the factorization, written with every field of version
// 16 (the Kafka feedback topic and SASL settings then too, even when
// empty); a config without one is written in version 16 or before, so that
// builds that know only those still read it.
constexpr uint32_t kConfigVersionWithoutFactorization = 16;
// Version 16 adds the Kafka source's feedback topic and SASL settings,
// written with every field of version 15 even when empty; a config without
// them is written in an older version.
constexpr uint32_t kConfigVersionWithoutFeedbackTopic = 15;
// Version 15 adds the impression ids' tag (feedback.id_tag), written with
// every field of version 14 even when empty; a config without a tag is
// written in version 14 (with a Kafka dead-letter topic), 13 (with a Kafka
// source), 12 (with a TTL) or 11, so that older builds still read it.
constexpr uint32_t kConfigVersionWithoutIdTag = 14;
// Version 14 adds the Kafka source's dead-letter topic.
constexpr uint32_t kConfigVersionWithoutDeadLetter = 13;
// Version 13 adds the Kafka source.
constexpr uint32_t kConfigVersionWithoutKafka = 12;
// The version a config without a TTL is written in, so that builds that
// know only version 11 still read it (version 12 adds memory.ttl_rounds).
constexpr uint32_t kConfigVersionWithoutTtl = 11;

// The same message prefix as the rest of a snapshot's checks: a bad config
// is a corrupt snapshot (or update-log header).
absl::Status Corrupt(const std::string& what) {
  return absl::DataLossError(absl::StrCat("snapshot is corrupt: ", what));
}

// A parameter of an optimizer added after version 1, and the encoding
// version that added it.
struct LaterParam {
  uint32_t since;
  double* value;
};

// The parameters of optimizers added after version 1, in a fixed order:
// every optimizer's, whichever the model uses, so that every config has one
// encoding. New ones go at the end, with a new version.
std::vector<LaterParam> ParamsSinceV1(OptimizerConfig& o) {
  return {{2, &o.pa.c},
          {2, &o.cw.eta},
          {2, &o.cw.a},
          {4, &o.metagrad_diag.diameter},
          {4, &o.metagrad_diag.gradient_bound},
          {6, &o.ftrl.decay}};
}

// The fields decoded as plain integers, range-checked only once the whole
// config has parsed (CheckAndSetIntegerFields).
struct IntegerFields {
  uint32_t loss = 0;
  uint32_t type = 0;
  uint32_t times_t = 0;
  uint32_t bits = 0;
  uint32_t bias = 0;
  uint32_t shards = 0;
};

// Reads the encoding version: 1 unless the bytes start with the marker, in
// which case *in moves past the marker and the version.
absl::StatusOr<uint32_t> ReadConfigVersion(std::string_view bytes, Decoder* in) {
  Decoder peek(bytes);
  uint32_t first = 0;
  if (!peek.GetFixed32(&first) || first != kConfigVersionMarker) return 1u;
  uint32_t version = 1;
  in->GetFixed32(&first);
  in->GetFixed32(&version);
  if (version < 2 || version > kConfigVersion) {
    return Corrupt(absl::StrCat("model config encoding version ", version, " is unknown"));
  }
  return version;
}

// Reads the optimizer's type, the parameters of every optimizer (those of
// version 1, then those added since that `version` has), and FTRL's flag.
void ReadOptimizer(Decoder* in, uint32_t version, OptimizerConfig* o, IntegerFields* fields) {
  in->GetFixed32(&fields->type);
  for (double* v : {&o->ftrl.alpha, &o->ftrl.beta, &o->ftrl.lambda1, &o->ftrl.lambda2,
                    &o->adagrad.eta, &o->adagrad.delta, &o->adagrad.lambda, &o->pc_ogd.radius,
                    &o->pc_ogd.scale, &o->global_ogd.radius, &o->global_ogd.scale, &o->sgd.eta}) {
    in->GetDouble(v);
  }
  for (const LaterParam& p : ParamsSinceV1(*o)) {
    if (version >= p.since) in->GetDouble(p.value);
  }
  in->GetFixed32(&fields->times_t);
}

// Writes what ReadOptimizer reads.
void WriteOptimizer(const OptimizerConfig& o, std::string* out) {
  coding::PutFixed32(out, static_cast<uint32_t>(o.type));
  for (double v : {o.ftrl.alpha, o.ftrl.beta, o.ftrl.lambda1, o.ftrl.lambda2, o.adagrad.eta,
                   o.adagrad.delta, o.adagrad.lambda, o.pc_ogd.radius, o.pc_ogd.scale,
                   o.global_ogd.radius, o.global_ogd.scale, o.sgd.eta}) {
    coding::PutDouble(out, v);
  }
  OptimizerConfig copy = o;
  for (const LaterParam& p : ParamsSinceV1(copy)) coding::PutDouble(out, *p.value);
  coding::PutFixed32(out, o.ftrl.lambda1_times_t ? 1 : 0);
}

// Reads an admission policy and probability (version 5 on for the model's,
// 7 for a variant's). One encoding per config: admitting every feature is
// probability 1.
absl::Status ReadAdmission(Decoder* in, uint32_t version, AdmissionOptions* admission) {
  uint32_t policy = 0;
  in->GetFixed32(&policy);
  in->GetDouble(&admission->probability);
  // The Bloom filter's parameters came with version 11, and the policy
  // with them.
  const auto newest =
      version >= 11 ? AdmissionOptions::Policy::kBloom : AdmissionOptions::Policy::kPoisson;
  if (policy > static_cast<uint32_t>(newest) || (policy == 0 && admission->probability != 1.0)) {
    return Corrupt("the admission policy is out of range");
  }
  admission->policy = static_cast<AdmissionOptions::Policy>(policy);
  return absl::OkStatus();
}

void WriteAdmission(const AdmissionOptions& admission, std::string* out) {
  coding::PutFixed32(out, static_cast<uint32_t>(admission.policy));
  coding::PutDouble(out, admission.probability);
}

// Version 11's tail: the Bloom filter's parameters of the model's admission
// and then of each variant's (ranges are ValidateAdmissionOptions').
void ReadBloomParams(Decoder* in, AdmissionOptions* admission) {
  in->GetFixed32(&admission->min_count);
  in->GetFixed64(&admission->counters);
  in->GetFixed64(&admission->generation_sightings);
}

void WriteBloomParams(const AdmissionOptions& admission, std::string* out) {
  coding::PutFixed32(out, admission.min_count);
  coding::PutFixed64(out, admission.counters);
  coding::PutFixed64(out, admission.generation_sightings);
}

// Reads the variants (version 7 on): a count, then per variant its name,
// its optimizer as ReadOptimizer reads the model's, and its admission.
absl::Status ReadVariants(Decoder* in, uint32_t version, ModelConfig* c) {
  uint32_t count = 0;
  in->GetFixed32(&count);
  if (count > kMaxVariants) return Corrupt("the variant count is out of range");
  for (uint32_t i = 0; i < count && in->ok(); ++i) {
    ModelVariant v;
    IntegerFields fields;
    in->GetString(&v.name);
    ReadOptimizer(in, version, &v.optimizer, &fields);
    if (fields.times_t > 1 ||
        OptimizerTypeName(static_cast<OptimizerType>(fields.type)) == "unknown") {
      return Corrupt("a variant's optimizer has out-of-range fields");
    }
    v.optimizer.type = static_cast<OptimizerType>(fields.type);
    v.optimizer.ftrl.lambda1_times_t = fields.times_t != 0;
    if (absl::Status s = ReadAdmission(in, version, &v.admission); !s.ok()) return s;
    c->variants.push_back(std::move(v));
  }
  return absl::OkStatus();
}

// Reads the impression-to-click loop's settings (version 8 on); their
// ranges are ValidateModelConfig's.
absl::Status ReadFeedback(Decoder* in, FeedbackConfig* feedback) {
  uint64_t ttl = 0;
  uint32_t policy = 0;
  in->GetFixed64(&ttl);
  in->GetFixed64(&feedback->max_buffer_bytes);
  in->GetFixed32(&policy);
  if (ttl > static_cast<uint64_t>(kMaxFeedbackTtlSeconds) || policy > 3) {
    return Corrupt("the feedback settings are out of range");
  }
  feedback->ttl_seconds = static_cast<int64_t>(ttl);
  feedback->policy = static_cast<FeedbackConfig::Policy>(policy);
  return absl::OkStatus();
}

// Reads the online calibration's settings (version 8 on).
absl::Status ReadCalibration(Decoder* in, CalibrationConfig* calibration) {
  uint32_t enabled = 0;
  in->GetFixed32(&enabled);
  in->GetDouble(&calibration->half_life);
  if (enabled > 1) return Corrupt("the calibration settings are out of range");
  calibration->enabled = enabled == 1;
  return absl::OkStatus();
}

// Reads the hashing section: seed, bits, bias and the interactions.
absl::Status ReadHashing(Decoder* in, HashingConfig* hashing, IntegerFields* fields) {
  uint32_t n = 0;
  in->GetFixed64(&hashing->seed);
  in->GetFixed32(&fields->bits);
  in->GetFixed32(&fields->bias);
  in->GetFixed32(&n);
  for (uint32_t i = 0; i < n && in->ok(); ++i) {
    uint32_t arity = 0;
    in->GetFixed32(&arity);
    if (arity > 3) return Corrupt("an interaction has more than 3 namespaces");
    std::vector<std::string> names(arity);
    for (auto& name : names) in->GetString(&name);
    hashing->interactions.push_back(std::move(names));
  }
  return absl::OkStatus();
}

// Reads the dense block (version 3 on): its namespaces and its optimizer.
absl::Status ReadDenseBlock(Decoder* in, ModelConfig* c) {
  uint32_t count = 0;
  in->GetFixed32(&count);
  if (count > in->remaining().size()) return Corrupt("the dense namespace count is corrupt");
  for (uint32_t i = 0; i < count && in->ok(); ++i) {
    DenseNamespace ns;
    uint32_t dim = 0;
    in->GetString(&ns.name);
    in->GetFixed32(&dim);
    if (dim > static_cast<uint32_t>(kMaxDenseDim)) return Corrupt("a dense dimension is corrupt");
    ns.dim = static_cast<int>(dim);
    c->dense_namespaces.push_back(std::move(ns));
  }
  DenseOptimizerConfig& d = c->dense_optimizer;
  uint32_t dense_type = 0, tau = 0;
  in->GetFixed32(&dense_type);
  for (double* v : {&d.eta, &d.delta, &d.weight_power, &d.diameter, &d.gradient_bound}) {
    in->GetDouble(v);
  }
  in->GetFixed32(&tau);
  if (DenseOptimizerTypeName(static_cast<DenseOptimizerType>(dense_type)) == "unknown" ||
      tau > static_cast<uint32_t>(kMaxDenseDim)) {
    return Corrupt("the dense optimizer config has out-of-range fields");
  }
  d.type = static_cast<DenseOptimizerType>(dense_type);
  d.tau = static_cast<int>(tau);
  return absl::OkStatus();
}

// Checks the integer fields' ranges and stores them in *c. Booleans must be
// 0 or 1, so that every file has one decoding and one encoding (the fuzzer
// checks decode-then-encode is the identity, for the current version).
absl::Status CheckAndSetIntegerFields(uint32_t version, const IntegerFields& f, ModelConfig* c) {
  // A type this build does not know has no name.
  const bool known_type = version == 1
                              ? f.type <= static_cast<uint32_t>(OptimizerType::kSgd)
                              : OptimizerTypeName(static_cast<OptimizerType>(f.type)) != "unknown";
  if (f.times_t > 1 || f.bias > 1 || f.loss > static_cast<uint32_t>(LossType::kHinge) ||
      !known_type || f.bits > 62 || f.shards > kMaxShards) {
    return Corrupt("the model config has out-of-range fields");
  }
  c->loss = static_cast<LossType>(f.loss);
  c->optimizer.type = static_cast<OptimizerType>(f.type);
  c->optimizer.ftrl.lambda1_times_t = f.times_t != 0;
  c->hashing.bits = static_cast<int>(f.bits);
  c->hashing.bias = f.bias != 0;
  c->num_shards = static_cast<int>(f.shards);
  return absl::OkStatus();
}

// Reads a factorization block: kind, dim, fields, init_scale, init_seed,
// eta, l2 (version 17 on), then the normalisation flag (version 18 on),
// where kind 0 (none) ends the block (version 18's blocks of a model or
// variant without one). Validated with the rest.
absl::Status ReadFactorization(Decoder* in, uint32_t version, FactorizationConfig* f) {
  uint32_t kind = 0;
  in->GetFixed32(&kind);
  if (!in->ok()) return Corrupt("the model config's factorization does not parse");
  if (kind == static_cast<uint32_t>(FactorizationConfig::Kind::kNone)) {
    if (version == 17) return Corrupt("model config encoding version 17 without a factorization");
    return absl::OkStatus();
  }
  uint32_t dim = 0;
  uint32_t count = 0;
  in->GetFixed32(&dim);
  in->GetFixed32(&count);
  if (!in->ok()) return Corrupt("the model config's factorization does not parse");
  if (count > kMaxFactorFields || dim > static_cast<uint32_t>(kMaxFactorDim)) {
    return Corrupt(absl::StrCat("the model config's factorization has ", count, " fields of dim ",
                                dim, "; at most ", kMaxFactorFields, " of ", kMaxFactorDim));
  }
  f->kind = static_cast<FactorizationConfig::Kind>(kind);
  f->dim = static_cast<int>(dim);
  f->fields.resize(count);
  for (std::string& name : f->fields) in->GetString(&name);
  in->GetDouble(&f->init_scale);
  in->GetFixed64(&f->init_seed);
  in->GetDouble(&f->eta);
  in->GetDouble(&f->l2);
  f->normalize = false;
  if (version >= 18) {
    uint32_t normalize = 0;
    in->GetFixed32(&normalize);
    if (in->ok() && normalize > 1) {
      return Corrupt(absl::StrCat("the model config's factorization normalization is ", normalize,
                                  "; must be 0 or 1"));
    }
    f->normalize = normalize == 1;
  }
  return absl::OkStatus();
}

// A factorization block as ReadFactorization reads it; `version` 17 or 18.
void WriteFactorization(const FactorizationConfig& f, uint32_t version, std::string* out) {
  coding::PutFixed32(out, static_cast<uint32_t>(f.kind));
  if (!f.enabled()) return;
  coding::PutFixed32(out, static_cast<uint32_t>(f.dim));
  coding::PutFixed32(out, static_cast<uint32_t>(f.fields.size()));
  for (const std::string& name : f.fields) coding::PutString(out, name);
  coding::PutDouble(out, f.init_scale);
  coding::PutFixed64(out, f.init_seed);
  coding::PutDouble(out, f.eta);
  coding::PutDouble(out, f.l2);
  if (version >= 18) coding::PutFixed32(out, f.normalize ? 1 : 0);
}

// Whether the config needs version 18: a normalised factorization or a
// variant's factorization (version 17 holds only the model's, unnormalised).
bool NeedsVersion18(const ModelConfig& c) {
  if (c.factorization.enabled() && c.factorization.normalize) return true;
  for (const ModelVariant& v : c.variants) {
    if (v.factorization.enabled()) return true;
  }
  return false;
}

}  // namespace

void EncodeModelConfig(const ModelConfig& c, std::string* out) {
  const bool v18 = NeedsVersion18(c);
  const bool factorization = v18 || c.factorization.enabled();
  const bool v16 = factorization || (c.kafka.enabled() && c.kafka.has_version16_fields());
  const bool id_tag = v16 || c.feedback.id_tag != 0;
  const bool kafka = id_tag || c.kafka.enabled();
  const bool ttl = kafka || c.memory.ttl_rounds != 0;
  coding::PutFixed32(out, kConfigVersionMarker);
  const bool dead_letter = id_tag || (kafka && !c.kafka.dead_letter_topic.empty());
  coding::PutFixed32(out, v18             ? kConfigVersion
                          : factorization ? kConfigVersionWithoutNormalization
                          : v16           ? kConfigVersionWithoutFactorization
                          : id_tag        ? kConfigVersionWithoutFeedbackTopic
                          : dead_letter   ? kConfigVersionWithoutIdTag
                          : kafka         ? kConfigVersionWithoutDeadLetter
                          : ttl           ? kConfigVersionWithoutKafka
                                          : kConfigVersionWithoutTtl);
  coding::PutString(out, c.name);
  coding::PutFixed32(out, static_cast<uint32_t>(c.loss));
  WriteOptimizer(c.optimizer, out);
  coding::PutFixed64(out, c.hashing.seed);
  coding::PutFixed32(out, static_cast<uint32_t>(c.hashing.bits));
  coding::PutFixed32(out, c.hashing.bias ? 1 : 0);
  coding::PutFixed32(out, static_cast<uint32_t>(c.hashing.interactions.size()));
  for (const auto& names : c.hashing.interactions) {
    coding::PutFixed32(out, static_cast<uint32_t>(names.size()));
    for (const auto& n : names) coding::PutString(out, n);
  }
  coding::PutFixed32(out, static_cast<uint32_t>(c.num_shards));
  // Version 3: the dense block.
  coding::PutFixed32(out, static_cast<uint32_t>(c.dense_namespaces.size()));
  for (const DenseNamespace& ns : c.dense_namespaces) {
    coding::PutString(out, ns.name);
    coding::PutFixed32(out, static_cast<uint32_t>(ns.dim));
  }
  const DenseOptimizerConfig& d = c.dense_optimizer;
  coding::PutFixed32(out, static_cast<uint32_t>(d.type));
  for (double v : {d.eta, d.delta, d.weight_power, d.diameter, d.gradient_bound}) {
    coding::PutDouble(out, v);
  }
  coding::PutFixed32(out, static_cast<uint32_t>(d.tau));
  // Version 5: feature admission.
  WriteAdmission(c.admission, out);
  // Version 7: the variants.
  coding::PutFixed32(out, static_cast<uint32_t>(c.variants.size()));
  for (const ModelVariant& v : c.variants) {
    coding::PutString(out, v.name);
    WriteOptimizer(v.optimizer, out);
    WriteAdmission(v.admission, out);
  }
  // Version 8: the impression-to-click loop.
  coding::PutFixed64(out, static_cast<uint64_t>(c.feedback.ttl_seconds));
  coding::PutFixed64(out, c.feedback.max_buffer_bytes);
  coding::PutFixed32(out, static_cast<uint32_t>(c.feedback.policy));
  coding::PutFixed32(out, c.calibration.enabled ? 1 : 0);
  coding::PutDouble(out, c.calibration.half_life);
  // Version 9: the memory budget (older encodings read as unbounded).
  coding::PutFixed64(out, c.memory.max_bytes);
  // Version 10: the state encoding (older encodings read as float).
  coding::PutFixed32(out, static_cast<uint32_t>(c.memory.encoding));
  // Version 11: the Bloom filter admission's parameters.
  WriteBloomParams(c.admission, out);
  for (const ModelVariant& v : c.variants) WriteBloomParams(v.admission, out);
  // Version 12: the TTL, only when there is one.
  // (with version 13, even when 0).
  if (ttl) coding::PutFixed64(out, c.memory.ttl_rounds);
  // Version 13: the Kafka source, only when there is one (with version
  // 15, even when none).
  if (kafka) {
    const KafkaSourceConfig& k = c.kafka;
    for (const std::string* s :
         {&k.brokers, &k.topic, &k.group, &k.security_protocol, &k.ssl_ca_location}) {
      coding::PutString(out, *s);
    }
    coding::PutFixed32(out, static_cast<uint32_t>(k.format));
  }
  // Version 14: the dead-letter topic, only when there is one (with
  // version 15, even when none).
  if (dead_letter) coding::PutString(out, c.kafka.dead_letter_topic);
  // Version 15: the impression ids' tag, only when there is one (with
  // version 16, even when none).
  if (id_tag) coding::PutFixed32(out, c.feedback.id_tag);
  // Version 16: the feedback topic and SASL, only when one is set (with
  // version 17, even when none).
  if (v16) {
    coding::PutString(out, c.kafka.feedback_topic);
    coding::PutFixed32(out, static_cast<uint32_t>(c.kafka.feedback_format));
    coding::PutString(out, c.kafka.sasl_mechanism);
    coding::PutString(out, c.kafka.sasl_credentials_file);
  }
  // Version 17: the model's factorization, only when there is one; version
  // 18: the model's (kind 0 for none), then each variant's.
  if (v18) {
    WriteFactorization(c.factorization, 18, out);
    for (const ModelVariant& v : c.variants) WriteFactorization(v.factorization, 18, out);
  } else if (factorization) {
    WriteFactorization(c.factorization, 17, out);
  }
}

absl::StatusOr<ModelConfig> DecodeModelConfig(std::string_view bytes) {
  Decoder in(bytes);
  absl::StatusOr<uint32_t> version = ReadConfigVersion(bytes, &in);
  if (!version.ok()) return version.status();
  ModelConfig c;
  IntegerFields fields;
  in.GetString(&c.name);
  in.GetFixed32(&fields.loss);
  ReadOptimizer(&in, *version, &c.optimizer, &fields);
  if (absl::Status s = ReadHashing(&in, &c.hashing, &fields); !s.ok()) return s;
  in.GetFixed32(&fields.shards);
  if (*version >= 3) {
    if (absl::Status s = ReadDenseBlock(&in, &c); !s.ok()) return s;
  }
  if (*version >= 5) {
    if (absl::Status s = ReadAdmission(&in, *version, &c.admission); !s.ok()) return s;
  }
  if (*version >= 7) {
    if (absl::Status s = ReadVariants(&in, *version, &c); !s.ok()) return s;
  }
  if (*version >= 8) {
    if (absl::Status s = ReadFeedback(&in, &c.feedback); !s.ok()) return s;
    if (absl::Status s = ReadCalibration(&in, &c.calibration); !s.ok()) return s;
  }
  if (*version >= 9) in.GetFixed64(&c.memory.max_bytes);
  if (*version >= 10) {
    uint32_t encoding = 0;
    in.GetFixed32(&encoding);
    c.memory.encoding = static_cast<StateEncoding>(encoding);  // validated below
  }
  if (*version >= 11) {
    ReadBloomParams(&in, &c.admission);
    for (ModelVariant& v : c.variants) ReadBloomParams(&in, &v.admission);
  }
  if (*version >= 12) {
    in.GetFixed64(&c.memory.ttl_rounds);
    // One encoding per config: without a TTL, version 11.
    if (in.ok() && c.memory.ttl_rounds == 0 && *version == 12) {
      return Corrupt("model config encoding version 12 without a TTL");
    }
  }
  if (*version >= 13) {
    KafkaSourceConfig& k = c.kafka;
    for (std::string* s :
         {&k.brokers, &k.topic, &k.group, &k.security_protocol, &k.ssl_ca_location}) {
      in.GetString(s);
    }
    uint32_t format = 0;
    in.GetFixed32(&format);
    k.format = static_cast<KafkaFormat>(format);  // validated below
    if (in.ok() && !k.enabled() && *version <= 14) {
      return Corrupt("model config encoding version 13 without a Kafka source");
    }
  }
  if (*version >= 14) {
    in.GetString(&c.kafka.dead_letter_topic);
    // One encoding per config: without a dead-letter topic, version 13.
    if (in.ok() && c.kafka.dead_letter_topic.empty() && *version == 14) {
      return Corrupt("model config encoding version 14 without a dead-letter topic");
    }
  }
  if (*version >= 15) {
    in.GetFixed32(&c.feedback.id_tag);
    if (in.ok() && c.feedback.id_tag == 0 && *version == 15) {
      return Corrupt("model config encoding version 15 without an impression id tag");
    }
  }
  if (*version >= 16) {
    KafkaSourceConfig& k = c.kafka;
    in.GetString(&k.feedback_topic);
    uint32_t format = 0;
    in.GetFixed32(&format);
    k.feedback_format = static_cast<KafkaFormat>(format);  // validated below
    in.GetString(&k.sasl_mechanism);
    in.GetString(&k.sasl_credentials_file);
    // One encoding per config: without these, version 15 or older.
    if (*version == 16 && in.ok() && !(k.enabled() && k.has_version16_fields())) {
      return Corrupt("model config encoding version 16 without a feedback topic or SASL");
    }
  }
  if (*version >= 17) {
    if (absl::Status s = ReadFactorization(&in, *version, &c.factorization); !s.ok()) return s;
  }
  if (*version >= 18) {
    for (ModelVariant& v : c.variants) {
      if (absl::Status s = ReadFactorization(&in, *version, &v.factorization); !s.ok()) return s;
    }
    // One encoding per config: what version 17 holds is written in it.
    if (in.ok() && !NeedsVersion18(c)) {
      return Corrupt(
          "model config encoding version 18 without a normalised or variant's "
          "factorization");
    }
  }
  if (!in.ok() || !in.remaining().empty()) return Corrupt("the model config does not parse");
  if (absl::Status s = CheckAndSetIntegerFields(*version, fields, &c); !s.ok()) return s;
  if (absl::Status s = ValidateModelConfig(c); !s.ok()) {
    return Corrupt(absl::StrCat("the model config is invalid: ", s.message()));
  }
  return c;
}

}  // namespace clickd
