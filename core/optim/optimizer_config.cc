#include "core/optim/optimizer_config.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

constexpr std::pair<OptimizerType, std::string_view> kNames[] = {
    {OptimizerType::kFtrl, "ftrl"},
    {OptimizerType::kAdagrad, "adagrad"},
    {OptimizerType::kAdagradDa, "adagrad_da"},
    {OptimizerType::kPcOgd, "pc_ogd"},
    {OptimizerType::kGlobalOgd, "global_ogd"},
    {OptimizerType::kSgd, "sgd"},
};

absl::Status RequirePositive(std::string_view field, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be finite and > 0"));
}

absl::Status RequireNonNegative(std::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be finite and >= 0"));
}

}  // namespace

absl::StatusOr<OptimizerType> ParseOptimizerType(std::string_view name) {
  for (const auto& [type, type_name] : kNames) {
    if (name == type_name) return type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer \"", std::string(name),
                   "\" is unknown; expected ftrl, adagrad, adagrad_da, pc_ogd, "
                   "global_ogd or sgd"));
}

std::string_view OptimizerTypeName(OptimizerType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return "unknown";
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  absl::Status s;
  switch (c.type) {
    case OptimizerType::kFtrl:
      s.Update(RequirePositive("ftrl.alpha", c.ftrl.alpha));
      s.Update(RequireNonNegative("ftrl.beta", c.ftrl.beta));
      s.Update(RequireNonNegative("ftrl.lambda1", c.ftrl.lambda1));
      s.Update(RequireNonNegative("ftrl.lambda2", c.ftrl.lambda2));
      break;
    case OptimizerType::kAdagrad:
    case OptimizerType::kAdagradDa:
      s.Update(RequirePositive("adagrad.eta", c.adagrad.eta));
      s.Update(RequireNonNegative("adagrad.delta", c.adagrad.delta));
      s.Update(RequireNonNegative("adagrad.lambda", c.adagrad.lambda));
      break;
    case OptimizerType::kPcOgd:
      s.Update(RequirePositive("pc_ogd.radius", c.pc_ogd.radius));
      s.Update(RequirePositive("pc_ogd.scale", c.pc_ogd.scale));
      break;
    case OptimizerType::kGlobalOgd:
      s.Update(RequirePositive("global_ogd.radius", c.global_ogd.radius));
      s.Update(RequirePositive("global_ogd.scale", c.global_ogd.scale));
      break;
    case OptimizerType::kSgd:
      s.Update(RequirePositive("sgd.eta", c.sgd.eta));
      break;
  }
  return s;
}

}  // namespace clickd
