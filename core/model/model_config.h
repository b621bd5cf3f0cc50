// ModelConfig: everything that defines a model's behaviour. Two models with
// equal configs that learn the same examples in the same order hold
// byte-identical state.
#ifndef CLICKD_CORE_MODEL_MODEL_CONFIG_H_
#define CLICKD_CORE_MODEL_MODEL_CONFIG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/features/hasher.h"
#include "core/optim/dense/dense_optimizer_config.h"
#include "core/optim/loss.h"
#include "core/optim/optimizer_config.h"
#include "core/store/feature_admission.h"

namespace clickd {

// Factorization machines over the sparse features (docs/factorization.md):
// the margin is the linear margin plus pairwise terms between the features
// of the `fields` namespaces, each feature holding latent vectors of `dim`
// floats, learned from the same loss gradient as the linear part with
// per-coordinate AdaGrad (core/model/factorization.h). Off (kind kNone)
// unless configured.
struct FactorizationConfig {
  enum class Kind : uint32_t {
    kNone = 0,
    // Rendle 2010: one latent vector per feature; a pair's term is
    // <v_i, v_j> x_i x_j.
    kFm = 1,
    // Juan et al. 2016 (libffm): one latent vector per feature and field;
    // the pair (i in field a, j in field b) is <v_{i,b}, v_{j,a}> x_i x_j.
    kFfm = 2,
  };
  Kind kind = Kind::kNone;
  // The latent size. 4: libffm's default, the paper's choice on Criteo
  // and Avazu (larger k bought it nothing there), and 4 floats per field
  // keep an FFM row of 5 fields at 80 bytes of weights.
  int dim = 4;
  // The namespaces whose features get latent vectors (FFM's fields, in
  // this order); every other feature (crosses, the bias) stays linear.
  std::vector<std::string> fields;
  // Initial factors: uniform in [0, init_scale) (libffm's), drawn from the
  // key and init_seed, so every replica and replay draws the same; 0:
  // 1 / sqrt(dim), libffm's.
  double init_scale = 0;
  uint64_t init_seed = 0;
  // Per-coordinate AdaGrad of the factors (libffm's form): step
  // eta / sqrt(1 + sum g^2) per float, and an L2 weight on the factors
  // (libffm's). eta is 1, not libffm's 0.2: libffm trains for several
  // epochs, and one pass over a stream at 0.2 ends before the factors leave
  // their start (a 10M-example log: 0.96x the crosses' held-out excess at
  // 0.2, 0.24x at 1), and FFM's excess against the crosses was lowest at 1
  // on all eleven latent logs of the sweep (docs/factorization.md, "Why
  // eta is 1").
  double eta = 1.0;
  double l2 = 2e-5;
  // Instance normalisation (libffm's default): the pairwise margin of an
  // example is divided by the squared norm of its field features' values,
  // so that with one-hot fields each pair weighs 1/(features). Without it
  // the initial factors (mean init_scale/2 each) give every pair about
  // dim * init_scale^2 / 4 = 0.25: 120 pairs of 16 fields start an example
  // at a margin near +30, which a click log does not unlearn.
  bool normalize = true;

  bool enabled() const { return kind != Kind::kNone; }
};

// A variant of a model (McMahan et al. 2013, sections 4.4 and 6: many similar
// models learning from one stream): another per-coordinate optimizer, or
// the same one with other hyperparameters, that learns from every example
// the model learns, beside it (core/model/variant_model.h).
struct ModelVariant {
  std::string name;
  OptimizerConfig optimizer;
  // Which new features get a coordinate in this variant's store (any
  // policy, as the model's own; a Bloom filter of its own).
  AdmissionOptions admission;
  // The variant's own factorization (kind none: a linear variant, whatever
  // the model's). Every factorized member (the model and its variants)
  // factors the same fields, since the model hashes each example once.
  FactorizationConfig factorization;
};

// A dense namespace of fixed dimension (core/model/dense_block.h).
struct DenseNamespace {
  std::string name;
  int dim = 0;
};

// The impression-to-click loop (core/feedback/feedback_loop.h): Predict may
// log each scored candidate as an impression; a label for it arrives later
// through Feedback. Off (ttl_seconds 0) unless configured.
struct FeedbackConfig {
  // What the model learns from an impression, and when (docs/feedback.md).
  enum class Policy : uint32_t {
    // Wait for the label; an impression unlabelled at its TTL is learned as
    // a negative then.
    kWaitNegative = 0,
    // Wait for the label; an impression unlabelled at its TTL is dropped.
    kWaitDrop = 1,
    // Learn every impression at once as a negative and a later click as a
    // positive, without correction (the biased baseline of Ktena et al.).
    kFakeNegative = 2,
    // As kFakeNegative, with the fake-negative-weighted importances of
    // Ktena et al. 2019 (core/feedback/delayed_feedback.h).
    kFakeNegativeWeighted = 3,
  };
  int64_t ttl_seconds = 0;  // 0: Predict cannot log impressions
  uint64_t max_buffer_bytes = uint64_t{64} << 20;
  Policy policy = Policy::kWaitNegative;
  // The top bits of this incarnation's impression ids (24 bits, not 0):
  // drawn at random where the model is created (NewImpressionIdTag) and
  // kept in its config, so restarts and replicas (the create record
  // carries it) issue the same ids, while another model, or the same name
  // created again, issues other ones (issue 33, N7). 0: a model created
  // before it, whose ids carry a 16-bit hash of its name.
  uint32_t id_tag = 0;

  bool enabled() const { return ttl_seconds > 0; }
};

inline constexpr int64_t kMaxFeedbackTtlSeconds = 30LL * 24 * 3600;
inline constexpr uint32_t kMaxImpressionIdTag = (uint32_t{1} << 24) - 1;

// A random FeedbackConfig::id_tag in [1, kMaxImpressionIdTag].
uint32_t NewImpressionIdTag();
inline constexpr uint64_t kMaxFeedbackBufferBytes = uint64_t{64} << 30;

std::string_view FeedbackPolicyName(FeedbackConfig::Policy policy);
// InvalidArgument listing the names for an unknown one.
absl::Status ParseFeedbackPolicy(std::string_view name, FeedbackConfig::Policy* policy);
// Checks the TTL, the budget and that the loss suits the loop (labels 0/1:
// logistic); errors name the field and the limit.
absl::Status ValidateFeedbackConfig(const FeedbackConfig& feedback, LossType loss);

// Calibrated probabilities (McMahan et al. 2013, section 7): a correction
// tau(p) = gamma * p^kappa fitted online on the model's progressive
// predictions (core/eval/online_calibration.h), applied in Predict.
struct CalibrationConfig {
  bool enabled = false;
  double half_life = 1e6;  // examples
};

// How a sparse model stores its coordinates (docs/memory.md).
enum class StateEncoding : uint32_t {
  // 32-bit float states and full 64-bit keys (absl::flat_hash_map): exact.
  kFloat = 0,
  // FTRL only: z and n in 16 bits each, rounded stochastically, and 48-bit
  // key identities in 8-byte slots (core/store/compact_table.h): ~11 bytes
  // per coordinate instead of 19-39.
  kCompact = 1,
};

std::string_view StateEncodingName(StateEncoding encoding);
// InvalidArgument naming memory.encoding and the names for an unknown one.
absl::Status ParseStateEncoding(std::string_view name, StateEncoding* encoding);

// A per-model memory budget (docs/memory.md): the sparse store's tables
// never grow past max_bytes; beyond it the least useful coordinates are
// evicted. 0: unbounded. And how the coordinates are encoded.
struct MemoryConfig {
  uint64_t max_bytes = 0;
  StateEncoding encoding = StateEncoding::kFloat;
  // TTL eviction: a coordinate not learned for more than this many rounds
  // (examples learned by the model; the clock would make replicas and
  // replays disagree) is evicted, within 1.25x it (core/model/ttl_schedule.h).
  // FTRL only, whose states then carry a stamp (core/optim/stamped.h). 0: off.
  uint64_t ttl_rounds = 0;
};

inline constexpr uint64_t kMinMemoryBytes = uint64_t{64} << 10;  // 64 KiB
inline constexpr uint64_t kMaxMemoryBytes = uint64_t{1} << 40;   // 1 TiB
// The least budget one shard of one store may get: a table of a few
// hundred coordinates, so that eviction passes stay rare.
inline constexpr uint64_t kMinShardMemoryBytes = 4096;
// memory.ttl_rounds' range (besides 0): at least one round per epoch of
// each shard's sweep, and far below a round counter's range.
inline constexpr uint64_t kMinTtlRounds = 64;
inline constexpr uint64_t kMaxTtlRounds = uint64_t{1} << 48;

// The record format of a Kafka source's topic (docs/kafka.md): one
// clickd.v1.UpdateRequest per record (protobuf bytes, or the same shape as
// one JSON object), or one VW text line per record.
enum class KafkaFormat { kVw = 0, kJson = 1, kProto = 2 };

// A model's Kafka source (docs/kafka.md): the model learns every record of
// `topic` exactly once; the consumed position of each partition is part of
// its durable state. Empty brokers: no source.
struct KafkaSourceConfig {
  std::string brokers;  // host:port[,host:port...]
  std::string topic;
  std::string group;  // the consumer group; empty: "clickd-<model name>-<topic>"
  KafkaFormat format = KafkaFormat::kVw;
  // "plaintext" (empty), "ssl", "sasl_plaintext" or "sasl_ssl"; with TLS,
  // the CA file that signs the brokers' certificates (empty: the system's).
  std::string security_protocol;
  std::string ssl_ca_location;
  // Where refused records are copied (with headers naming their topic,
  // partition, offset and the reason); empty: nowhere.
  std::string dead_letter_topic;
  // The feedback topic: labels (clickd.v1.FeedbackRequest, json or proto)
  // joined to the impressions the model logged, exactly once, as the
  // Feedback RPC joins them. Needs the model's impression-to-click loop.
  // Empty: none.
  std::string feedback_topic;
  KafkaFormat feedback_format = KafkaFormat::kJson;
  // With a sasl_* security_protocol: the mechanism ("PLAIN",
  // "SCRAM-SHA-256" or "SCRAM-SHA-512") and the file the credentials are
  // read from when the source starts (kMaxKafkaCredentialsFileBytes;
  // "username=..." and "password=..." lines). The config holds the file's
  // path, never the secret.
  std::string sasl_mechanism;
  std::string sasl_credentials_file;
  bool enabled() const { return !brokers.empty(); }
  // Whether a field of config encoding 16 is set (model_config_codec.cc).
  bool has_version16_fields() const {
    return !feedback_topic.empty() || feedback_format != KafkaFormat::kJson ||
           !sasl_mechanism.empty() || !sasl_credentials_file.empty();
  }
};

inline constexpr size_t kMaxKafkaBrokersBytes = 1024;
inline constexpr size_t kMaxKafkaTopicBytes = 249;  // Kafka's own limit
inline constexpr size_t kMaxKafkaGroupBytes = 255;
inline constexpr size_t kMaxKafkaPathBytes = 4096;
// A SASL credentials file is at most this long.
inline constexpr size_t kMaxKafkaCredentialsFileBytes = 4096;

// Checks a Kafka source's fields (all empty: no source); errors name the
// field ("kafka.topic ...") and the limit.
absl::Status ValidateKafkaSourceConfig(const KafkaSourceConfig& kafka);

// "vw" | "json" | "proto".
std::string_view KafkaFormatName(KafkaFormat format);
absl::StatusOr<KafkaFormat> ParseKafkaFormat(std::string_view name);

inline constexpr int kMaxFactorDim = 64;
inline constexpr size_t kMaxFactorFields = 16;

struct ModelConfig;

// The bytes of one factor row (FactorTable, FactorBytes): its key, then
// the factors and their AdaGrad sums, dim floats each (x fields for FFM).
// 0 for kind none.
uint64_t FactorRowBytes(const FactorizationConfig& f);
// The fields the model's hasher tags (HashedFeature::field): the model's
// factorization's, or else its first factorized variant's; none otherwise.
const std::vector<std::string>& FactorizationFields(const ModelConfig& config);
// What one new field feature can add in factor rows across the model and
// its variants: the sum of their FactorRowBytes.
uint64_t FactorRowBytesPerFeature(const ModelConfig& config);

// "none" | "fm" | "ffm".
std::string_view FactorizationKindName(FactorizationConfig::Kind kind);
// InvalidArgument naming factorization.kind and the names.
absl::Status ParseFactorizationKind(std::string_view name, FactorizationConfig::Kind* kind);

struct ModelConfig {
  std::string name = "default";
  LossType loss = LossType::kLogistic;
  OptimizerConfig optimizer;
  HashingConfig hashing;
  int num_shards = 16;
  // The dense block: declared namespaces, and the learner over their
  // concatenation (unused without namespaces).
  std::vector<DenseNamespace> dense_namespaces;
  DenseOptimizerConfig dense_optimizer;
  // Which new features get a coordinate (core/store/feature_admission.h):
  // kAll, kPoisson, or kBloom, whose filter counts are model state that
  // snapshots carry (docs/admission.md).
  AdmissionOptions admission;
  // Variants learning side by side with the model's own optimizer (whose
  // variant is named kPrimaryVariant); Predict serves the champion.
  std::vector<ModelVariant> variants;
  FeedbackConfig feedback;
  CalibrationConfig calibration;
  MemoryConfig memory;
  KafkaSourceConfig kafka;
  FactorizationConfig factorization;
};

inline constexpr std::string_view kPrimaryVariant = "primary";
inline constexpr size_t kMaxVariants = 8;  // besides the primary
inline constexpr size_t kMaxVariantNameLength = 64;

// The config a variant learns with: the model's, with the variant's
// optimizer and admission, its share of the memory budget
// (MemberMemoryBytes) and no variants of its own.
ModelConfig VariantModelConfig(const ModelConfig& config, const ModelVariant& variant);

// The memory budget of each store of the model (the primary's and each
// variant's): memory.max_bytes divided evenly among them.
uint64_t MemberMemoryBytes(const ModelConfig& config);

// Checks memory.max_bytes: 0, or in [kMinMemoryBytes, kMaxMemoryBytes] and
// giving each shard of each store at least kMinShardMemoryBytes (with the
// compact encoding, also its tables' fixed part); not for a dense learner.
// Checks memory.encoding: compact only for FTRL (the model's optimizer and
// every variant's). Errors name the field and the limit.
absl::Status ValidateMemoryConfig(const ModelConfig& config);

inline constexpr int kMaxShards = 4096;
inline constexpr size_t kMaxModelNameLength = 128;
// Dense namespaces per model (their dimensions are bounded by kMaxDenseDim
// in total); keeps configs small, like kMaxInteractions.
inline constexpr size_t kMaxDenseNamespaces = 64;

// Checks that `name` is 1..max_length characters of [A-Za-z0-9_.-];
// the error names `field` and the limit.
absl::Status ValidateNameChars(std::string_view name, std::string_view field, size_t max_length);

// Checks a model name: 1..kMaxModelNameLength characters of [A-Za-z0-9_.-].
absl::Status ValidateModelName(std::string_view name, std::string_view field);

// Sets the config's optimizer from its API name: a per-coordinate
// optimizer's (ftrl, ..., metagrad_diag) or a dense learner's (ada_fd, ...),
// which makes the whole model dense (OptimizerType::kDense with
// dense_optimizer.type set: core/model/dense_model.h). InvalidArgument
// listing both kinds otherwise.
absl::Status SetOptimizerName(std::string_view name, ModelConfig* config);

// The name SetOptimizerName takes for the config's optimizer.
std::string OptimizerName(const ModelConfig& config);

// Checks the declared dense namespaces: at most kMaxDenseNamespaces, valid,
// distinct names, dimensions in 1..kMaxDenseDim and their total within it.
// Errors name the field.
absl::Status ValidateDenseNamespaces(const std::vector<DenseNamespace>& namespaces);

// Checks the variants: at most kMaxVariants, names valid and distinct (not
// kPrimaryVariant), each a per-coordinate optimizer the model's loss suits,
// on a sparse model without a dense block. Errors name the field.
absl::Status ValidateVariants(const ModelConfig& config);

// Checks the factorization (kind none: every other field at its default):
// dim in 1..kMaxFactorDim, 1..kMaxFactorFields fields that are valid,
// distinct sparse namespace names (not a dense namespace), init_scale,
// eta and l2 in range, and an optimizer whose step follows the loss
// gradient (not pa, cw or a dense learner), without variants, a memory
// encoding other than float or a TTL. Errors name the field and the limit.
absl::Status ValidateFactorizationConfig(const ModelConfig& config);

// Checks every part; errors name the field and the limit.
absl::Status ValidateModelConfig(const ModelConfig& config);

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_MODEL_CONFIG_H_
