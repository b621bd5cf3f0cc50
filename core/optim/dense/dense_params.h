// Range checks shared by the dense optimizers' ValidateXxxParams functions.
// Each error names the field, its value and the limit.
#ifndef CLICKD_CORE_OPTIM_DENSE_DENSE_PARAMS_H_
#define CLICKD_CORE_OPTIM_DENSE_DENSE_PARAMS_H_

#include <string_view>

#include "absl/status/status.h"

namespace clickd::dense_params {

// OK if dim >= 1.
absl::Status CheckDim(int dim);

// OK if value is finite and > 0.
absl::Status CheckPositive(std::string_view field, double value);

// OK if value is finite and in [lo, hi].
absl::Status CheckInRange(std::string_view field, double value, double lo, double hi);

// OK if 1 <= tau <= dim.
absl::Status CheckTau(int tau, int dim);

}  // namespace clickd::dense_params

#endif  // CLICKD_CORE_OPTIM_DENSE_DENSE_PARAMS_H_
