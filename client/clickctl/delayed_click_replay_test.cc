#include "client/clickctl/delayed_click_replay.h"

#include <cmath>

#include "gtest/gtest.h"

namespace clickd {
namespace {

v1::FeedbackItem Click(uint64_t id) {
  v1::FeedbackItem item;
  item.set_impression_id(id);
  item.set_label(1);
  return item;
}

TEST(PendingClicks, TakesWhatIsDueEarliestFirstInBatches) {
  using std::chrono::seconds;
  const PendingClicks::Time t0{};
  PendingClicks pending;
  pending.Add(Click(1), t0 + seconds(5));
  pending.Add(Click(2), t0 + seconds(1));
  pending.Add(Click(3), t0 + seconds(1));  // same time: after 2, added later
  pending.Add(Click(4), t0 + seconds(9));
  EXPECT_EQ(pending.size(), 4u);
  EXPECT_EQ(pending.EarliestDue(), t0 + seconds(1));
  EXPECT_TRUE(pending.TakeDue(t0, 10).empty());
  std::vector<v1::FeedbackItem> due = pending.TakeDue(t0 + seconds(5), 2);
  ASSERT_EQ(due.size(), 2u);
  EXPECT_EQ(due[0].impression_id(), 2u);
  EXPECT_EQ(due[1].impression_id(), 3u);
  due = pending.TakeDue(t0 + seconds(5), 2);
  ASSERT_EQ(due.size(), 1u);
  EXPECT_EQ(due[0].impression_id(), 1u);
  EXPECT_EQ(pending.EarliestDue(), t0 + seconds(9));
  EXPECT_EQ(pending.TakeDue(t0 + seconds(100), 10).size(), 1u);
  EXPECT_TRUE(pending.empty());
}

TEST(ExponentialDelaySeconds, InverseCdfOfTheTop53Bits) {
  EXPECT_EQ(ExponentialDelaySeconds(60, 0), 0.0);
  // u = 1/2: the median, mean * ln 2.
  EXPECT_DOUBLE_EQ(ExponentialDelaySeconds(60, uint64_t{1} << 63), 60 * std::log(2.0));
  EXPECT_EQ(ExponentialDelaySeconds(0, uint64_t{1} << 63), 0.0);
  // The largest draw stays finite: u < 1.
  EXPECT_TRUE(std::isfinite(ExponentialDelaySeconds(60, ~uint64_t{0})));
  // The sample mean of many draws is near the mean (a loose, fixed-seed check).
  std::mt19937_64 random(1);
  double sum = 0;
  for (int i = 0; i < 100000; ++i) sum += ExponentialDelaySeconds(60, random());
  EXPECT_NEAR(sum / 100000, 60, 1.0);
}

}  // namespace
}  // namespace clickd
