// FlatTable against a plain reference (std::map): the same keys hold the
// same states however they were inserted, erased and grown; the key that
// marks an empty slot is a key like any other; a budget's share caps the
// array; keys crowded onto few homes stay findable.
#include "core/store/flat_table.h"

#include <map>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

struct Pair {
  float a = 0.0f;
  float b = 0.0f;
};
using Table = FlatTable<Pair>;

// Random inserts and erasures from a small pool (long probe runs, erasures
// inside them, wrap-around at the array's end), checked against std::map
// after every step, including through the array's growth.
TEST(FlatTable, MatchesAMapThroughInsertsErasuresAndGrowth) {
  Table table;
  table.Init(0, 1, {});
  std::map<uint64_t, float> reference;
  std::mt19937_64 rng(11);
  std::vector<uint64_t> pool(20000);
  for (uint64_t& k : pool) k = rng() % 4 == 0 ? rng() % 3000 : rng();
  pool[0] = Table::kEmpty;
  pool[1] = 0;
  for (int step = 0; step < 300000; ++step) {
    const uint64_t key = pool[rng() % (step < 1000 ? 50 : pool.size())];
    if (rng() % 3 == 0) {
      ASSERT_EQ(table.Erase(key), reference.erase(key) == 1) << key;
    } else {
      table.Prepare(key, 1);
      auto [state, inserted] = table.FindOrInsert(key);
      ASSERT_EQ(inserted, reference.count(key) == 0) << key;
      if (inserted) EXPECT_EQ(state->a, 0.0f) << "a new key starts from a default state";
      state->a = static_cast<float>(step);
      reference[key] = static_cast<float>(step);
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  std::map<uint64_t, float> seen;
  table.ForEach([&](uint64_t key, const Pair& state) {
    EXPECT_TRUE(seen.emplace(key, state.a).second) << "each key once";
  });
  EXPECT_EQ(seen, reference);
  for (uint64_t key : pool) {
    const Pair* found = table.Find(key);
    const auto it = reference.find(key);
    ASSERT_EQ(found != nullptr, it != reference.end()) << key;
    if (found != nullptr) EXPECT_EQ(found->a, it->second);
  }
}

// The empty marker's own key is stored beside the array: found, counted,
// iterated, erased, and never mistaken for an empty slot.
TEST(FlatTable, TheEmptyMarkerIsAnOrdinaryKey) {
  Table table;
  table.Init(0, 1, {});
  EXPECT_EQ(table.Find(Table::kEmpty), nullptr);
  EXPECT_FALSE(table.Erase(Table::kEmpty));
  table.Prepare(Table::kEmpty, 1);
  auto [state, inserted] = table.FindOrInsert(Table::kEmpty);
  EXPECT_TRUE(inserted);
  state->a = 3.0f;
  EXPECT_FALSE(table.FindOrInsert(Table::kEmpty).second);
  EXPECT_EQ(table.size(), 1u);
  EXPECT_EQ(table.Bytes(), 0u) << "no array needed for it";
  ASSERT_NE(table.Find(Table::kEmpty), nullptr);
  EXPECT_EQ(table.Find(Table::kEmpty)->a, 3.0f);
  int visits = 0;
  table.ForEach([&](uint64_t key, const Pair& s) {
    EXPECT_EQ(key, Table::kEmpty);
    EXPECT_EQ(s.a, 3.0f);
    ++visits;
  });
  EXPECT_EQ(visits, 1);
  EXPECT_TRUE(table.Erase(Table::kEmpty));
  EXPECT_EQ(table.size(), 0u);
  EXPECT_TRUE(table.FindOrInsert(Table::kEmpty).second) << "erased, it starts afresh";
  EXPECT_EQ(table.Find(Table::kEmpty)->a, 0.0f);
}

// States do not move while the room made for a step lasts, and the array
// stays 50-80 % full as it grows.
TEST(FlatTable, StatesStayPutWithinTheRoomMadeAndLoadStaysInRange) {
  Table table;
  table.Init(0, 1, {});
  std::mt19937_64 rng(5);
  std::vector<uint64_t> keys(40);
  for (int step = 0; step < 5000; ++step) {
    for (uint64_t& k : keys) k = rng();
    table.ReserveForStep(keys.size(), SIZE_MAX);
    std::vector<Pair*> states;
    for (uint64_t k : keys) states.push_back(table.FindOrInsert(k).first);
    for (size_t i = 0; i < keys.size(); ++i) {
      ASSERT_EQ(table.Find(keys[i]), states[i]) << "moved within the step";
    }
    const double slots = static_cast<double>(table.Bytes() / sizeof(Table::Slot));
    const double load = static_cast<double>(table.size()) / slots;
    ASSERT_LE(load, 0.8);
    if (table.size() > 1000) ASSERT_GE(load, 0.5 - 40 / slots) << "grown too far";
  }
}

// Under a budget's share the array never passes max_capacity, even when the
// step's room would ask for more, and holds max_count keys.
TEST(FlatTable, ABudgetsShareCapsTheArray) {
  const ShardLimits limits = Table::Limits(16 * 1000, 1);
  ASSERT_EQ(limits.max_capacity, 1000u);
  ASSERT_EQ(limits.max_count, 800u);
  Table table;
  table.Init(0, 1, limits);
  std::mt19937_64 rng(9);
  while (table.size() < limits.max_count) {
    table.ReserveForStep(7, limits.max_count);
    for (int i = 0; i < 7 && table.size() < limits.max_count; ++i) table.FindOrInsert(rng());
    ASSERT_LE(table.Bytes(), 16u * 1000u);
  }
  EXPECT_EQ(table.Bytes(), 16u * 1000u) << "the whole share, not a power of two in it";
  EXPECT_EQ(Table::CapacityFor(800), 1000u);
}

// Small consecutive keys in an array of 8 slots, then grown: runs wrap
// around the array's end; every erasure inside a run keeps the rest
// findable and the erased ones gone.
TEST(FlatTable, ErasuresInsideRunsKeepTheRestFindable) {
  Table table;
  table.Init(0, 1, {});
  std::set<uint64_t> held;
  for (uint64_t k = 0; k < 6; ++k) {
    table.Prepare(k, 1);
    table.FindOrInsert(k).first->a = static_cast<float>(k);
    held.insert(k);
  }
  for (uint64_t gone : {2u, 0u, 5u, 3u}) {
    ASSERT_TRUE(table.Erase(gone));
    ASSERT_FALSE(table.Erase(gone));
    held.erase(gone);
    for (uint64_t k = 0; k < 6; ++k) {
      const Pair* found = table.Find(k);
      ASSERT_EQ(found != nullptr, held.count(k) == 1) << k << " after erasing " << gone;
      if (found != nullptr) EXPECT_EQ(found->a, static_cast<float>(k));
    }
  }
  EXPECT_EQ(table.size(), held.size());
}

}  // namespace
}  // namespace clickd
