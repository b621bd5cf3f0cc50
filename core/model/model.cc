#include "core/model/model.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "core/model/linear_model.h"

namespace clickd {

absl::Status ValidateModelName(std::string_view name, std::string_view field) {
  const bool valid_chars = std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  if (name.empty() || name.size() > kMaxModelNameLength || !valid_chars) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), " \"", std::string(name),
                                                   "\" must be 1..", kMaxModelNameLength,
                                                   " characters of [A-Za-z0-9_.-]"));
  }
  // The name is the model's directory under --data_dir: no ".", "..", or
  // hidden directories.
  if (name.front() == '.') {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " \"", std::string(name), "\" must not start with '.'"));
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
  return ValidateHashingConfig(config.hashing);
}

double Model::Predict(const Example& example) const {
  thread_local std::vector<HashedFeature> features;
  features.clear();
  hasher_.Hash(example, &features);
  return Link(config_.loss, Margin(features));
}

absl::StatusOr<std::unique_ptr<Model>> CreateModel(const ModelConfig& config) {
  if (absl::Status s = ValidateModelConfig(config); !s.ok()) return s;
  const OptimizerConfig& o = config.optimizer;
  switch (o.type) {
    case OptimizerType::kFtrl:
      return std::make_unique<LinearModel<FtrlProximal>>(config, o.ftrl);
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
  }
  return absl::InvalidArgumentError("optimizer.type is unknown");
}

}  // namespace clickd
