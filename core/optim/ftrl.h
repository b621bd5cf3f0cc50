// FTRL-Proximal with L1 and L2 (McMahan et al. 2013, "Ad Click Prediction",
// Algorithm 1), per coordinate:
//   w_i = 0                                          if |z_i| <= L1
//       = -(z_i - sgn(z_i) L1) / ((beta + sqrt(n_i)) / alpha + lambda2)  otherwise
//   sigma_i = (sqrt(n_i + g_i^2) - sqrt(n_i)) / alpha
//   z_i += g_i - sigma_i w_i,   n_i += g_i^2
// where L1 = lambda1. With lambda1_times_t, L1 = t * lambda1: seed 004's
// FTRL objective g_{1:t}.w + t lambda ||w||_1 + r_{1:t}(w), whose L1 term
// grows with the round count t; Algorithm 1 charges lambda1 ||w||_1 once.
// Either way weights are exactly zero inside the threshold (sparse models).
//
// Drift (decay < 1): each step of coordinate i first multiplies n_i by
// `decay`, so n_i stays near E[g_i^2] / (1 - decay) instead of growing
// without bound, and a frequent feature's rate alpha / (beta + sqrt(n_i))
// keeps a floor instead of freezing when the world changes. sigma_i is
// then computed from the decayed n_i (and may be negative); without L1
// and L2 the weight still moves exactly as per-coordinate OGD,
// w_i <- w_i - g_i alpha / (beta + sqrt(n_i)), because
// -z_i / ((beta + sqrt(n_i)) / alpha) = w_i - g_i alpha / (beta + sqrt(n_i))
// for any sigma_i. decay = 1 is Algorithm 1 bit for bit (1.0 * n == n).
// docs/drift.md measures it on a drifting log.
#ifndef CLICKD_CORE_OPTIM_FTRL_H_
#define CLICKD_CORE_OPTIM_FTRL_H_

#include <cmath>
#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/optim/round.h"

namespace clickd {

struct FtrlParams {
  double alpha = 0.1;
  double beta = 1.0;
  double lambda1 = 0.0;
  double lambda2 = 0.0;
  bool lambda1_times_t = false;
  double decay = 1.0;  // in (0, 1]; 1: n_i is the plain sum of g_i^2
};

class FtrlProximal {
 public:
  struct State {
    float z = 0.0f;
    float n = 0.0f;
  };
  using Params = FtrlParams;

  explicit FtrlProximal(const Params& params) : p_(params) {}

  double Weight(const State& s, const RoundContext& round) const {
    const double l1 = L1At(round);
    const double z = s.z;
    if (std::abs(z) <= l1) return 0.0;
    const double shrunk = z > 0 ? z - l1 : z + l1;
    return -shrunk / ((p_.beta + std::sqrt(static_cast<double>(s.n))) / p_.alpha + p_.lambda2);
  }

  // sqrt(of), kept from the weight for the update.
  struct Root {
    double value;
    float of;
  };

  // Weight(s, round), also giving sqrt(n) for ApplyWithWeightAndRoot: a
  // step computes each coordinate's root once instead of twice (square
  // roots were the largest part of a step's arithmetic).
  double WeightWithRoot(const State& s, const RoundContext& round, Root* root) const {
    *root = {std::sqrt(static_cast<double>(s.n)), s.n};
    const double l1 = L1At(round);
    const double z = s.z;
    if (std::abs(z) <= l1) return 0.0;
    const double shrunk = z > 0 ? z - l1 : z + l1;
    return -shrunk / ((p_.beta + root->value) / p_.alpha + p_.lambda2);
  }

  // WeightWithRoot of each of `count` states, *state_of(i) for i < count,
  // into weights[i] and roots[i] (no roots if `roots` is null: then each
  // weight is Weight's, which is WeightWithRoot's). Two at a time where the CPU has SSE2
  // (every x86-64): each lane does WeightWithRoot's operations in its order
  // (IEEE square roots and divisions are exact to the last bit in either
  // form), so every weight and root is bit for bit WeightWithRoot's
  // (tested). A step's weights are a square root and two divisions per
  // coordinate, and the divider takes a pair as fast as one.
  template <typename StateOf>
  void WeightsWithRoots(size_t count, StateOf&& state_of, const RoundContext& round,
                        double* weights, Root* roots) const {
    size_t i = 0;
#if defined(__SSE2__)
    const __m128d l1 = _mm_set1_pd(L1At(round));
    const __m128d beta = _mm_set1_pd(p_.beta);
    const __m128d alpha = _mm_set1_pd(p_.alpha);
    const __m128d lambda2 = _mm_set1_pd(p_.lambda2);
    const __m128d sign = _mm_set1_pd(-0.0);
    for (; i + 2 <= count; i += 2) {
      const State& a = *state_of(i);
      const State& b = *state_of(i + 1);
      const __m128d n = _mm_set_pd(b.n, a.n);
      const __m128d z = _mm_set_pd(b.z, a.z);
      const __m128d root = _mm_sqrt_pd(n);
      // |z| <= l1: weight +0.0; else z > 0 ? z - l1 : z + l1.
      const __m128d inside = _mm_cmple_pd(_mm_andnot_pd(sign, z), l1);
      const __m128d positive = _mm_cmpgt_pd(z, _mm_setzero_pd());
      const __m128d shrunk = _mm_or_pd(_mm_and_pd(positive, _mm_sub_pd(z, l1)),
                                       _mm_andnot_pd(positive, _mm_add_pd(z, l1)));
      const __m128d scale = _mm_add_pd(_mm_div_pd(_mm_add_pd(beta, root), alpha), lambda2);
      const __m128d weight = _mm_div_pd(_mm_xor_pd(shrunk, sign), scale);
      _mm_storeu_pd(weights + i, _mm_andnot_pd(inside, weight));
      if (roots != nullptr) {
        roots[i] = {_mm_cvtsd_f64(root), a.n};
        roots[i + 1] = {_mm_cvtsd_f64(_mm_unpackhi_pd(root, root)), b.n};
      }
    }
#endif
    for (; i < count; ++i) {
      weights[i] = roots != nullptr ? WeightWithRoot(*state_of(i), round, &roots[i])
                                    : Weight(*state_of(i), round);
    }
  }

  // Returns the coordinate's per-coordinate rate alpha / (beta + sqrt(n_i)),
  // the paper's section 5 formula (lambda2 left out, as there); alpha / beta
  // for a fresh State.
  double LearningRate(const State& s, const RoundContext&) const {
    return p_.alpha / (p_.beta + std::sqrt(static_cast<double>(s.n)));
  }

  void Apply(State& s, double g, const RoundContext& round) const {
    ApplyWithWeight(s, g, Weight(s, round));
  }

  // Whether Weight(s, round) is the same for every round: a learner may
  // then keep the weights of its margin pass for the step.
  bool WeightIndependentOfRound() const { return !p_.lambda1_times_t; }

  // Apply, for a caller that has w = Weight(s, round) already: the same
  // arithmetic bit for bit, without computing the weight a second time (a
  // square root and two divisions per coordinate, most of a step's cost
  // once its memory is fetched).
  void ApplyWithWeight(State& s, double g, double w) const {
    const double n = s.n;
    ApplyWithWeightAndRoot(s, g, w, Root{std::sqrt(n), s.n});
  }

  // ApplyWithWeight, for a caller that kept the root WeightWithRoot gave:
  // bit for bit the same. (If n changed since, a step given a key twice,
  // the root is taken again.)
  void ApplyWithWeightAndRoot(State& s, double g, double w, const Root& root) const {
    const double n = s.n;
    const double root_n = s.n == root.of ? root.value : std::sqrt(n);
    const double next_n = p_.decay * n + g * g;
    const double sigma = (std::sqrt(next_n) - root_n) / p_.alpha;
    s.z = static_cast<float>(s.z + g - sigma * w);
    s.n = static_cast<float>(next_n);
  }

 private:
  double L1At(const RoundContext& round) const {
    return p_.lambda1_times_t ? p_.lambda1 * static_cast<double>(round.t) : p_.lambda1;
  }

  Params p_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_FTRL_H_
