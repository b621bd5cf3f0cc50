#include "core/optim/dense/dense_params.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace clickd::dense_params {

absl::Status CheckDim(int dim) {
  if (dim >= 1) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("dim is ", dim, "; must be >= 1"));
}

absl::Status CheckPositive(std::string_view field, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be finite and > 0"));
}

absl::Status CheckInRange(std::string_view field, double value, double lo, double hi) {
  if (std::isfinite(value) && value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be in [", lo, ", ", hi, "]"));
}

absl::Status CheckTau(int tau, int dim) {
  if (tau >= 1 && tau <= dim) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("tau is ", tau, "; must be in [1, dim] (dim is ", dim, ")"));
}

}  // namespace clickd::dense_params
