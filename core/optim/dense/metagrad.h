// MetaGrad, full-matrix version (van Erven & Koolen, NeurIPS 2016; seed 003,
// the slides of van Erven, Koolen & Grünwald 2017), as a DenseOptimizer.
//
// A master runs tilted exponential weights over K slaves, one per learning
// rate eta on the grid of metagrad_grid.h. Each round, with master point w_t,
// gradient g_t and r = (w_t^eta - w_t)^T g_t:
//   master   pi_{t+1}(eta) ∝ pi_1(eta) exp(-sum_{s<=t} (eta r_s + eta^2 r_s^2))
//            w_{t+1} = sum_eta pi_{t+1}(eta) eta w_{t+1}^eta / sum_eta pi_{t+1}(eta) eta
//   slave    Sigma_{t+1} = (I / D^2 + 2 eta^2 sum_{s<=t} g_s g_s^T)^-1
//            w~ = w_t^eta - eta (1 + 2 eta r) Sigma_{t+1} g_t
//            w_{t+1}^eta = argmin_{||u|| <= D/2} (u - w~)^T Sigma_{t+1}^-1 (u - w~)
// The domain is the Euclidean ball of diameter D centred at 0; slaves start
// at its centre (w_1^eta = 0, a choice the slides leave open). Sigma is kept
// per slave by Sherman-Morrison (O(d^2) per slave and round, as in the
// paper); the projection, needed only when w~ leaves the ball, is exact: one
// eigendecomposition of sum g g^T per round serves every slave, then a
// Newton search for the multiplier (see metagrad.cc). Cost: O(K d^2) memory,
// O(K d^2) time per round, plus O(d^3) in rounds where some slave projects.
//
// Gradients larger than G are used as given: the regret bound assumes
// ||g_t|| <= G, the algorithm does not need it.
//
// Thread safety: none, like every DenseOptimizer.
#ifndef CLICKD_CORE_OPTIM_DENSE_METAGRAD_H_
#define CLICKD_CORE_OPTIM_DENSE_METAGRAD_H_

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "core/optim/dense/dense_optimizer.h"

namespace clickd {

struct MetaGradParams {
  // D, the diameter of the domain {w : ||w||_2 <= D/2}.
  double diameter = 2.0;
  // G, the bound on ||g_t||_2 that sets the grid's largest rate 1/(5 D G).
  double gradient_bound = 1.0;
  // K, the number of rates eta_i = 2^-i / (5 D G), i < K. 0 means the
  // slides' rule for `horizon`: K = ceil(log2(horizon) / 2) + 1.
  int num_slaves = 0;
  // T for that rule. The default, 2^30 rounds, gives K = 16.
  uint64_t horizon = uint64_t{1} << 30;
};

// The largest accepted num_slaves (eta then spans 2^63).
inline constexpr int kMetaGradMaxSlaves = 64;

// Checks each field: diameter and gradient_bound finite and > 0,
// num_slaves in [0, kMetaGradMaxSlaves], horizon >= 1. Errors name the
// field and the limit.
absl::Status ValidateMetaGradParams(const MetaGradParams& params);

// The number of slaves `params` asks for (num_slaves, or the horizon rule).
int MetaGradNumSlaves(const MetaGradParams& params);

// A MetaGrad learner over R^dim, starting at w_1 = 0. Returns nullptr if
// ValidateMetaGradParams(params) fails or dim < 1.
std::unique_ptr<DenseOptimizer> NewMetaGrad(const MetaGradParams& params, int dim);

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_DENSE_METAGRAD_H_
