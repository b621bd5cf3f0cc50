// Diagonal AdaGrad (Duchi, Hazan & Singer 2011), with optional L1 weight
// lambda, in its two forms. Both use H_{t,ii} = delta + sqrt(sum_{s<=t} g_{s,i}^2).
//
// Composite mirror descent (AdagradCmd), eq. for the diagonal case:
//   x_{t+1,i} = sign(x_{t,i} - eta g_{t,i} / H_{t,ii})
//               * [ |x_{t,i} - eta g_{t,i} / H_{t,ii}| - lambda eta / H_{t,ii} ]_+
// Regularised dual averaging (AdagradDa):
//   x_{t+1,i} = sign(-u_{t,i}) (eta / H_{t,ii}) [ |u_{t,i}| - t lambda ]_+,
// with u_t = sum_{s<=t} g_s (the paper's t * gbar_t) and t the global round
// count, so the weight is computed lazily from the state and the round.
#ifndef CLICKD_CORE_OPTIM_ADAGRAD_H_
#define CLICKD_CORE_OPTIM_ADAGRAD_H_

#include <cmath>

#include "core/optim/round.h"

namespace clickd {

struct AdagradParams {
  double eta = 0.1;
  double delta = 1.0;
  double lambda = 0.0;
};

class AdagradCmd {
 public:
  struct State {
    float w = 0.0f;
    float sum_g2 = 0.0f;
  };
  using Params = AdagradParams;

  explicit AdagradCmd(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // Returns eta / H_ii = eta / (delta + sqrt(sum g_i^2)), the coordinate's
  // current rate; eta / delta for a fresh State.
  double LearningRate(const State& s, const RoundContext&) const {
    return p_.eta / (p_.delta + std::sqrt(static_cast<double>(s.sum_g2)));
  }

  void Apply(State& s, double g, const RoundContext&) const {
    const double sum_g2 = s.sum_g2 + g * g;
    const double h = p_.delta + std::sqrt(sum_g2);
    const double moved = s.w - p_.eta * g / h;
    const double shrunk = std::max(0.0, std::abs(moved) - p_.lambda * p_.eta / h);
    s.w = static_cast<float>(std::copysign(shrunk, moved));
    s.sum_g2 = static_cast<float>(sum_g2);
  }

 private:
  Params p_;
};

class AdagradDa {
 public:
  struct State {
    float u = 0.0f;  // sum of gradients
    float sum_g2 = 0.0f;
  };
  using Params = AdagradParams;

  explicit AdagradDa(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext& round) const {
    const double excess = std::abs(s.u) - static_cast<double>(round.t) * p_.lambda;
    if (excess <= 0) return 0.0;
    const double h = p_.delta + std::sqrt(static_cast<double>(s.sum_g2));
    return -std::copysign(p_.eta / h * excess, static_cast<double>(s.u));
  }

  // Returns eta / H_ii = eta / (delta + sqrt(sum g_i^2)), the coordinate's
  // current rate; eta / delta for a fresh State.
  double LearningRate(const State& s, const RoundContext&) const {
    return p_.eta / (p_.delta + std::sqrt(static_cast<double>(s.sum_g2)));
  }

  void Apply(State& s, double g, const RoundContext&) const {
    s.u = static_cast<float>(s.u + g);
    s.sum_g2 = static_cast<float>(s.sum_g2 + g * g);
  }

 private:
  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_ADAGRAD_H_
