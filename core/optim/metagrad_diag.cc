#include "core/optim/metagrad_diag.h"

#include <cmath>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "core/optim/numeric_bounds.h"

namespace clickd {
namespace {

absl::Status RequirePositive(std::string_view field, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("metagrad_diag.", std::string(field), " is ",
                                                 value, "; must be finite and > 0"));
}

}  // namespace

absl::Status ValidateMetaGradDiagParams(const MetaGradDiagParams& params) {
  absl::Status status = RequirePositive("diameter", params.diameter);
  status.Update(RequirePositive("gradient_bound", params.gradient_bound));
  // The rates 1/(5 D G) and the surrogate losses stay finite in double.
  status.Update(CheckParamInRange("metagrad_diag.diameter", params.diameter, kMinScale, kMaxScale));
  status.Update(CheckParamInRange("metagrad_diag.gradient_bound", params.gradient_bound, kMinScale,
                                  kMaxScale));
  return status;
}

}  // namespace clickd
