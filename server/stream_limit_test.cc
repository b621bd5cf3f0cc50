#include "server/stream_limit.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

namespace clickd {
namespace {

TEST(StreamLimit, RefusesBeyondTheLimitNamingItAndFreesPlacesOnRelease) {
  StreamLimit limit(2);
  absl::StatusOr<StreamLimit::Ticket> first = limit.Open("UpdateStream");
  absl::StatusOr<StreamLimit::Ticket> second = limit.Open("FeedbackStream");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_TRUE(first->holds_place());
  EXPECT_EQ(limit.open(), 2u);
  const absl::StatusOr<StreamLimit::Ticket> third = limit.Open("UpdateStreamAcked");
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(third.status().message(),
            "UpdateStreamAcked: too many open streams: 2 are open; the limit is 2 "
            "(max_open_streams)");
  EXPECT_EQ(limit.open(), 2u);
  // A moved ticket releases once, by its last holder.
  StreamLimit::Ticket moved = *std::move(first);
  EXPECT_EQ(limit.open(), 2u);
  moved = StreamLimit::Ticket();
  EXPECT_EQ(limit.open(), 1u);
  EXPECT_TRUE(limit.Open("UpdateStream").ok());  // released at once: back to 1
  EXPECT_EQ(limit.open(), 1u);
}

TEST(StreamLimit, ZeroRefusesEveryStream) {
  StreamLimit limit(0);
  EXPECT_EQ(limit.Open("UpdateStream").status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(limit.open(), 0u);
}

// Racing openers never hold more places than the limit.
TEST(StreamLimit, ConcurrentOpenersNeverExceedIt) {
  StreamLimit limit(3);
  std::atomic<int> held{0};
  std::atomic<int> most{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 2000; ++i) {
        absl::StatusOr<StreamLimit::Ticket> ticket = limit.Open("UpdateStream");
        if (!ticket.ok()) continue;
        const int now = ++held;
        int seen = most.load();
        while (now > seen && !most.compare_exchange_weak(seen, now)) {
        }
        --held;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_LE(most.load(), 3);
  EXPECT_GE(most.load(), 1);
  EXPECT_EQ(limit.open(), 0u);
}

}  // namespace
}  // namespace clickd
