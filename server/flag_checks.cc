#include "server/flag_checks.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace clickd {

namespace {

template <typename Int>
absl::Status CheckRange(std::string_view flag_name, Int value, Int lo, Int hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  const absl::string_view flag(flag_name.data(), flag_name.size());
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " must be in [", lo, ", ", hi, "]"));
}

}  // namespace

absl::Status CheckFlagRange(std::string_view flag, int64_t value, int64_t lo, int64_t hi) {
  return CheckRange(flag, value, lo, hi);
}

absl::Status CheckFlagRange(std::string_view flag, uint64_t value, uint64_t lo, uint64_t hi) {
  return CheckRange(flag, value, lo, hi);
}

}  // namespace clickd
