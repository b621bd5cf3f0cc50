// ADA-FULL: full-matrix AdaGrad (Duchi, Hazan & Singer 2011) over one dense
// weight vector, as seed 002 (Wan, Wei & Zhang) states it in section 2 with
// phi = 0. With G_t = sum_{i<=t} g_i g_i^T (the current gradient included)
// and
//   H_t = delta I + G_t^{1/2},
// the two forms are
//   dual averaging, eq. (1):    beta_{t+1} = -eta H_t^{-1} gbar_t,  gbar_t = sum_{i<=t} g_i
//   mirror descent, eq. (2):    beta_{t+1} = beta_t - eta H_t^{-1} g_t
// from beta_1 = 0. Each step eigendecomposes the d x d matrix G_t = Q L Q^T
// and applies H_t^{-1} = Q (delta I + L^{1/2})^{-1} Q^T: O(d^3) time and
// O(d^2) memory per step, the cost ADA-FD (ada_fd.h) exists to avoid.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_ADA_FULL_H_
#define CLICKD_CORE_OPTIM_DENSE_ADA_FULL_H_

#include <memory>

#include "Eigen/Core"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Defaults are a starting point, not tuned values (seed 002 searches both
// over {1e-4, 1e-3, ..., 100}); they are pinned in ada_full_test.cc.
struct AdaFullParams {
  double eta = 0.1;    // step size, > 0
  double delta = 1.0;  // keeps H_t invertible, > 0
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; dim >= 1.
absl::Status ValidateAdaFullParams(const AdaFullParams& params, int dim);

// Composite mirror descent form, eq. (2); SerializeState kind "ada_full".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFull(const AdaFullParams& params, int dim);

// Primal-dual (dual averaging) form, eq. (1); kind "ada_full_da".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaFullDa(const AdaFullParams& params, int dim);

// Returns H^{-1} v, column by column, for H = delta I + G^{1/2} where
// G = q diag(lambda) q^T is an eigendecomposition (q orthonormal).
// Eigenvalues below zero, which G's round-off can produce, count as zero.
// The optimizer applies it to one vector; the seed 002 reproduction applies
// one decomposition to every grid point's vector at once (G_t is the same
// for all of them there, see bench/seed002).
Eigen::MatrixXd ApplyAdaFullInverse(const Eigen::MatrixXd& q, const Eigen::VectorXd& lambda,
                                    double delta, const Eigen::MatrixXd& v);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_ADA_FULL_H_
