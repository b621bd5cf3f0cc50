#include "server/inline_lease.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace clickd {
namespace {

TEST(InlineLease, DefaultIsTheExecutorAndHereHoldsNoSlot) {
  EXPECT_FALSE(static_cast<bool>(InlineLease()));
  const InlineLease here = InlineLease::Here();
  EXPECT_TRUE(static_cast<bool>(here));
  EXPECT_FALSE(here.holds_slot());
}

TEST(InlineLease, OneHolderOfTheSlotAtATime) {
  std::atomic<bool> slot{false};
  {
    const InlineLease first = InlineLease::TryAcquire(&slot);
    EXPECT_TRUE(static_cast<bool>(first));
    EXPECT_TRUE(first.holds_slot());
    EXPECT_TRUE(slot.load());
    // Taken: the next one is work for the executor, and holds nothing.
    const InlineLease second = InlineLease::TryAcquire(&slot);
    EXPECT_FALSE(static_cast<bool>(second));
    EXPECT_FALSE(second.holds_slot());
  }
  EXPECT_FALSE(slot.load()) << "the slot is released with its lease";
  EXPECT_TRUE(static_cast<bool>(InlineLease::TryAcquire(&slot)));
}

TEST(InlineLease, AMovedLeaseReleasesOnce) {
  std::atomic<bool> slot{false};
  {
    InlineLease first = InlineLease::TryAcquire(&slot);
    InlineLease moved(std::move(first));
    EXPECT_TRUE(moved.holds_slot());
    EXPECT_FALSE(first.holds_slot());  // NOLINT(bugprone-use-after-move): checked on purpose
    EXPECT_TRUE(slot.load());
  }
  EXPECT_FALSE(slot.load());
}

TEST(InlineLease, ConcurrentTakersNeverShareTheSlot) {
  std::atomic<bool> slot{false};
  std::atomic<int> holders{0}, most{0}, acquired{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        const InlineLease lease = InlineLease::TryAcquire(&slot);
        if (!lease) continue;
        acquired.fetch_add(1);
        const int now = holders.fetch_add(1) + 1;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        holders.fetch_sub(1);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(most.load(), 1);
  EXPECT_GT(acquired.load(), 0);
  EXPECT_FALSE(slot.load());
}

}  // namespace
}  // namespace clickd
