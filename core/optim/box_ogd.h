// Projected online gradient descent on the box F = [-R, R]^n (Streeter &
// McMahan 2010, seed 001), in the two variants that paper compares.
//
// PcOgd, Algorithm 1 (per-coordinate rates), with D_i = 2R:
//   x_{t+1,i} = P(x_{t,i} - eta_{t,i} g_{t,i}),  eta_{t,i} = scale D_i / sqrt(sum_{s<=t} g_{s,i}^2)
// GlobalOgd, section 3.1 (Theorem 2), one rate for all coordinates:
//   eta_t = scale D / sqrt(2 sum_{s<=t} ||g_s||^2),  D = 2R sqrt(n_t)
// where n_t, the number of attributes seen so far, estimates the dimension
// online as in section 5.1. P clips each coordinate to [-R, R]. `scale` is
// the factor section 5 tunes (5.1, text: R = 100, 0.6/R per-coordinate, 0.2/R
// global; 5.2, ads: R = 1, 0.1 for both); the theorems' own rates are
// scale = 1. The defaults, R = 1 and scale = 1/80, are for sparse click data
// with logistic loss (docs/optimizers.md, "Defaults on click data").
#ifndef CLICKD_CORE_OPTIM_BOX_OGD_H_
#define CLICKD_CORE_OPTIM_BOX_OGD_H_

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/optim/round.h"

namespace clickd {

// Defaults: F = [-1, 1]^n, as seed 001 section 5.2 sets it for logistic
// regression on ads data; the scale makes a coordinate's first step 2R/80, so
// that an example of 40 new binary features moves its own margin by at most
// 1 (docs/optimizers.md, "Defaults on click data").
struct PcOgdParams {
  double radius = 1.0;
  double scale = 1.0 / 80.0;
};

struct GlobalOgdParams {
  double radius = 1.0;
  double scale = 1.0 / 80.0;
};

class PcOgd {
 public:
  struct State {
    float w = 0.0f;
    float sum_g2 = 0.0f;
  };
  using Params = PcOgdParams;

  explicit PcOgd(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // Returns scale D_i / sqrt(sum g_i^2 + 1): the rate of the coordinate's
  // next step for a gradient of magnitude 1 (the bound |g| <= 1 of logistic
  // loss on a unit feature). The rate of the stored sum alone is infinite
  // for a fresh coordinate; this one is scale D_i there, the size of any
  // first step.
  double LearningRate(const State& s, const RoundContext&) const {
    return p_.scale * 2.0 * p_.radius / std::sqrt(static_cast<double>(s.sum_g2) + 1.0);
  }

  void Apply(State& s, double g, const RoundContext&) const {
    const double sum_g2 = s.sum_g2 + g * g;
    s.sum_g2 = static_cast<float>(sum_g2);
    if (sum_g2 <= 0) return;
    const double eta = p_.scale * 2.0 * p_.radius / std::sqrt(sum_g2);
    s.w = static_cast<float>(std::clamp(s.w - eta * g, -p_.radius, p_.radius));
  }

 private:
  Params p_;
};

class GlobalOgd {
 public:
  struct State {
    float w = 0.0f;
  };
  using Params = GlobalOgdParams;

  explicit GlobalOgd(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // Returns the global rate eta_t of the round, the same for every
  // coordinate; NaN ("not available") before any non-zero gradient, when the
  // formula divides by zero and a step does not move.
  double LearningRate(const State&, const RoundContext& round) const {
    if (round.sum_grad_norm_sq <= 0) return std::numeric_limits<double>::quiet_NaN();
    return Rate(round);
  }

  void Apply(State& s, double g, const RoundContext& round) const {
    if (round.sum_grad_norm_sq <= 0) return;
    const double eta = Rate(round);
    s.w = static_cast<float>(std::clamp(s.w - eta * g, -p_.radius, p_.radius));
  }

 private:
  double Rate(const RoundContext& round) const {
    const double diameter = 2.0 * p_.radius * std::sqrt(static_cast<double>(round.coordinates));
    return p_.scale * diameter / std::sqrt(2.0 * round.sum_grad_norm_sq);
  }

  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_BOX_OGD_H_
