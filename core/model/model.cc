#include "core/model/model.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <string_view>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/base/quote.h"
#include "core/model/dense_model.h"
#include "core/model/linear_model.h"
#include "core/model/variant_model.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {

absl::Status ValidateNameChars(std::string_view name, std::string_view field, size_t max_length) {
  const bool valid_chars = std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  if (name.empty() || name.size() > max_length || !valid_chars) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), " ", Quote(name),
                                                   " must be 1..", max_length,
                                                   " characters of [A-Za-z0-9_.-]"));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelName(std::string_view name, std::string_view field) {
  if (absl::Status s = ValidateNameChars(name, field, kMaxModelNameLength); !s.ok()) return s;
  // The name is the model's directory under --data_dir: no ".", "..", or
  // hidden directories.
  if (name.front() == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " ", Quote(name), " must not start with '.'"));
  }
  return absl::OkStatus();
}

absl::Status SetOptimizerName(std::string_view name, ModelConfig* config) {
  auto type = ParseOptimizerType(name);
  if (type.ok()) {
    config->optimizer.type = *type;
    return absl::OkStatus();
  }
  auto dense = ParseDenseOptimizerType(name);
  if (!dense.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        type.status().message(), "; or a dense learner for the whole model: ",
        dense.status().message().substr(dense.status().message().find("expected one of ") + 16)));
  }
  config->optimizer.type = OptimizerType::kDense;
  config->dense_optimizer.type = *dense;
  return absl::OkStatus();
}

std::string OptimizerName(const ModelConfig& config) {
  if (config.optimizer.type == OptimizerType::kDense) {
    return std::string(DenseOptimizerTypeName(config.dense_optimizer.type));
  }
  return std::string(OptimizerTypeName(config.optimizer.type));
}

namespace {

// The dense learner's part of a config: the dense namespaces, plus for a
// DenseModel the 2^bits folded features, and the learner over them.
absl::Status ValidateDenseParts(const ModelConfig& config) {
  const bool dense_model = config.optimizer.type == OptimizerType::kDense;
  if (!dense_model && config.dense_namespaces.empty()) return absl::OkStatus();
  if (absl::Status s = ValidateDenseNamespaces(config.dense_namespaces); !s.ok()) return s;
  int dim = 0;
  if (dense_model) {
    if (config.hashing.bits < 1 || config.hashing.bits > kMaxDenseModelBits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hashing.bits is ", config.hashing.bits, "; optimizer ", OptimizerName(config),
          " learns one dense vector over 2^bits folded features and needs bits in 1..",
          kMaxDenseModelBits));
    }
    dim = 1 << config.hashing.bits;
  } else if (IsBinaryClassifier(config.optimizer.type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "dense_namespaces: optimizer ", std::string(OptimizerTypeName(config.optimizer.type)),
        " is a per-example classifier of sparse features; it takes no dense block"));
  }
  for (const DenseNamespace& ns : config.dense_namespaces) dim += ns.dim;
  return ValidateDenseOptimizerConfig(config.dense_optimizer, dim, "dense_optimizer");
}

}  // namespace

uint32_t NewImpressionIdTag() {
  std::random_device random;
  return std::uniform_int_distribution<uint32_t>(1, kMaxImpressionIdTag)(random);
}

std::string_view FeedbackPolicyName(FeedbackConfig::Policy policy) {
  switch (policy) {
    case FeedbackConfig::Policy::kWaitNegative:
      return "wait_negative";
    case FeedbackConfig::Policy::kWaitDrop:
      return "wait_drop";
    case FeedbackConfig::Policy::kFakeNegative:
      return "fake_negative";
    case FeedbackConfig::Policy::kFakeNegativeWeighted:
      return "fake_negative_weighted";
  }
  return "?";
}

absl::Status ParseFeedbackPolicy(std::string_view name, FeedbackConfig::Policy* policy) {
  for (auto p :
       {FeedbackConfig::Policy::kWaitNegative, FeedbackConfig::Policy::kWaitDrop,
        FeedbackConfig::Policy::kFakeNegative, FeedbackConfig::Policy::kFakeNegativeWeighted}) {
    if (name == FeedbackPolicyName(p)) {
      *policy = p;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("feedback.policy ", Quote(name),
                   " is unknown; one of wait_negative (the default), wait_drop, fake_negative, "
                   "fake_negative_weighted"));
}

absl::Status ValidateFeedbackConfig(const FeedbackConfig& feedback, LossType loss) {
  if (feedback.ttl_seconds < 0 || feedback.ttl_seconds > kMaxFeedbackTtlSeconds) {
    return absl::InvalidArgumentError(absl::StrCat("feedback.ttl_seconds is ", feedback.ttl_seconds,
                                                   "; must be in 0..", kMaxFeedbackTtlSeconds,
                                                   " (0: impressions are not logged)"));
  }
  if (feedback.max_buffer_bytes < 1024 || feedback.max_buffer_bytes > kMaxFeedbackBufferBytes) {
    return absl::InvalidArgumentError(absl::StrCat("feedback.max_buffer_bytes is ",
                                                   feedback.max_buffer_bytes, "; must be in 1024..",
                                                   kMaxFeedbackBufferBytes));
  }
  if (static_cast<uint32_t>(feedback.policy) > 3) {
    return absl::InvalidArgumentError("feedback.policy is out of range");
  }
  if (feedback.id_tag > kMaxImpressionIdTag) {
    return absl::InvalidArgumentError(absl::StrCat("feedback.id_tag is ", feedback.id_tag,
                                                   "; must be in 0..", kMaxImpressionIdTag));
  }
  if (feedback.enabled() && loss != LossType::kLogistic) {
    return absl::InvalidArgumentError(absl::StrCat(
        "feedback needs loss logistic (labels 0/1: a click or not); the model's loss is ",
        std::string(LossTypeName(loss))));
  }
  return absl::OkStatus();
}

absl::Status ValidateModelConfig(const ModelConfig& config) {
  if (absl::Status s = ValidateModelName(config.name, "name"); !s.ok()) return s;
  if (config.num_shards < 1 || config.num_shards > kMaxShards) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_shards is ", config.num_shards, "; must be in 1..", kMaxShards));
  }
  if (absl::Status s = ValidateOptimizerConfig(config.optimizer); !s.ok()) return s;
  // PA and CW are binary classifiers whose prediction is the margin: a
  // logistic probability or a squared-loss regression has no meaning for them.
  if (IsBinaryClassifier(config.optimizer.type) && config.loss != LossType::kHinge) {
    return absl::InvalidArgumentError(absl::StrCat(
        "loss is ", std::string(LossTypeName(config.loss)), "; optimizer ",
        std::string(OptimizerTypeName(config.optimizer.type)),
        " is a binary classifier and takes loss hinge (labels -1/+1, prediction the margin)"));
  }
  if (absl::Status s = ValidateDenseParts(config); !s.ok()) return s;
  if (absl::Status s = ValidateAdmissionOptions(config.admission, "admission"); !s.ok()) return s;
  if (config.admission.policy != AdmissionOptions::Policy::kAll &&
      config.optimizer.type == OptimizerType::kDense) {
    return absl::InvalidArgumentError(
        "admission applies to the sparse optimizers' coordinates; a dense learner has none");
  }
  // Unused dense parameters too: the config is stored and shown whole.
  if (absl::Status s = ValidateDenseOptimizerRanges(config.dense_optimizer, "dense_optimizer");
      !s.ok()) {
    return s;
  }
  if (absl::Status s = ValidateVariants(config); !s.ok()) return s;
  if (absl::Status s = ValidateMemoryConfig(config); !s.ok()) return s;
  if (absl::Status s = ValidateKafkaSourceConfig(config.kafka); !s.ok()) return s;
  if (absl::Status s = ValidateFactorizationConfig(config); !s.ok()) return s;
  if (absl::Status s = ValidateFeedbackConfig(config.feedback, config.loss); !s.ok()) return s;
  if (!config.kafka.feedback_topic.empty() && !config.feedback.enabled()) {
    return absl::InvalidArgumentError(
        "kafka.feedback_topic needs the impression-to-click loop (feedback.ttl_seconds > 0): its "
        "labels join the impressions Predict logs");
  }
  if (!(config.calibration.half_life >= 1 && config.calibration.half_life <= 1e15)) {
    return absl::InvalidArgumentError(absl::StrCat("calibration.half_life is ",
                                                   config.calibration.half_life,
                                                   "; must be in [1, 1e15] examples"));
  }
  if (config.calibration.enabled && config.loss != LossType::kLogistic) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration needs loss logistic (it corrects probabilities); the model's "
                     "loss is ",
                     std::string(LossTypeName(config.loss))));
  }
  return ValidateHashingConfig(config.hashing);
}

double Model::Predict(const Example& example) const {
  thread_local std::vector<HashedFeature> features;
  features.clear();
  hasher_.Hash(example, &features);
  return Link(config_.loss, Margin(features));
}

namespace {

// The model for the config's per-coordinate optimizer, without its dense block.
absl::StatusOr<std::unique_ptr<Model>> CreateLinearModel(const ModelConfig& config) {
  const OptimizerConfig& o = config.optimizer;
  switch (o.type) {
    case OptimizerType::kFtrl: {
      // A TTL stamps every state with the epoch of its last step.
      const bool ttl = config.memory.ttl_rounds != 0;
      if (config.memory.encoding == StateEncoding::kCompact) {
        if (ttl) return std::make_unique<LinearModel<Stamped<CompactFtrl>>>(config, o.ftrl);
        return std::make_unique<LinearModel<CompactFtrl>>(config, o.ftrl);
      }
      if (ttl) return std::make_unique<LinearModel<Stamped<FtrlProximal>>>(config, o.ftrl);
      return std::make_unique<LinearModel<FtrlProximal>>(config, o.ftrl);
    }
    case OptimizerType::kAdagrad:
      return std::make_unique<LinearModel<AdagradCmd>>(config, o.adagrad);
    case OptimizerType::kAdagradDa:
      return std::make_unique<LinearModel<AdagradDa>>(config, o.adagrad);
    case OptimizerType::kPcOgd:
      return std::make_unique<LinearModel<PcOgd>>(config, o.pc_ogd);
    case OptimizerType::kGlobalOgd:
      return std::make_unique<LinearModel<GlobalOgd>>(config, o.global_ogd);
    case OptimizerType::kSgd:
      return std::make_unique<LinearModel<Sgd>>(config, o.sgd);
    case OptimizerType::kPa:
      return std::make_unique<LinearModel<Pa>>(config, o.pa);
    case OptimizerType::kCw:
      return std::make_unique<LinearModel<Cw>>(config, o.cw);
    case OptimizerType::kMetaGradDiag:
      return std::make_unique<LinearModel<MetaGradDiag>>(config, o.metagrad_diag);
    case OptimizerType::kDense:
      break;  // CreateModel builds a DenseModel
  }
  return absl::InvalidArgumentError("optimizer.type is unknown");
}

}  // namespace

bool StateIsFinite(const Model::State& state) {
  if (!std::isfinite(state.round.sum_grad_norm_sq)) return false;
  const size_t record = sizeof(uint64_t) + state.state_size;
  const std::string_view bytes = state.coordinates;
  for (size_t at = 0; at + record <= bytes.size(); at += record) {
    if (!FloatsAreFinite(bytes.substr(at + sizeof(uint64_t), state.state_size))) return false;
  }
  const size_t factor_record = sizeof(uint64_t) + state.factor_size;
  const std::string_view factors = state.factors;
  for (size_t at = 0; at + factor_record <= factors.size(); at += factor_record) {
    if (!FloatsAreFinite(factors.substr(at + sizeof(uint64_t), state.factor_size))) return false;
  }
  return true;
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config) {
  if (absl::Status s = ValidateModelConfig(config); !s.ok()) return s;
  if (config.optimizer.type == OptimizerType::kDense) {
    auto block = DenseBlock::Create(config.dense_namespaces, config.dense_optimizer,
                                    1 << config.hashing.bits);
    if (!block.ok()) return block.status();
    std::unique_ptr<Model> model = std::make_unique<DenseModel>(config);
    model->dense_ = *std::move(block);
    return model;
  }
  if (!config.variants.empty()) {
    // ValidateVariants: no dense block. One linear model per variant.
    ModelConfig primary = config;
    primary.variants.clear();
    primary.memory.max_bytes = MemberMemoryBytes(config);
    std::vector<std::unique_ptr<Model>> members;
    auto first = CreateLinearModel(primary);
    if (!first.ok()) return first.status();
    members.push_back(*std::move(first));
    for (const ModelVariant& v : config.variants) {
      auto member = CreateLinearModel(VariantModelConfig(config, v));
      if (!member.ok()) return member.status();
      members.push_back(*std::move(member));
    }
    return std::make_unique<VariantModel>(config, std::move(members));
  }
  auto model = CreateLinearModel(config);
  if (!model.ok() || config.dense_namespaces.empty()) return model;
  auto block = DenseBlock::Create(config.dense_namespaces, config.dense_optimizer);
  if (!block.ok()) return block.status();
  (*model)->dense_ = *std::move(block);
  return model;
}

}  // namespace clickd
