#include "core/optim/loss.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/base/quote.h"

namespace clickd {

absl::StatusOr<LossType> ParseLossType(std::string_view name) {
  if (name == "logistic") return LossType::kLogistic;
  if (name == "squared") return LossType::kSquared;
  if (name == "hinge") return LossType::kHinge;
  return absl::InvalidArgumentError(
      absl::StrCat("loss ", Quote(name), " is unknown; expected logistic, squared or hinge"));
}

std::string_view LossTypeName(LossType type) {
  switch (type) {
    case LossType::kLogistic:
      return "logistic";
    case LossType::kSquared:
      return "squared";
    case LossType::kHinge:
      return "hinge";
  }
  return "unknown";
}

absl::Status CheckLabel(LossType type, double label, std::string_view field) {
  if (!std::isfinite(label)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " is ", label, "; must be finite"));
  }
  const bool binary = label == 0.0 || label == 1.0 || label == -1.0;
  if (type != LossType::kSquared && !binary) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), " is ", label, "; ",
                                                   std::string(LossTypeName(type)),
                                                   " loss takes labels 0/1 or -1/+1"));
  }
  return absl::OkStatus();
}

double Sigmoid(double margin) {
  // Two branches so that exp never overflows.
  if (margin >= 0) return 1.0 / (1.0 + std::exp(-margin));
  const double e = std::exp(margin);
  return e / (1.0 + e);
}

double Loss(LossType type, double margin, double label) {
  switch (type) {
    case LossType::kLogistic: {
      const double z = -SignedLabel(label) * margin;
      // log(1 + exp(z)) without overflow.
      return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z));
    }
    case LossType::kSquared:
      return 0.5 * (margin - label) * (margin - label);
    case LossType::kHinge:
      return std::max(0.0, 1.0 - SignedLabel(label) * margin);
  }
  return 0.0;
}

double LossGradient(LossType type, double margin, double label) {
  switch (type) {
    case LossType::kLogistic:
      return Sigmoid(margin) - (label > 0 ? 1.0 : 0.0);
    case LossType::kSquared:
      return margin - label;
    case LossType::kHinge: {
      const double y = SignedLabel(label);
      return y * margin < 1.0 ? -y : 0.0;
    }
  }
  return 0.0;
}

double Link(LossType type, double margin) {
  return type == LossType::kLogistic ? Sigmoid(margin) : margin;
}

}  // namespace clickd
