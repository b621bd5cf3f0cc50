// ShardLimits: how many coordinates one shard of a ShardedStore may hold
// under a memory budget (ModelConfig.memory.max_bytes, docs/memory.md).
// Each table computes its own from its share of the budget (Table::Limits):
// a shard that never holds more than max_count keys never grows its table
// past max_capacity slots, whose bytes fit the share, so the budget bounds
// the tables' memory exactly, whatever erasures happened before.
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

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_SHARD_LIMITS_H_
