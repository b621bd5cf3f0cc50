#include "core/optim/optimizer_config.h"

#include <cmath>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

constexpr std::pair<OptimizerType, std::string_view> kNames[] = {
    {OptimizerType::kFtrl, "ftrl"},
    {OptimizerType::kAdagrad, "adagrad"},
    {OptimizerType::kAdagradDa, "adagrad_da"},
    {OptimizerType::kPcOgd, "pc_ogd"},
    {OptimizerType::kGlobalOgd, "global_ogd"},
    {OptimizerType::kSgd, "sgd"},
    {OptimizerType::kPa, "pa"},
    {OptimizerType::kCw, "cw"},
    {OptimizerType::kMetaGradDiag, "metagrad_diag"},
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

absl::Status RequireOpenInterval(std::string_view field, double value, double lo, double hi) {
  if (value > lo && value < hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be in (", lo, ", ", hi, ")"));
}

}  // namespace

absl::StatusOr<OptimizerType> ParseOptimizerType(std::string_view name) {
  for (const auto& [type, type_name] : kNames) {
    if (name == type_name) return type;
  }
  std::string expected;  // "a, b or c"
  for (size_t i = 0; i < std::size(kNames); ++i) {
    const char* separator = i == 0 ? "" : (i + 1 == std::size(kNames) ? " or " : ", ");
    absl::StrAppend(&expected, separator, std::string(kNames[i].second));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("optimizer \"", std::string(name), "\" is unknown; expected ", expected));
}

std::string_view OptimizerTypeName(OptimizerType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return type == OptimizerType::kDense ? "dense" : "unknown";
}

bool IsBinaryClassifier(OptimizerType type) {
  return type == OptimizerType::kPa || type == OptimizerType::kCw;
}

absl::Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  // Every optimizer's parameters, selected or not: a config is stored and
  // shown whole, so no part of it may hold a value no step could take. The
  // sign checks come first (their messages are the long-standing ones),
  // then the ranges of core/optim/numeric_bounds.h.
  absl::Status s;
  s.Update(RequirePositive("ftrl.alpha", c.ftrl.alpha));
  s.Update(RequireNonNegative("ftrl.beta", c.ftrl.beta));
  s.Update(RequireNonNegative("ftrl.lambda1", c.ftrl.lambda1));
  s.Update(RequireNonNegative("ftrl.lambda2", c.ftrl.lambda2));
  s.Update(CheckParamInRange("ftrl.alpha", c.ftrl.alpha, kMinRate, kMaxRate));
  // beta > 0 keeps the weight's denominator positive while n is still 0
  // (a gradient whose square underflows).
  s.Update(CheckParamInRange("ftrl.beta", c.ftrl.beta, kMinScale, kMaxScale));
  s.Update(CheckParamInRange("ftrl.lambda1", c.ftrl.lambda1, 0, kMaxScale));
  s.Update(CheckParamInRange("ftrl.lambda2", c.ftrl.lambda2, 0, kMaxScale));
  // decay multiplies n before each step: 0 would forget everything, > 1
  // would let n (and the state) grow geometrically.
  if (!(c.ftrl.decay > 0 && c.ftrl.decay <= 1)) {
    s.Update(absl::InvalidArgumentError(
        absl::StrCat("ftrl.decay is ", c.ftrl.decay, "; must be in (0, 1]")));
  }

  s.Update(RequirePositive("adagrad.eta", c.adagrad.eta));
  s.Update(RequireNonNegative("adagrad.delta", c.adagrad.delta));
  s.Update(RequireNonNegative("adagrad.lambda", c.adagrad.lambda));
  s.Update(CheckParamInRange("adagrad.eta", c.adagrad.eta, kMinRate, kMaxRate));
  // delta > 0: H = delta + sqrt(sum g^2) divides the step, and is 0/0 on a
  // zero gradient otherwise.
  s.Update(CheckParamInRange("adagrad.delta", c.adagrad.delta, kMinScale, kMaxScale));
  s.Update(CheckParamInRange("adagrad.lambda", c.adagrad.lambda, 0, kMaxScale));

  s.Update(RequirePositive("pc_ogd.radius", c.pc_ogd.radius));
  s.Update(RequirePositive("pc_ogd.scale", c.pc_ogd.scale));
  s.Update(CheckParamInRange("pc_ogd.radius", c.pc_ogd.radius, kMinScale, kMaxScale));
  s.Update(CheckParamInRange("pc_ogd.scale", c.pc_ogd.scale, kMinRate, kMaxRate));

  s.Update(RequirePositive("global_ogd.radius", c.global_ogd.radius));
  s.Update(RequirePositive("global_ogd.scale", c.global_ogd.scale));
  s.Update(CheckParamInRange("global_ogd.radius", c.global_ogd.radius, kMinScale, kMaxScale));
  s.Update(CheckParamInRange("global_ogd.scale", c.global_ogd.scale, kMinRate, kMaxRate));

  s.Update(RequirePositive("sgd.eta", c.sgd.eta));
  s.Update(CheckParamInRange("sgd.eta", c.sgd.eta, kMinRate, kMaxRate));

  s.Update(RequirePositive("pa.c", c.pa.c));
  s.Update(CheckParamInRange("pa.c", c.pa.c, kMinRate, kMaxScale));

  // phi = Phi^{-1}(eta) must be finite and > 0 for CW's closed form.
  s.Update(RequireOpenInterval("cw.eta", c.cw.eta, 0.5, 1.0));
  s.Update(RequirePositive("cw.a", c.cw.a));
  s.Update(CheckParamInRange("cw.a", c.cw.a, kMinScale, kMaxScale));

  s.Update(ValidateMetaGradDiagParams(c.metagrad_diag));
  return s;
}

}  // namespace clickd
