// RoundContext: the model-wide quantities an optimizer step may depend on,
// beyond the coordinate's own state. The model advances it once per learned
// example, under its own lock, and passes a copy to every coordinate update.
#ifndef CLICKD_CORE_OPTIM_ROUND_H_
#define CLICKD_CORE_OPTIM_ROUND_H_

#include <cstdint>

namespace clickd {

struct RoundContext {
  // Examples learned so far. During the update of example t (1-based) it is t;
  // when weights are read for a prediction it is the number already learned.
  uint64_t t = 0;
  // Sum over learned examples of ||g_s||^2, the squared norm of the whole
  // gradient vector (importance weight included), current example included.
  double sum_grad_norm_sq = 0;
  // Distinct coordinates seen so far, current example included.
  uint64_t coordinates = 0;
};

}  // namespace clickd

#endif  // CLICKD_CORE_OPTIM_ROUND_H_
