// ADA-DIAG: diagonal-matrix AdaGrad (Duchi, Hazan & Singer 2011) over one
// dense weight vector, as seed 002 (Wan, Wei & Zhang) states it in section 2
// with phi = 0. With G_t = sum_{i<=t} g_i g_i^T (the current gradient
// included) and
//   H_t = delta I + diag(G_t)^{1/2},  i.e.  H_t,ii = delta + sqrt(sum_{i<=t} g_i,j^2),
// the two forms are
//   dual averaging, eq. (1):    beta_{t+1} = -eta H_t^{-1} gbar_t,  gbar_t = sum_{i<=t} g_i
//   mirror descent, eq. (2):    beta_{t+1} = beta_t - eta H_t^{-1} g_t
// from beta_1 = 0. O(d) time and memory per step.
//
// Thread safety: none; the owner serializes every call.
#ifndef CLICKD_CORE_OPTIM_DENSE_ADA_DIAG_H_
#define CLICKD_CORE_OPTIM_DENSE_ADA_DIAG_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

// Defaults are a starting point, not tuned values (seed 002 searches both
// over {1e-4, 1e-3, ..., 100}); they are pinned in ada_diag_test.cc.
struct AdaDiagParams {
  double eta = 0.1;    // step size, > 0
  double delta = 1.0;  // keeps H_t invertible, > 0
};

// InvalidArgument naming the field and its limit: eta, delta finite and
// > 0; dim >= 1.
absl::Status ValidateAdaDiagParams(const AdaDiagParams& params, int dim);

// Composite mirror descent form, eq. (2); SerializeState kind "ada_diag".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaDiag(const AdaDiagParams& params, int dim);

// Primal-dual (dual averaging) form, eq. (1); kind "ada_diag_da".
absl::StatusOr<std::unique_ptr<DenseOptimizer>> NewAdaDiagDa(const AdaDiagParams& params, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_ADA_DIAG_H_
