// Plain online gradient descent with the global schedule eta_t = eta / sqrt(t),
// t the 1-based round count, no projection: the textbook baseline.
#ifndef CLICKD_CORE_OPTIM_SGD_H_
#define CLICKD_CORE_OPTIM_SGD_H_

#include <algorithm>
#include <cmath>

#include "core/optim/round.h"

namespace clickd {

struct SgdParams {
  // docs/optimizers.md, "Defaults on click data": 0.1 was no better than a
  // constant on the synthetic click log.
  double eta = 0.3;
};

class Sgd {
 public:
  struct State {
    float w = 0.0f;
  };
  using Params = SgdParams;

  explicit Sgd(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // Returns the global rate eta / sqrt(t) of the last step (eta before any),
  // the same for every coordinate.
  double LearningRate(const State&, const RoundContext& round) const {
    return p_.eta / std::sqrt(static_cast<double>(std::max<uint64_t>(round.t, 1)));
  }

  void Apply(State& s, double g, const RoundContext& round) const {
    const double t = static_cast<double>(std::max<uint64_t>(round.t, 1));
    s.w = static_cast<float>(s.w - p_.eta / std::sqrt(t) * g);
  }

 private:
  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_SGD_H_
