#include "client/clickctl/model_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

ABSL_FLAG(std::string, optimizer, "ftrl",
          "ftrl | adagrad | adagrad_da | pc_ogd | global_ogd | sgd | pa | cw | metagrad_diag "
          "(pa and cw need --loss=hinge), or a dense learner over the features folded into "
          "2^bits slots (needs --bits in 1..16): ada_diag | ada_diag_da | ada_full | ada_full_da "
          "| ada_fd | ada_fd_da | ons | fd_son | metagrad");
ABSL_FLAG(std::string, loss, "logistic", "logistic | squared | hinge");
ABSL_FLAG(std::optional<double>, alpha, std::nullopt, "ftrl: learning-rate alpha");
ABSL_FLAG(std::optional<double>, beta, std::nullopt, "ftrl: beta");
ABSL_FLAG(std::optional<double>, lambda1, std::nullopt, "ftrl: L1 strength");
ABSL_FLAG(std::optional<double>, lambda2, std::nullopt, "ftrl: L2 strength");
ABSL_FLAG(std::string, variants, "",
          "variants learning beside the model's optimizer, Predict serving the champion "
          "(docs/variants.md): \"name:key=value,...;name2:...\", keys optimizer and the "
          "hyperparameter flags' names and admission_probability, e.g. "
          "\"fast:alpha=0.5;ada:optimizer=adagrad,eta=0.05;few:admission_probability=0.1\"");
ABSL_FLAG(std::optional<double>, ftrl_decay, std::nullopt,
          "ftrl: factor in (0, 1] on n_i before each step (1: off); below 1 the model "
          "keeps following a drifting click rate (docs/drift.md)");
ABSL_FLAG(bool, lambda1_times_t, false,
          "ftrl: L1 term t*lambda1*|w|_1 (seed 004) instead of lambda1*|w|_1 (McMahan 2013)");
ABSL_FLAG(std::optional<double>, eta, std::nullopt,
          "adagrad, adagrad_da, sgd, dense learners but metagrad: step size eta");
ABSL_FLAG(std::optional<double>, delta, std::nullopt,
          "adagrad, adagrad_da, dense learners but metagrad: delta in H = delta I + ...");
ABSL_FLAG(std::optional<int>, tau, std::nullopt, "ada_fd, ada_fd_da, fd_son: sketch size tau");
ABSL_FLAG(std::optional<double>, weight_power, std::nullopt,
          "ons, fd_son: weight t^-p of each gradient's outer product");
ABSL_FLAG(std::optional<double>, lambda, std::nullopt, "adagrad, adagrad_da: L1 strength");
ABSL_FLAG(std::optional<double>, radius, std::nullopt, "pc_ogd, global_ogd: box radius R");
ABSL_FLAG(std::optional<double>, scale, std::nullopt, "pc_ogd, global_ogd: learning-rate scale");
ABSL_FLAG(std::optional<double>, pa_c, std::nullopt, "pa: aggressiveness C of PA-I");
ABSL_FLAG(std::optional<double>, cw_eta, std::nullopt,
          "cw: confidence eta in (0.5, 1); phi = Phi^-1(eta)");
ABSL_FLAG(std::optional<double>, cw_a, std::nullopt, "cw: initial variance a");
ABSL_FLAG(std::optional<double>, metagrad_diameter, std::nullopt,
          "metagrad_diag, metagrad: diameter D of the domain");
ABSL_FLAG(std::optional<double>, metagrad_gradient_bound, std::nullopt,
          "metagrad_diag, metagrad: gradient bound G; largest rate 1/(5 D G)");
ABSL_FLAG(int, bits, 0, "fold keys into 2^bits slots (0: full 64-bit keys)");
ABSL_FLAG(uint64_t, hash_seed, 0, "feature hash seed");
ABSL_FLAG(bool, bias, true, "add a bias feature");
ABSL_FLAG(std::string, interactions, "", "namespace crosses, e.g. user:ad,user:ad:page");
ABSL_FLAG(int, shards, 16, "store shards");
ABSL_FLAG(std::string, factorization, "",
          "pairwise latent factors: fm or ffm between the features of --factor_fields "
          "(docs/factorization.md); empty: none");
ABSL_FLAG(std::optional<int>, factor_dim, std::nullopt,
          "--factorization: the latent size, 1..64 (default 4)");
ABSL_FLAG(std::optional<double>, factor_eta, std::nullopt,
          "--factorization: the factors' AdaGrad rate, in [1e-9, 1e3] (default 1)");
ABSL_FLAG(std::optional<double>, factor_l2, std::nullopt,
          "--factorization: the factors' L2 weight, in [0, 1e6] (default 2e-05)");
ABSL_FLAG(std::optional<bool>, factor_normalize, std::nullopt,
          "--factorization: divide each example's pairwise margin by its field features' "
          "squared norm (libffm's instance normalisation) (default true)");
ABSL_FLAG(std::string, factor_fields, "",
          "--factorization: the namespaces whose features get latent vectors (FFM's fields, "
          "in order), e.g. user,ad,site");
ABSL_FLAG(double, admission_probability, 1.0,
          "admit a feature the model does not hold yet at a sighting with this probability, "
          "in (0, 1]; 1: every feature at once (docs/admission.md)");
ABSL_FLAG(std::string, admission, "",
          "admission policy: all, poisson (set by --admission_probability) or bloom (a feature "
          "gets a coordinate at its --admission_min_count-th sighting; docs/admission.md)");
ABSL_FLAG(uint64_t, admission_min_count, 2, "--admission=bloom: sightings to admit, 1..255");
ABSL_FLAG(uint64_t, admission_counters, uint64_t{1} << 20,
          "--admission=bloom: 1-byte counters per generation, a power of 2 in 64..2^32");
ABSL_FLAG(uint64_t, admission_generation_sightings, uint64_t{1} << 20,
          "--admission=bloom: sightings a generation counts before the older one is cleared");
ABSL_FLAG(uint64_t, memory_max_bytes, 0,
          "memory budget of the model's coordinates in bytes, 65536..2^40 (0: unbounded); "
          "beyond it the least useful coordinates are evicted (docs/memory.md)");
ABSL_FLAG(uint64_t, memory_ttl_rounds, 0,
          "TTL eviction: a coordinate not learned for more than this many examples is evicted "
          "(within 1.25x it), 64..2^48 (0: never); FTRL only, 4 more bytes per coordinate "
          "(docs/memory.md)");
ABSL_FLAG(std::string, state_encoding, "float",
          "how the model stores its coordinates: float (exact) or compact (FTRL only: 16-bit z "
          "and n, 48-bit key identities, ~11 bytes per coordinate; docs/memory.md)");
ABSL_FLAG(int64_t, feedback_ttl_seconds, 0,
          "the impression-to-click loop: how long an impression Predict logs waits for its "
          "label, 1..2592000 seconds (0: no loop; Predict cannot log impressions)");
ABSL_FLAG(std::optional<uint64_t>, feedback_max_buffer_bytes, std::nullopt,
          "the loop's join buffer budget, 1024..2^36 bytes (default 64 MiB); needs "
          "--feedback_ttl_seconds");
ABSL_FLAG(std::string, feedback_policy, "",
          "what the loop learns: wait_negative (default) | wait_drop | fake_negative | "
          "fake_negative_weighted; needs --feedback_ttl_seconds");

ABSL_FLAG(std::string, kafka_brokers, "",
          "models create: host:port[,...] of the Kafka brokers whose --kafka_topic the model "
          "learns, exactly once (docs/kafka.md); empty: no Kafka source");
ABSL_FLAG(std::string, kafka_topic, "", "the Kafka source's topic; needs --kafka_brokers");
ABSL_FLAG(
    std::string, kafka_group, "",
    "the Kafka source's consumer group (default clickd-<model>-<topic>); needs --kafka_brokers");
ABSL_FLAG(std::string, kafka_format, "vw",
          "the Kafka source's records: vw (one VW line each) | json (a clickd.v1.UpdateRequest "
          "as JSON) | proto (its protobuf bytes)");
ABSL_FLAG(std::string, kafka_security_protocol, "",
          "plaintext (default) | ssl: TLS to the brokers; needs --kafka_brokers");
ABSL_FLAG(std::string, kafka_ssl_ca_location, "",
          "with --kafka_security_protocol=ssl: the CA file of the brokers' certificates");
ABSL_FLAG(std::string, kafka_dead_letter_topic, "",
          "the Kafka source's dead-letter topic: refused records are copied there with headers "
          "naming their topic, partition, offset and the reason; needs --kafka_brokers");

ABSL_FLAG(std::string, kafka_feedback_topic, "",
          "the Kafka source's feedback topic: labels (a clickd.v1.FeedbackRequest per record) "
          "joined to the impressions Predict logged, exactly once; needs --kafka_brokers and "
          "--feedback_ttl_seconds");
ABSL_FLAG(std::string, kafka_feedback_format, "json",
          "the feedback topic's records: json (a clickd.v1.FeedbackRequest as JSON) | proto (its "
          "protobuf bytes)");
ABSL_FLAG(std::string, kafka_sasl_mechanism, "",
          "with --kafka_security_protocol=sasl_plaintext|sasl_ssl: PLAIN | SCRAM-SHA-256 | "
          "SCRAM-SHA-512");
ABSL_FLAG(std::string, kafka_sasl_credentials_file, "",
          "with SASL: the path (on each server) of a file of username=... and password=... lines; "
          "the secret itself is never a flag or in the model config");

namespace clickd {
namespace {

// The Kafka source of the flags, or none without --kafka_brokers.
absl::StatusOr<KafkaSourceConfig> BuildKafkaSource(const ModelFlagValues& v) {
  KafkaSourceConfig k;
  k.brokers = v.kafka_brokers;
  k.topic = v.kafka_topic;
  k.group = v.kafka_group;
  k.security_protocol = v.kafka_security_protocol;
  k.ssl_ca_location = v.kafka_ssl_ca_location;
  k.dead_letter_topic = v.kafka_dead_letter_topic;
  k.feedback_topic = v.kafka_feedback_topic;
  k.sasl_mechanism = v.kafka_sasl_mechanism;
  k.sasl_credentials_file = v.kafka_sasl_credentials_file;
  if (k.brokers.empty()) {
    if (!k.topic.empty() || !k.group.empty() || !k.security_protocol.empty() ||
        !k.ssl_ca_location.empty() || !k.dead_letter_topic.empty() || v.kafka_format != "vw" ||
        k.has_version16_fields() || v.kafka_feedback_format != "json") {
      return absl::InvalidArgumentError(
          "--kafka_topic and the other --kafka_* flags need --kafka_brokers");
    }
    return k;
  }
  absl::StatusOr<KafkaFormat> format = ParseKafkaFormat(v.kafka_format);
  if (!format.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--kafka_format is \"", v.kafka_format, "\"; must be vw, json or proto"));
  }
  k.format = *format;
  absl::StatusOr<KafkaFormat> feedback_format = ParseKafkaFormat(v.kafka_feedback_format);
  if (!feedback_format.ok() || *feedback_format == KafkaFormat::kVw) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--kafka_feedback_format is \"", v.kafka_feedback_format, "\"; must be json or proto"));
  }
  k.feedback_format = *feedback_format;
  if (absl::Status s = ValidateKafkaSourceConfig(k); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--", s.message()));
  }
  return k;
}

// Applies an optional flag to a hyperparameter if the optimizer uses it.
absl::Status Apply(const char* flag, const std::optional<double>& value, bool used,
                   std::string_view optimizer, double* field) {
  if (!value.has_value()) return absl::OkStatus();
  if (!used) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, " does not apply to --optimizer=", std::string(optimizer)));
  }
  *field = *value;
  return absl::OkStatus();
}

}  // namespace

ModelFlagValues ModelFlagValuesFromFlags() {
  ModelFlagValues v;
  v.optimizer = absl::GetFlag(FLAGS_optimizer);
  v.loss = absl::GetFlag(FLAGS_loss);
  v.alpha = absl::GetFlag(FLAGS_alpha);
  v.beta = absl::GetFlag(FLAGS_beta);
  v.lambda1 = absl::GetFlag(FLAGS_lambda1);
  v.lambda2 = absl::GetFlag(FLAGS_lambda2);
  v.ftrl_decay = absl::GetFlag(FLAGS_ftrl_decay);
  v.lambda1_times_t = absl::GetFlag(FLAGS_lambda1_times_t);
  v.eta = absl::GetFlag(FLAGS_eta);
  v.delta = absl::GetFlag(FLAGS_delta);
  v.tau = absl::GetFlag(FLAGS_tau);
  v.weight_power = absl::GetFlag(FLAGS_weight_power);
  v.lambda = absl::GetFlag(FLAGS_lambda);
  v.radius = absl::GetFlag(FLAGS_radius);
  v.scale = absl::GetFlag(FLAGS_scale);
  v.pa_c = absl::GetFlag(FLAGS_pa_c);
  v.cw_eta = absl::GetFlag(FLAGS_cw_eta);
  v.cw_a = absl::GetFlag(FLAGS_cw_a);
  v.metagrad_diameter = absl::GetFlag(FLAGS_metagrad_diameter);
  v.metagrad_gradient_bound = absl::GetFlag(FLAGS_metagrad_gradient_bound);
  v.bits = absl::GetFlag(FLAGS_bits);
  v.hash_seed = absl::GetFlag(FLAGS_hash_seed);
  v.bias = absl::GetFlag(FLAGS_bias);
  v.interactions = absl::GetFlag(FLAGS_interactions);
  v.shards = absl::GetFlag(FLAGS_shards);
  v.factorization = absl::GetFlag(FLAGS_factorization);
  v.factor_dim = absl::GetFlag(FLAGS_factor_dim);
  v.factor_fields = absl::GetFlag(FLAGS_factor_fields);
  v.factor_normalize = absl::GetFlag(FLAGS_factor_normalize);
  v.factor_eta = absl::GetFlag(FLAGS_factor_eta);
  v.factor_l2 = absl::GetFlag(FLAGS_factor_l2);
  v.admission_probability = absl::GetFlag(FLAGS_admission_probability);
  v.admission = absl::GetFlag(FLAGS_admission);
  v.admission_min_count = absl::GetFlag(FLAGS_admission_min_count);
  v.admission_counters = absl::GetFlag(FLAGS_admission_counters);
  v.admission_generation_sightings = absl::GetFlag(FLAGS_admission_generation_sightings);
  v.memory_max_bytes = absl::GetFlag(FLAGS_memory_max_bytes);
  v.memory_ttl_rounds = absl::GetFlag(FLAGS_memory_ttl_rounds);
  v.state_encoding = absl::GetFlag(FLAGS_state_encoding);
  v.kafka_brokers = absl::GetFlag(FLAGS_kafka_brokers);
  v.kafka_topic = absl::GetFlag(FLAGS_kafka_topic);
  v.kafka_group = absl::GetFlag(FLAGS_kafka_group);
  v.kafka_format = absl::GetFlag(FLAGS_kafka_format);
  v.kafka_security_protocol = absl::GetFlag(FLAGS_kafka_security_protocol);
  v.kafka_ssl_ca_location = absl::GetFlag(FLAGS_kafka_ssl_ca_location);
  v.kafka_dead_letter_topic = absl::GetFlag(FLAGS_kafka_dead_letter_topic);
  v.kafka_feedback_topic = absl::GetFlag(FLAGS_kafka_feedback_topic);
  v.kafka_feedback_format = absl::GetFlag(FLAGS_kafka_feedback_format);
  v.kafka_sasl_mechanism = absl::GetFlag(FLAGS_kafka_sasl_mechanism);
  v.kafka_sasl_credentials_file = absl::GetFlag(FLAGS_kafka_sasl_credentials_file);
  v.variants = absl::GetFlag(FLAGS_variants);
  v.feedback_ttl_seconds = absl::GetFlag(FLAGS_feedback_ttl_seconds);
  v.feedback_max_buffer_bytes = absl::GetFlag(FLAGS_feedback_max_buffer_bytes);
  v.feedback_policy = absl::GetFlag(FLAGS_feedback_policy);
  return v;
}

std::set<std::string> FeedbackFlagNames() {
  return {"feedback_ttl_seconds", "feedback_max_buffer_bytes", "feedback_policy"};
}

namespace {

// --factorization, --factor_dim, --factor_fields and --factor_normalize;
// errors name the flag.
absl::StatusOr<FactorizationConfig> BuildFactorization(const ModelFlagValues& v) {
  FactorizationConfig f;
  // --factor_fields serve a variant's factorization too (--variants
  // "ffm:factorization=ffm"), which factors the same fields.
  const bool variant_factors = v.variants.find("factorization=") != std::string::npos;
  if (v.factorization.empty()) {
    if (v.factor_dim.has_value() || (!v.factor_fields.empty() && !variant_factors) ||
        v.factor_normalize.has_value() || v.factor_eta.has_value() || v.factor_l2.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(v.factor_dim.has_value() ? "--factor_dim"
                                                     : !v.factor_fields.empty()
                                                         ? "--factor_fields"
                                                         : "--factor_normalize",
                                                     " needs --factorization"));
    }
    return f;
  }
  if (absl::Status s = ParseFactorizationKind(v.factorization, &f.kind); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--factorization=", v.factorization, ": ", s.message()));
  }
  if (v.factor_dim.has_value()) f.dim = *v.factor_dim;
  if (!v.factor_fields.empty()) f.fields = absl::StrSplit(v.factor_fields, ',');
  if (v.factor_normalize.has_value()) f.normalize = *v.factor_normalize;
  if (v.factor_eta.has_value()) f.eta = *v.factor_eta;
  if (v.factor_l2.has_value()) f.l2 = *v.factor_l2;
  return f;
}

}  // namespace

absl::StatusOr<std::vector<std::vector<std::string>>> ParseInteractions(const std::string& text) {
  std::vector<std::vector<std::string>> out;
  if (text.empty()) return out;
  for (absl::string_view term : absl::StrSplit(text, ',')) {
    std::vector<std::string> names = absl::StrSplit(term, ':');
    if (names.size() < 2 || names.size() > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--interactions term \"", term, "\" must name 2 or 3 namespaces separated by ':'"));
    }
    out.push_back(std::move(names));
  }
  return out;
}

namespace {

// Sets one key of a --variants entry in `v`.
absl::Status SetVariantKey(absl::string_view key, absl::string_view value, ModelFlagValues* v) {
  if (key == "optimizer") {
    v->optimizer = std::string(value);
    return absl::OkStatus();
  }
  const std::pair<absl::string_view, std::optional<double>*> keys[] = {
      {"alpha", &v->alpha},
      {"beta", &v->beta},
      {"lambda1", &v->lambda1},
      {"lambda2", &v->lambda2},
      {"ftrl_decay", &v->ftrl_decay},
      {"eta", &v->eta},
      {"delta", &v->delta},
      {"lambda", &v->lambda},
      {"radius", &v->radius},
      {"scale", &v->scale},
      {"pa_c", &v->pa_c},
      {"cw_eta", &v->cw_eta},
      {"cw_a", &v->cw_a},
      {"metagrad_diameter", &v->metagrad_diameter},
      {"metagrad_gradient_bound", &v->metagrad_gradient_bound}};
  for (const auto& [name, field] : keys) {
    if (key != name) continue;
    double parsed = 0;
    if (!absl::SimpleAtod(value, &parsed)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not a number"));
    }
    *field = parsed;
    return absl::OkStatus();
  }
  if (key == "admission_probability") {
    if (!absl::SimpleAtod(value, &v->admission_probability)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not a number"));
    }
    return absl::OkStatus();
  }
  if (key == "admission") {
    v->admission = std::string(value);
    return absl::OkStatus();
  }
  // The variant's factorization; its fields are --factor_fields.
  if (key == "factorization") {
    v->factorization = std::string(value);
    return absl::OkStatus();
  }
  if (key == "factor_dim") {
    int dim = 0;
    if (!absl::SimpleAtoi(value, &dim)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not an integer"));
    }
    v->factor_dim = dim;
    return absl::OkStatus();
  }
  if (key == "factor_eta" || key == "factor_l2") {
    double parsed = 0;
    if (!absl::SimpleAtod(value, &parsed)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not a number"));
    }
    (key == "factor_eta" ? v->factor_eta : v->factor_l2) = parsed;
    return absl::OkStatus();
  }
  if (key == "factor_normalize") {
    bool normalize = false;
    if (!absl::SimpleAtob(value, &normalize)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not true or false"));
    }
    v->factor_normalize = normalize;
    return absl::OkStatus();
  }
  const std::pair<absl::string_view, uint64_t*> counts[] = {
      {"admission_min_count", &v->admission_min_count},
      {"admission_counters", &v->admission_counters},
      {"admission_generation_sightings", &v->admission_generation_sightings}};
  for (const auto& [name, field] : counts) {
    if (key != name) continue;
    if (!absl::SimpleAtoi(value, field)) {
      return absl::InvalidArgumentError(absl::StrCat(key, "=", value, " is not a count"));
    }
    return absl::OkStatus();
  }
  if (key == "lambda1_times_t") {
    v->lambda1_times_t = value == "true" || value == "1";
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "key \"", key, "\" is unknown; expected optimizer or a hyperparameter flag's name"));
}

// Checks the feedback flags here rather than leaving it to
// ValidateFeedbackConfig, whose errors name the config's fields
// (feedback.ttl_seconds), not the flags a user typed.
absl::StatusOr<FeedbackConfig> BuildFeedbackConfig(const ModelFlagValues& v, LossType loss) {
  FeedbackConfig f;
  if (v.feedback_ttl_seconds < 0 || v.feedback_ttl_seconds > kMaxFeedbackTtlSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("--feedback_ttl_seconds is ",
                                                   v.feedback_ttl_seconds, "; must be in 0..",
                                                   kMaxFeedbackTtlSeconds, " (0: no loop)"));
  }
  f.ttl_seconds = v.feedback_ttl_seconds;
  const bool loop = f.enabled();
  if (v.feedback_max_buffer_bytes.has_value()) {
    if (!loop) {
      return absl::InvalidArgumentError(
          "--feedback_max_buffer_bytes needs --feedback_ttl_seconds > 0");
    }
    f.max_buffer_bytes = *v.feedback_max_buffer_bytes;
    if (f.max_buffer_bytes < 1024 || f.max_buffer_bytes > kMaxFeedbackBufferBytes) {
      return absl::InvalidArgumentError(absl::StrCat("--feedback_max_buffer_bytes is ",
                                                     f.max_buffer_bytes, "; must be in 1024..",
                                                     kMaxFeedbackBufferBytes));
    }
  }
  if (!v.feedback_policy.empty()) {
    if (!loop)
      return absl::InvalidArgumentError("--feedback_policy needs --feedback_ttl_seconds > 0");
    if (absl::Status s = ParseFeedbackPolicy(v.feedback_policy, &f.policy); !s.ok()) {
      // "feedback.policy \"x\" is unknown; one of ...", renamed for the flag.
      return absl::InvalidArgumentError(
          absl::StrCat("--feedback_policy ", absl::StripPrefix(s.message(), "feedback.policy ")));
    }
  }
  if (loop && loss != LossType::kLogistic) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--feedback_ttl_seconds needs --loss=logistic (labels 0/1: a click or not), not ",
        std::string(LossTypeName(loss))));
  }
  return f;
}

}  // namespace

absl::StatusOr<std::vector<ModelVariant>> ParseVariants(const std::string& text,
                                                        const std::string& loss,
                                                        const std::string& factor_fields) {
  std::vector<ModelVariant> out;
  if (text.empty()) return out;
  for (absl::string_view entry : absl::StrSplit(text, ';', absl::SkipWhitespace())) {
    const std::pair<absl::string_view, absl::string_view> parts = absl::StrSplit(entry, ':');
    ModelVariant variant;
    variant.name = std::string(absl::StripAsciiWhitespace(parts.first));
    ModelFlagValues v;
    v.loss = loss;
    for (absl::string_view kv : absl::StrSplit(parts.second, ',', absl::SkipWhitespace())) {
      const std::pair<absl::string_view, absl::string_view> key_value = absl::StrSplit(kv, '=');
      if (absl::Status s = SetVariantKey(absl::StripAsciiWhitespace(key_value.first),
                                         absl::StripAsciiWhitespace(key_value.second), &v);
          !s.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--variants \"", variant.name, "\": ", s.message()));
      }
    }
    if (!v.factorization.empty()) v.factor_fields = factor_fields;
    auto config = BuildModelConfig(v);
    if (!config.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--variants \"", variant.name, "\": ", config.status().message()));
    }
    variant.optimizer = config->optimizer;
    variant.admission = config->admission;
    variant.factorization = config->factorization;
    out.push_back(std::move(variant));
  }
  return out;
}

namespace {

// The admission flags; errors name the flags, not the config's fields.
absl::StatusOr<AdmissionOptions> BuildAdmission(const ModelFlagValues& v) {
  AdmissionOptions a;
  const bool poisson = v.admission_probability != 1.0;
  if (v.admission == "bloom") {
    if (poisson) {
      return absl::InvalidArgumentError(
          "--admission=bloom and --admission_probability are two policies; set one");
    }
    if (v.admission_min_count < 1 || v.admission_min_count > 255) {
      return absl::InvalidArgumentError(
          absl::StrCat("--admission_min_count is ", v.admission_min_count, "; must be in 1..255"));
    }
    a.policy = AdmissionOptions::Policy::kBloom;
    a.min_count = static_cast<uint32_t>(v.admission_min_count);
    a.counters = v.admission_counters;
    a.generation_sightings = v.admission_generation_sightings;
    return a;
  }
  if (!v.admission.empty() && v.admission != "all" && v.admission != "poisson") {
    return absl::InvalidArgumentError(
        absl::StrCat("--admission is \"", v.admission, "\"; expected all, poisson or bloom"));
  }
  if (v.admission == "all" && poisson) {
    return absl::InvalidArgumentError(
        "--admission=all admits every feature; drop "
        "--admission_probability");
  }
  if (poisson) {
    a.policy = AdmissionOptions::Policy::kPoisson;
    a.probability = v.admission_probability;
  }
  return a;
}

}  // namespace

absl::StatusOr<ModelConfig> BuildModelConfig(const ModelFlagValues& v) {
  ModelConfig config;
  if (absl::Status s = SetOptimizerName(v.optimizer, &config); !s.ok()) return s;
  auto loss = ParseLossType(v.loss);
  if (!loss.ok()) return loss.status();
  config.loss = *loss;
  OptimizerConfig& o = config.optimizer;
  const OptimizerType t = o.type;
  DenseOptimizerConfig& d = config.dense_optimizer;
  const bool dense = t == OptimizerType::kDense;
  const bool dense_metagrad = dense && d.type == DenseOptimizerType::kMetaGrad;
  const bool sketched =
      dense && (d.type == DenseOptimizerType::kAdaFd || d.type == DenseOptimizerType::kAdaFdDa ||
                d.type == DenseOptimizerType::kFdSon);
  const bool newton =
      dense && (d.type == DenseOptimizerType::kOns || d.type == DenseOptimizerType::kFdSon);
  const bool ftrl = t == OptimizerType::kFtrl;
  const bool adagrad = t == OptimizerType::kAdagrad || t == OptimizerType::kAdagradDa;
  const bool box = t == OptimizerType::kPcOgd || t == OptimizerType::kGlobalOgd;
  double* radius = t == OptimizerType::kPcOgd ? &o.pc_ogd.radius : &o.global_ogd.radius;
  double* scale = t == OptimizerType::kPcOgd ? &o.pc_ogd.scale : &o.global_ogd.scale;
  double* eta = t == OptimizerType::kSgd ? &o.sgd.eta : &o.adagrad.eta;
  absl::Status s;
  s.Update(Apply("alpha", v.alpha, ftrl, v.optimizer, &o.ftrl.alpha));
  s.Update(Apply("beta", v.beta, ftrl, v.optimizer, &o.ftrl.beta));
  s.Update(Apply("lambda1", v.lambda1, ftrl, v.optimizer, &o.ftrl.lambda1));
  s.Update(Apply("lambda2", v.lambda2, ftrl, v.optimizer, &o.ftrl.lambda2));
  s.Update(Apply("ftrl_decay", v.ftrl_decay, ftrl, v.optimizer, &o.ftrl.decay));
  if (dense) {
    s.Update(Apply("eta", v.eta, !dense_metagrad, v.optimizer, &d.eta));
    s.Update(Apply("delta", v.delta, !dense_metagrad, v.optimizer, &d.delta));
  } else {
    s.Update(Apply("eta", v.eta, adagrad || t == OptimizerType::kSgd, v.optimizer, eta));
    s.Update(Apply("delta", v.delta, adagrad, v.optimizer, &o.adagrad.delta));
  }
  if (v.tau.has_value()) {
    if (sketched) {
      d.tau = *v.tau;
    } else {
      s.Update(absl::InvalidArgumentError(
          absl::StrCat("--tau does not apply to --optimizer=", v.optimizer)));
    }
  }
  s.Update(Apply("weight_power", v.weight_power, newton, v.optimizer, &d.weight_power));
  s.Update(Apply("lambda", v.lambda, adagrad, v.optimizer, &o.adagrad.lambda));
  s.Update(Apply("radius", v.radius, box, v.optimizer, radius));
  s.Update(Apply("scale", v.scale, box, v.optimizer, scale));
  s.Update(Apply("pa_c", v.pa_c, t == OptimizerType::kPa, v.optimizer, &o.pa.c));
  s.Update(Apply("cw_eta", v.cw_eta, t == OptimizerType::kCw, v.optimizer, &o.cw.eta));
  s.Update(Apply("cw_a", v.cw_a, t == OptimizerType::kCw, v.optimizer, &o.cw.a));
  const bool metagrad = t == OptimizerType::kMetaGradDiag;
  s.Update(Apply("metagrad_diameter", v.metagrad_diameter, metagrad || dense_metagrad, v.optimizer,
                 dense_metagrad ? &d.diameter : &o.metagrad_diag.diameter));
  s.Update(Apply("metagrad_gradient_bound", v.metagrad_gradient_bound, metagrad || dense_metagrad,
                 v.optimizer,
                 dense_metagrad ? &d.gradient_bound : &o.metagrad_diag.gradient_bound));
  if (v.lambda1_times_t && !ftrl) {
    s.Update(absl::InvalidArgumentError("--lambda1_times_t applies to --optimizer=ftrl only"));
  }
  if (!s.ok()) return s;
  o.ftrl.lambda1_times_t = v.lambda1_times_t;
  config.hashing.bits = v.bits;
  config.hashing.seed = v.hash_seed;
  config.hashing.bias = v.bias;
  auto interactions = ParseInteractions(v.interactions);
  if (!interactions.ok()) return interactions.status();
  config.hashing.interactions = *std::move(interactions);
  config.num_shards = v.shards;
  auto factorization = BuildFactorization(v);
  if (!factorization.ok()) return factorization.status();
  config.factorization = *std::move(factorization);
  auto admission = BuildAdmission(v);
  if (!admission.ok()) return admission.status();
  config.admission = *admission;
  config.memory.max_bytes = v.memory_max_bytes;
  config.memory.ttl_rounds = v.memory_ttl_rounds;
  if (absl::Status e = ParseStateEncoding(v.state_encoding, &config.memory.encoding); !e.ok()) {
    return e;
  }
  auto variants = ParseVariants(v.variants, v.loss, v.factor_fields);
  if (!variants.ok()) return variants.status();
  config.variants = *std::move(variants);
  auto feedback = BuildFeedbackConfig(v, config.loss);
  if (!feedback.ok()) return feedback.status();
  config.feedback = *feedback;
  auto kafka = BuildKafkaSource(v);
  if (!kafka.ok()) return kafka.status();
  config.kafka = *kafka;
  if (absl::Status valid = ValidateModelConfig(config); !valid.ok()) return valid;
  return config;
}

}  // namespace clickd
