// Online Newton Step (Hazan, Agarwal & Kale 2007) in the unconstrained form
// seed 002 (Wan, Wei & Zhang) quotes from Luo et al. (2016), eq. (5):
//   A_t = alpha I + sum_{i<=t} eta_i g_i g_i^T,   beta_{t+1} = beta_t - A_t^{-1} g_t,
// which seed 002 (section 3.3) rewrites, for Luo et al.'s general-convex
// choice eta_i ~ 1/sqrt(i), as
//   H_t = delta I + sum_{i<=t} i^{-1/2} g_i g_i^T,   beta_{t+1} = beta_t - eta H_t^{-1} g_t.
// This class implements the second form with the weight i^{-p},
// p = weight_power: eq. (5) with alpha = delta/eta and eta_i = i^{-p}/eta.
// p = 1/2 is the paper's form; p = 0 is Hazan et al.'s ONS for exp-concave
// losses (A_t = epsilon I + sum g g^T, step 1/gamma) without its
// projection, epsilon = delta and gamma = 1/eta. beta_1 = 0.
//
// H_t^{-1} is kept and updated by Sherman-Morrison,
//   H_t^{-1} = H_{t-1}^{-1} - w u u^T / (1 + w g^T u),  u = H_{t-1}^{-1} g_t, w = t^{-p},
// and H_t^{-1} g_t = u / (1 + w g^T u): O(d^2) time and memory per round.
// fd_son.h is the O(tau d) sketched version.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_ONS_H_
#define CLICKD_CORE_OPTIM_DENSE_ONS_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Defaults are a starting point, not tuned values; pinned in ons_test.cc.
struct OnsParams {
  double eta = 0.1;           // step size, > 0
  double delta = 1.0;         // H_0 = delta I, > 0
  double weight_power = 0.5;  // p in the weight t^{-p} of g_t g_t^T, in [0, 1]
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; weight_power in [0, 1]; dim >= 1.
absl::Status ValidateOnsParams(const OnsParams& params, int dim);

// SerializeState kind "ons".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewOns(const OnsParams& params, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_ONS_H_
