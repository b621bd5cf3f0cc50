#include "core/model/ttl_schedule.h"

#include <vector>

#include "core/optim/stamped.h"
#include "gtest/gtest.h"

namespace clickd {
namespace {

constexpr uint64_t kModulus = Stamped<FtrlProximal>::kStampModulus;

TEST(TtlSchedule, EpochsOfAnEighthOfTheTtlRoundedUp) {
  const TtlSchedule ttl(1000, 4, kModulus);
  ASSERT_TRUE(ttl.enabled());
  EXPECT_EQ(ttl.epoch_rounds(), 125u);
  EXPECT_EQ(ttl.EpochAt(0), 0u);
  EXPECT_EQ(ttl.EpochAt(124), 0u);
  EXPECT_EQ(ttl.EpochAt(125), 1u);
  EXPECT_EQ(ttl.EpochAt(125 * kModulus + 250), 2u);                // epochs wrap at the modulus
  EXPECT_EQ(TtlSchedule(1001, 4, kModulus).epoch_rounds(), 126u);  // never sooner
  EXPECT_FALSE(TtlSchedule(0, 4, kModulus).enabled());
  EXPECT_EQ(TtlSchedule(0, 4, kModulus).EpochAt(5000), 0u);
}

TEST(TtlSchedule, KeepsEightEpochsBackAndAgesAcrossTheWrap) {
  EXPECT_TRUE(TtlSchedule::Kept(0));
  EXPECT_TRUE(TtlSchedule::Kept(8));
  EXPECT_FALSE(TtlSchedule::Kept(9));
  using S = Stamped<FtrlProximal>;
  EXPECT_EQ(S::Age(5, 5), 0u);
  EXPECT_EQ(S::Age(kModulus - 2, 3), 5u);
}

TEST(TtlSchedule, EveryShardOncePerEpochAtItsOwnRound) {
  const TtlSchedule ttl(800, 16, kModulus);  // epochs of 100 rounds
  std::vector<int> sweeps(16, 0);
  std::vector<uint64_t> first(16, 0);
  for (uint64_t round = 1; round <= 1000; ++round) {
    ttl.ForEachDue(round, [&](int s) {
      if (sweeps[s]++ == 0) first[s] = round;
    });
  }
  for (int s = 0; s < 16; ++s) EXPECT_EQ(sweeps[s], 10) << s;
  EXPECT_EQ(first[0], 100u);  // round 0 sweeps nothing
  EXPECT_EQ(first[1], 6u);    // 1 * 100 / 16
  EXPECT_EQ(first[15], 93u);
  int none = 0;
  TtlSchedule(0, 16, kModulus).ForEachDue(100, [&](int) { ++none; });
  EXPECT_EQ(none, 0);
}

// Epochs shorter than the shard count: several shards share a round, and
// each is still swept once an epoch.
TEST(TtlSchedule, ShardsSharingARoundAreEachSweptOnce) {
  const TtlSchedule ttl(64, 16, kModulus);  // epochs of 8 rounds
  std::vector<int> sweeps(16, 0);
  int on_round_8 = 0;
  for (uint64_t round = 1; round <= 80; ++round) {
    ttl.ForEachDue(round, [&](int s) {
      ++sweeps[s];
      on_round_8 += round == 8;
    });
  }
  for (int s = 0; s < 16; ++s) EXPECT_EQ(sweeps[s], 10) << s;
  EXPECT_EQ(on_round_8, 2);  // shards 0 and 1 (offsets 0 and 8/16 = 0)
}

}  // namespace
}  // namespace clickd
