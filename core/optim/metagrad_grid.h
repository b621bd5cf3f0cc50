// The pieces of MetaGrad (van Erven & Koolen 2016; seed 003, the slides of
// van Erven, Koolen & Grünwald 2017) that the full-matrix version
// (dense/metagrad.h) and the per-coordinate version (metagrad_diag.h) share:
// the learning-rate grid, the master's prior over it, and the surrogate loss
// of one slave. Plain functions of doubles; thread-compatible.
//
// Notation (slides, "MetaGrad Algorithm" .. "MetaGrad Slave"): w_t is the
// master's point, w_t^eta a slave's, g_t the gradient at w_t and
//   r = (w_t^eta - w_t)^T g_t.
// The surrogate loss of slave eta at its own point is
//   l_t^eta(w_t^eta) = eta r + eta^2 r^2
// and its gradient there is eta s g_t with s = 1 + 2 eta r.
#ifndef CLICKD_CORE_OPTIM_METAGRAD_GRID_H_
#define CLICKD_CORE_OPTIM_METAGRAD_GRID_H_

#include <cmath>
#include <cstdint>

namespace clickd {

// The slides' grid, "MetaGrad Master": eta_i = 2^-i / (5 D G) for
// i = 0, 1, ..., ceil(log2(T) / 2). 5 D G makes |eta r| <= 1/5, the range in
// which the surrogate is exp-concave and the master's tangent bound holds.
inline double MetaGradEta(int i, double diameter, double gradient_bound) {
  return std::ldexp(1.0, -i) / (5.0 * diameter * gradient_bound);
}

// The slides' grid size for horizon T, ceil(log2(T) / 2) + 1 (1 for T <= 1).
inline int MetaGradSlavesForHorizon(uint64_t horizon) {
  if (horizon <= 1) return 1;
  return static_cast<int>(std::ceil(0.5 * std::log2(static_cast<double>(horizon)))) + 1;
}

// ln pi_1(eta_i) for a grid of `num_slaves` rates. The slides only say
// "heavy-tailed prior" (so that -ln pi_1(eta) = O(ln ln T)); we use the
// NeurIPS 2016 paper's pi_1(eta_i) = C / ((i + 1)(i + 2)), with C = (K + 1) / K
// normalising it over K = num_slaves rates (from our reading of the paper,
// not from the slides). Only differences of log-weights matter to the
// master, so C never changes a prediction.
inline double MetaGradLogPrior(int i, int num_slaves) {
  const double k = num_slaves;
  return std::log((k + 1.0) / k) - std::log((i + 1.0) * (i + 2.0));
}

// l_t^eta(w_t^eta) = eta r + eta^2 r^2, the slave's surrogate loss.
inline double MetaGradSurrogateLoss(double eta, double r) { return eta * r + eta * eta * r * r; }

// s_t^eta = 1 + 2 eta r: the surrogate's gradient at w_t^eta is eta s g_t.
inline double MetaGradGradientScale(double eta, double r) { return 1.0 + 2.0 * eta * r; }

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_METAGRAD_GRID_H_
