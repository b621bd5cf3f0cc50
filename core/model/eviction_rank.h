// RankForEviction: how useful a coordinate is to its model, for the memory
// budget's evictions (core/store/sharded_store.h, docs/memory.md).
//
// A coordinate's contribution to every margin is w_i x_i, so the one with
// the smallest |w_i|, as the optimizer computes it for scoring, changes the
// model least when dropped: FTRL's and AdaGrad-DA's coordinates whose L1
// term holds them at exactly 0 go first, at no cost at all. Among equal
// weights the coordinate with the smaller accumulator (fewer or smaller
// updates so far: it has learned less) goes first; the store breaks the
// remaining ties by key, so the choice is deterministic.
#ifndef CLICKD_CORE_MODEL_EVICTION_RANK_H_
#define CLICKD_CORE_MODEL_EVICTION_RANK_H_

#include <cmath>

#include "core/optim/round.h"
#include "core/store/sharded_store.h"

namespace clickd {

// The state's record of how much it has learned: FTRL's n_i (sum of g^2),
// the AdaGrad family's and PC-OGD's and MetaGrad's sum of g^2, CW's
// precision; 0 for states that keep only a weight (SGD, PA, global OGD).
template <typename State>
double Accumulator(const State& s) {
  if constexpr (requires { s.n; }) {
    return s.n;
  } else if constexpr (requires { s.sum_g2; }) {
    return s.sum_g2;
  } else if constexpr (requires { s.precision; }) {
    return s.precision;
  } else {
    return 0.0;
  }
}

template <typename Optimizer>
EvictionRank RankForEviction(const Optimizer& optimizer, const typename Optimizer::State& s,
                             const RoundContext& round) {
  if constexpr (requires { Optimizer::Accumulator(s); }) {
    return {std::abs(optimizer.Weight(s, round)), Optimizer::Accumulator(s)};
  } else {
    return {std::abs(optimizer.Weight(s, round)), Accumulator(s)};
  }
}

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_EVICTION_RANK_H_
