#include "core/formats/parse_helpers.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace clickd {
namespace formats_internal {

std::string_view Describe(NumberStatus status) {
  switch (status) {
    case NumberStatus::kOk:
      return "is ok";
    case NumberStatus::kNotANumber:
      return "is not a number";
    case NumberStatus::kNan:
      return "is nan; must be finite";
    case NumberStatus::kInf:
      return "is inf; must be finite";
    case NumberStatus::kOutOfRange:
      return "is out of range for a float";
  }
  return "is invalid";
}

ParsedFloat ParseFloat(std::string_view text) {
  if (text.size() > 1 && text[0] == '+' && text[1] != '-' && text[1] != '+') {
    text.remove_prefix(1);
  }
  double value = 0.0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ptr != end || text.empty()) return {0.0f, NumberStatus::kNotANumber};
  if (ec == std::errc::result_out_of_range) return {0.0f, NumberStatus::kOutOfRange};
  if (ec != std::errc()) return {0.0f, NumberStatus::kNotANumber};
  if (std::isnan(value)) return {0.0f, NumberStatus::kNan};
  if (std::isinf(value)) return {0.0f, NumberStatus::kInf};
  // Parsed as a double so that 1e-50 rounds to 0 instead of failing.
  if (std::fabs(value) > std::numeric_limits<float>::max()) {
    return {0.0f, NumberStatus::kOutOfRange};
  }
  return {static_cast<float>(value), NumberStatus::kOk};
}

absl::StatusOr<float> ParseNumberField(std::string_view what, std::string_view token) {
  const ParsedFloat parsed = ParseFloat(token);
  if (parsed.status == NumberStatus::kOk) return parsed.value;
  return absl::InvalidArgumentError(absl::StrCat(AbslView(what), " \"", AbslView(token), "\" ",
                                                 AbslView(Describe(parsed.status))));
}

}  // namespace formats_internal
}  // namespace clickd
