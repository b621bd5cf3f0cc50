// Importance weights for learning from delayed clicks without waiting.
//
// Fake negative weighted (FNW) learning, Ktena et al. 2019, "Addressing
// Delayed Feedback for Continuous Training with Neural Networks in CTR
// Prediction" (arXiv:1907.06558), section 3: every impression is learned at
// once as a negative, and a click that arrives later is learned again as a
// positive. The stream then holds each click twice (once as a fake negative),
// so the labels follow a biased distribution b with
//   b(y=1|x) = p / (1 + p),   b(y=0|x) = 1 / (1 + p),
// where p = p(y=1|x) is the true click probability. Weighting each example's
// loss by p(y|x) / b(y|x) makes its expectation the unbiased one:
//   positive: (1 + p),   negative: (1 - p)(1 + p).
// The paper puts the model's own prediction (without a gradient through it)
// in place of p; so do we: `p` is the model's probability for the example
// just before the step that learns it.
#ifndef CLICKD_CORE_FEEDBACK_DELAYED_FEEDBACK_H_
#define CLICKD_CORE_FEEDBACK_DELAYED_FEEDBACK_H_

#include <algorithm>

namespace clickd {

// p is clamped to [0, 1] so that a weight is never negative.
inline double FnwPositiveWeight(double p) { return 1.0 + std::clamp(p, 0.0, 1.0); }
inline double FnwNegativeWeight(double p) {
  const double q = std::clamp(p, 0.0, 1.0);
  return (1.0 - q) * (1.0 + q);
}

}  // namespace clickd

#endif  // CLICKD_CORE_FEEDBACK_DELAYED_FEEDBACK_H_
