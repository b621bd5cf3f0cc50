// What-if learners: LinearModel<Optimizer>::Learn's arithmetic, step for
// step, on stores that drop one cost at a time, so that the benchmark can
// say how much of Learn each cost is. They exist only to be measured against
// the real Model (their margins must come out bit-identical to its margins,
// which the benchmark checks); they are not a second implementation to use.
//
//   kTwoLookups        same two probes per feature as the Model (Find, then
//                      Mutate), same 16 shards, but no locks and no virtual call
//   kOneLookup         one try_emplace per feature; the update reuses the
//                      pointer (re-probed only if that insert grew a table)
//   kOneLookupPrefetch kOneLookup after prefetching every feature's probe group
//
// Not thread-safe: one thread per learner.
#ifndef CLICKD_BENCH_THROUGHPUT_WHATIF_LEARNER_H_
#define CLICKD_BENCH_THROUGHPUT_WHATIF_LEARNER_H_

#include <cstdint>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "core/features/hasher.h"
#include "core/optim/loss.h"
#include "core/optim/round.h"

namespace clickd::bench {

enum class WhatIf { kTwoLookups, kOneLookup, kOneLookupPrefetch };

template <typename Optimizer, WhatIf kMode>
class WhatIfLearner {
 public:
  using State = typename Optimizer::State;

  WhatIfLearner(const typename Optimizer::Params& params, LossType loss, int num_shards)
      : optimizer_(params), loss_(loss), shards_(num_shards) {}

  double Learn(absl::Span<const HashedFeature> features, double label, double importance) {
    return kMode == WhatIf::kTwoLookups ? LearnTwoLookups(features, label, importance)
                                        : LearnOneLookup(features, label, importance);
  }

 private:
  using Map = absl::flat_hash_map<uint64_t, State>;

  // The Model's ShardedStore::ShardIndex.
  Map& ShardFor(uint64_t key) {
    const uint64_t mixed = key * 0x9E3779B97F4A7C15ull;
    return shards_[(mixed >> 32) % shards_.size()];
  }

  double LearnTwoLookups(absl::Span<const HashedFeature> features, double label,
                         double importance) {
    const RoundContext before = round_;
    double margin = 0;
    uint64_t new_keys = 0;
    for (const HashedFeature& f : features) {
      const Map& map = ShardFor(f.key);
      auto it = map.find(f.key);
      if (it != map.end()) {
        const State state = it->second;  // the Model copies the state out under the lock
        margin += optimizer_.Weight(state, before) * f.value;
      } else {
        ++new_keys;
      }
    }
    const double dloss = LossGradient(loss_, margin, label) * importance;
    const RoundContext round = Advance(features, dloss, new_keys);
    for (const HashedFeature& f : features) {
      const double g = dloss * f.value;
      optimizer_.Apply(ShardFor(f.key).try_emplace(f.key).first->second, g, round);
    }
    return margin;
  }

  double LearnOneLookup(absl::Span<const HashedFeature> features, double label, double importance) {
    if (kMode == WhatIf::kOneLookupPrefetch) {
      for (const HashedFeature& f : features) ShardFor(f.key).prefetch(f.key);
    }
    const RoundContext before = round_;
    slots_.resize(features.size());
    bool grew = false;
    for (size_t i = 0; i < features.size(); ++i) {
      Map& map = ShardFor(features[i].key);
      const size_t capacity = map.capacity();
      auto [it, inserted] = map.try_emplace(features[i].key);
      grew |= map.capacity() != capacity;
      slots_[i] = {&it->second, inserted};
    }
    if (grew) {  // a rehash moved earlier slots: probe again
      for (size_t i = 0; i < features.size(); ++i) {
        slots_[i].state = &ShardFor(features[i].key).find(features[i].key)->second;
      }
    }
    double margin = 0;
    uint64_t new_keys = 0;
    for (size_t i = 0; i < features.size(); ++i) {
      if (slots_[i].inserted) {
        ++new_keys;
      } else {
        margin += optimizer_.Weight(*slots_[i].state, before) * features[i].value;
      }
    }
    const double dloss = LossGradient(loss_, margin, label) * importance;
    const RoundContext round = Advance(features, dloss, new_keys);
    for (size_t i = 0; i < features.size(); ++i) {
      optimizer_.Apply(*slots_[i].state, dloss * features[i].value, round);
    }
    return margin;
  }

  // LinearModel::AdvanceRound, with the same gradient norm.
  RoundContext Advance(absl::Span<const HashedFeature> features, double dloss, uint64_t new_keys) {
    double grad_norm_sq = 0;
    for (const HashedFeature& f : features) grad_norm_sq += dloss * f.value * (dloss * f.value);
    round_.t += 1;
    round_.sum_grad_norm_sq += grad_norm_sq;
    round_.coordinates += new_keys;
    return round_;
  }

  const Optimizer optimizer_;
  const LossType loss_;
  std::vector<Map> shards_;
  RoundContext round_;
  struct Slot {
    State* state;
    bool inserted;
  };
  std::vector<Slot> slots_;  // per feature of the example being learned
};

}  // namespace clickd::bench

#endif  // CLICKD_BENCH_THROUGHPUT_WHATIF_LEARNER_H_
