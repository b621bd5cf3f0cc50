// FlatTable<State>: one shard's map from full 64-bit key to State: the
// float encoding's table, and the default. CompactTable
// (core/store/compact_table.h) is the other; both offer ShardedStore the
// same small interface.
//
// An open-addressing array of slots {key, State} with linear probing. A
// key's first slot follows from the key alone (its "home": the key mixed
// with a per-process seed, scaled to the capacity), so Prefetch(key)
// requests exactly the cache line a lookup will read. That is why this is
// not absl::flat_hash_map (the table until 2026-11-27): absl's prefetch
// reaches the control bytes and the first slot of a 16-slot probe group,
// and the key may sit up to 15 slots further on; in offline training half
// of the learner's time was that miss (docs/archive/performance_training.md,
// "Reading ahead").
//
// Load: at most 4/5 of the slots hold keys; growing gives 2 slots per key
// (load 1/2), so a table is 50-80 % full. At 4/5 a lookup of a present key
// reads 3 slots on average, of an absent one 13; an FTRL slot is 16 bytes,
// so that is 1 and ~3.3 cache lines. Capacities are any number (positions
// are scaled by a multiply, not masked), so under a memory budget the
// table takes all of its share, not the largest power of two in it.
//
// Empty slots hold the key kEmpty. A real key equal to kEmpty (a caller
// can send any pre-hashed id) lives in a slot of its own beside the array.
//
// States never move between ReserveForStep or Prepare and the next
// ReserveForStep, Prepare, Presize, Erase or Clear: FindOrInsert never
// grows the array while the room made for it lasts.
//
// Thread safety: none; the shard's mutex guards it (ShardedStore).
#ifndef CLICKD_CORE_STORE_FLAT_TABLE_H_
#define CLICKD_CORE_STORE_FLAT_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/base/prefetch.h"
#include "core/store/position_seed.h"
#include "core/store/shard_limits.h"

namespace clickd {

template <typename State>
class FlatTable {
 public:
  static_assert(std::is_trivially_copyable_v<State>, "slots are moved by copying");

  // The key that marks an empty slot.
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  struct Slot {
    uint64_t key = kEmpty;
    State state{};
  };

  // ShardedStore takes a key's shard from these top bits of the mixed key.
  static constexpr int kShardShift = 32;

  static uint64_t Canonical(uint64_t key) { return key; }

  // The limits of each of `num_shards` tables under a budget of max_bytes:
  // a share's worth of slots, 4/5 of them filled at most. A table never
  // holds more than max_count keys (ShardedStore's contract) and never
  // grows past max_capacity, so Bytes() stays within the share.
  static ShardLimits Limits(uint64_t max_bytes, int num_shards) {
    if (max_bytes == 0) return ShardLimits{};
    const uint64_t per_shard = max_bytes / static_cast<uint64_t>(std::max(1, num_shards));
    ShardLimits limits;
    limits.bounded = true;
    limits.max_capacity = per_shard / sizeof(Slot);
    if (limits.max_capacity < kMinCapacity) limits.max_capacity = 0;
    limits.max_count = MaxLoad(limits.max_capacity);
    limits.low_water = limits.max_count - limits.max_count / 10;
    return limits;
  }

  // The fewest slots that hold `count` keys within the load limit.
  static constexpr size_t CapacityFor(size_t count) { return count + (count + 3) / 4; }

  FlatTable() = default;
  FlatTable(const FlatTable&) = delete;
  FlatTable& operator=(const FlatTable&) = delete;

  // Which shard of how many this table is, and its limits (a budget's
  // share caps its capacity).
  void Init(int /*shard*/, int /*num_shards*/, const ShardLimits& limits) {
    max_capacity_ = limits.max_capacity;
    seed_ = PositionSeed();
  }

  size_t size() const { return size_ + (has_empty_key_ ? 1 : 0); }

  // The slot array's bytes (the slot beside it is part of the object).
  uint64_t Bytes() const { return capacity_ * sizeof(Slot); }

  const State* Find(uint64_t key) const {
    if (key == kEmpty) return has_empty_key_ ? &empty_key_slot_.state : nullptr;
    if (capacity_ == 0) return nullptr;
    const Slot& slot = slots_[Probe(key)];
    return slot.key == kEmpty ? nullptr : &slot.state;
  }
  State* Find(uint64_t key) {
    return const_cast<State*>(static_cast<const FlatTable*>(this)->Find(key));
  }

  // Requests the key's home slot from memory (a read that follows soon).
  void Prefetch(uint64_t key) const {
    if (capacity_ == 0) return;
    const char* home = reinterpret_cast<const char*>(&slots_[Home(key)]);
    PrefetchRead(home);
    // A slot whose size does not divide a cache line may end on the next.
    if constexpr (64 % sizeof(Slot) != 0) PrefetchRead(home + sizeof(Slot) - 1);
  }

  // Prefetch, for a read a whole step later (ShardedStore's held steps).
  void PrefetchAhead(uint64_t key) const { Prefetch(key); }

  // Room for `new_keys` more keys, at most `max_count` in all: the whole
  // array grows at once, so one call per step and shard.
  void ReserveForStep(size_t new_keys, size_t max_count) {
    Reserve(std::min(size_ + new_keys, max_count));
  }

  // Whether `new_keys` more keys fit without growing the array.
  bool Fits(size_t new_keys) const { return size_ + new_keys <= max_load_; }

  // Room for `fresh` (keys not in the table, distinct), at most `max_count`
  // keys in all: what a batch of steps may insert, reserved before it is
  // logged so that learning it allocates no table memory.
  void ReserveFresh(const std::vector<uint64_t>& fresh, size_t max_count) {
    Reserve(std::min(size_ + fresh.size(), max_count));
  }

  // Every key's home slot is requested from memory before the first
  // lookup, so that the step's cache misses overlap. Nothing else: a caller
  // that prefetched the keys itself may skip it.
  static constexpr bool kPrepareStepOnlyPrefetches = true;
  template <typename KeyRange, typename TableOf>
  static void PrepareStep(const KeyRange& keys, TableOf&& table_of) {
    for (const auto& k : keys) table_of(k.key).Prefetch(k.key);
  }

  // Room for `keys` (distinct, the table empty): one allocation.
  void Presize(const std::vector<uint64_t>& keys) { Reserve(keys.size()); }

  // One key: room for it and its slot requested.
  void Prepare(uint64_t key, size_t new_keys) {
    if (key == kEmpty) return;  // its slot is beside the array
    Reserve(size_ + new_keys);
    Prefetch(key);
  }

  // Returns {state, inserted}; a new key gets a default State. The room
  // should have been made (ReserveForStep, Prepare); without it the array
  // grows here, which moves the other states.
  std::pair<State*, bool> FindOrInsert(uint64_t key) {
    if (key == kEmpty) {
      const bool inserted = !has_empty_key_;
      if (inserted) empty_key_slot_.state = State{};
      has_empty_key_ = true;
      return {&empty_key_slot_.state, inserted};
    }
    if (size_ + 1 > max_load_) Reserve(size_ + 1);
    Slot& slot = slots_[Probe(key)];
    if (slot.key != kEmpty) return {&slot.state, false};
    slot.key = key;
    slot.state = State{};
    ++size_;
    return {&slot.state, true};
  }

  // Removes the key; false if absent. Moves other states of the array.
  bool Erase(uint64_t key) {
    if (key == kEmpty) return std::exchange(has_empty_key_, false);
    if (capacity_ == 0) return false;
    size_t hole = Probe(key);
    if (slots_[hole].key == kEmpty) return false;
    // Backward-shift deletion: move each later entry of the run whose home
    // does not lie cyclically in (hole, at] into the hole.
    for (size_t at = Next(hole); slots_[at].key != kEmpty; at = Next(at)) {
      const size_t home = Home(slots_[at].key);
      const bool stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
      if (stays) continue;
      slots_[hole] = slots_[at];
      hole = at;
    }
    slots_[hole].key = kEmpty;
    --size_;
    return true;
  }

  // Calls fn(key, const State&) for every coordinate.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    for (size_t i = 0; i < capacity_; ++i) {
      if (slots_[i].key != kEmpty) fn(slots_[i].key, slots_[i].state);
    }
    if (has_empty_key_) fn(kEmpty, empty_key_slot_.state);
  }

  // The array does not shrink: the budget bounds its capacity (Limits).
  void Shrink() {}

  void Clear() {
    slots_.reset();
    capacity_ = 0;
    max_load_ = 0;
    size_ = 0;
    has_empty_key_ = false;
  }

 private:
  static constexpr size_t kMinCapacity = 8;

  // At most 4/5 of the slots hold keys, so that probes stay short.
  static constexpr size_t MaxLoad(size_t capacity) {
    return capacity / 5 * 4 + capacity % 5 * 4 / 5;
  }

  // The key's home slot: the key mixed with the seed (a 128-bit product's
  // halves folded, as absl's hash of an integer), scaled to the capacity.
  size_t Home(uint64_t key) const {
    const unsigned __int128 product =
        static_cast<unsigned __int128>(key ^ seed_) * 0x9E3779B97F4A7C15ull;
    const uint64_t mixed = static_cast<uint64_t>(product >> 64) ^ static_cast<uint64_t>(product);
    return static_cast<size_t>((static_cast<unsigned __int128>(mixed) * capacity_) >> 64);
  }
  size_t Next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }

  // The slot holding `key`, or the empty slot where it would go. The array
  // always has an empty slot (load <= 4/5), so the loop ends.
  size_t Probe(uint64_t key) const {
    size_t i = Home(key);
    while (slots_[i].key != key && slots_[i].key != kEmpty) i = Next(i);
    return i;
  }

  // Makes room for `count` keys: if they pass MaxLoad, the array grows to
  // 2 slots per key, or to the budget's cap if that is less (but never to
  // fewer than the keys need).
  void Reserve(size_t count) {
    if (count <= max_load_) return;
    const size_t needed = std::max(kMinCapacity, CapacityFor(count));
    const size_t grown = std::max(needed, std::min(count * 2, max_capacity_));
    Rehash(grown);
  }

  void Rehash(size_t capacity) {
    std::unique_ptr<Slot[]> old = std::exchange(slots_, std::make_unique<Slot[]>(capacity));
    const size_t old_capacity = std::exchange(capacity_, capacity);
    max_load_ = MaxLoad(capacity);
    for (size_t i = 0; i < old_capacity; ++i) {
      if (old[i].key != kEmpty) slots_[Probe(old[i].key)] = old[i];
    }
  }

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_ = 0;
  size_t max_load_ = 0;  // MaxLoad(capacity_)
  size_t size_ = 0;      // keys in slots_, not counting the one beside
  size_t max_capacity_ = SIZE_MAX;
  uint64_t seed_ = 0;
  bool has_empty_key_ = false;
  Slot empty_key_slot_;
};

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_FLAT_TABLE_H_
