// Command-line flags that describe a model (optimizer, hyperparameters,
// loss, hashing), shared by every clickctl command that creates one.
//
// Hyperparameter flags are optional: an unset flag keeps the selected
// optimizer's default, and a flag that the selected optimizer does not use
// is an error rather than silently ignored.
#ifndef CLICKD_CLIENT_CLICKCTL_MODEL_FLAGS_H_
#define CLICKD_CLIENT_CLICKCTL_MODEL_FLAGS_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/model/model_config.h"

namespace clickd {

struct ModelFlagValues {
  std::string optimizer = "ftrl";
  std::string loss = "logistic";
  std::optional<double> alpha, beta, lambda1, lambda2;  // ftrl
  bool lambda1_times_t = false;                         // ftrl
  std::optional<double> ftrl_decay;                     // ftrl
  std::optional<double> eta, delta, lambda;             // adagrad, adagrad_da (eta: sgd too)
  std::optional<int> tau;                               // ada_fd, ada_fd_da, fd_son
  std::optional<double> weight_power;                   // ons, fd_son
  std::optional<double> radius, scale;                  // pc_ogd, global_ogd
  std::optional<double> pa_c;                           // pa
  std::optional<double> cw_eta, cw_a;                   // cw
  std::optional<double> metagrad_diameter;              // metagrad_diag
  std::optional<double> metagrad_gradient_bound;        // metagrad_diag
  int bits = 0;
  uint64_t hash_seed = 0;
  bool bias = true;
  std::string interactions;  // "user:ad,user:ad:page"
  int shards = 16;
  // ModelConfig.factorization (docs/factorization.md): off while
  // `factorization` is empty; the other two need it.
  std::string factorization;             // "", "fm" or "ffm"
  std::optional<int> factor_dim;         // unset: FactorizationConfig's default
  std::string factor_fields;             // "user,ad,site"
  std::optional<bool> factor_normalize;  // unset: FactorizationConfig's default
  std::optional<double> factor_eta;      // unset: FactorizationConfig's default
  std::optional<double> factor_l2;       // unset: FactorizationConfig's default
  double admission_probability = 1.0;
  std::string admission;  // "" or "poisson" (by admission_probability), "all", "bloom"
  uint64_t admission_min_count = 2;
  uint64_t admission_counters = uint64_t{1} << 20;
  uint64_t admission_generation_sightings = uint64_t{1} << 20;
  uint64_t memory_max_bytes = 0;   // 0: unbounded
  uint64_t memory_ttl_rounds = 0;  // 0: no TTL
  std::string state_encoding = "float";
  // "name:key=value,key=value;name2:..." (docs/variants.md): keys are
  // `optimizer` and the hyperparameter flags' names (alpha, eta, ...).
  std::string variants;
  // The impression-to-click loop (ModelConfig.feedback): off while
  // feedback_ttl_seconds is 0; the other two need it.
  int64_t feedback_ttl_seconds = 0;
  std::optional<uint64_t> feedback_max_buffer_bytes;
  std::string feedback_policy;  // empty: the server's default, wait_negative
  // The Kafka source (ModelConfig.kafka, docs/kafka.md): off while
  // kafka_brokers is empty.
  std::string kafka_brokers;
  std::string kafka_topic;
  std::string kafka_group;
  std::string kafka_format = "vw";
  std::string kafka_security_protocol;
  std::string kafka_ssl_ca_location;
  std::string kafka_dead_letter_topic;
  std::string kafka_feedback_topic;
  std::string kafka_feedback_format = "json";
  std::string kafka_sasl_mechanism;
  std::string kafka_sasl_credentials_file;
};

// The names of the feedback flags: `replay --offline` has no loop to give
// them to, so it refuses them.
std::set<std::string> FeedbackFlagNames();

// Reads the values of the model flags defined in model_flags.cc.
ModelFlagValues ModelFlagValuesFromFlags();

// Builds and validates a ModelConfig; errors name the flag.
absl::StatusOr<ModelConfig> BuildModelConfig(const ModelFlagValues& values);

// Parses --variants for a model of loss `loss`: each variant's optimizer
// as BuildModelConfig would build it from the same flags; errors name the
// variant and the key. A variant's factorization (keys factorization,
// factor_dim, factor_normalize) factors `factor_fields` (--factor_fields).
absl::StatusOr<std::vector<ModelVariant>> ParseVariants(const std::string& text,
                                                        const std::string& loss,
                                                        const std::string& factor_fields = "");

// Parses "a:b,c:d:e" into {{"a","b"},{"c","d","e"}}.
absl::StatusOr<std::vector<std::vector<std::string>>> ParseInteractions(const std::string& text);

}  // namespace clickd

#endif  // CLICKD_CLIENT_CLICKCTL_MODEL_FLAGS_H_
