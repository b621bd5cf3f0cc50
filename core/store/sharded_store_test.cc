#include "core/store/sharded_store.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Pair {
  float a = 0.0f;
  float b = 0.0f;
};

TEST(ShardedStore, FindMissingAndMutateInserts) {
  ShardedStore<Pair> store(4);
  Pair p;
  EXPECT_FALSE(store.Find(7, &p));
  EXPECT_TRUE(store.Mutate(7, [](Pair& s) { s.a = 1; }));
  EXPECT_FALSE(store.Mutate(7, [](Pair& s) { s.b = 2; }));
  ASSERT_TRUE(store.Find(7, &p));
  EXPECT_EQ(p.a, 1.0f);
  EXPECT_EQ(p.b, 2.0f);
}

TEST(ShardedStore, ExactAccounting) {
  ShardedStore<Pair> store(8);
  EXPECT_EQ(store.Stats().coordinates, 0u);
  EXPECT_EQ(store.Stats().bytes, 0u);
  for (uint64_t k = 0; k < 10000; ++k) store.Mutate(k, [](Pair&) {});
  const StoreStats stats = store.Stats();
  EXPECT_EQ(stats.coordinates, 10000u);
  // Each slot is key + state; tables are at most 7/8 full, so between 16 and
  // 2 * 8/7 * 16 bytes per coordinate plus control bytes.
  EXPECT_GE(stats.bytes, 10000u * (16 + 1));
  EXPECT_LE(stats.bytes, 10000u * (16 + 1) * 16 / 7 + 8 * 64);
}

TEST(ShardedStore, KeysSpreadOverShards) {
  ShardedStore<Pair> store(16);
  std::vector<int> counts(16);
  for (uint64_t k = 0; k < 16000; ++k) ++counts[store.ShardIndex(k)];  // dense small keys
  for (int c : counts) EXPECT_GT(c, 500);
}

// ShardIndex computes its remainder without a division; it must give what
// the division gave, or restored budgets and evictions would change shards.
TEST(ShardedStore, ShardIndexIsTheMixedKeyModuloTheShards) {
  uint64_t key = 1;
  for (int shards : {1, 2, 3, 7, 16, 64, 1000, 4095, 4096}) {
    ShardedStore<Pair> store(shards);
    for (int i = 0; i < 20000; ++i) {
      key = key * 6364136223846793005ull + 1442695040888963407ull;
      const uint64_t probe = i % 4 == 0 ? static_cast<uint64_t>(i) : key;  // small keys too
      const uint64_t mixed = probe * 0x9E3779B97F4A7C15ull;
      ASSERT_EQ(store.ShardIndex(probe),
                static_cast<int>((mixed >> 32) % static_cast<uint64_t>(shards)))
          << "shards " << shards << " key " << probe;
    }
  }
}

TEST(ShardedStore, ForEachSortedVisitsInKeyOrder) {
  ShardedStore<Pair> store(3);
  for (uint64_t k : {5, 1, 9, 3}) store.Mutate(k, [k](Pair& s) { s.a = static_cast<float>(k); });
  std::vector<uint64_t> keys;
  store.ForEachSorted([&](uint64_t key, const Pair& s) {
    EXPECT_EQ(s.a, static_cast<float>(key));
    keys.push_back(key);
  });
  EXPECT_EQ(keys, (std::vector<uint64_t>{1, 3, 5, 9}));
}

// Writers keep a == b for every coordinate; readers must never observe a
// coordinate with a != b (a torn read). Run under TSan in the test command.
TEST(ShardedStore, ConcurrentReadersNeverSeeHalfWrittenState) {
  ShardedStore<Pair> store(4);
  constexpr uint64_t kKeys = 64;
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (int i = 0; i < 20000; ++i) {
        store.Mutate((i * 7 + w) % kKeys, [](Pair& s) {
          s.a += 1;
          s.b += 1;
        });
      }
    });
  }
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&] {
      Pair p;
      while (!stop.load()) {
        for (uint64_t k = 0; k < kKeys; ++k) {
          if (store.Find(k, &p) && p.a != p.b) torn.fetch_add(1);
        }
        (void)store.Stats();
      }
    });
  }
  threads[0].join();
  threads[1].join();
  stop = true;
  threads[2].join();
  threads[3].join();
  EXPECT_EQ(torn.load(), 0u);
  float total = 0;
  store.ForEachSorted([&](uint64_t, const Pair& s) { total += s.a; });
  EXPECT_EQ(total, 40000.0f);
}

// Learners lock overlapping shard sets in ascending order: no deadlock, no
// lost update, and readers never see a half-written pair. Run under TSan.
TEST(ShardedStore, ConcurrentWithKeysLocked) {
  ShardedStore<Pair> store(8);
  struct Key {
    uint64_t key;
  };
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> torn{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w) {
    threads.emplace_back([&, w] {
      std::vector<Key> keys;
      for (int i = 0; i < 3000; ++i) {
        keys.clear();
        for (int j = 0; j < 5; ++j)
          keys.push_back({static_cast<uint64_t>((i * 7 + j * 13 + w) % 40)});
        std::sort(keys.begin(), keys.end(), [](Key a, Key b) { return a.key < b.key; });
        keys.erase(
            std::unique(keys.begin(), keys.end(), [](Key a, Key b) { return a.key == b.key; }),
            keys.end());
        store.WithKeysLocked(keys, [&](auto& upsert) {
          for (const Key& k : keys) {
            Pair* p = upsert(k.key).first;
            p->a += 1;
            p->b += 1;
          }
        });
      }
    });
  }
  threads.emplace_back([&] {
    Pair p;
    while (!stop.load()) {
      for (uint64_t k = 0; k < 40; ++k) {
        if (store.Find(k, &p) && p.a != p.b) torn.fetch_add(1);
      }
    }
  });
  for (int w = 0; w < 3; ++w) threads[w].join();
  stop = true;
  threads[3].join();
  EXPECT_EQ(torn.load(), 0u);
  EXPECT_EQ(store.Stats().coordinates, 40u);
}

}  // namespace
}  // namespace clickd
