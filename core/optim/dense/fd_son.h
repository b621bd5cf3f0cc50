// FD-SON: Sketched Online Newton with frequent directions (Luo, Agarwal,
// Cesa-Bianchi & Langford 2016), the sketched ONS that seed 002 (Wan, Wei &
// Zhang) compares against in section 4. Seed 002 only describes it (ONS,
// eq. (5), with the second-order matrix replaced by a frequent-directions
// sketch); this is our reading, kept to the form the seed's section 3.3
// rewrites ONS into:
//   H_t = delta I + S_t^T S_t,   beta_{t+1} = beta_t - eta H_t^{-1} g_t,
// where S_t (tau x d) is the frequent-directions sketch (dense_fd_sketch.h,
// the same one-row shrink as ADA-FD) of the rows sqrt(w_i) g_i, w_i = i^{-p},
// p = weight_power, so S_t^T S_t approximates sum_{i<=t} i^{-p} g_i g_i^T
// (ons.h's matrix). With S_t = Sigma' V^T, Woodbury gives
//   H_t^{-1} g = (1/delta) (g - V (delta I + Sigma'^2)^{-1} Sigma'^2 V^T g).
// O(tau d) memory, O(tau^2 d) time per round; beta_1 = 0.
//
// Differences from Luo et al.'s algorithm as we recall it (their text is not
// in the repository, so this is from memory and unchecked): they sketch
// with a 2m-row buffer shrunk every m rows (amortised O(m d)), add the mass
// removed by each shrink back into the regulariser (alpha_t grows), project
// onto the feasible set and keep a sparse-update reparametrisation. Here
// delta is fixed, the sketch is the seed's one-row form, and there is no
// constraint (phi = 0), matching how seed 002 states the other methods.
// The difference from ADA-FD is the matrix: FD-SON uses S^T S itself
// (Newton-style, weights t^{-p}), ADA-FD its square root.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_FD_SON_H_
#define CLICKD_CORE_OPTIM_DENSE_FD_SON_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Defaults are a starting point, not tuned values (seed 002 searches eta
// and delta over {1e-4, ..., 100}, tau = 10); pinned in fd_son_test.cc.
struct FdSonParams {
  double eta = 0.1;           // step size, > 0
  double delta = 1.0;         // H_0 = delta I, > 0
  int tau = 10;               // sketch rows, in [1, dim]
  double weight_power = 0.5;  // p in the weight t^{-p} of g_t g_t^T, in [0, 1]
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; weight_power in [0, 1]; dim >= 1; tau in [1, dim].
absl::Status ValidateFdSonParams(const FdSonParams& params, int dim);

// SerializeState kind "fd_son".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewFdSon(const FdSonParams& params, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_FD_SON_H_
