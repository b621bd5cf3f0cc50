// MetaGrad, diagonal version: a separate one-dimensional copy of MetaGrad per
// coordinate (seed 003's remark "unless we run a separate copy of MetaGrad
// per dimension, like the diagonal version of AdaGrad runs GD per
// dimension"), in the shape of the other per-coordinate optimizers.
//
// Per coordinate, with the master's weight w, gradient g, S = sum_{s<=t} g_s^2
// (current g included) and, for each slave eta on the grid of
// dense/metagrad_grid.h, r = (w^eta - w) g:
//   L^eta += eta r + eta^2 r^2                       (surrogate loss)
//   w^eta  = clip(w^eta - eta (1 + 2 eta r) g / (1/D^2 + 2 eta^2 S), -D/2, D/2)
//   w      = sum pi(eta) eta w^eta / sum pi(eta) eta,  pi(eta) ∝ pi_1(eta) e^{-L^eta}
// This is dense/metagrad.h with d = 1: Sigma is the scalar
// 1/(1/D^2 + 2 eta^2 S), and projecting in the Sigma^-1 norm onto the
// interval [-D/2, D/2] (the 1-d ball of diameter D) is clipping.
//
// The grid is fixed at K = kSlaves = 21 rates, eta_i = 2^-i / (5 D G): the
// slides' ceil(log2(T) / 2) + 1 rates for T up to 2^40 updates of one
// coordinate, so the learner needs no horizon and ignores the round; a
// coordinate updated fewer times only carries slaves of tiny eta, which
// the tilted average weighs by eta (and the prior by 1/((i+1)(i+2))).
//
// State is float (176 bytes; every formula is evaluated in double). The
// master's weight is cached in the state, so Weight is a load; Apply costs
// K exponentials. A zero gradient leaves the state unchanged.
//
// Thread safety: the optimizer is immutable after construction; calls on
// distinct States are independent, and the caller serialises calls on one.
#ifndef CLICKD_CORE_OPTIM_METAGRAD_DIAG_H_
#define CLICKD_CORE_OPTIM_METAGRAD_DIAG_H_

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "core/optim/metagrad_grid.h"
#include "core/optim/numeric_bounds.h"
#include "core/optim/round.h"

namespace clickd {

// Defaults for sparse click data (docs/optimizers.md, "Defaults on click
// data"): D = 1, the slides' classification example (features in [-1, 1],
// G = D = 1) taken per coordinate, so each weight lives in [-1/2, 1/2]; and G
// the slides' bound on the whole gradient, ||g_t||_2 <= G, which also bounds
// every coordinate's |g_i|: |dloss/dmargin| ||x||_2 <= sqrt(40) for 40 binary
// features. With G = 1 (a bound on one coordinate only) the top slave moves
// each of the example's k new weights by about D |g| / 5 at once.
struct MetaGradDiagParams {
  // D: each weight lives in [-D/2, D/2].
  double diameter = 1.0;
  // G: a bound on |g| that sets the largest rate 1/(5 D G).
  double gradient_bound = std::sqrt(40.0);
};

// Checks diameter and gradient_bound are finite, > 0 and in [kMinScale,
// kMaxScale] (core/optim/numeric_bounds.h); errors name the field and the
// limit.
absl::Status ValidateMetaGradDiagParams(const MetaGradDiagParams& params);

class MetaGradDiag {
 public:
  static constexpr int kSlaves = 21;

  struct State {
    float w = 0.0f;  // the master's weight, a function of the fields below
    float sum_g2 = 0.0f;
    float slave_w[kSlaves] = {};
    float loss[kSlaves] = {};  // sum of surrogate losses, minus the smallest slave's
  };
  using Params = MetaGradDiagParams;

  explicit MetaGradDiag(const Params& params)
      : inv_d2_(1.0 / (params.diameter * params.diameter)), radius_(0.5 * params.diameter) {
    for (int i = 0; i < kSlaves; ++i) {
      eta_[i] = MetaGradEta(i, params.diameter, params.gradient_bound);
      log_prior_[i] = MetaGradLogPrior(i, kSlaves);
    }
  }

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // Returns the master's rate to first order in r: the tilted average (the
  // weights of the master's own average) of the slaves' rates
  // eta / (1/D^2 + 2 eta^2 S), leaving out the factor 1 + 2 eta r and the
  // clipping. For a fresh State, the prior's average of eta D^2.
  double LearningRate(const State& s, const RoundContext&) const {
    const double sum_g2 = s.sum_g2;
    return TiltedAverage(
        s, [&](int i) { return eta_[i] / (inv_d2_ + 2 * eta_[i] * eta_[i] * sum_g2); });
  }

  void Apply(State& s, double g, const RoundContext&) const {
    if (g == 0) return;
    const double w = s.w;
    const double sum_g2 = s.sum_g2 + g * g;
    s.sum_g2 = static_cast<float>(sum_g2);
    double min_loss = std::numeric_limits<double>::infinity();
    for (int i = 0; i < kSlaves; ++i) {
      const double eta = eta_[i];
      const double wi = s.slave_w[i];
      const double r = (wi - w) * g;
      const double step =
          eta * MetaGradGradientScale(eta, r) * g / (inv_d2_ + 2 * eta * eta * sum_g2);
      s.slave_w[i] = static_cast<float>(std::clamp(wi - step, -radius_, radius_));
      // Saturated before the float store: an infinite loss would turn the
      // subtraction of the smallest below into inf - inf.
      s.loss[i] = static_cast<float>(
          std::min(s.loss[i] + MetaGradSurrogateLoss(eta, r), double{kMaxStateValue}));
      min_loss = std::min(min_loss, static_cast<double>(s.loss[i]));
    }
    for (float& loss : s.loss) loss = static_cast<float>(loss - min_loss);
    s.w = static_cast<float>(MasterWeight(s));
  }

 private:
  // The tilted average of the (stored) slave weights.
  double MasterWeight(const State& s) const {
    return TiltedAverage(s, [&s](int i) { return static_cast<double>(s.slave_w[i]); });
  }

  // sum pi(eta) eta value(i) / sum pi(eta) eta over the slaves i.
  template <typename Value>
  double TiltedAverage(const State& s, Value value) const {
    double max_log_weight = -std::numeric_limits<double>::infinity();
    for (int i = 0; i < kSlaves; ++i) {
      max_log_weight = std::max(max_log_weight, log_prior_[i] - s.loss[i]);
    }
    double num = 0, den = 0;
    for (int i = 0; i < kSlaves; ++i) {
      const double tilted = std::exp(log_prior_[i] - s.loss[i] - max_log_weight) * eta_[i];
      num += tilted * value(i);
      den += tilted;
    }
    return num / den;
  }

  double inv_d2_;
  double radius_;
  double eta_[kSlaves];
  double log_prior_[kSlaves];
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_METAGRAD_DIAG_H_
