// ShardedStore under a memory budget (ShardLimits): the tables stay within
// it under an endless stream of new keys, evictions take the least useful
// coordinates and spare the step's own, and they are a function of the
// contents and the steps alone.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/store/sharded_store.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Pair {
  float a = 0.0f;  // the "weight"
  float b = 0.0f;  // the "accumulator"
};
struct Key {
  uint64_t key;
};
using Store = ShardedStore<Pair>;
using Contents = std::vector<std::pair<uint64_t, std::pair<float, float>>>;

// Ranks as the models do: |weight|, then accumulator.
auto MakeRank() {
  return [](const Pair& p) { return EvictionRank{std::abs(p.a), p.b}; };
}

// One step: every key is upserted and its state moved by a function of the
// key, as a learner would; returns how many keys found no room.
int Step(Store& store, const std::vector<Key>& keys) {
  int refused = 0;
  store.WithKeysLocked(
      keys,
      [&](auto& upsert) {
        for (const Key& k : keys) {
          Pair* p = upsert(k.key).first;
          if (p == nullptr) {
            ++refused;
            continue;
          }
          p->a += static_cast<float>(static_cast<int>(k.key % 11) - 5) * 0.25f;
          p->b += 1.0f;
        }
      },
      MakeRank);
  return refused;
}

Contents ContentsOf(const Store& store) {
  Contents out;
  store.ForEachSorted([&](uint64_t key, const Pair& p) { out.push_back({key, {p.a, p.b}}); });
  return out;
}

// Steps of 1..8 keys: mostly new ones, some of a small recurring set.
std::vector<std::vector<Key>> Steps(int n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<Key>> out(n);
  uint64_t next_new = 1000;
  for (auto& step : out) {
    std::set<uint64_t> keys;
    const int size = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < size; ++i) keys.insert(rng() % 3 == 0 ? rng() % 300 : next_new++);
    for (uint64_t k : keys) step.push_back({k});
  }
  return out;
}

TEST(StoreBudget, LimitsFollowTheTablesOwnSizes) {
  // 64 KiB per shard of 16-byte slots: 4096 slots, 4/5 of which (3276)
  // may hold keys.
  const ShardLimits limits = FlatTable<Pair>::Limits(256 << 10, 4);
  EXPECT_TRUE(limits.bounded);
  EXPECT_EQ(limits.max_capacity, 4096u);
  EXPECT_EQ(limits.max_count, 3276u);
  EXPECT_EQ(limits.low_water, 3276u - 327u);
  EXPECT_FALSE(FlatTable<Pair>::Limits(0, 4).bounded);
  EXPECT_EQ(FlatTable<Pair>::Limits(8, 1).max_count, 0u);
  // A share too small for the smallest table (8 slots) holds nothing.
  EXPECT_EQ(FlatTable<Pair>::Limits(16 * 7, 1).max_count, 0u);
  EXPECT_EQ(FlatTable<Pair>::Limits(16 * 8, 1).max_count, 6u);
}

// 2M distinct keys into a 256 KiB budget: the table bytes never pass it.
TEST(StoreBudget, TablesStayWithinTheBudgetUnderAnEndlessStreamOfNewKeys) {
  constexpr uint64_t kBudget = 256 << 10;
  Store store(4, kBudget);
  std::vector<Key> keys;
  uint64_t next = 0;
  uint64_t checks = 0;
  while (next < 2'000'000) {
    keys.clear();
    for (int i = 0; i < 16; ++i) keys.push_back({(next++) * 0x9E3779B97F4A7C15ull});
    ASSERT_EQ(Step(store, keys), 0);
    if (next % 1024 == 0) {
      const StoreStats stats = store.Stats();
      ASSERT_LE(stats.bytes, kBudget) << "after " << next << " keys";
      ++checks;
    }
  }
  const StoreStats stats = store.Stats();
  EXPECT_LE(stats.bytes, kBudget);
  EXPECT_GT(checks, 1000u);
  // Full-ish, and every key not held was evicted.
  EXPECT_GT(stats.coordinates, 4 * store.limits().low_water - 64);
  EXPECT_LE(stats.coordinates, 4 * store.limits().max_count);
  EXPECT_EQ(stats.evicted + stats.coordinates, 2'000'000u);
}

TEST(StoreBudget, EvictsTheLeastUsefulFirstAndSparesTheStepsKeys) {
  Store store(1, 64 << 10);  // one shard: 4096 16-byte slots
  const size_t max_count = store.limits().max_count;
  ASSERT_EQ(max_count, 3276u);
  // Weights with many ties (|a| in 0..6, signs mixed), accumulators with
  // ties too: the order is |a|, then b, then key.
  for (uint64_t k = 0; k < max_count; ++k) {
    store.Mutate(k, [k](Pair& p) {
      p.a = static_cast<float>(k % 7) * (k % 2 == 0 ? 1.0f : -1.0f);
      p.b = static_cast<float>(k % 3);
    });
  }
  // Key 7 (a = 0, b = 1) ranks among the first to go, but the step holds it.
  const uint64_t spared = 7;
  const uint64_t fresh = 1'000'000;
  std::vector<std::tuple<float, float, uint64_t>> order;
  for (uint64_t k = 0; k < max_count; ++k) {
    if (k == spared) continue;
    order.emplace_back(static_cast<float>(k % 7), static_cast<float>(k % 3), k);
  }
  std::sort(order.begin(), order.end());
  const size_t evict = max_count - store.limits().low_water;
  std::set<uint64_t> expected;
  for (size_t i = evict; i < order.size(); ++i) expected.insert(std::get<2>(order[i]));
  expected.insert(spared);
  expected.insert(fresh);

  ASSERT_EQ(Step(store, {{spared}, {fresh}}), 0);
  std::set<uint64_t> held;
  for (const auto& [key, state] : ContentsOf(store)) held.insert(key);
  EXPECT_EQ(held, expected);
  EXPECT_EQ(store.Stats().evicted, evict);
  // The next step has room: no pass.
  ASSERT_EQ(Step(store, {{fresh + 1}}), 0);
  EXPECT_EQ(store.Stats().evicted, evict);
}

// A step with more new keys for a shard than it may hold at all: every
// other key goes, then the step's own keys beyond max_count find no room.
TEST(StoreBudget, AShardFullOfTheStepsOwnKeysRefusesTheRest) {
  const uint64_t budget = 1024;  // one shard: 64 slots, 51 keys
  Store store(1, budget);
  const size_t max_count = store.limits().max_count;
  ASSERT_EQ(max_count, 51u);
  for (uint64_t k = 0; k < 10; ++k) store.Mutate(k, [](Pair&) {});
  std::vector<Key> step;
  for (uint64_t k = 100; k < 170; ++k) step.push_back({k});
  EXPECT_EQ(Step(store, step), static_cast<int>(step.size() - max_count));
  const StoreStats stats = store.Stats();
  EXPECT_EQ(stats.coordinates, max_count);
  EXPECT_EQ(stats.evicted, 10u);
  EXPECT_LE(stats.bytes, budget);
  for (uint64_t k = 0; k < 10; ++k) {
    Pair p;
    EXPECT_FALSE(store.Find(k, &p)) << k;
  }
}

// The same steps on the same contents evict the same keys, however the
// tables got there: a store rebuilt halfway from the other's contents (as
// a restore from a snapshot inserts them, one at a time) ends identical.
TEST(StoreBudget, TheSameStepsEvictTheSameKeys) {
  const auto steps = Steps(60'000, 5);
  Store a(4, 128 << 10);
  Store b(4, 128 << 10);
  Store restored(4, 128 << 10);
  for (size_t i = 0; i < steps.size(); ++i) {
    Step(a, steps[i]);
    Step(b, steps[i]);
    if (i == steps.size() / 2) {
      for (const auto& entry : ContentsOf(a)) {
        const auto& state = entry.second;
        restored.Mutate(entry.first, [&state](Pair& p) { p = {state.first, state.second}; });
      }
    } else if (i > steps.size() / 2) {
      Step(restored, steps[i]);
    }
  }
  const StoreStats stats = a.Stats();
  ASSERT_GT(stats.evicted, 10'000u);  // many passes happened
  EXPECT_EQ(ContentsOf(a), ContentsOf(b));
  EXPECT_EQ(ContentsOf(a), ContentsOf(restored));
  EXPECT_EQ(b.Stats().evicted, stats.evicted);
}

// A copy begun before evictions still holds every coordinate of its
// moment, the evicted ones with their state as of then.
TEST(StoreBudget, ACopyHoldsItsMomentAcrossEvictions) {
  Store store(2, 64 << 10);
  const auto steps = Steps(20'000, 9);
  size_t i = 0;
  for (; i < steps.size() / 2; ++i) Step(store, steps[i]);
  const Contents moment = ContentsOf(store);
  const uint64_t evicted_before = store.Stats().evicted;
  ASSERT_TRUE(store.BeginCopy());
  for (; i < steps.size(); ++i) Step(store, steps[i]);
  ASSERT_GT(store.Stats().evicted, evicted_before + 1000);
  Contents copied;
  for (int s = 0; s < store.num_shards(); ++s) {
    for (const auto& [key, p] : store.CopyShard(s)) copied.push_back({key, {p.a, p.b}});
  }
  store.EndCopy();
  std::sort(copied.begin(), copied.end());
  EXPECT_EQ(copied, moment);
}

// Learners evicting on overlapping shards while a reader reads: no torn
// state, and the budget holds. Run under TSan.
TEST(StoreBudget, ConcurrentLearnersStayWithinTheBudget) {
  constexpr uint64_t kBudget = 64 << 10;
  Store store(4, kBudget);
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0};
  std::vector<std::thread> learners;
  for (int w = 0; w < 3; ++w) {
    learners.emplace_back([&, w] {
      std::vector<Key> keys;
      for (uint64_t i = 0; i < 20'000; ++i) {
        keys = {{i % 50}, {(i * 3 + static_cast<uint64_t>(w)) * 1'000'003 + 1000}};
        store.WithKeysLocked(
            keys,
            [&](auto& upsert) {
              for (const Key& k : keys) {
                Pair* p = upsert(k.key).first;
                p->a += 1;
                p->b += 1;
              }
            },
            MakeRank);
      }
    });
  }
  std::thread reader([&] {
    Pair p;
    while (!stop.load()) {
      for (uint64_t k = 0; k < 50; ++k) {
        if (store.Find(k, &p) && p.a != p.b) torn.fetch_add(1);
      }
    }
  });
  for (std::thread& t : learners) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(torn.load(), 0u);
  const StoreStats stats = store.Stats();
  EXPECT_LE(stats.bytes, kBudget);
  EXPECT_GT(stats.evicted, 0u);
  // The 50 recurring keys, stepped 60,000 times in all, are never the least useful.
  for (uint64_t k = 0; k < 50; ++k) {
    Pair p;
    EXPECT_TRUE(store.Find(k, &p)) << k;
  }
}

}  // namespace
}  // namespace clickd
