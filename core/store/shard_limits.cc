#include "core/store/shard_limits.h"

#include <algorithm>

#include "absl/container/internal/raw_hash_set.h"

namespace clickd {

ShardLimits ShardLimitsFor(uint64_t max_bytes, int num_shards, size_t slot_size,
                           size_t slot_align) {
  if (max_bytes == 0) return ShardLimits{};
  namespace internal = absl::container_internal;
  const uint64_t per_shard = max_bytes / static_cast<uint64_t>(std::max(1, num_shards));
  // Valid capacities are 2^k - 1; stop before the first that does not fit.
  size_t capacity = 0;
  for (size_t next = 1; internal::AllocSize(next, slot_size, slot_align) <= per_shard;
       next = next * 2 + 1) {
    capacity = next;
  }
  ShardLimits limits;
  limits.bounded = true;
  limits.max_capacity = capacity;
  limits.max_count = capacity == 0 ? 0 : internal::CapacityToGrowth(capacity);
  limits.low_water = limits.max_count - limits.max_count / 10;
  return limits;
}

}  // namespace clickd
