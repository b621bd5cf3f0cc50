// ShardLimits: how many coordinates one shard of a ShardedStore may hold
// under a memory budget (ModelConfig.memory.max_bytes, docs/memory.md).
//
// The budget covers what StoreStats.bytes counts: each shard's single
// flat_hash_map allocation, absl's AllocSize(capacity) = control bytes +
// capacity * sizeof(slot). A table's capacity is 2^k - 1 and it holds at
// most 7/8 of it before it grows (absl's CapacityToGrowth), so the budget
// divided by the shard count gives the largest capacity that fits, and
// that capacity the largest count a shard may hold. A shard that never
// holds more than max_count keys never grows its table beyond
// max_capacity: tables do not shrink, so this bounds the table memory
// exactly, whatever erasures and reserves happened before.
#ifndef CLICKD_CORE_STORE_SHARD_LIMITS_H_
#define CLICKD_CORE_STORE_SHARD_LIMITS_H_

#include <cstddef>
#include <cstdint>
#include <limits>

namespace clickd {

struct ShardLimits {
  bool bounded = false;
  size_t max_capacity = std::numeric_limits<size_t>::max();  // table slots
  size_t max_count = std::numeric_limits<size_t>::max();     // coordinates
  // What an eviction pass leaves at most: 90 % of max_count, so that a
  // pass (one O(n) sweep of the shard) runs once per ~10 % of the shard's
  // capacity of new coordinates, not once per step.
  size_t low_water = std::numeric_limits<size_t>::max();
};

// The limits of each of `num_shards` shards whose slots take `slot_size`
// bytes aligned to `slot_align`; unbounded for max_bytes 0. A share too
// small for the smallest table gives max_count 0 (validation keeps models
// well above that: core/model/model_config.h).
ShardLimits ShardLimitsFor(uint64_t max_bytes, int num_shards, size_t slot_size, size_t slot_align);

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_SHARD_LIMITS_H_
