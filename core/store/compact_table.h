// CompactTable<State>: one shard's map from key to State that stores 4 bytes
// of each key instead of 8 (docs/memory.md, "The compact encoding").
//
// A key is first mixed by a bijection (times an odd constant). The mixed
// key's top 48 bits are the coordinate's identity: its top 16 bits pick one
// of 65,536 subtables spread over the shards (subtable h belongs to shard
// h mod num_shards, which ShardedStore computes from the same bits), and
// the next 32 bits are what a slot stores. A slot is those 4 bytes and the
// State; each subtable is an open-addressing array with linear probing and
// at most 87.5 % load, whose size and capacity sit in its directory entry.
// So two keys whose mixed top 48 bits agree share a coordinate: among 10M
// random keys the chance that any two do is about 1 in 6 (n^2 / 2^49),
// against 1 in 3.7e5 for 64-bit keys. (One value of the 32 bits marks an
// empty slot; a key with it shares the identity below it: kEmpty.)
// Iteration returns each coordinate's canonical key, Canonical(key): the
// key whose mixed form is the identity followed by 16 zero bits. It maps to
// the same coordinate, so snapshots hold canonical keys and restore them
// to the same coordinates.
//
// Why not absl::flat_hash_map: its slot for an 8-byte key and a 4-byte
// state is 16 bytes (the pair is padded to 8-byte alignment), plus a
// control byte, at 7/16 to 7/8 load: 19-39 bytes per coordinate. Here a
// slot is 8 bytes at 80-87.5 % load (each subtable grows by 1.25x, and
// they grow at different times): ~9.6 bytes, plus a 16-byte directory
// entry per subtable (0.1 byte per coordinate at 10M). The high load is
// affordable because slots are small: a lookup of an absent key scans ~20
// slots (160 bytes, 3 cache lines) on average, of a present one ~4. Growth
// by 1.25x (not 2x) also leaves less of glibc's heap free in the smaller
// blocks the subtables grew out of (docs/memory.md).
//
// A subtable's slot position (not the identity) is computed with a
// per-process random seed, so that callers who choose their keys (packed
// pre-hashed ids) cannot pile them onto one probe sequence.
//
// States never move between Prepare and the next Prepare, Erase, Shrink
// or Clear: FindOrInsert never grows a subtable, Prepare makes the room.
//
// Thread safety: none; the shard's mutex guards it (ShardedStore).
#ifndef CLICKD_CORE_STORE_COMPACT_TABLE_H_
#define CLICKD_CORE_STORE_COMPACT_TABLE_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <utility>
#include <vector>

#include "core/base/prefetch.h"
#include "core/store/position_seed.h"
#include "core/store/shard_limits.h"

namespace clickd {

namespace compact_table_internal {

inline constexpr uint64_t kMix = 0x9E3779B97F4A7C15ull;

// The inverse of an odd number modulo 2^64 (Newton's iteration: each step
// doubles the correct low bits).
constexpr uint64_t InverseModTwo64(uint64_t a) {
  uint64_t x = a;  // correct to 3 bits for odd a
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
inline constexpr uint64_t kUnmix = InverseModTwo64(kMix);
static_assert(kMix * kUnmix == 1);

}  // namespace compact_table_internal

template <typename State>
class CompactTable {
 public:
  // ShardedStore takes a key's shard from these top bits of the mixed key.
  static constexpr int kShardShift = 48;
  static constexpr uint32_t kSubtables = 1u << 16;

  struct Slot {
    uint32_t low;  // bits 16..47 of the mixed key; kEmpty in an empty slot
    State state;
  };
  // The one value of `low` no key has: it marks an empty slot (instead of a
  // bitmap, which would be another cache line per probe). A key whose bits
  // are this value takes the identity of the value below it: 1 key in 2^32.
  static constexpr uint32_t kEmpty = 0xFFFFFFFFu;

  CompactTable() = default;
  CompactTable(const CompactTable&) = delete;
  CompactTable& operator=(const CompactTable&) = delete;
  ~CompactTable() { Clear(); }

  // The key iteration returns for `key`'s coordinate.
  static uint64_t Canonical(uint64_t key) {
    return (uint64_t{High(key)} << 48 | uint64_t{Low(key)} << 16) * compact_table_internal::kUnmix;
  }

  // The limits of each of `num_shards` tables under a budget of max_bytes
  // (ShardedStore's contract: Bytes() of every shard stays within its share
  // while it holds at most max_count coordinates). See docs/memory.md.
  static ShardLimits Limits(uint64_t max_bytes, int num_shards) {
    if (max_bytes == 0) return ShardLimits{};
    const uint64_t shards = static_cast<uint64_t>(std::max(1, num_shards));
    const uint64_t per_shard = max_bytes / shards;
    const uint64_t fixed = FixedBytes(num_shards);
    // Per coordinate: 5/4 slots, rounded up (in quarters of a byte).
    const uint64_t per_coordinate_x4 = sizeof(Slot) * 4 * kGrowth.num / kGrowth.den + 1;
    ShardLimits limits;
    limits.bounded = true;
    limits.max_count = per_shard <= fixed ? 0 : (per_shard - fixed) * 4 / per_coordinate_x4;
    limits.low_water = limits.max_count - limits.max_count / 10;
    return limits;
  }

  // What a budget must give each of `num_shards` tables before its first
  // coordinate: the directory, and room for a subtable's rounding and a
  // step's keys: a subtable holds at most GrowCapacity(its coordinates + 4)
  // slots between eviction passes (each pass shrinks it to fit).
  static uint64_t FixedBytes(int num_shards) {
    const uint64_t shards = static_cast<uint64_t>(std::max(1, num_shards));
    const uint64_t subtables = (kSubtables + shards - 1) / shards;
    return subtables * (sizeof(Subtable) + (GrowCapacity(4) + 2) * sizeof(Slot));
  }

  // Which shard of `num_shards` this table is: sizes its directory. (Its
  // subtables are bounded by the count, not by `limits`: see Limits.)
  void Init(int shard, int num_shards, const ShardLimits& /*limits*/ = {}) {
    shard_ = static_cast<uint32_t>(shard);
    num_shards_ = static_cast<uint32_t>(std::max(1, num_shards));
    // Lemire's exact division for 32-bit numerators, as ShardedStore's
    // remainder: ceil(2^64 / num_shards), unused for one shard.
    divisor_ = UINT64_MAX / num_shards_ + 1;
    directory_.assign((kSubtables - shard_ + num_shards_ - 1) / num_shards_, Subtable{});
    seed_ = PositionSeed();
  }

  size_t size() const { return size_; }

  // Bytes of the directory and every subtable's slots.
  uint64_t Bytes() const { return directory_.size() * sizeof(Subtable) + slot_bytes_; }

  const State* Find(uint64_t key) const {
    const Subtable& t = directory_[LocalIndex(key)];
    if (t.capacity == 0) return nullptr;
    const Slot& slot = t.slots[Probe(t, Low(key))];
    return slot.low == kEmpty ? nullptr : &slot.state;
  }
  State* Find(uint64_t key) {
    return const_cast<State*>(static_cast<const CompactTable*>(this)->Find(key));
  }

  // Requests the key's slot from memory (a read that follows soon). It
  // reads the key's directory entry for the slot's address, so it waits
  // for that miss.
  void Prefetch(uint64_t key) const {
    const Subtable& t = directory_[LocalIndex(key)];
    if (t.capacity != 0) PrefetchRead(&t.slots[Home(t.capacity, Low(key))]);
  }

  // Nothing, for a read a whole step later: Prefetch must read the key's
  // directory entry first, which stalls a step ahead as much as in the
  // step, where PrepareStep requests the slots anyway (measured: prefetching
  // a step ahead made the compact replay 3-7 % slower).
  void PrefetchAhead(uint64_t /*key*/) const {}

  // Subtables grow one by one (Prepare), not the whole table.
  void ReserveForStep(size_t /*new_keys*/, size_t /*max_count*/) {}

  // Whether `new_keys` more keys surely fit without growing a subtable:
  // not known without finding their subtables, so never claimed.
  bool Fits(size_t /*new_keys*/) const { return false; }

  // Room for `fresh` (canonical keys not in the table, distinct) in their
  // subtables: what a batch of steps may insert, reserved before it is
  // logged so that learning it allocates no table memory. Nothing if they
  // would take the table past `max_count`: the steps evict first then, and
  // grow what they must.
  void ReserveFresh(const std::vector<uint64_t>& fresh, size_t max_count) {
    if (size_ + fresh.size() > max_count) return;
    std::vector<uint32_t> locals;
    locals.reserve(fresh.size());
    for (uint64_t key : fresh) locals.push_back(LocalIndex(key));
    std::sort(locals.begin(), locals.end());
    for (size_t i = 0; i < locals.size();) {
      size_t j = i;
      while (j < locals.size() && locals[j] == locals[i]) ++j;
      Subtable& t = directory_[locals[i]];
      const size_t wanted = t.size + (j - i);
      if (wanted > MaxLoad(t.capacity)) Resize(&t, GrowCapacity(wanted));
      i = j;
    }
  }

  // Room for `keys` (distinct, the table empty): each subtable allocated
  // once at the capacity its count of them needs.
  void Presize(const std::vector<uint64_t>& keys) {
    std::vector<uint32_t> counts(directory_.size(), 0);
    for (uint64_t key : keys) ++counts[LocalIndex(key)];
    for (size_t local = 0; local < counts.size(); ++local) {
      if (counts[local] > 0) Resize(&directory_[local], GrowCapacity(counts[local]));
    }
  }

  // Makes room for `new_keys` more keys in `key`'s subtable (growing it if
  // they would take it past 7/8 load) and requests the key's slot from
  // memory. Call before FindOrInsert(key).
  void Prepare(uint64_t key, size_t new_keys) {
    Subtable& t = directory_[LocalIndex(key)];
    if (t.size + new_keys > MaxLoad(t.capacity)) Resize(&t, GrowCapacity(t.size + new_keys));
    PrefetchRead(&t.slots[Home(t.capacity, Low(key))]);
  }

  // Prepares every key of a step, each table(key) for the number of the
  // step's keys in its subtable (counted exactly, so that an example with
  // many features does not grow every subtable it touches by all of them).
  // The directory entries are requested from memory first, so that their
  // misses overlap, then the slots.
  static constexpr bool kPrepareStepOnlyPrefetches = false;  // it makes room too
  template <typename KeyRange, typename TableOf>
  static void PrepareStep(const KeyRange& keys, TableOf&& table_of) {
    // One counter per subtable, zero between calls: an increment per key
    // instead of a sort or a map.
    thread_local std::vector<uint32_t> counts(kSubtables, 0);
    for (const auto& k : keys) {
      const CompactTable& table = table_of(k.key);
      PrefetchRead(&table.directory_[table.LocalIndex(k.key)]);
      ++counts[High(k.key)];
    }
    for (const auto& k : keys) table_of(k.key).Prepare(k.key, counts[High(k.key)]);
    for (const auto& k : keys) counts[High(k.key)] = 0;
  }

  // Returns {state, inserted}; a new key gets a default State. The room
  // must have been made by Prepare.
  std::pair<State*, bool> FindOrInsert(uint64_t key) {
    Subtable& t = directory_[LocalIndex(key)];
    const uint32_t low = Low(key);
    Slot& slot = t.slots[Probe(t, low)];
    if (slot.low != kEmpty) return {&slot.state, false};
    slot.low = low;
    slot.state = State{};
    ++t.size;
    ++size_;
    return {&slot.state, true};
  }

  // Removes the key; false if absent. Moves other states of its subtable.
  bool Erase(uint64_t key) {
    Subtable& t = directory_[LocalIndex(key)];
    if (t.capacity == 0) return false;
    size_t hole = Probe(t, Low(key));
    if (t.slots[hole].low == kEmpty) return false;
    // Backward-shift deletion: move each later entry of the run whose home
    // does not lie cyclically in (hole, at] into the hole.
    for (size_t at = Next(t, hole); t.slots[at].low != kEmpty; at = Next(t, at)) {
      const size_t home = Home(t.capacity, t.slots[at].low);
      const bool stays = hole <= at ? (hole < home && home <= at) : (hole < home || home <= at);
      if (stays) continue;
      t.slots[hole] = t.slots[at];
      hole = at;
    }
    t.slots[hole].low = kEmpty;
    --t.size;
    --size_;
    return true;
  }

  // Calls fn(canonical key, const State&) for every coordinate.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    using compact_table_internal::kUnmix;
    for (size_t local = 0; local < directory_.size(); ++local) {
      const Subtable& t = directory_[local];
      const uint64_t high = static_cast<uint64_t>(local) * num_shards_ + shard_;
      for (size_t i = 0; i < t.capacity; ++i) {
        if (t.slots[i].low == kEmpty) continue;
        const uint64_t mixed = (high << 48) | (static_cast<uint64_t>(t.slots[i].low) << 16);
        fn(mixed * kUnmix, t.slots[i].state);
      }
    }
  }

  // Gives each subtable the capacity a fresh one of its size would have,
  // and frees empty ones: after evictions, so that the budget's bound on
  // Bytes() holds again (Limits).
  void Shrink() {
    for (Subtable& t : directory_) {
      if (t.capacity == 0) continue;
      if (t.size == 0) {
        Free(&t);
      } else if (t.capacity > GrowCapacity(t.size)) {
        Resize(&t, GrowCapacity(t.size));
      }
    }
  }

  void Clear() {
    for (Subtable& t : directory_) Free(&t);
    size_ = 0;
  }

 private:
  // A directory entry: its subtable's size and capacity sit beside the
  // pointer, so that a lookup's first miss (this entry) tells where its
  // second (the slot) is.
  struct Subtable {
    Slot* slots = nullptr;
    uint32_t size = 0;
    uint32_t capacity = 0;
  };
  static_assert(sizeof(Subtable) == 16);

  // At most 7/8 of the slots hold keys, so that probes stay short.
  static constexpr size_t MaxLoad(size_t capacity) { return capacity * 7 / 8; }
  // The capacity for `count` keys: 5/4 of them (load 80 %), at least 4.
  static constexpr struct { size_t num, den; } kGrowth{5, 4};
  static constexpr size_t GrowCapacity(size_t count) {
    return std::max<size_t>(4, (count * kGrowth.num + kGrowth.den - 1) / kGrowth.den + 1);
  }

  static uint32_t High(uint64_t key) {
    return static_cast<uint32_t>((key * compact_table_internal::kMix) >> 48);
  }
  static uint32_t Low(uint64_t key) {
    const uint32_t low = static_cast<uint32_t>((key * compact_table_internal::kMix) >> 16);
    return low == kEmpty ? kEmpty - 1 : low;
  }
  // The subtable's index in this shard's directory: (mixed >> 48) / num_shards.
  size_t LocalIndex(uint64_t key) const {
    const uint64_t high = High(key);
    if (num_shards_ == 1) return high;
    return static_cast<size_t>((static_cast<unsigned __int128>(divisor_) * high) >> 64);
  }
  size_t Home(size_t capacity, uint32_t low) const {
    const uint64_t h = ((low ^ seed_) * compact_table_internal::kMix) >> 32;
    return static_cast<size_t>((h * capacity) >> 32);
  }
  static size_t Next(const Subtable& t, size_t i) { return i + 1 == t.capacity ? 0 : i + 1; }

  // The slot holding `low`, or the empty slot where it would go. A subtable
  // always has an empty slot (load <= 7/8), so the loop ends.
  size_t Probe(const Subtable& t, uint32_t low) const {
    size_t i = Home(t.capacity, low);
    while (t.slots[i].low != low && t.slots[i].low != kEmpty) i = Next(t, i);
    return i;
  }

  // Gives the subtable `capacity` slots and re-inserts its keys.
  void Resize(Subtable* t, size_t capacity) {
    capacity = std::min<size_t>(capacity, std::numeric_limits<uint32_t>::max());
    Slot* slots = static_cast<Slot*>(std::malloc(capacity * sizeof(Slot)));
    if (slots == nullptr) throw std::bad_alloc();  // as new would: a caller may refuse the work
    for (size_t i = 0; i < capacity; ++i) slots[i].low = kEmpty;
    Subtable grown{slots, t->size, static_cast<uint32_t>(capacity)};
    for (size_t i = 0; i < t->capacity; ++i) {
      if (t->slots[i].low != kEmpty) slots[Probe(grown, t->slots[i].low)] = t->slots[i];
    }
    slot_bytes_ += (capacity - t->capacity) * sizeof(Slot);
    std::free(t->slots);
    *t = grown;
  }

  void Free(Subtable* t) {
    size_ -= t->size;
    slot_bytes_ -= t->capacity * sizeof(Slot);
    std::free(t->slots);
    *t = Subtable{};
  }

  uint32_t shard_ = 0;
  uint32_t num_shards_ = 1;
  uint64_t divisor_ = 0;
  uint64_t seed_ = 0;
  std::vector<Subtable> directory_;
  size_t size_ = 0;
  uint64_t slot_bytes_ = 0;
};

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_COMPACT_TABLE_H_
