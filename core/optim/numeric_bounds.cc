#include "core/optim/numeric_bounds.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace {

// "<field> is <value>; the limit is <limit>" for a finite value beyond a
// one-sided limit; "must be finite" first.
absl::Status CheckMagnitude(double value, double limit, std::string_view field) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " is ", value, "; must be finite"));
  }
  if (std::abs(value) > limit) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), " is ", value,
                                                   "; the limit is ", limit, " in absolute value"));
  }
  return absl::OkStatus();
}

}  // namespace

bool FloatsAreFinite(std::string_view bytes) {
  for (size_t at = 0; at + sizeof(float) <= bytes.size(); at += sizeof(float)) {
    float v;
    std::memcpy(&v, bytes.data() + at, sizeof(v));
    if (!std::isfinite(v)) return false;
  }
  return true;
}

absl::Status CheckImportance(double importance, std::string_view field) {
  if (!std::isfinite(importance) || importance < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " is ", importance, "; must be finite and >= 0"));
  }
  if (importance > kMaxImportance) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(field), " is ", importance, "; the limit is ", kMaxImportance));
  }
  return absl::OkStatus();
}

absl::Status CheckFeatureValue(double value, std::string_view field) {
  return CheckMagnitude(value, kMaxFeatureValue, field);
}

absl::Status CheckDenseValue(double value, std::string_view field) {
  return CheckMagnitude(value, kMaxDenseValue, field);
}

absl::Status CheckBoundedLabel(LossType loss, double label, std::string_view field) {
  if (absl::Status s = CheckLabel(loss, label, field); !s.ok()) return s;
  if (loss == LossType::kSquared && std::abs(label) > kMaxSquaredLabel) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(field), " is ", label,
                                                   "; the limit under squared loss is ",
                                                   kMaxSquaredLabel, " in absolute value"));
  }
  return absl::OkStatus();
}

absl::Status CheckParamInRange(std::string_view field, double value, double lo, double hi) {
  if (std::isfinite(value) && value >= lo && value <= hi) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(std::string(field), " is ", value, "; must be in [", lo, ", ", hi, "]"));
}

}  // namespace clickd
