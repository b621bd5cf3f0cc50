// Passive-Aggressive PA-I (Crammer, Dekel, Keshet, Shalev-Shwartz & Singer
// 2006, "Online Passive-Aggressive Algorithms", section 3), one of the two
// binary classifiers seed 001 (Streeter & McMahan 2010) compares against in
// its Table 1. For an example (x, y), y in {-1, +1}:
//   l   = max(0, 1 - y (w . x))        hinge loss before the step
//   tau = min(C, l / ||x||^2)          PA-I step size
//   w  += tau y x
// tau needs l and ||x||^2, which are per-example quantities, so Pa is a
// per-example optimizer (see LinearModel): PrepareStep computes tau y once
// per example and Apply adds it times x_i to each coordinate.
//
// Importance weight h: PA-I's objective with the slack weighted by h,
//   min_w 1/2 ||w - w_t||^2 + h C xi  s.t.  y (w . x) >= 1 - xi, xi >= 0,
// has the solution tau = min(h C, l / ||x||^2); h = 1 is the paper's step
// and h = 0 leaves the model unchanged. An example with ||x|| = 0 is skipped.
//
// Labels follow the hinge convention (positive means +1, anything else -1);
// the model requires loss = hinge for this optimizer (ValidateModelConfig).
// Pa holds only its parameters: the model calls it under its shard locks.
#ifndef CLICKD_CORE_OPTIM_PA_H_
#define CLICKD_CORE_OPTIM_PA_H_

#include <algorithm>
#include <limits>

#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/optim/loss.h"
#include "core/optim/round.h"

namespace clickd {

struct PaParams {
  double c = 1.0;  // aggressiveness C
};

class Pa {
 public:
  struct State {
    float w = 0.0f;
  };
  using Params = PaParams;
  // tau * y for the current example.
  struct Step {
    double tau_y = 0;
  };

  explicit Pa(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext&) const { return s.w; }

  // PA has no learning rate: its step tau is chosen per example from the
  // hinge loss and ||x||^2. Returns NaN, meaning "not available".
  double LearningRate(const State&, const RoundContext&) const {
    return std::numeric_limits<double>::quiet_NaN();
  }

  Step PrepareStep(double margin, double label, double importance, absl::Span<State* const>,
                   absl::Span<const HashedFeature> features) const {
    const double y = SignedLabel(label);
    const double loss = std::max(0.0, 1.0 - y * margin);
    double norm_sq = 0;
    for (const HashedFeature& f : features) norm_sq += static_cast<double>(f.value) * f.value;
    if (loss <= 0 || norm_sq <= 0) return Step{};
    return Step{std::min(importance * p_.c, loss / norm_sq) * y};
  }

  void Apply(State& s, double x, const Step& step) const {
    s.w = static_cast<float>(s.w + step.tau_y * x);
  }

 private:
  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_PA_H_
