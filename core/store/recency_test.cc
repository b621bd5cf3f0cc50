#include "core/store/recency.h"

#include <string>
#include <vector>

#include "core/base/coding.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(TtlSchedule, EpochsOfAnEighthOfTheTtl) {
  const TtlSchedule ttl(1000, 4);
  ASSERT_TRUE(ttl.enabled());
  EXPECT_EQ(ttl.epoch_rounds(), 125u);
  EXPECT_EQ(ttl.CodeAt(0), 1);
  EXPECT_EQ(ttl.CodeAt(124), 1);
  EXPECT_EQ(ttl.CodeAt(125), 2);
  EXPECT_EQ(ttl.CodeAt(125 * 14), 15);
  EXPECT_EQ(ttl.CodeAt(125 * 15), 1);                    // codes cycle through 1..15
  EXPECT_EQ(TtlSchedule(1001, 4).epoch_rounds(), 126u);  // rounded up: never sooner
  EXPECT_FALSE(TtlSchedule(0, 4).enabled());
  EXPECT_EQ(TtlSchedule(0, 4).CodeAt(5), 0);
}

TEST(TtlSchedule, EveryShardOncePerEpochAtItsOwnRound) {
  const TtlSchedule ttl(800, 16);  // epochs of 100 rounds
  std::vector<int> sweeps(16, 0);
  std::vector<uint64_t> at(16, 0);
  for (uint64_t round = 1; round <= 1000; ++round) {
    ttl.ForEachDue(round, [&](int s) {
      ++sweeps[s];
      if (round < 100 || (s == 0 && round == 100)) at[s] = round;
    });
  }
  for (int s = 0; s < 16; ++s) EXPECT_EQ(sweeps[s], 10) << s;
  EXPECT_EQ(at[0], 100u);  // round 0 sweeps nothing
  EXPECT_EQ(at[1], 6u);    // 1 * 100 / 16
  EXPECT_EQ(at[15], 93u);
  int none = 0;
  TtlSchedule(0, 16).ForEachDue(100, [&](int) { ++none; });
  EXPECT_EQ(none, 0);
}

TEST(RecencyMarks, AKeyStaysRecentForEightEpochsAfterItsMark) {
  RecencyMarks marks;
  marks.Mark(42, /*code=*/3, 1);
  for (int age = 0; age <= 8; ++age) {
    EXPECT_TRUE(marks.Recent(42, static_cast<uint8_t>((3 - 1 + age) % 15 + 1))) << age;
  }
  EXPECT_FALSE(marks.Recent(42, static_cast<uint8_t>((3 - 1 + 9) % 15 + 1)));
  EXPECT_FALSE(marks.Recent(43 * 0x9E3779B97F4A7C15ull, 3));  // never marked (another bucket)
}

TEST(RecencyMarks, GrowingAndShrinkingKeepEveryRecentKey) {
  RecencyMarks marks;
  std::vector<uint64_t> keys;
  for (uint64_t k = 0; k < 5000; ++k) {
    keys.push_back(k * 0x2545F4914F6CDD1Dull + 7);
    marks.Mark(keys.back(), 5, keys.size());
  }
  EXPECT_GE(marks.buckets(), 5000u);
  for (uint64_t key : keys) ASSERT_TRUE(marks.Recent(key, 5));
  // A sweep at the next epoch that kept only the first 100 keys shrinks
  // the buckets and keeps them recent.
  marks.Refit(100, 6);
  EXPECT_EQ(marks.buckets(), 128u);
  EXPECT_EQ(marks.Bytes(), 64u);
  for (size_t i = 0; i < 100; ++i) EXPECT_TRUE(marks.Recent(keys[i], 6));
  // A refit clears buckets past the window, so that codes never alias.
  marks.Refit(100, 15);  // 10 epochs after 5
  for (size_t i = 0; i < 100; ++i) EXPECT_FALSE(marks.Recent(keys[i], 15));
  EXPECT_FALSE(marks.Recent(keys[0], 5));
}

TEST(RecencyMarks, DecodeReadsWhatShardsWroteAndRefusesDamage) {
  std::vector<RecencyMarks> shards(3);
  for (uint64_t k = 0; k < 300; ++k) shards[k % 3].Mark(k * 0x9E3779B97F4A7C15ull, 7, k / 3 + 1);
  std::string bytes;
  coding::PutFixed32(&bytes, 3);
  for (const RecencyMarks& m : shards) m.AppendTo(&bytes);
  auto decoded = DecodeRecency(bytes, 3);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, shards);

  EXPECT_EQ(DecodeRecency(bytes, 4).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeRecency(bytes.substr(0, bytes.size() - 1), 3).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeRecency(bytes + "x", 3).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(DecodeRecency("", 3).status().code(), absl::StatusCode::kDataLoss);
  for (char log2 : {char{5}, char{41}, char{60}}) {
    std::string bad = bytes;
    bad[4] = log2;
    EXPECT_EQ(DecodeRecency(bad, 3).status().code(), absl::StatusCode::kDataLoss) << int{log2};
  }
}

}  // namespace
}  // namespace clickd
