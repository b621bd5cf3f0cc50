// FlatTable<State>: one shard's map from key to State as an
// absl::flat_hash_map of full 64-bit keys: the float encoding's table, and
// the default. CompactTable (core/store/compact_table.h) is the other; both
// offer ShardedStore the same small interface.
//
// Thread safety: none; the shard's mutex guards it (ShardedStore).
#ifndef CLICKD_CORE_STORE_FLAT_TABLE_H_
#define CLICKD_CORE_STORE_FLAT_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "core/store/shard_limits.h"

namespace clickd {

template <typename State>
class FlatTable {
 public:
  using Map = absl::flat_hash_map<uint64_t, State>;
  using Slot = typename Map::slot_type;

  // ShardedStore takes a key's shard from these top bits of the mixed key.
  static constexpr int kShardShift = 32;

  static uint64_t Canonical(uint64_t key) { return key; }

  static ShardLimits Limits(uint64_t max_bytes, int num_shards) {
    return ShardLimitsFor(max_bytes, num_shards, sizeof(Slot), alignof(Slot));
  }

  void Init(int /*shard*/, int /*num_shards*/) {}

  size_t size() const { return map_.size(); }

  // absl's own AllocSize of the table's one allocation: control bytes and slots.
  uint64_t Bytes() const {
    const size_t capacity = map_.capacity();
    if (capacity == 0) return 0;
    return absl::container_internal::AllocSize(capacity, sizeof(Slot), alignof(Slot));
  }

  const State* Find(uint64_t key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  State* Find(uint64_t key) {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }

  // Room for `new_keys` more keys, at most `max_count` in all: the whole
  // table grows at once, so one call per step and shard.
  void ReserveForStep(size_t new_keys, size_t max_count) {
    map_.reserve(std::min(map_.size() + new_keys, max_count));
  }

  // Every key's slot is requested from memory before the first lookup, so
  // that the step's cache misses overlap instead of coming one by one.
  template <typename KeyRange, typename TableOf>
  static void PrepareStep(const KeyRange& keys, TableOf&& table_of) {
    for (const auto& k : keys) table_of(k.key).map_.prefetch(k.key);
  }

  // Requests the key's slot from memory (a read that follows soon).
  void Prefetch(uint64_t key) const { map_.prefetch(key); }

  // Room for `keys` (distinct, the table empty): one allocation.
  void Presize(const std::vector<uint64_t>& keys) { map_.reserve(keys.size()); }

  // One key: room for it and its slot requested.
  void Prepare(uint64_t key, size_t new_keys) {
    map_.reserve(map_.size() + new_keys);
    map_.prefetch(key);
  }

  std::pair<State*, bool> FindOrInsert(uint64_t key) {
    auto [it, inserted] = map_.try_emplace(key);
    return {&it->second, inserted};
  }

  bool Erase(uint64_t key) { return map_.erase(key) > 0; }

  // Calls fn(key, const State&) for every coordinate.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (const auto& [key, state] : map_) fn(key, state);
  }

  // Tables do not shrink: the budget bounds their capacity (ShardLimitsFor).
  void Shrink() {}

  void Clear() { Map().swap(map_); }

 private:
  Map map_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_FLAT_TABLE_H_
