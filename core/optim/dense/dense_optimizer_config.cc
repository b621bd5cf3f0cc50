#include "core/optim/dense/dense_optimizer_config.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/optim/dense/ada_diag.h"
#include "core/optim/dense/ada_fd.h"
#include "core/optim/dense/ada_full.h"
#include "core/optim/dense/fd_son.h"
#include "core/optim/dense/metagrad.h"
#include "core/optim/dense/ons.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

constexpr std::pair<DenseOptimizerType, std::string_view> kNames[] = {
    {DenseOptimizerType::kAdaDiag, "ada_diag"},  {DenseOptimizerType::kAdaDiagDa, "ada_diag_da"},
    {DenseOptimizerType::kAdaFull, "ada_full"},  {DenseOptimizerType::kAdaFullDa, "ada_full_da"},
    {DenseOptimizerType::kAdaFd, "ada_fd"},      {DenseOptimizerType::kAdaFdDa, "ada_fd_da"},
    {DenseOptimizerType::kOns, "ons"},           {DenseOptimizerType::kFdSon, "fd_son"},
    {DenseOptimizerType::kMetaGrad, "metagrad"},
};

AdaDiagParams DiagParams(const DenseOptimizerConfig& c) { return {c.eta, c.delta}; }
AdaFullParams FullParams(const DenseOptimizerConfig& c) { return {c.eta, c.delta}; }
AdaFdParams FdParams(const DenseOptimizerConfig& c) { return {c.eta, c.delta, c.tau}; }
OnsParams OnsParamsOf(const DenseOptimizerConfig& c) { return {c.eta, c.delta, c.weight_power}; }
FdSonParams FdSonParamsOf(const DenseOptimizerConfig& c) {
  return {c.eta, c.delta, c.tau, c.weight_power};
}
MetaGradParams MetaGradParamsOf(const DenseOptimizerConfig& c) {
  MetaGradParams p;
  p.diameter = c.diameter;
  p.gradient_bound = c.gradient_bound;
  return p;
}

// The learners' own checks name their fields without the prefix.
absl::Status Prefixed(const absl::Status& s, std::string_view field) {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(std::string(field), ".", s.message()));
}

absl::Status CheckDim(int dim, int limit, DenseOptimizerType type, std::string_view field) {
  if (dim >= 1 && dim <= limit) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " ", std::string(DenseOptimizerTypeName(type)), " takes 1..",
                   limit, " dimensions; the dense block has ", dim));
}

absl::Status ValidateSelectedLearner(const DenseOptimizerConfig& c, int dim,
                                     std::string_view field) {
  switch (c.type) {
    case DenseOptimizerType::kAdaDiag:
    case DenseOptimizerType::kAdaDiagDa:
      if (absl::Status s = CheckDim(dim, kMaxDenseDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateAdaDiagParams(DiagParams(c), dim), field);
    case DenseOptimizerType::kAdaFull:
    case DenseOptimizerType::kAdaFullDa:
      if (absl::Status s = CheckDim(dim, kMaxFullMatrixDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateAdaFullParams(FullParams(c), dim), field);
    case DenseOptimizerType::kAdaFd:
    case DenseOptimizerType::kAdaFdDa:
      if (absl::Status s = CheckDim(dim, kMaxDenseDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateAdaFdParams(FdParams(c), dim), field);
    case DenseOptimizerType::kOns:
      if (absl::Status s = CheckDim(dim, kMaxFullMatrixDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateOnsParams(OnsParamsOf(c), dim), field);
    case DenseOptimizerType::kFdSon:
      if (absl::Status s = CheckDim(dim, kMaxDenseDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateFdSonParams(FdSonParamsOf(c), dim), field);
    case DenseOptimizerType::kMetaGrad:
      if (absl::Status s = CheckDim(dim, kMaxMetaGradDim, c.type, field); !s.ok()) return s;
      return Prefixed(ValidateMetaGradParams(MetaGradParamsOf(c)), field);
  }
  return absl::InvalidArgumentError(absl::StrCat(std::string(field), " type is unknown"));
}

}  // namespace

absl::StatusOr<DenseOptimizerType> ParseDenseOptimizerType(std::string_view name) {
  for (const auto& [type, type_name] : kNames) {
    if (name == type_name) return type;
  }
  std::string expected;
  for (size_t i = 0; i < std::size(kNames); ++i) {
    absl::StrAppend(&expected, i == 0 ? "" : ", ", std::string(kNames[i].second));
  }
  return absl::InvalidArgumentError(absl::StrCat("dense optimizer \"", std::string(name),
                                                 "\" is unknown; expected one of ", expected));
}

std::string_view DenseOptimizerTypeName(DenseOptimizerType type) {
  for (const auto& [t, name] : kNames) {
    if (t == type) return name;
  }
  return "unknown";
}

absl::Status ValidateDenseOptimizerRanges(const DenseOptimizerConfig& c, std::string_view field) {
  const std::string f(field);
  absl::Status s = CheckParamInRange(f + ".eta", c.eta, kMinRate, kMaxRate);
  s.Update(CheckParamInRange(f + ".delta", c.delta, kMinScale, kMaxScale));
  s.Update(CheckParamInRange(f + ".weight_power", c.weight_power, 0, 1));
  s.Update(CheckParamInRange(f + ".diameter", c.diameter, kMinScale, kMaxScale));
  s.Update(CheckParamInRange(f + ".gradient_bound", c.gradient_bound, kMinScale, kMaxScale));
  if (c.tau < 1 || c.tau > kMaxDenseDim) {
    s.Update(absl::InvalidArgumentError(
        absl::StrCat(f, ".tau is ", c.tau, "; must be in [1, ", kMaxDenseDim, "]")));
  }
  return s;
}

absl::Status ValidateDenseOptimizerConfig(const DenseOptimizerConfig& c, int dim,
                                          std::string_view field) {
  // The selected learner's own checks first (their messages name the
  // learner's limits), then every field's range.
  if (absl::Status s = ValidateSelectedLearner(c, dim, field); !s.ok()) return s;
  return ValidateDenseOptimizerRanges(c, field);
}

absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewDenseOptimizer(const DenseOptimizerConfig& c,
                                                                  int dim) {
  if (absl::Status s = ValidateDenseOptimizerConfig(c, dim, "dense_optimizer"); !s.ok()) return s;
  switch (c.type) {
    case DenseOptimizerType::kAdaDiag:
      return NewAdaDiag(DiagParams(c), dim);
    case DenseOptimizerType::kAdaDiagDa:
      return NewAdaDiagDa(DiagParams(c), dim);
    case DenseOptimizerType::kAdaFull:
      return NewAdaFull(FullParams(c), dim);
    case DenseOptimizerType::kAdaFullDa:
      return NewAdaFullDa(FullParams(c), dim);
    case DenseOptimizerType::kAdaFd:
      return NewAdaFd(FdParams(c), dim);
    case DenseOptimizerType::kAdaFdDa:
      return NewAdaFdDa(FdParams(c), dim);
    case DenseOptimizerType::kOns:
      return NewOns(OnsParamsOf(c), dim);
    case DenseOptimizerType::kFdSon:
      return NewFdSon(FdSonParamsOf(c), dim);
    case DenseOptimizerType::kMetaGrad: {
      std::unique_ptr<DenseOptimizer> learner = NewMetaGrad(MetaGradParamsOf(c), dim);
      if (learner == nullptr) return absl::InvalidArgumentError("dense_optimizer: bad metagrad");
      return learner;
    }
  }
  return absl::InvalidArgumentError("dense_optimizer type is unknown");
}

}  // namespace clickd
