// Confidence-weighted linear classification (Dredze, Crammer & Pereira 2008,
// ICML), the "Variance" algorithm with a diagonal covariance: the CW column
// of seed 001's (Streeter & McMahan 2010) Table 1. The weight vector is a
// Gaussian w ~ N(mu, Sigma), Sigma = diag(sigma_i), starting at mu = 0,
// Sigma = a I. For an example (x, y), y in {-1, +1}, with
// phi = Phi^{-1}(eta) (Phi the standard normal CDF):
//   M = y (mu . x)                      mean of the signed margin
//   V = x^T Sigma x = sum_i sigma_i x_i^2   its variance
// the update is the KL projection of N(mu, Sigma) onto the constraint
// Pr[y (w . x) >= 0] >= eta, linearised in the variance as M >= phi V:
//   gamma = (-(1 + 2 phi M) + sqrt((1 + 2 phi M)^2 - 8 phi (M - phi V))) / (4 phi V)
//   alpha = max(0, gamma)
//   mu_i      += alpha y sigma_i x_i                  (sigma_i before the step)
//   1/sigma_i += 2 alpha phi x_i^2
// The paper's full update adds 2 alpha phi x x^T to Sigma^{-1}; the diagonal
// variant keeps its diagonal, 2 alpha phi x_i^2 (for binary features the
// paper's 2 alpha phi diag(x)). alpha comes from V of the diagonal Sigma.
// M and V are per-example quantities, so Cw is a per-example optimizer (see
// LinearModel): PrepareStep computes alpha once, Apply updates each
// coordinate. The prediction is the mean margin mu . x.
//
// Importance weight h: CW has no loss to weight; h scales alpha (h = 1 is the
// paper's update, h = 0 leaves the model unchanged), as it scales the
// gradient of the gradient methods.
//
// A coordinate stores mu_i and 1/sigma_i - 1/a, the precision gained since
// the prior, so a zero-initialised State is the prior for any a.
// Labels follow the hinge convention; the model requires loss = hinge for
// this optimizer (ValidateModelConfig). Cw holds only its parameters: the
// model calls it under its shard locks.
#ifndef CLICKD_CORE_OPTIM_CW_H_
#define CLICKD_CORE_OPTIM_CW_H_

#include <algorithm>
#include <limits>

#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/optim/loss.h"
#include "core/optim/numeric_bounds.h"
#include "core/optim/round.h"

namespace clickd {

struct CwParams {
  // Confidence eta in (0.5, 1). The default is Phi(1), i.e. phi = 1, the
  // setting of seed 001 section 5.1.
  double eta = 0.8413447460685429;
  double a = 1.0;  // initial variance: Sigma_1 = a I
};

// Returns Phi^{-1}(p) for p in (0, 1), to double precision.
double NormalQuantile(double p);

// Returns alpha = max(0, gamma) of the header's formula for mean margin m,
// variance v and phi > 0; 0 when v <= 0.
double CwAlpha(double m, double v, double phi);

class Cw {
 public:
  struct State {
    float mu = 0.0f;
    float precision = 0.0f;  // 1/sigma_i - 1/a
  };
  using Params = CwParams;
  struct Step {
    double alpha_y = 0;        // alpha y
    double two_alpha_phi = 0;  // 2 alpha phi
  };

  explicit Cw(const Params& params)
      : p_(params), phi_(NormalQuantile(params.eta)), inv_a_(1.0 / params.a) {}

  double phi() const { return phi_; }

  double Weight(const State& s, const RoundContext&) const { return s.mu; }

  // CW has no learning rate: its step alpha is chosen per example (the
  // per-coordinate Variance is a confidence, not a rate). Returns NaN,
  // meaning "not available".
  double LearningRate(const State&, const RoundContext&) const {
    return std::numeric_limits<double>::quiet_NaN();
  }

  double Variance(const State& s) const { return 1.0 / (inv_a_ + s.precision); }

  Step PrepareStep(double margin, double label, double importance, absl::Span<State* const> states,
                   absl::Span<const HashedFeature> features) const {
    const double y = SignedLabel(label);
    double v = 0;
    for (size_t i = 0; i < features.size(); ++i) {
      const double x = features[i].value;
      v += Variance(*states[i]) * x * x;
    }
    // CwAlpha grows as 1/V; a vanishing variance (tiny values, saturated
    // precisions) is capped so that alpha stays finite, even times 0.
    const double alpha =
        importance * std::min(CwAlpha(y * margin, v, phi_), double{kMaxStateValue});
    return Step{alpha * y, 2.0 * alpha * phi_};
  }

  void Apply(State& s, double x, const Step& step) const {
    const double sigma = Variance(s);
    s.mu = static_cast<float>(s.mu + step.alpha_y * sigma * x);
    s.precision = static_cast<float>(s.precision + step.two_alpha_phi * x * x);
  }

 private:
  Params p_;
  double phi_;
  double inv_a_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_CW_H_
