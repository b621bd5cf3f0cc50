// TtlSchedule: when a model with a TTL (ModelConfig.memory.ttl_rounds;
// docs/memory.md, "TTL eviction") sweeps its shards, and the epochs its
// coordinates are stamped with (core/optim/stamped.h).
//
// Time is the model's round (examples learned), not the clock, so that
// replicas, replays and restarts evict the same coordinates. The rounds
// are cut into epochs of ceil(ttl / 8) rounds. Every epoch each shard is
// swept once, at its own offset into the epoch (shard s of n at s/n of
// it) so that the sweeps of a large model do not land on one step, and
// loses the coordinates whose last step was more than 8 epochs before the
// current one. So a coordinate is never evicted before ttl rounds without
// a step, and always within 10 epochs of its last step's epoch: by 1.25x
// ttl (plus 10 rounds for the rounding up).
#ifndef CLICKD_CORE_MODEL_TTL_SCHEDULE_H_
#define CLICKD_CORE_MODEL_TTL_SCHEDULE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace clickd {

class TtlSchedule {
 public:
  static constexpr uint64_t kEpochsPerTtl = 8;

  // ttl_rounds 0: no TTL (nothing is ever due). Epochs are counted modulo
  // `modulus` (a power of two: the stamps' range).
  TtlSchedule(uint64_t ttl_rounds, int num_shards, uint64_t modulus) : modulus_(modulus) {
    if (ttl_rounds == 0) return;
    epoch_rounds_ = (ttl_rounds + kEpochsPerTtl - 1) / kEpochsPerTtl;
    const uint64_t shards = static_cast<uint64_t>(std::max(1, num_shards));
    offsets_.resize(shards);
    for (uint64_t s = 0; s < shards; ++s) {
      offsets_[s] =
          static_cast<uint64_t>(static_cast<unsigned __int128>(s) * epoch_rounds_ / shards);
    }
  }

  bool enabled() const { return epoch_rounds_ != 0; }
  uint64_t epoch_rounds() const { return epoch_rounds_; }

  // The epoch of `round`, modulo the modulus (0 without a TTL).
  uint32_t EpochAt(uint64_t round) const {
    if (!enabled()) return 0;
    return static_cast<uint32_t>((round / epoch_rounds_) & (modulus_ - 1));
  }

  // Whether a coordinate last stepped in the epoch of age `age` (epochs
  // before the current one) is kept by a sweep.
  static bool Kept(uint32_t age) { return age <= kEpochsPerTtl; }

  // Calls fn(shard) for each shard swept once the model has learned
  // `round` examples: those whose offset is round mod epoch_rounds. The
  // offsets ascend with the shard, so a binary search finds them: a step
  // costs O(log shards), not a pass over every shard.
  template <typename Fn>
  void ForEachDue(uint64_t round, Fn&& fn) const {
    if (!enabled() || round == 0) return;
    const auto [first, last] =
        std::equal_range(offsets_.begin(), offsets_.end(), round % epoch_rounds_);
    for (auto it = first; it != last; ++it) fn(static_cast<int>(it - offsets_.begin()));
  }

 private:
  uint64_t modulus_;
  uint64_t epoch_rounds_ = 0;
  std::vector<uint64_t> offsets_;  // per shard: s * epoch_rounds / num_shards, ascending
};

}  // namespace clickd

#endif  // CLICKD_CORE_MODEL_TTL_SCHEDULE_H_
