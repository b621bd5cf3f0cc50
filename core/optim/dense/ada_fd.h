// ADA-FD (seed 002: Wan, Wei & Zhang, "Efficient Adaptive Online Learning
// via Frequent Directions"): ADA-FULL (ada_full.h) with G_t replaced by a
// frequent-directions sketch S_t (tau x d, dense_fd_sketch.h), so
//   H_t = delta I + (S_t^T S_t)^{1/2} = delta I + V Sigma' V^T   (section 3.1)
// and H_t^{-1} is applied by the Woodbury formula. Each round, after the
// sketch step (insert g_t as the last row of S_{t-1}; SVD; sigma_t =
// Sigma_{tau,tau}^2; S_t = sqrt(Sigma^2 - sigma_t I) V^T):
//   Algorithm 1, eq. (6), dual averaging ("ada_fd_da"):
//     gbar_t = gbar_{t-1} + g_t
//     beta_{t+1} = -(eta/delta) (gbar_t - V (delta I + Sigma')^{-1} Sigma' V^T gbar_t)
//   Algorithm 2, eq. (7), mirror descent ("ada_fd"):
//     beta_{t+1} = beta_t - (eta/delta) (g_t - V (delta I + Sigma')^{-1} Sigma' V^T g_t)
// from beta_1 = 0, gbar_0 = 0, S_0 = 0. O(tau d) memory and O(tau^2 d) time
// per round.
//
// Reconstructed from the extracted text: step 6 of both algorithms lost its
// minus signs ("beta_t (eta/delta)(g_t V(...)" and "-(eta/delta)(gbar_t
// V(...)"); the signs above are those of eqs. (6)-(7), which print them, and
// follow from the Woodbury identity H^{-1} = (1/delta)(I - V (delta I +
// Sigma)^{-1} Sigma V^T) of line ~114 applied in eqs. (1)-(2). The sketch's
// reconstruction is described in dense_fd_sketch.h.
//
// The sketch keeps at most tau - 1 directions (the shrink zeroes one), so
// when every gradient lies in a subspace of dimension r <= tau - 1, sigma_t
// is 0, S_t^T S_t = G_t and ADA-FD is ADA-FULL (the paper's remark that
// Delta_T = 0 for tau = r + 1); ada_fd_test.cc checks this.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_ADA_FD_H_
#define CLICKD_CORE_OPTIM_DENSE_ADA_FD_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Defaults are a starting point, not tuned values (seed 002 searches eta
// and delta over {1e-4, ..., 100} and sets tau = 10 in section 4.1); they are
// pinned in ada_fd_test.cc.
struct AdaFdParams {
  double eta = 0.1;    // step size, > 0
  double delta = 1.0;  // keeps H_t invertible, > 0
  int tau = 10;        // sketch rows, in [1, dim]
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; dim >= 1; tau in [1, dim].
absl::Status ValidateAdaFdParams(const AdaFdParams& params, int dim);

// Algorithm 2, composite mirror descent; SerializeState kind "ada_fd".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFd(const AdaFdParams& params, int dim);

// Algorithm 1, dual averaging; kind "ada_fd_da".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFdDa(const AdaFdParams& params, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_ADA_FD_H_
