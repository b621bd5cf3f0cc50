// ShardedStore<State, Table>: the model's memory, a map from 64-bit key to
// one optimizer's per-coordinate state, split into independently locked
// shards. Each shard is a Table: FlatTable (open addressing, full keys;
// the default) or CompactTable (48-bit identities, 8-byte slots for a
// 4-byte state: the compact encoding, docs/memory.md).
//
// Thread safety: safe for concurrent access. Each shard has its own
// reader/writer mutex; a reader copies a whole State under the shard's reader
// lock and a writer changes it under the writer lock, so no reader ever sees
// a half-written coordinate. Operations on different shards never contend.
//
// Memory accounting is exact for the tables themselves: bytes() is the sum of
// each shard's Table::Bytes() (a FlatTable's slot array; a CompactTable's
// directory and subtables).
//
// A memory budget (max_bytes > 0, docs/memory.md) caps every shard's table
// at the most coordinates its share fits (Table::Limits).
// WithKeysLocked keeps each shard within it by evicting the coordinates
// that `rank` says are least useful, never one of the step's own keys; the
// choice depends only on the shard's contents and the step, so the same
// steps on the same state evict the same coordinates.
//
// EvictWhere(s, stale) evicts the coordinates of shard s whose state a
// predicate calls stale: TTL eviction, whose stamps are in the states
// (core/optim/stamped.h).
#ifndef CLICKD_CORE_STORE_SHARDED_STORE_H_
#define CLICKD_CORE_STORE_SHARDED_STORE_H_

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "core/base/mutex.h"
#include "core/store/flat_table.h"
#include "core/store/shard_limits.h"

namespace clickd {

struct StoreStats {
  uint64_t coordinates = 0;
  uint64_t bytes = 0;    // table memory: slots (and a compact table's directory)
  uint64_t evicted = 0;  // coordinates evicted by the budget since the store was built
  uint64_t expired = 0;  // coordinates evicted by EvictWhere (the TTL) since then
};

// How useful a coordinate is, for the budget's evictions: the least useful
// goes first, ordered by weight, then accumulator, then key (smaller first).
struct EvictionRank {
  double weight = 0;       // |w| as the optimizer scores it
  double accumulator = 0;  // the state's update count or sum of g^2, 0 if none
};

template <typename State, typename Table = FlatTable<State>>
class ShardedStore {
 public:
  using Map = Table;

  // max_bytes 0: unbounded.
  explicit ShardedStore(int num_shards, uint64_t max_bytes = 0)
      : num_shards_(std::max(1, num_shards)),
        shard_divisor_(UINT64_MAX / static_cast<uint64_t>(num_shards_) + 1),
        limits_(Table::Limits(max_bytes, num_shards_)),
        shards_(std::make_unique<Shard[]>(static_cast<size_t>(num_shards_))) {
    for (int s = 0; s < num_shards_; ++s) {
      MutexLock lock(&shards_[s].mu);
      shards_[s].map.Init(s, num_shards_, limits_);
    }
  }

  ShardedStore(const ShardedStore&) = delete;
  ShardedStore& operator=(const ShardedStore&) = delete;

  int num_shards() const { return num_shards_; }
  const ShardLimits& limits() const { return limits_; }

  // Called with (shard, key) for each coordinate the budget evicts (not
  // the TTL: EvictWhere has its own), under the shard's writer lock: for
  // state a model keeps beside the coordinate, its factor row. Set before
  // the store is shared.
  void SetBudgetEvictionListener(std::function<void(int, uint64_t)> listener) {
    on_budget_evicted_ = std::move(listener);
  }

  // Returns true and copies the coordinate's state into *state if present.
  bool Find(uint64_t key, State* state) const {
    const Shard& shard = ShardFor(key);
    ReaderMutexLock lock(&shard.mu);
    const State* found = shard.map.Find(key);
    if (found == nullptr) return false;
    *state = *found;
    return true;
  }

  // Calls fn(lookup) holding the reader lock of every shard that a key of
  // `lists` (a range of ranges of items with a `.key`) maps to, where
  // lookup(key) returns the state of `key` (one of those keys), or null if
  // absent. Locks are taken in ascending shard
  // order, as WithKeysLocked takes its writer locks, so the two cannot deadlock; and since a
  // learning step holds all its shards' writer locks, fn sees each step on those shards either
  // whole or not at all, for every key at once. One lock per touched shard instead of one per key:
  // the read path of scoring a whole request. `fn` must not call back into the store. (The analysis
  // cannot follow locks taken in loops: see WithKeysLocked.)
  template <typename Lists, typename Fn>
  void WithKeysReadLocked(const Lists& lists, Fn&& fn) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    thread_local std::vector<int> touched;
    thread_local std::vector<uint32_t> per_shard;
    per_shard.assign(num_shards_, 0);
    for (const auto& list : lists) {
      for (const auto& item : list) ++per_shard[ShardIndex(item.key)];
    }
    TouchedInOrder(per_shard, &touched);
    for (int s : touched) shards_[s].mu.ReaderLock();
    for (const auto& list : lists) {
      for (const auto& item : list) UnsafeMap(ShardIndex(item.key)).Prefetch(item.key);
    }
    fn([this](uint64_t key) -> const State* { return UnsafeMap(ShardIndex(key)).Find(key); });
    for (auto it = touched.rbegin(); it != touched.rend(); ++it) shards_[*it].mu.ReaderUnlock();
  }

  // Calls fn(State&) on the key's state under the shard's writer lock,
  // inserting a default State first if the key is new. Returns true if the
  // key was inserted. `fn` must not call back into the store.
  template <typename Fn>
  bool Mutate(uint64_t key, Fn&& fn) {
    Shard& shard = ShardFor(key);
    MutexLock lock(&shard.mu);
    shard.map.Prepare(key, 1);
    auto [state, inserted] = shard.map.FindOrInsert(key);
    KeepForCopy(shard, key, inserted, *state);
    fn(*state);
    return inserted;
  }

  // Calls fn(upsert) holding the writer lock of every shard that one of
  // `keys` maps to, where upsert(key) returns {State*, inserted} for a key of
  // `keys` (inserting a default State if new), and upsert.IfAdmitted(key,
  // admit) does the same but calls admit() for a key not stored yet and,
  // if it returns false, inserts nothing and returns {nullptr, false}
  // (feature admission, core/store/feature_admission.h). The pointers stay valid until
  // fn returns: capacity for every key is reserved before the first insert,
  // so no rehash moves them.
  // With a budget, a shard the step's new keys would take past
  // limits().max_count first evicts down to limits().low_water (less the
  // step's new keys), least useful first by (make_rank()(state), key),
  // sparing the step's keys; make_rank() is called once per eviction pass,
  // under the locks. Only if the step's own keys overfill a shard do both
  // upserts return {nullptr, false} for its keys beyond max_count: the
  // caller treats them as absent. Shards are locked in ascending index order, so
  // concurrent callers cannot deadlock. This is the learning hot path: one
  // lock per touched shard and one lookup per key, instead of two of each.
  // The analysis cannot follow locks taken and released in loops over a
  // data-dependent set of shards; the ascending-order protocol above is
  // checked by TSan and by ShardedStore.ConcurrentWithKeysLocked instead.
  template <typename KeyRange, typename Fn, typename MakeRank>
  void WithKeysLocked(const KeyRange& keys, Fn&& fn,
                      MakeRank&& make_rank) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    thread_local std::vector<int> touched;
    thread_local std::vector<uint32_t> per_shard;
    CountPerShard(keys, &per_shard, &touched);
    for (int s : touched) shards_[s].mu.Lock();
    StepLocked(keys, per_shard, touched, /*prefetched=*/false, fn, make_rank);
    for (auto it = touched.rbegin(); it != touched.rend(); ++it) shards_[*it].mu.Unlock();
  }

  // Makes room, in each shard, for the keys among `keys` that it does not
  // hold (at most limits().max_count in all), so that steps learning them
  // allocate no table memory: a journal calls it before it logs a batch, so
  // that a std::bad_alloc (thrown from here) refuses the batch before it is
  // in the log. Takes each touched shard's writer lock in turn; growing a
  // table moves states, as a step's reservation does, and changes nothing
  // a reader sees.
  template <typename KeyRange>
  void ReserveFor(const KeyRange& keys) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    // Most batches fit the room the tables have: then nothing is looked up.
    std::vector<uint32_t> per_shard;
    std::vector<int> touched;
    CountPerShard(keys, &per_shard, &touched);
    bool fits = true;
    for (int s : touched) {
      MutexLock lock(&shards_[s].mu);
      fits = fits && shards_[s].map.Fits(per_shard[s]);
    }
    if (fits) return;
    std::vector<std::pair<int, uint64_t>> by_shard;
    for (const auto& k : keys) by_shard.push_back({ShardIndex(k.key), Table::Canonical(k.key)});
    std::sort(by_shard.begin(), by_shard.end());
    by_shard.erase(std::unique(by_shard.begin(), by_shard.end()), by_shard.end());
    std::vector<uint64_t> fresh;
    for (size_t i = 0; i < by_shard.size();) {
      const int s = by_shard[i].first;
      MutexLock lock(&shards_[s].mu);
      Map& map = shards_[s].map;
      fresh.clear();
      for (; i < by_shard.size() && by_shard[i].first == s; ++i) {
        if (map.Find(by_shard[i].second) == nullptr) fresh.push_back(by_shard[i].second);
      }
      if (!fresh.empty()) map.ReserveFresh(fresh, limits_.max_count);
    }
  }

  // Calls fn(steps) holding every shard's writer lock, where
  // steps.Prefetch(keys) requests the keys' slots from memory (for the next
  // step, while this one runs) and steps.Step(keys, fn, make_rank) does
  // what WithKeysLocked does without taking locks, for keys that were
  // prefetched (a table whose step preparation is only a prefetch skips it). Readers and writers
  // of every shard wait until fn returns: for a caller that is the store's
  // only user (Model::LearnExclusive). Shards are locked in ascending order,
  // as WithKeysLocked takes them.
  template <typename Fn>
  void WithAllLocked(Fn&& fn) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (int s = 0; s < num_shards_; ++s) shards_[s].mu.Lock();
    HeldSteps steps{this};
    fn(steps);
    for (int s = num_shards_ - 1; s >= 0; --s) shards_[s].mu.Unlock();
  }

  // WithAllLocked's steps; every call is made under all the locks.
  struct HeldSteps {
    ShardedStore* store;
    template <typename KeyRange, typename Fn, typename MakeRank>
    void Step(const KeyRange& keys, Fn&& fn, MakeRank&& make_rank) const {
      thread_local std::vector<int> touched;
      thread_local std::vector<uint32_t> per_shard;
      store->CountPerShard(keys, &per_shard, &touched);
      store->StepLocked(keys, per_shard, touched, /*prefetched=*/true, fn, make_rank);
    }
    template <typename KeyRange>
    void Prefetch(const KeyRange& keys) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      for (const auto& k : keys) store->UnsafeMap(store->ShardIndex(k.key)).PrefetchAhead(k.key);
    }
  };

  // WithKeysLocked for a store that needs no ranking (tests, or no budget):
  // evictions by key alone.
  template <typename KeyRange, typename Fn>
  void WithKeysLocked(const KeyRange& keys, Fn&& fn) {
    WithKeysLocked(keys, fn, [] { return [](const State&) { return EvictionRank{}; }; });
  }

  // WithKeysLocked's upsert; every call is made under the key's shard lock.
  struct Upserter {
    ShardedStore* store;
    std::pair<State*, bool> operator()(uint64_t key) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      const int s = store->ShardIndex(key);
      Map& map = store->UnsafeMap(s);
      if (map.size() >= store->limits_.max_count) {
        State* found = map.Find(key);
        if (found == nullptr) return {nullptr, false};
        store->UnsafeKeepForCopy(s, key, false, *found);
        return {found, false};
      }
      auto [state, inserted] = map.FindOrInsert(key);
      store->UnsafeKeepForCopy(s, key, inserted, *state);
      return {state, inserted};
    }
    template <typename Admit>
    std::pair<State*, bool> IfAdmitted(uint64_t key,
                                       Admit&& admit) const ABSL_NO_THREAD_SAFETY_ANALYSIS {
      const int s = store->ShardIndex(key);
      Map& map = store->UnsafeMap(s);
      // A stored key is about to change: an open copy needs its state first,
      // as operator() keeps it.
      if (State* found = map.Find(key); found != nullptr) {
        store->UnsafeKeepForCopy(s, key, false, *found);
        return {found, false};
      }
      // A full shard refuses before admission is asked, so that "admitted"
      // counts only features that got a coordinate.
      if (map.size() >= store->limits_.max_count || !admit()) return {nullptr, false};
      return (*this)(key);
    }
  };

  // Evicts the coordinates of shard s for which stale(state) is true,
  // keeping their states for an open copy as the budget's evictions do,
  // and calls on_evicted(key) for each under the shard's writer lock (for
  // state a model keeps beside the coordinate: its factor row). Returns how
  // many it evicted (counted in StoreStats.expired).
  template <typename Stale>
  uint64_t EvictWhere(int s, Stale&& stale) {
    return EvictWhere(s, stale, [](uint64_t) {});
  }
  template <typename Stale, typename OnEvicted>
  uint64_t EvictWhere(int s, Stale&& stale, OnEvicted&& on_evicted) {
    Shard& shard = shards_[s];
    MutexLock lock(&shard.mu);
    Map& map = shard.map;
    thread_local std::vector<uint64_t> doomed;
    doomed.clear();
    map.ForEach([&](uint64_t key, const State& state) {
      if (stale(state)) doomed.push_back(key);
    });
    for (size_t i = 0; i < doomed.size(); ++i) {
      if (i + kEvictPrefetchDistance < doomed.size())
        map.Prefetch(doomed[i + kEvictPrefetchDistance]);
      const uint64_t key = doomed[i];
      KeepForCopy(shard, key, false, *map.Find(key));
      map.Erase(key);
      on_evicted(key);
    }
    if (!doomed.empty()) map.Shrink();
    expired_.fetch_add(doomed.size(), std::memory_order_relaxed);
    return doomed.size();
  }

  // Calls fn() holding shard s's reader lock (ReadShared) or writer lock
  // (WriteExclusive): for state a model keeps beside each shard's
  // coordinates and guards with the same lock (a factorization's factor
  // rows, core/model/factorization.h). `fn` must not call back into the store.
  template <typename Fn>
  void ReadShared(int s, Fn&& fn) const {
    ReaderMutexLock lock(&shards_[s].mu);
    fn();
  }
  template <typename Fn>
  void WriteExclusive(int s, Fn&& fn) {
    MutexLock lock(&shards_[s].mu);
    fn();
  }

  // Calls fn(key, const State&) for every coordinate in ascending key order.
  // Each shard is copied under its reader lock, so the view of one shard is
  // consistent; writers to other shards are not blocked meanwhile.
  template <typename Fn>
  void ForEachSorted(Fn&& fn) const {
    std::vector<std::pair<uint64_t, State>> all;
    for (int s = 0; s < num_shards_; ++s) {
      const Shard& shard = shards_[s];
      ReaderMutexLock lock(&shard.mu);
      shard.map.ForEach([&all](uint64_t key, const State& state) { all.emplace_back(key, state); });
    }
    std::sort(all.begin(), all.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [key, state] : all) fn(key, state);
  }

  // --- Point-in-time copies (snapshots off the learning path) ---
  //
  // A copy is taken in two steps so that writers wait only for the first.
  // BeginCopy marks the moment: it must be called while no writer is in a
  // step (the caller holds its learners off), and it only flags each shard.
  // Writers then go on; the first time one changes or inserts a key of a
  // shard the copy has not read yet, the key's state as of the moment (or
  // "absent") is kept aside (copy-on-write per coordinate). CopyShard(s)
  // reads shard s under its reader lock, then, under its writer lock, takes
  // what was kept aside and unflags the shard; with the kept states put
  // back, the result is the shard as it was at BeginCopy. A writer waits
  // for a shard only while that shard is read (one shard's share of the
  // store), a reader not at all. One copy at a time: BeginCopy returns
  // false while another is open. EndCopy closes a copy (unflagging the
  // shards it did not read); call it exactly once after a true BeginCopy.
  using Coordinates = std::vector<std::pair<uint64_t, State>>;

  bool BeginCopy() const {
    {
      MutexLock lock(&copy_mu_);
      if (copy_open_) return false;
      copy_open_ = true;
    }
    for (int s = 0; s < num_shards_; ++s) {
      MutexLock lock(&shards_[s].mu);
      shards_[s].copying = true;
    }
    return true;
  }

  // Shard s's coordinates as of BeginCopy, unsorted.
  Coordinates CopyShard(int s) const {
    const Shard& shard = shards_[s];
    size_t size = 0;
    {
      ReaderMutexLock lock(&shard.mu);
      size = shard.map.size();
    }
    // Allocated and its pages touched before the lock, with room for keys
    // inserted meanwhile, so that the read under the lock is a plain copy: a
    // writer of this shard waits for it, and a snapshot thread at low
    // priority may be descheduled while it holds the lock.
    Coordinates out(size + size / 16 + 64);
    {
      ReaderMutexLock lock(&shard.mu);
      if (shard.map.size() > out.size()) out.resize(shard.map.size());
      size_t at = 0;
      shard.map.ForEach([&](uint64_t key, const State& state) { out[at++] = {key, state}; });
      out.resize(at);
    }
    absl::flat_hash_map<uint64_t, std::optional<State>> before;
    {
      MutexLock lock(&shard.mu);
      before.swap(shard.before);
      shard.copying = false;
    }
    if (before.empty()) return out;
    // Put back the states kept aside; drop the keys inserted after the moment.
    size_t kept = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      auto it = before.find(out[i].first);
      if (it != before.end() && !it->second.has_value()) continue;
      out[kept] = out[i];
      if (it != before.end()) {
        out[kept].second = *it->second;
        before.erase(it);
      }
      ++kept;
    }
    out.resize(kept);
    // What is left with a state was evicted since the moment: put it back too.
    for (const auto& [key, state] : before) {
      if (state.has_value()) out.emplace_back(key, *state);
    }
    return out;
  }

  void EndCopy() const {
    for (int s = 0; s < num_shards_; ++s) {
      MutexLock lock(&shards_[s].mu);
      shards_[s].copying = false;
      decltype(shards_[s].before)().swap(shards_[s].before);
    }
    MutexLock lock(&copy_mu_);
    copy_open_ = false;
  }

  // Every shard's coordinates, each shard read under its reader lock
  // (consistent as a whole only if no writer runs meanwhile), unsorted.
  std::vector<Coordinates> CopyAll() const {
    std::vector<Coordinates> out(static_cast<size_t>(num_shards_));
    for (int s = 0; s < num_shards_; ++s) {
      ReaderMutexLock lock(&shards_[s].mu);
      shards_[s].map.ForEach(
          [&out, s](uint64_t key, const State& state) { out[s].emplace_back(key, state); });
    }
    return out;
  }

  // Replaces every coordinate with the `count` records record(i) returns as
  // {key, State} (distinct keys; a restore). Each shard's table is sized
  // for its share before the first insert, so nothing is rehashed: a
  // restore of 10M compact coordinates inserted one Mutate at a time spent
  // most of its time growing subtables. Not during a copy.
  template <typename Record>
  void Assign(size_t count, Record&& record) {
    std::vector<std::vector<uint64_t>> keys(static_cast<size_t>(num_shards_));
    for (size_t i = 0; i < count; ++i) {
      const uint64_t key = record(i).first;
      keys[ShardIndex(key)].push_back(key);
    }
    for (int s = 0; s < num_shards_; ++s) {
      MutexLock lock(&shards_[s].mu);
      shards_[s].map.Clear();
      shards_[s].map.Presize(keys[s]);
      std::vector<uint64_t>().swap(keys[s]);
    }
    for (size_t i = 0; i < count; ++i) {
      const auto [key, state] = record(i);
      Shard& shard = ShardFor(key);
      MutexLock lock(&shard.mu);
      shard.map.Prepare(key, 1);
      *shard.map.FindOrInsert(key).first = state;
    }
  }

  // Removes every coordinate. Not during a copy.
  void Clear() {
    for (int s = 0; s < num_shards_; ++s) {
      MutexLock lock(&shards_[s].mu);
      shards_[s].map.Clear();
    }
  }

  StoreStats Stats() const {
    StoreStats stats;
    stats.evicted = evicted_.load(std::memory_order_relaxed);
    stats.expired = expired_.load(std::memory_order_relaxed);
    for (int s = 0; s < num_shards_; ++s) {
      const Shard& shard = shards_[s];
      ReaderMutexLock lock(&shard.mu);
      stats.coordinates += shard.map.size();
      stats.bytes += shard.map.Bytes();
    }
    return stats;
  }

  // Shard index of a key. Keys are already hashes, but folded keys keep only
  // low bits, so mix before taking the high bits (the high half; a
  // CompactTable's top 16 bits, which pick its subtable).
  // The remainder is computed by Lemire's exact "fastmod" (two multiplies)
  // instead of a division: a step computes it several times per key, and a
  // 64-bit division costs tens of cycles. Same result as `% num_shards_`.
  int ShardIndex(uint64_t key) const {
    const uint64_t mixed = key * 0x9E3779B97F4A7C15ull;
    const uint64_t low_bits = shard_divisor_ * (mixed >> Table::kShardShift);
    return static_cast<int>(
        (static_cast<unsigned __int128>(low_bits) * static_cast<uint64_t>(num_shards_)) >> 64);
  }

 private:
  // The shards with a nonzero count, ascending: the order locks are taken
  // in. A scan of the counts costs no more than zeroing them did, and less
  // than sorting the touched shards.
  static void TouchedInOrder(const std::vector<uint32_t>& per_shard, std::vector<int>* touched) {
    touched->clear();
    for (size_t s = 0; s < per_shard.size(); ++s) {
      if (per_shard[s] != 0) touched->push_back(static_cast<int>(s));
    }
  }

  // A step's keys per shard (*per_shard), and the shards with any, in
  // ascending order (*touched): the locks it needs and the room per shard.
  template <typename KeyRange>
  void CountPerShard(const KeyRange& keys, std::vector<uint32_t>* per_shard,
                     std::vector<int>* touched) const {
    per_shard->assign(num_shards_, 0);
    for (const auto& k : keys) ++(*per_shard)[ShardIndex(k.key)];
    TouchedInOrder(*per_shard, touched);
  }

  // The part of a step that runs under the locks of its `touched` shards
  // (per_shard: its keys per shard): room for its keys, evicting first under
  // a budget, then fn(upsert). `prefetched`: the caller already requested
  // the keys' slots from memory.
  template <typename KeyRange, typename Fn, typename MakeRank>
  void StepLocked(const KeyRange& keys, const std::vector<uint32_t>& per_shard,
                  const std::vector<int>& touched, bool prefetched, Fn& fn,
                  MakeRank& make_rank) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    for (int s : touched) {
      // Reserve inside the lock: the map may only change under it.
      Map& map = UnsafeMap(s);
      if (limits_.bounded && map.size() + per_shard[s] > limits_.max_count) {
        MakeRoom(s, keys, make_rank);
      }
      map.ReserveForStep(per_shard[s], limits_.max_count);
    }
    // Room for the step's keys, and each key's slot requested from memory
    // so that the step's cache misses overlap instead of coming one by one.
    if (!prefetched || !Table::kPrepareStepOnlyPrefetches) {
      Table::PrepareStep(keys,
                         [this](uint64_t key) -> Table& { return UnsafeMap(ShardIndex(key)); });
    }
    Upserter upsert{this};
    fn(upsert);
  }

  // Evicts from shard s, whose lock WithKeysLocked holds, enough to leave
  // room for the step's new keys of that shard (see WithKeysLocked).
  template <typename KeyRange, typename MakeRank>
  void MakeRoom(int s, const KeyRange& keys, MakeRank& make_rank) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Map& map = UnsafeMap(s);
    thread_local std::vector<uint64_t> step;
    step.clear();
    for (const auto& k : keys) {
      if (ShardIndex(k.key) == s) step.push_back(Table::Canonical(k.key));
    }
    std::sort(step.begin(), step.end());
    step.erase(std::unique(step.begin(), step.end()), step.end());
    size_t fresh = 0;
    for (uint64_t key : step) fresh += map.Find(key) == nullptr;
    if (map.size() + fresh <= limits_.max_count) return;
    const size_t target =
        std::min(limits_.low_water, limits_.max_count - std::min(fresh, limits_.max_count));
    EvictDownTo(s, target, step, make_rank());
  }

  // Erases the least useful keys of shard s not in `spared` (sorted) until
  // at most `target` remain or only spared keys do.
  template <typename Rank>
  void EvictDownTo(int s, size_t target, const std::vector<uint64_t>& spared,
                   const Rank& rank) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    Map& map = UnsafeMap(s);
    if (map.size() <= target) return;
    struct Candidate {
      double weight;
      double accumulator;
      uint64_t key;
    };
    // A NaN would break the strict weak order nth_element needs; rank it least useful.
    auto finite_or_zero = [](double x) { return std::isnan(x) ? 0.0 : x; };
    std::vector<Candidate> candidates;
    candidates.reserve(map.size());
    map.ForEach([&](uint64_t key, const State& state) {
      if (std::binary_search(spared.begin(), spared.end(), key)) return;
      const EvictionRank r = rank(state);
      candidates.push_back({finite_or_zero(r.weight), finite_or_zero(r.accumulator), key});
    });
    const size_t n = std::min(map.size() - target, candidates.size());
    std::nth_element(candidates.begin(), candidates.begin() + n, candidates.end(),
                     [](const Candidate& a, const Candidate& b) {
                       if (a.weight != b.weight) return a.weight < b.weight;
                       if (a.accumulator != b.accumulator) return a.accumulator < b.accumulator;
                       return a.key < b.key;
                     });
    for (size_t i = 0; i < n; ++i) {
      // The victims lie anywhere in the table: ask for a later one's slot
      // while this one is erased, or each erasure waits for a miss.
      if (i + kEvictPrefetchDistance < n) map.Prefetch(candidates[i + kEvictPrefetchDistance].key);
      const uint64_t key = candidates[i].key;
      UnsafeKeepForCopy(s, key, false, *map.Find(key));
      map.Erase(key);
      if (on_budget_evicted_) on_budget_evicted_(s, key);
    }
    map.Shrink();
    evicted_.fetch_add(n, std::memory_order_relaxed);
  }

  // How many victims ahead an eviction loop requests a slot from memory.
  static constexpr size_t kEvictPrefetchDistance = 16;

  // Aligned to a cache line so that locking one shard does not bounce its
  // neighbour's line between cores.
  struct alignas(64) Shard {
    mutable Mutex mu;
    Map map ABSL_GUARDED_BY(mu);
    // An open copy has not read this shard yet (see BeginCopy), and the
    // states it needs of keys changed since: nullopt for a key inserted since.
    mutable bool copying ABSL_GUARDED_BY(mu) = false;
    mutable absl::flat_hash_map<uint64_t, std::optional<State>> before ABSL_GUARDED_BY(mu);
  };

  // Keeps `state` (or "absent" if the key was just `inserted`) aside for the
  // open copy before a writer changes it, unless the copy has it already.
  static void KeepForCopy(Shard& shard, uint64_t key, bool inserted, const State& state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(shard.mu) {
    if (!shard.copying) return;
    // Under the key a copy's reads give it (a CompactTable's canonical
    // key), computed only while a copy is open: not on every step.
    shard.before.try_emplace(Table::Canonical(key),
                             inserted ? std::nullopt : std::optional<State>(state));
  }
  // KeepForCopy for shard s, whose lock WithKeysLocked holds.
  void UnsafeKeepForCopy(int s, uint64_t key, bool inserted,
                         const State& state) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    KeepForCopy(shards_[s], key, inserted, state);
  }

  Shard& ShardFor(uint64_t key) { return shards_[ShardIndex(key)]; }
  // The map of shard s, whose lock WithKeysLocked holds: the analysis cannot
  // follow a lock taken in a loop over shards, hence the escape hatch.
  Map& UnsafeMap(int s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return shards_[s].map; }
  const Map& UnsafeMap(int s) const ABSL_NO_THREAD_SAFETY_ANALYSIS { return shards_[s].map; }
  const Shard& ShardFor(uint64_t key) const { return shards_[ShardIndex(key)]; }

  const int num_shards_;
  // ceil(2^64 / num_shards_), for ShardIndex's remainder.
  const uint64_t shard_divisor_;
  const ShardLimits limits_;
  std::function<void(int, uint64_t)> on_budget_evicted_;
  std::unique_ptr<Shard[]> shards_;
  std::atomic<uint64_t> evicted_{0};
  std::atomic<uint64_t> expired_{0};
  mutable Mutex copy_mu_;
  mutable bool copy_open_ ABSL_GUARDED_BY(copy_mu_) = false;
};

}  // namespace clickd

#endif  // CLICKD_CORE_STORE_SHARDED_STORE_H_
