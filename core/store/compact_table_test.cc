// CompactTable against a plain reference (std::map of canonical keys), and
// ShardedStore over it: the same keys map to the same coordinates however
// they were inserted, erased, grown and shrunk; its bytes are what
// docs/memory.md says; a budget holds under an unbounded stream of keys.
#include "core/store/compact_table.h"

#include <map>
#include <random>
#include <vector>

#include "core/store/sharded_store.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Two {
  uint16_t a = 0;
  uint16_t b = 0;
};

using Table = CompactTable<Two>;
using Store = ShardedStore<Two, Table>;

struct Key {
  uint64_t key;
};

TEST(CompactTable, CanonicalKeysAreTheirOwnCanonicalForm) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10000; ++i) {
    const uint64_t key = i < 100 ? static_cast<uint64_t>(i) : rng();
    const uint64_t canonical = Table::Canonical(key);
    EXPECT_EQ(Table::Canonical(canonical), canonical);
    // Distinct small keys stay distinct coordinates.
    if (i > 0 && i < 100) EXPECT_NE(canonical, Table::Canonical(key - 1));
  }
}

// Random inserts and erasures, with keys drawn from a small pool so that
// erasures hit long probe runs, checked against std::map after each step.
TEST(CompactTable, MatchesAMapThroughInsertsErasuresAndShrinks) {
  for (int shards : {1, 3, 16}) {
    SCOPED_TRACE(shards);
    std::vector<Table> tables(shards);
    for (int s = 0; s < shards; ++s) tables[s].Init(s, shards);
    Store router(shards);  // only for ShardIndex
    std::map<uint64_t, uint16_t> reference;
    std::mt19937_64 rng(7 + shards);
    std::vector<uint64_t> pool(30000);
    for (uint64_t& k : pool) k = rng() % 4 == 0 ? rng() % 5000 : rng();
    for (int step = 0; step < 200000; ++step) {
      const uint64_t key = pool[rng() % pool.size()];
      Table& table = tables[router.ShardIndex(key)];
      const uint64_t canonical = Table::Canonical(key);
      if (rng() % 3 == 0) {
        EXPECT_EQ(table.Erase(key), reference.erase(canonical) == 1);
      } else {
        table.Prepare(key, 1);
        auto [state, inserted] = table.FindOrInsert(key);
        EXPECT_EQ(inserted, reference.count(canonical) == 0);
        state->a = static_cast<uint16_t>(step);
        reference[canonical] = static_cast<uint16_t>(step);
      }
      if (step % 50000 == 49999) {
        for (Table& t : tables) t.Shrink();
      }
    }
    size_t total = 0;
    std::map<uint64_t, uint16_t> seen;
    for (int s = 0; s < shards; ++s) {
      total += tables[s].size();
      tables[s].ForEach([&](uint64_t key, const Two& state) {
        EXPECT_EQ(router.ShardIndex(key), s) << "a canonical key routes to its own shard";
        EXPECT_TRUE(seen.emplace(key, state.a).second);
      });
    }
    EXPECT_EQ(total, reference.size());
    EXPECT_EQ(seen, reference);
    for (const auto& [key, value] : reference) {
      const Two* found = tables[router.ShardIndex(key)].Find(key);
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(found->a, value);
    }
  }
}

// Keys chosen so that their mixed top 16 bits agree all land in one
// subtable: it grows like any other, and every key stays findable.
TEST(CompactTable, OneSubtableHoldsManyKeys) {
  Store store(4);
  std::vector<uint64_t> keys;
  for (uint64_t i = 0; i < 50000; ++i) {
    const uint64_t mixed = (uint64_t{0xABCD} << 48) | (i * 7919 << 16);
    keys.push_back(mixed * compact_table_internal::kUnmix);
  }
  for (uint64_t k : keys) store.Mutate(k, [k](Two& s) { s.a = static_cast<uint16_t>(k); });
  EXPECT_EQ(store.Stats().coordinates, keys.size());
  for (uint64_t k : keys) {
    Two s;
    ASSERT_TRUE(store.Find(k, &s));
    EXPECT_EQ(s.a, static_cast<uint16_t>(k));
  }
}

// The table's own bytes: 8-byte slots at 71-80 % load, plus bitmaps,
// headers and the directory (docs/memory.md's arithmetic). At a million
// coordinates a subtable holds ~15, so its 16-byte header and first bitmap
// word and the directory's 8 bytes add ~1.6 bytes each; at 10M, ~0.15
// (bench/memory_compact measures that).
TEST(CompactTable, AMillionCoordinatesTakeUnderThirteenBytesEach) {
  Store store(16);
  std::mt19937_64 rng(3);
  std::vector<Key> step(40);
  for (int i = 0; i < 25000; ++i) {
    for (Key& k : step) k.key = rng();
    store.WithKeysLocked(step, [&](auto& upsert) {
      for (const Key& k : step) ASSERT_NE(upsert(k.key).first, nullptr);
    });
  }
  const StoreStats stats = store.Stats();
  EXPECT_EQ(stats.coordinates, 1000000u);
  const double per_coordinate = static_cast<double>(stats.bytes) / stats.coordinates;
  EXPECT_GT(per_coordinate, 8.0);
  EXPECT_LT(per_coordinate, 13.0);
}

// A step's states do not move while the step holds them, even when its
// keys crowd one small subtable (the step's own keys are counted per
// subtable before any is inserted).
TEST(CompactTable, AStepsStatesStayPutWhileItInsertsIntoOneSubtable) {
  Store store(2);
  std::vector<Key> step;
  for (uint64_t i = 0; i < 500; ++i) {
    step.push_back({((uint64_t{7} << 48) | (i << 20)) * compact_table_internal::kUnmix});
  }
  store.WithKeysLocked(step, [&](auto& upsert) {
    std::vector<Two*> states;
    for (const Key& k : step) states.push_back(upsert(k.key).first);
    for (size_t i = 0; i < states.size(); ++i) states[i]->a = static_cast<uint16_t>(i + 1);
  });
  for (size_t i = 0; i < step.size(); ++i) {
    Two s;
    ASSERT_TRUE(store.Find(step[i].key, &s));
    EXPECT_EQ(s.a, i + 1);
  }
}

// Under a budget the table's bytes never pass it, whatever the number of
// new keys: evictions make room and shrink the subtables they empty.
TEST(CompactTable, ABudgetHoldsUnderAnUnboundedStreamOfNewKeys) {
  constexpr uint64_t kBudget = 8 << 20;
  Store store(16, kBudget);
  ASSERT_GT(store.limits().max_count * 16, 100000u);
  std::mt19937_64 rng(5);
  std::vector<Key> step(40);
  uint64_t peak = 0;
  for (int i = 0; i < 30000; ++i) {  // 1.2M new keys
    for (Key& k : step) k.key = rng();
    store.WithKeysLocked(step, [&](auto& upsert) {
      for (const Key& k : step) upsert(k.key);
    });
    if (i % 1000 == 0) peak = std::max(peak, store.Stats().bytes);
  }
  const StoreStats stats = store.Stats();
  EXPECT_LE(std::max(peak, stats.bytes), kBudget);
  EXPECT_GT(stats.evicted, 900000u);
  EXPECT_GT(stats.coordinates, store.limits().low_water * 16 * 9 / 10);
}

// Copy-on-write copies see canonical keys, as iteration returns them.
TEST(CompactTable, ACopyIsTheStoreAsItWasWhenItBegan) {
  Store store(4);
  for (uint64_t k = 0; k < 1000; ++k) store.Mutate(k, [](Two& s) { s.a = 1; });
  ASSERT_TRUE(store.BeginCopy());
  for (uint64_t k = 500; k < 1500; ++k) store.Mutate(k, [](Two& s) { s.a = 2; });
  std::map<uint64_t, uint16_t> copied;
  for (int s = 0; s < 4; ++s) {
    for (const auto& [key, state] : store.CopyShard(s)) copied[key] = state.a;
  }
  store.EndCopy();
  ASSERT_EQ(copied.size(), 1000u);
  for (uint64_t k = 0; k < 1000; ++k) EXPECT_EQ(copied[Table::Canonical(k)], 1) << k;
}

}  // namespace
}  // namespace clickd
