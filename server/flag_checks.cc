#include "server/flag_checks.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace clickd {

absl::Status CheckFlagRange(std::string_view flag_name, int64_t value, int64_t lo, int64_t hi) {
  if (value >= lo && value <= hi) return absl::OkStatus();
  const absl::string_view flag(flag_name.data(), flag_name.size());
  return absl::InvalidArgumentError(
      absl::StrCat("--", flag, "=", value, " must be in [", lo, ", ", hi, "]"));
}

}  // namespace clickd
